import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realmExporter } from '../src/services/realm-export.js';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { api, httpDatabases, startServer, type TestServer } from './support/server.js';

/**
 * Issues 16 and 18: users' links to identity providers (Keycloak's FederatedIdentityRepresentation, the console's
 * "Identity provider links" tab) kept as data: imported from a realm file instead of being named in `notImported`,
 * listed, added and removed through Keycloak 26's admin API (the official admin client), exported back; they go
 * with their user and their provider and follow a renamed alias. Hostile input and callers one role short are refused.
 */

const KEPT = 'realm import: parts of the file are kept as data, not used for sign-in';
const NOT_IMPORTED = 'realm import: parts of the file are not imported';

/** A realm file as Keycloak exports it: two identity providers, users linked to them. */
const realmFile = (realm: string) => ({
  realm,
  enabled: true,
  identityProviders: [
    { alias: 'github', providerId: 'github', enabled: true, config: { clientId: 'gh', clientSecret: 'gh-secret' } },
    { alias: 'corp', providerId: 'oidc', enabled: true, config: { clientId: 'rg' } },
  ],
  users: [
    {
      username: 'alice',
      enabled: true,
      federatedIdentities: [
        { identityProvider: 'github', userId: '1001', userName: 'alice-gh' },
        { identityProvider: 'corp', userId: 'corp-alice', userName: 'alice@corp' },
      ],
    },
    { username: 'bob', enabled: true, federatedIdentities: [{ identityProvider: 'github', userId: '1002' }] },
    { username: 'carol', enabled: true },
    { username: 'dave', enabled: true, federatedIdentities: [] },
  ],
});

describe.each(httpDatabases)("users' links to identity providers (%s)", (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: () => Promise<string>;
  const userId = async (realm: string, username: string) => {
    kc.setConfig({ realmName: realm });
    const [user] = await kc.users.find({ username, exact: true });
    return user.id!;
  };
  /** An admin client of a user of `realm` holding only these realm-management roles. */
  const holding = async (realm: string, username: string, roles: string[]) => {
    kc.setConfig({ realmName: realm });
    const { management, roles: all } = await realmManagement(kc);
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: 'Links-pass-123', temporary: false }] });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: roles.map((r) => all.get(r)!) });
    const limited = new KcAdminClient({ baseUrl: t.url, realmName: realm });
    await limited.auth({ grantType: 'password', clientId: 'admin-cli', username, password: 'Links-pass-123' });
    return limited;
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    token = async () => (await kc.getAccessToken())!;
    await kc.realms.create(realmFile('links'));
    await kc.realms.update({ realm: 'links' }, { adminEventsEnabled: true, adminEventsDetailsEnabled: true });
  }, 60_000);
  afterAll(() => t?.close());

  it("a realm file's links are imported and listed, named as kept as data rather than not imported", async () => {
    const alice = await userId('links', 'alice');
    expect(await kc.users.listFederatedIdentities({ id: alice })).toEqual([
      { identityProvider: 'corp', userId: 'corp-alice', userName: 'alice@corp' },
      { identityProvider: 'github', userId: '1001', userName: 'alice-gh' },
    ]);
    expect(await kc.users.listFederatedIdentities({ id: await userId('links', 'bob') })).toEqual([{ identityProvider: 'github', userId: '1002' }]);
    expect(await kc.users.listFederatedIdentities({ id: await userId('links', 'carol') })).toEqual([]);
    const logs = t.logs.filter((l) => l.realm === 'links');
    expect(logs.find((l) => l.msg === KEPT)?.keptAsData).toEqual(['realm.identityProviders', 'realm.users[*].federatedIdentities']);
    expect(JSON.stringify(logs.filter((l) => l.msg === NOT_IMPORTED))).not.toContain('federatedIdentities');
    // The answer to POST /admin/realms carries the same report (Keycloak's is an empty 201; its Location is kept).
    const created = await api(t.url, 'POST', '/admin/realms', await token(), realmFile('links-answer'));
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toMatch(/\/admin\/realms\/links-answer$/);
    expect(created.body).toEqual({ notImported: [], keptAsData: ['realm.identityProviders', 'realm.users[*].federatedIdentities'] });
    // A file with nothing to report: the empty 201, as Keycloak's.
    const plain = await api(t.url, 'POST', '/admin/realms', await token(), { realm: 'links-plain', enabled: true });
    expect(plain.status).toBe(201);
    expect(plain.body).toBeUndefined();
  });

  it('links and unlinks as Keycloak 26: 204, 409 for a second link, 404 for a missing link, provider or user; admin events of the user', async () => {
    const carol = await userId('links', 'carol');
    kc.setConfig({ realmName: 'links' });
    await kc.users.addToFederatedIdentity({ id: carol, federatedIdentityId: 'corp', federatedIdentity: { identityProvider: 'corp', userId: 'corp-carol', userName: 'carol@corp' } });
    await kc.users.addToFederatedIdentity({ id: carol, federatedIdentityId: 'github', federatedIdentity: { userId: '1003' } });
    expect(await kc.users.listFederatedIdentities({ id: carol })).toEqual([
      { identityProvider: 'corp', userId: 'corp-carol', userName: 'carol@corp' },
      { identityProvider: 'github', userId: '1003' },
    ]);
    await rejects(kc.users.addToFederatedIdentity({ id: carol, federatedIdentityId: 'corp', federatedIdentity: { userId: 'other' } }), 409, /^User is already linked with provider$/);
    await rejects(kc.users.addToFederatedIdentity({ id: carol, federatedIdentityId: 'nowhere', federatedIdentity: { userId: 'x' } }), 404, /Could not find identity provider/);
    await rejects(kc.users.addToFederatedIdentity({ id: 'f0000000-0000-4000-8000-000000000000', federatedIdentityId: 'corp', federatedIdentity: { userId: 'x' } }), 404, /User not found/);
    await kc.users.delFromFederatedIdentity({ id: carol, federatedIdentityId: 'github' });
    await rejects(kc.users.delFromFederatedIdentity({ id: carol, federatedIdentityId: 'github' }), 404, /^Link not found$/);
    await rejects(kc.users.delFromFederatedIdentity({ id: carol, federatedIdentityId: 'nowhere' }), 404, /^Link not found$/);
    await rejects(kc.users.listFederatedIdentities({ id: 'f0000000-0000-4000-8000-000000000000' }), 404, /User not found/);
    expect(await kc.users.listFederatedIdentities({ id: carol })).toEqual([{ identityProvider: 'corp', userId: 'corp-carol', userName: 'carol@corp' }]);
    // Keycloak's admin events: resource type USER, the link's path, the representation on CREATE.
    const events = await kc.realms.findAdminEvents({ realm: 'links', resourceTypes: ['USER'] } as never);
    const of = (operation: string) => events.filter((e) => e.operationType === operation && e.resourcePath?.startsWith(`users/${carol}/federated-identity/`));
    expect(of('CREATE').map((e) => e.resourcePath).sort()).toEqual([`users/${carol}/federated-identity/corp`, `users/${carol}/federated-identity/github`]);
    expect(JSON.parse(of('CREATE').find((e) => e.resourcePath!.endsWith('/corp'))!.representation!)).toEqual({ identityProvider: 'corp', userId: 'corp-carol', userName: 'carol@corp' });
    expect(of('DELETE').map((e) => e.resourcePath)).toEqual([`users/${carol}/federated-identity/github`]);
  });

  it('a user created with federatedIdentities (POST …/users) has them; a link to a provider the realm lacks refuses the user', async () => {
    kc.setConfig({ realmName: 'links' });
    const { id } = await kc.users.create({ username: 'erin', enabled: true, federatedIdentities: [{ identityProvider: 'github', userId: '1005', userName: 'erin-gh' }] });
    expect(await kc.users.listFederatedIdentities({ id })).toEqual([{ identityProvider: 'github', userId: '1005', userName: 'erin-gh' }]);
    await rejects(kc.users.create({ username: 'frank', enabled: true, federatedIdentities: [{ identityProvider: 'nowhere', userId: '1' }] }), 400, /user\.federatedIdentities\[0\]\.identityProvider/);
    await rejects(kc.users.create({ username: 'frank', enabled: true, federatedIdentities: [{ identityProvider: 'github' }] }), 400, /userId/);
    expect(await kc.users.find({ username: 'frank', exact: true })).toEqual([]);
  });

  it('a link follows its renamed provider, goes with a deleted provider and with its user', async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create(realmFile('moves'));
    const alice = await userId('moves', 'alice');
    const github = (await kc.identityProviders.findOne({ alias: 'github' }))!;
    await kc.identityProviders.update({ alias: 'github' }, { ...github, alias: 'gh' });
    expect((await kc.users.listFederatedIdentities({ id: alice })).map((l) => [l.identityProvider, l.userId])).toEqual([['corp', 'corp-alice'], ['gh', '1001']]);
    await kc.identityProviders.del({ alias: 'corp' });
    expect((await kc.users.listFederatedIdentities({ id: alice })).map((l) => l.identityProvider)).toEqual(['gh']);
    // A provider of the old name again has no links: they went with the provider deleted.
    await kc.identityProviders.create({ alias: 'corp', providerId: 'oidc' });
    expect((await kc.users.listFederatedIdentities({ id: alice })).map((l) => l.identityProvider)).toEqual(['gh']);
    const { db } = t.server.context.storage;
    const rows = () => db.selectFrom('federated_identity').select(['user_id', 'federated_user_id']).where('user_id', '=', alice).execute();
    expect(await rows()).toHaveLength(1);
    await kc.users.del({ id: alice });
    expect(await rows()).toEqual([]);
    // And everything goes with the realm.
    const realmId = (await kc.realms.findOne({ realm: 'moves' }))!.id!;
    kc.setConfig({ realmName: 'master' });
    await kc.realms.del({ realm: 'moves' });
    expect(await db.selectFrom('federated_identity').select('user_id').where('realm_id', '=', realmId).execute()).toEqual([]);
  });

  it('the export with users carries the links as Keycloak writes them, and its import restores them; the partial export has no users', async () => {
    const { storage } = t.server.context;
    const realm = (await storage.realms.byName('links'))!;
    const exporter = await realmExporter(t.server.context, realm);
    const { users } = await exporter.users(null, 100);
    const byName = new Map(users.map((u) => [u.username, u]));
    expect(byName.get('alice')!.federatedIdentities).toEqual([
      { identityProvider: 'corp', userId: 'corp-alice', userName: 'alice@corp' },
      { identityProvider: 'github', userId: '1001', userName: 'alice-gh' },
    ]);
    expect(byName.get('bob')!.federatedIdentities).toEqual([{ identityProvider: 'github', userId: '1002' }]);
    expect(byName.get('carol')!.federatedIdentities).toEqual([{ identityProvider: 'corp', userId: 'corp-carol', userName: 'carol@corp' }]);
    // As Keycloak's ExportUtils: no empty list on a user without links.
    expect(byName.get('dave')).not.toHaveProperty('federatedIdentities');
    kc.setConfig({ realmName: 'master' });
    expect(await kc.realms.export({ realm: 'links', exportClients: true, exportGroupsAndRoles: true })).not.toHaveProperty('users');

    // Round trip: the whole document under another name, then the same links again.
    const document = await exporter.document({ clients: true, groupsAndRoles: true, secrets: true });
    await kc.realms.create({ ...document, realm: 'links-copy', users } as never);
    for (const username of ['alice', 'bob', 'carol', 'dave']) {
      const copied = await kc.users.listFederatedIdentities({ id: await userId('links-copy', username) });
      expect(copied, username).toEqual(byName.get(username)!.federatedIdentities ?? []);
    }
  });

  it('partial import: users linked to providers of the file or the realm; an overwritten provider keeps its links', async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({ realm: 'partial', enabled: true, identityProviders: [{ alias: 'corp', providerId: 'oidc' }], users: [{ username: 'erin', enabled: true, federatedIdentities: [{ identityProvider: 'corp', userId: 'corp-erin' }] }] });
    const result = await kc.realms.partialImport({
      realm: 'partial',
      rep: {
        ifResourceExists: 'OVERWRITE',
        identityProviders: [{ alias: 'corp', providerId: 'oidc', displayName: 'Corp again' }, { alias: 'github', providerId: 'github' }],
        users: [{ username: 'frank', enabled: true, federatedIdentities: [{ identityProvider: 'corp', userId: 'corp-frank' }, { identityProvider: 'github', userId: '2001', userName: 'frank-gh' }] }],
      } as never,
    });
    expect(result.results.map((r) => [r.resourceType, r.resourceName, r.action])).toEqual(expect.arrayContaining([['IDP', 'corp', 'OVERWRITTEN'], ['IDP', 'github', 'ADDED'], ['USER', 'frank', 'ADDED']]));
    expect((result as unknown as { keptAsData: string[] }).keptAsData).toEqual(['realm.identityProviders', 'realm.users[*].federatedIdentities']);
    kc.setConfig({ realmName: 'partial' });
    expect((await kc.identityProviders.findOne({ alias: 'corp' }))!.displayName).toBe('Corp again');
    expect(await kc.users.listFederatedIdentities({ id: await userId('partial', 'erin') })).toEqual([{ identityProvider: 'corp', userId: 'corp-erin' }]);
    expect(await kc.users.listFederatedIdentities({ id: await userId('partial', 'frank') })).toEqual([
      { identityProvider: 'corp', userId: 'corp-frank' },
      { identityProvider: 'github', userId: '2001', userName: 'frank-gh' },
    ]);
    // A user overwritten takes the file's links; a link to an alias neither the file nor the realm has is refused.
    kc.setConfig({ realmName: 'master' });
    await kc.realms.partialImport({ realm: 'partial', rep: { ifResourceExists: 'OVERWRITE', users: [{ username: 'erin', enabled: true, federatedIdentities: [{ identityProvider: 'github', userId: '2002' }] }] } as never });
    expect(await kc.users.listFederatedIdentities({ id: await userId('partial', 'erin') })).toEqual([{ identityProvider: 'github', userId: '2002' }]);
    kc.setConfig({ realmName: 'master' });
    await rejects(
      kc.realms.partialImport({ realm: 'partial', rep: { ifResourceExists: 'FAIL', users: [{ username: 'gina', enabled: true, federatedIdentities: [{ identityProvider: 'nowhere', userId: 'x' }] }] } as never }),
      400,
      /^realm\.users\[0\]\.federatedIdentities\[0\]\.identityProvider: identity provider "nowhere" does not exist$/,
    );
    kc.setConfig({ realmName: 'partial' });
    expect(await kc.users.find({ username: 'gina', exact: true })).toEqual([]);
  });

  it('a realm file with bad links is refused with 400 naming the JSON path, and nothing of it is imported', async () => {
    const file = realmFile('bad');
    const withLinks = (index: number, federatedIdentities: unknown) => ({ ...file, users: file.users.map((u, i) => (i === index ? { ...u, federatedIdentities } : u)) });
    const cases: [unknown, RegExp][] = [
      [withLinks(2, { identityProvider: 'github', userId: '1' }), /^realm\.users\[2\]\.federatedIdentities: must be an array$/],
      [withLinks(2, ['github']), /^realm\.users\[2\]\.federatedIdentities\[0\]: must be a JSON object$/],
      [withLinks(2, [{ identityProvider: 'github', userId: 1003 }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.userId: must be a string$/],
      [withLinks(2, [{ identityProvider: 'github', userId: '1003', userName: false }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.userName: must be a string$/],
      [withLinks(2, [{ identityProvider: 'github' }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.userId: is required$/],
      [withLinks(2, [{ userId: '1003' }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.identityProvider: is required$/],
      [withLinks(2, [{ identityProvider: ['github'], userId: '1003' }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.identityProvider: must be a string$/],
      [withLinks(2, [{ identityProvider: 'github', userId: 'x'.repeat(10_000) }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.userId: must be at most 255 characters$/],
      [withLinks(2, [{ identityProvider: 'github', userId: 'a\u0000b' }]), /userId: must be text without NUL characters$/],
      [withLinks(2, JSON.parse('[{"identityProvider": "github", "userId": "1003", "__proto__": {"admin": true}}]')), /^realm\.users\[2\]\.federatedIdentities\[0\]\.__proto__: unrecognized field$/],
      [withLinks(2, [{ identityProvider: 'github', userId: '1003', token: 'access-token' }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.token: unrecognized field$/],
      [withLinks(2, [{ identityProvider: 'github', userId: '1' }, { identityProvider: 'github', userId: '2' }]), /^realm\.users\[2\]\.federatedIdentities\[1\]\.identityProvider: the user is linked to "github" twice$/],
      [withLinks(2, [{ identityProvider: 'gitlab', userId: '1' }]), /^realm\.users\[2\]\.federatedIdentities\[0\]\.identityProvider: identity provider "gitlab" does not exist$/],
      [{ ...withLinks(0, [{ identityProvider: 'github', userId: '1' }]), identityProviders: [] }, /^realm\.users\[0\]\.federatedIdentities\[0\]\.identityProvider: identity provider "github" does not exist$/],
    ];
    for (const [body, message] of cases) {
      const response = await api(t.url, 'POST', '/admin/realms', await token(), body);
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      // Keycloak's ErrorResponse, or its JSON reader's failure for a field of the wrong type or unknown.
      const { errorMessage, error_description } = response.body as { errorMessage?: string; error_description?: string };
      expect(errorMessage ?? error_description).toMatch(message);
    }
    kc.setConfig({ realmName: 'master' });
    expect(await kc.realms.findOne({ realm: 'bad' })).toBeFalsy();
    expect(await t.server.context.storage.realms.byName('bad')).toBeNull();
  });

  it('hostile input to the admin API: 400 for a bad body, 404 for an alias no provider has; nothing is linked', async () => {
    const bob = await userId('links', 'bob');
    const path = (alias: string) => `/admin/realms/links/users/${bob}/federated-identity/${encodeURIComponent(alias)}`;
    const bodies: [unknown, RegExp][] = [
      [JSON.parse('{"userId": "1", "__proto__": {"admin": true}}'), /__proto__: unrecognized field/],
      [{ userId: 'x'.repeat(10_000) }, /userId: must be at most 255 characters/],
      [{ userId: 1002 }, /userId: must be a string/],
      [{ userId: '1', userName: { toString: 'x' } }, /userName: must be a string/],
      [{ userName: 'no-id' }, /userId: is required/],
      [{ userId: '' }, /userId: must be at least 1 characters/],
      [{ identityProvider: 'github', userId: '1' }, /identityProvider: does not match the identity provider in the path/],
      [['corp'], /must be a JSON object/],
      ['"corp"', /must be a JSON object/],
    ];
    for (const [body, message] of bodies) {
      const response = await api(t.url, 'POST', path('corp'), await token(), body);
      expect(response.status, JSON.stringify(body).slice(0, 100)).toBe(400);
      // Keycloak's ErrorResponse, or its JSON reader's failure for a field of the wrong type or unknown.
      const { errorMessage, error_description } = response.body as { errorMessage?: string; error_description?: string };
      expect(errorMessage ?? error_description).toMatch(message);
    }
    // Longer than Keycloak's column (255) yet within the router's limit (500 characters, 414 beyond).
    for (const alias of ['x'.repeat(300), '../github', 'git\u0000hub', '%']) {
      expect((await api(t.url, 'POST', path(alias), await token(), { userId: '1' })).status).toBe(404);
      expect((await api(t.url, 'DELETE', path(alias), await token())).status).toBe(404);
    }
    expect((await api(t.url, 'POST', path('x'.repeat(10_000)), await token(), { userId: '1' })).status).toBe(414);
    expect((await api(t.url, 'GET', '/admin/realms/links/users/not-a-uuid/federated-identity', await token())).status).toBe(404);
    kc.setConfig({ realmName: 'links' });
    expect(await kc.users.listFederatedIdentities({ id: bob })).toEqual([{ identityProvider: 'github', userId: '1002' }]);
  });

  it('a caller with view-users lists links but neither links nor unlinks; with query-users it does not list them', async () => {
    const alice = await userId('links', 'alice');
    const viewer = await holding('links', 'link-viewer', ['view-users']);
    expect((await viewer.users.listFederatedIdentities({ id: alice })).map((l) => l.identityProvider)).toEqual(['corp', 'github']);
    await rejects(viewer.users.addToFederatedIdentity({ id: alice, federatedIdentityId: 'corp', federatedIdentity: { userId: 'mine' } }), 403);
    await rejects(viewer.users.delFromFederatedIdentity({ id: alice, federatedIdentityId: 'github' }), 403);
    const querier = await holding('links', 'link-querier', ['query-users']);
    await rejects(querier.users.listFederatedIdentities({ id: alice }), 403);
    // The role is checked before the user is looked up: an unknown user is 403 too, so ids cannot be probed.
    await rejects(querier.users.listFederatedIdentities({ id: 'f0000000-0000-4000-8000-000000000000' }), 403);
    await rejects(viewer.users.addToFederatedIdentity({ id: 'f0000000-0000-4000-8000-000000000000', federatedIdentityId: 'corp', federatedIdentity: { userId: 'x' } }), 403);
    // Managing identity providers is not managing users.
    const idpAdmin = await holding('links', 'link-idp-admin', ['manage-identity-providers']);
    await rejects(idpAdmin.users.addToFederatedIdentity({ id: alice, federatedIdentityId: 'corp', federatedIdentity: { userId: 'x' } }), 403);
    await rejects(idpAdmin.users.listFederatedIdentities({ id: alice }), 403);
    kc.setConfig({ realmName: 'links' });
    expect(await kc.users.listFederatedIdentities({ id: alice })).toEqual([
      { identityProvider: 'corp', userId: 'corp-alice', userName: 'alice@corp' },
      { identityProvider: 'github', userId: '1001', userName: 'alice-gh' },
    ]);
  });
});
