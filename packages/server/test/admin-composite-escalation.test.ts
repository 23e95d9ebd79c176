/**
 * Issue 33, findings 2 and 4: the admin-role rule (src/admin/permissions.ts, requireMayMapRoles) looks at what the
 * roles contain, not only at their names. A role whose composites hold realm-management's `realm-admin` (or master's
 * `admin`) reaches nobody through a limited administrator: not mapped to a user or a group, not joined through a
 * group, not put into the default roles, not brought by a partial import; and a partial import does not replace a
 * greater administrator's account. Tried as an attacker would, with the official admin client, on SQLite
 * (HTTP behaviour, issue 36); a realm-admin (and the master administrator) still does all of it.
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

const REALM = 'composites';
/** The refusal of the admin-role rule, naming the administrative role found inside the role given. */
const BEYOND = /Not allowed to grant the administrative role [a-z-]+.*the caller does not hold it/;

describe.each(httpDatabases)('a composite role is checked for what it contains (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let desk: { id: string; client: KcAdminClient };
  let registrar: { id: string; client: KcAdminClient };
  let importer: { id: string; client: KcAdminClient };
  let chief: { id: string; client: KcAdminClient };
  /** Realm roles made by the master administrator: boss ⊃ realm-admin, deputy ⊃ boss, plain. */
  const role = async (name: string) => (await kc.roles.findOneByName({ name }))!;

  const passwordOf = (username: string) => `${username}-pass-1`;
  /** A user of `realm` with a password and the named roles of its administration client, signed in with admin-cli. */
  async function person(realm: string, username: string, roles: string[]): Promise<{ id: string; client: KcAdminClient }> {
    kc.setConfig({ realmName: realm });
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: passwordOf(username), temporary: false }] });
    if (roles.length) {
      const [management] = await kc.clients.find({ clientId: realm === 'master' ? 'master-realm' : 'realm-management' });
      const all = await kc.clients.listRoles({ id: management.id! });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: roles.map((r) => all.find((x) => x.name === r)).map((r) => ({ id: r!.id!, name: r!.name! })) });
    }
    const client = new KcAdminClient({ baseUrl: t.url, realmName: realm });
    await client.auth({ grantType: 'password', clientId: 'admin-cli', username, password: passwordOf(username) });
    client.setConfig({ realmName: realm });
    kc.setConfig({ realmName: REALM });
    return { id, client };
  }
  const signIn = (realm: string, username: string, password = passwordOf(username)) =>
    tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password });
  /** The realm-management roles (or, in master, the realm roles) a fresh token of the user carries. */
  const tokenRoles = async (realm: string, username: string): Promise<string[]> => {
    const answer = await signIn(realm, username);
    expect(answer.status).toBe(200);
    const claims = JSON.parse(Buffer.from((answer.body.access_token as string).split('.')[1], 'base64url').toString());
    return realm === 'master' ? claims.realm_access?.roles ?? [] : claims.resource_access?.['realm-management']?.roles ?? [];
  };
  const asRep = (r: { id?: string; name?: string }) => ({ id: r.id!, name: r.name! });

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    const { management, roles } = await realmManagement(kc);
    await kc.roles.create({ name: 'boss' });
    await kc.roles.createComposite({ roleId: (await role('boss')).id! }, [roles.get('realm-admin')!]);
    await kc.roles.create({ name: 'deputy' });
    await kc.roles.createComposite({ roleId: (await role('deputy')).id! }, [asRep(await role('boss'))]);
    await kc.roles.create({ name: 'plain' });
    // A group carrying boss through its parent: joining the subgroup gives realm-admin.
    const { id: board } = await kc.groups.create({ name: 'board' });
    await kc.groups.addRealmRoleMappings({ id: board, roles: [asRep(await role('boss'))] });
    await kc.groups.createChildGroup({ id: board }, { name: 'committee' });
    expect(management).toBeTruthy();
    chief = await person(REALM, 'chief', ['realm-admin']);
    desk = await person(REALM, 'desk', ['manage-users']);
    registrar = await person(REALM, 'registrar', ['manage-realm']);
    importer = await person(REALM, 'importer', ['manage-realm', 'manage-users']);
    await kc.groups.create({ name: 'helpers' });
  }, 120_000);
  afterAll(() => t?.close());

  it('a manage-users holder cannot map to itself a role containing realm-admin, directly or two levels down', async () => {
    for (const name of ['boss', 'deputy']) {
      const message = await rejects(desk.client.users.addRealmRoleMappings({ id: desk.id, roles: [asRep(await role(name))] }), 403, BEYOND);
      expect(message).toContain(name);
    }
    expect(await kc.users.listRealmRoleMappings({ id: desk.id })).not.toEqual(expect.arrayContaining([expect.objectContaining({ name: 'boss' })]));
    expect(await tokenRoles(REALM, 'desk')).not.toContain('realm-admin');
    // An ordinary role still goes.
    await desk.client.users.addRealmRoleMappings({ id: desk.id, roles: [asRep(await role('plain'))] });
  });

  it('nor through a group: mapping the role to a group it is in, or joining a group (or subgroup) that carries it', async () => {
    const [helpers] = await kc.groups.find({ search: 'helpers' });
    await desk.client.users.addToGroup({ id: desk.id, groupId: helpers.id! });
    await rejects(desk.client.groups.addRealmRoleMappings({ id: helpers.id!, roles: [asRep(await role('deputy'))] }), 403, BEYOND);
    expect(await kc.groups.listRealmRoleMappings({ id: helpers.id! })).toEqual([]);
    const [board] = await kc.groups.find({ search: 'board' });
    const committee = (await kc.groups.listSubGroups({ parentId: board.id! })).find((g) => g.name === 'committee')!;
    for (const group of [board.id!, committee.id!]) await rejects(desk.client.users.addToGroup({ id: desk.id, groupId: group }), 403, BEYOND);
    expect((await kc.users.listGroups({ id: desk.id })).map((g) => g.name)).toEqual(['helpers']);
    expect(await tokenRoles(REALM, 'desk')).not.toContain('realm-admin');
  });

  it('a manage-realm holder cannot put such a role into the default roles, nor compose it into another role', async () => {
    const defaults = await role(`default-roles-${REALM}`);
    await rejects(registrar.client.roles.createComposite({ roleId: defaults.id! }, [asRep(await role('deputy'))]), 403, BEYOND);
    await rejects(registrar.client.roles.createComposite({ roleId: (await role('plain')).id! }, [asRep(await role('boss'))]), 403, BEYOND);
    expect((await kc.roles.getCompositeRoles({ id: defaults.id! })).map((r) => r.name)).not.toContain('deputy');
    expect(await kc.roles.getCompositeRoles({ id: (await role('plain')).id! })).toEqual([]);
    // Through a partial import of the default roles too.
    await rejects(
      registrar.client.realms.partialImport({ realm: REALM, rep: { ifResourceExists: 'OVERWRITE', roles: { realm: [{ name: `default-roles-${REALM}`, composites: { realm: ['boss'] } }] } } as never }),
      403,
      BEYOND,
    );
    // A user created afterwards holds no realm-admin.
    await person(REALM, 'newcomer', []);
    expect(await tokenRoles(REALM, 'newcomer')).not.toContain('realm-admin');
  });

  it("a partial import by a manage-realm + manage-users holder gives nobody such a role: users' realmRoles, groups, the file's groups", async () => {
    const attempts = [
      { ifResourceExists: 'SKIP', users: [{ username: 'sleeper', enabled: true, realmRoles: ['deputy'], credentials: [{ type: 'password', value: 'Sleeper-pass-1' }] }] },
      { ifResourceExists: 'SKIP', users: [{ username: 'sleeper', enabled: true, groups: ['/board/committee'], credentials: [{ type: 'password', value: 'Sleeper-pass-1' }] }] },
      { ifResourceExists: 'SKIP', groups: [{ name: 'cabal', realmRoles: ['boss'] }], users: [{ username: 'sleeper', enabled: true, groups: ['/cabal'] }] },
      // A role of the file composed of boss, then granted.
      { ifResourceExists: 'SKIP', roles: { realm: [{ name: 'ladder', composites: { realm: ['boss'] } }] }, users: [{ username: 'sleeper', enabled: true, realmRoles: ['ladder'] }] },
      // The importer itself overwritten with boss.
      { ifResourceExists: 'OVERWRITE', users: [{ username: 'importer', enabled: true, realmRoles: ['boss'], credentials: [{ type: 'password', value: passwordOf('importer') }] }] },
    ];
    for (const rep of attempts) await rejects(importer.client.realms.partialImport({ realm: REALM, rep: rep as never }), 403, BEYOND);
    expect(await kc.users.find({ username: 'sleeper', exact: true })).toEqual([]);
    expect(await kc.groups.find({ search: 'cabal' })).toEqual([]);
    expect(await kc.roles.findOneByName({ name: 'ladder' })).toBeFalsy();
    const [self] = await kc.users.find({ username: 'importer', exact: true });
    expect(self.id).toBe(importer.id);
    expect(await tokenRoles(REALM, 'importer')).not.toContain('realm-admin');
  });

  it("a partial import does not replace a greater administrator's account: OVERWRITE is refused, SKIP changes nothing", async () => {
    // The single-user endpoint refuses it…
    await rejects(importer.client.users.resetPassword({ id: chief.id, credential: { type: 'password', value: 'Owned-pass-123', temporary: false } }), 403, /administrative role/);
    // …and so does the import, naming the entry, before anything is written (the other user of the file neither).
    const takeover = {
      ifResourceExists: 'OVERWRITE',
      users: [
        { username: 'bystander', enabled: true },
        { username: 'chief', enabled: true, email: 'attacker@evil.example', credentials: [{ type: 'password', value: 'Owned-pass-123' }] },
      ],
    };
    const message = await rejects(importer.client.realms.partialImport({ realm: REALM, rep: takeover as never }), 403, /administrative role/);
    expect(message).toMatch(/^realm\.users\[1\] \("chief"\): Not allowed to change the account/);
    expect(await kc.users.find({ username: 'bystander', exact: true })).toEqual([]);
    const skip = await importer.client.realms.partialImport({ realm: REALM, rep: { ...takeover, ifResourceExists: 'SKIP' } as never });
    expect(skip.results.map((r) => [r.resourceName, r.action])).toEqual([['chief', 'SKIPPED'], ['bystander', 'ADDED']]);
    const [after] = await kc.users.find({ username: 'chief', exact: true });
    expect(after).toMatchObject({ id: chief.id, enabled: true });
    expect(after.email).toBeUndefined();
    expect((await signIn(REALM, 'chief')).status).toBe(200);
    expect((await signIn(REALM, 'chief', 'Owned-pass-123')).status).toBe(400);
    expect(await tokenRoles(REALM, 'chief')).toContain('realm-admin');
  });

  it("a user a partial import adds or replaces is checked as POST …/users checks it: policy, username, e-mail; the refusal names the entry", async () => {
    kc.setConfig({ realmName: REALM });
    await kc.realms.update({ realm: REALM }, { passwordPolicy: 'length(12)' });
    try {
      const file = (bad: Record<string, unknown>) => ({
        ifResourceExists: 'SKIP',
        // The first entry exists (skipped), the second is new, the third is refused: nothing of it is written.
        users: [{ username: 'chief', enabled: true }, { username: 'fine', enabled: true }, { username: 'refused', enabled: true, ...bad }],
      });
      const short = await api(t.url, 'POST', `/admin/realms/${REALM}/partialImport`, (await importer.client.getAccessToken())!, file({ credentials: [{ type: 'password', value: 'short' }] }));
      expect(short.status).toBe(400);
      expect(short.body.error_description).toContain('realm.users[2].credentials');
      await rejects(importer.client.realms.partialImport({ realm: REALM, rep: file({ email: 'not-an-address' }) as never }), 400, /realm\.users\[2\]\.email/);
      await rejects(importer.client.realms.partialImport({ realm: REALM, rep: file({ username: 'has space' }) as never }), 400, /realm\.users\[2\]\.username/);
      expect(await kc.users.find({ username: 'fine', exact: true })).toEqual([]);
    } finally {
      await kc.realms.update({ realm: REALM }, { passwordPolicy: '' });
    }
  });

  it("in master: an administrator limited to master-realm's roles cannot map a role containing master's admin", async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.roles.create({ name: 'overlord' });
    const admin = await kc.roles.findOneByName({ name: 'admin' });
    await kc.roles.createComposite({ roleId: (await kc.roles.findOneByName({ name: 'overlord' }))!.id! }, [asRep(admin!)]);
    const overlord = asRep((await kc.roles.findOneByName({ name: 'overlord' }))!);
    const masterDesk = await person('master', 'master-desk', ['manage-users', 'manage-realm']);
    const message = await rejects(masterDesk.client.users.addRealmRoleMappings({ id: masterDesk.id, roles: [overlord] }), 403, BEYOND);
    expect(message).toContain('overlord');
    expect(await tokenRoles('master', 'master-desk')).not.toContain('admin');
    // The master administrator may.
    kc.setConfig({ realmName: 'master' });
    await kc.users.addRealmRoleMappings({ id: masterDesk.id, roles: [overlord] });
    expect(await tokenRoles('master', 'master-desk')).toContain('admin');
    kc.setConfig({ realmName: REALM });
  });

  it('a realm-admin may do all of it: map, group, join, default roles, partial import, overwrite a peer', async () => {
    const boss = asRep(await role('boss'));
    const deputy = asRep(await role('deputy'));
    const { id: peer } = await person(REALM, 'peer', ['realm-admin']);
    const c = chief.client;
    await c.users.addRealmRoleMappings({ id: desk.id, roles: [deputy] });
    expect(await tokenRoles(REALM, 'desk')).toContain('realm-admin');
    await c.users.delRealmRoleMappings({ id: desk.id, roles: [deputy] });
    const [helpers] = await kc.groups.find({ search: 'helpers' });
    await c.groups.addRealmRoleMappings({ id: helpers.id!, roles: [boss] });
    await c.groups.delRealmRoleMappings({ id: helpers.id!, roles: [boss] });
    const [board] = await kc.groups.find({ search: 'board' });
    await c.users.addToGroup({ id: desk.id, groupId: board.id! });
    await c.users.delFromGroup({ id: desk.id, groupId: board.id! });
    const defaults = await role(`default-roles-${REALM}`);
    await c.roles.createComposite({ roleId: defaults.id! }, [deputy]);
    await c.roles.delCompositeRoles({ id: defaults.id! }, [deputy]);
    const result = await c.realms.partialImport({
      realm: REALM,
      rep: {
        ifResourceExists: 'OVERWRITE',
        users: [
          { username: 'heir', enabled: true, realmRoles: ['deputy'], groups: ['/board/committee'], credentials: [{ type: 'password', value: passwordOf('heir') }] },
          { username: 'peer', enabled: true, realmRoles: ['boss'], credentials: [{ type: 'password', value: 'Peer-new-pass-1' }] },
        ],
      } as never,
    });
    expect(result.results.map((r) => [r.resourceName, r.action])).toEqual([['peer', 'OVERWRITTEN'], ['heir', 'ADDED']]);
    expect(await tokenRoles(REALM, 'heir')).toContain('realm-admin');
    expect((await signIn(REALM, 'peer', 'Peer-new-pass-1')).status).toBe(200);
    expect(peer).toBeTruthy();
    // Taking it away again is the same rule: the manage-users holder may not, the realm-admin may.
    const [heir] = await kc.users.find({ username: 'heir', exact: true });
    await rejects(desk.client.users.delRealmRoleMappings({ id: heir.id!, roles: [deputy] }), 403, BEYOND);
    await c.users.delRealmRoleMappings({ id: heir.id!, roles: [deputy] });
  });
});
