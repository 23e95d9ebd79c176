/**
 * The console-only endpoints behind the role-mapping tabs (ui-ext/effective-roles-all, ui-ext/role-mapping-delete),
 * a user's Consents tab (offline tokens), a client's Keys tab (certificates/{attr}) and whoami, over HTTP with the
 * official admin client, on SQLite (HTTP behaviour, issue 36): Keycloak's shapes, and what an administrator holding less may not do.
 */
import { generateKeyPairSync } from 'node:crypto';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects } from './support/admin-client.js';
import { api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { selfSignedCertificate } from '../src/keys/certificate.js';

const REALM = 'mappings';

describe.each(httpDatabases)('console role-mapping, consents and keys endpoints (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;
  let managementId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    token = kc.accessToken!;
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    // reader ⊂ editor (composite); the group "staff" maps editor; bob is in staff and mapped to auditor directly.
    for (const name of ['auditor', 'editor', 'reader']) await kc.roles.create({ name, description: `the ${name}` });
    const role = async (name: string) => (await kc.roles.findOneByName({ name }))!;
    await kc.roles.createComposite({ roleId: (await role('editor')).id! }, [await role('reader')]);
    ids.app = (await kc.clients.create({ clientId: 'app', publicClient: false, directAccessGrantsEnabled: true, serviceAccountsEnabled: true, secret: 'app-secret' })).id;
    await kc.clients.createRole({ id: ids.app, name: 'app-user' });
    ids.group = (await kc.groups.create({ name: 'staff' })).id;
    await kc.groups.addRealmRoleMappings({ id: ids.group, roles: [{ id: (await role('editor')).id!, name: 'editor' }] });
    ids.bob = (await kc.users.create({ username: 'bob', enabled: true, email: 'bob@example.com', firstName: 'Bob', lastName: 'B', credentials: [{ type: 'password', value: 'bob-pass-1', temporary: false }] })).id;
    await kc.users.addToGroup({ id: ids.bob, groupId: ids.group });
    await kc.users.addRealmRoleMappings({ id: ids.bob, roles: [{ id: (await role('auditor')).id!, name: 'auditor' }] });
    const appRole = (await kc.clients.findRole({ id: ids.app, roleName: 'app-user' }))!;
    await kc.users.addClientRoleMappings({ id: ids.bob, clientUniqueId: ids.app, roles: [{ id: appRole.id!, name: 'app-user' }] });
    managementId = (await kc.clients.find({ clientId: 'realm-management' }))[0].id!;
  }, 120_000);
  afterAll(() => t?.close());

  const path = (p: string) => `/admin/realms/${REALM}/${p}`;
  const roleId = async (name: string) => (await kc.roles.findOneByName({ name }))!.id!;

  /** A user of the realm holding only the given realm-management roles, and its token. */
  async function administrator(username: string, roles: string[]): Promise<string> {
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: `${username}-pass-1`, temporary: false }] });
    const all = await kc.clients.listRoles({ id: managementId });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: managementId, roles: all.filter((r) => roles.includes(r.name!)).map((r) => ({ id: r.id!, name: r.name! })) });
    const response = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password: `${username}-pass-1` });
    expect(response.status).toBe(200);
    return response.body.access_token as string;
  }

  it('effective-roles-all lists direct, group and composite roles, realm roles first, then client roles by clientId', async () => {
    const rows = (await api(t.url, 'GET', path(`ui-ext/effective-roles-all/users/${ids.bob}`), token)).body as Record<string, unknown>[];
    const realmRows = rows.filter((r) => !r.clientRole).map((r) => r.name);
    // Direct (auditor), through the group (editor) and its composite (reader), the default role and its composites.
    expect(realmRows).toEqual(['auditor', `default-roles-${REALM}`, 'editor', 'offline_access', 'reader', 'uma_authorization']);
    expect(rows.find((r) => r.name === 'reader')).toEqual({ id: await roleId('reader'), name: 'reader', description: 'the reader', clientRole: false });
    const clientRows = rows.filter((r) => r.clientRole);
    expect(clientRows.map((r) => `${r.client}/${r.name}`)).toEqual(['account/manage-account', 'account/manage-account-links', 'account/view-profile', 'app/app-user']);
    expect(clientRows.at(-1)).toMatchObject({ client: 'app', clientId: ids.app, clientRole: true });
    // A group's: its own and what they contain.
    const group = (await api(t.url, 'GET', path(`ui-ext/effective-roles-all/groups/${ids.group}`), token)).body as { name: string }[];
    expect(group.map((r) => r.name)).toEqual(['editor', 'reader']);
    // A role's: the role itself and everything it contains, as Keycloak answers.
    const role = (await api(t.url, 'GET', path(`ui-ext/effective-roles-all/roles/${await roleId('editor')}`), token)).body as { name: string }[];
    expect(role.map((r) => r.name)).toEqual(['editor', 'reader']);
    expect((await api(t.url, 'GET', path('ui-ext/effective-roles-all/users/00000000-0000-4000-8000-000000000000'), token)).status).toBe(404);
  });

  it('role-mapping-delete removes realm and client roles of a user at once and records an admin event', async () => {
    await kc.realms.updateConfigEvents({ realm: REALM }, { adminEventsEnabled: true, adminEventsDetailsEnabled: true });
    const appRole = (await kc.clients.findRole({ id: ids.app, roleName: 'app-user' }))!;
    const body = [
      { roleId: await roleId('auditor'), roleName: 'auditor' },
      { roleId: appRole.id, roleName: 'app-user', clientId: ids.app },
    ];
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${ids.bob}`), token, body)).status).toBe(204);
    expect((await kc.users.listRealmRoleMappings({ id: ids.bob })).map((r) => r.name)).toEqual([`default-roles-${REALM}`]);
    expect(await kc.users.listClientRoleMappings({ id: ids.bob, clientUniqueId: ids.app })).toEqual([]);
    const [event] = await kc.realms.findAdminEvents({ realm: REALM, operationTypes: ['DELETE'] as never, max: 1 });
    expect(event).toMatchObject({ operationType: 'DELETE', resourceType: 'REALM_ROLE_MAPPING', resourcePath: `ui-ext/role-mapping-delete/users/${ids.bob}` });
    // All or nothing: one unknown role and nothing is removed.
    await kc.users.addRealmRoleMappings({ id: ids.bob, roles: [{ id: await roleId('auditor'), name: 'auditor' }] });
    const bad = await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${ids.bob}`), token, [{ roleId: await roleId('auditor') }, { roleId: '00000000-0000-4000-8000-000000000000' }]);
    expect(bad.status).toBe(404);
    expect((await kc.users.listRealmRoleMappings({ id: ids.bob })).map((r) => r.name)).toContain('auditor');
  });

  it('role-mapping-delete on a group, a client scope, a client and a role', async () => {
    const editor = await roleId('editor');
    const reader = await roleId('reader');
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/groups/${ids.group}`), token, [{ roleId: editor, roleName: 'editor' }])).status).toBe(204);
    expect(await kc.groups.listRealmRoleMappings({ id: ids.group })).toEqual([]);
    await kc.groups.addRealmRoleMappings({ id: ids.group, roles: [{ id: editor, name: 'editor' }] });

    await kc.clientScopes.create({ name: 'reports', protocol: 'openid-connect' });
    const scopeId = (await kc.clientScopes.findOneByName({ name: 'reports' }))!.id!;
    await kc.clientScopes.addRealmScopeMappings({ id: scopeId }, [{ id: reader, name: 'reader' }]);
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/clientScopes/${scopeId}`), token, [{ roleId: reader, roleName: 'reader' }])).status).toBe(204);
    expect(await kc.clientScopes.listRealmScopeMappings({ id: scopeId })).toEqual([]);

    await kc.clients.addRealmScopeMappings({ id: ids.app }, [{ id: reader, name: 'reader' }]);
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/clients/${ids.app}`), token, [{ roleId: reader, roleName: 'reader' }])).status).toBe(204);
    expect(await kc.clients.listRealmScopeMappings({ id: ids.app })).toEqual([]);

    await kc.roles.create({ name: 'bundle' });
    const composite = await roleId('bundle');
    await kc.roles.createComposite({ roleId: composite }, [{ id: reader, name: 'reader' }]);
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/roles/${composite}`), token, [{ roleId: reader, roleName: 'reader' }])).status).toBe(204);
    expect(await kc.roles.getCompositeRoles({ id: composite })).toEqual([]);
  });

  it('hostile bodies are refused with 400 and change nothing', async () => {
    for (const body of [{}, 'text', [{}], [{ roleId: 7 }], [null], [{ roleId: 'x'.repeat(10_000) }]]) {
      const response = await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${ids.bob}`), token, body);
      expect([400, 404], JSON.stringify(body).slice(0, 40)).toContain(response.status);
    }
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${ids.bob}`), token, JSON.parse('[{"roleId":"a","__proto__":{"polluted":1}}]'))).status).toBe(404);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await kc.users.listRealmRoleMappings({ id: ids.bob })).map((r) => r.name)).toContain('auditor');
  });

  it('an administrator holding less: view-users may look but not unassign; manage-users may not take away an admin role it lacks', async () => {
    const viewer = await administrator('viewer', ['view-users']);
    expect((await api(t.url, 'GET', path(`ui-ext/effective-roles-all/users/${ids.bob}`), viewer)).status).toBe(200);
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${ids.bob}`), viewer, [{ roleId: await roleId('auditor') }])).status).toBe(403);
    const querier = await administrator('querier', ['query-users']);
    expect((await api(t.url, 'GET', path(`ui-ext/effective-roles-all/users/${ids.bob}`), querier)).status).toBe(403);
    expect((await api(t.url, 'GET', path(`ui-ext/effective-roles-all/clients/${ids.app}`), viewer)).status).toBe(403);

    // The realm's top administrator holds realm-admin; a manage-users administrator cannot strip it (it does not hold
    // it), nor, through the same call, take view-users from itself and give nothing back.
    const top = (await kc.users.create({ username: 'top', enabled: true })).id;
    const realmAdmin = (await kc.clients.listRoles({ id: managementId })).find((r) => r.name === 'realm-admin')!;
    await kc.users.addClientRoleMappings({ id: top, clientUniqueId: managementId, roles: [{ id: realmAdmin.id!, name: 'realm-admin' }] });
    const manager = await administrator('manager', ['manage-users']);
    const refused = await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/users/${top}`), manager, [{ roleId: realmAdmin.id, roleName: 'realm-admin', clientId: managementId }]);
    expect(refused.status).toBe(403);
    expect((await kc.users.listClientRoleMappings({ id: top, clientUniqueId: managementId })).map((r) => r.name)).toEqual(['realm-admin']);
    // A client's scope mappings of a realm role need manage-realm besides manage-clients.
    const clientManager = await administrator('client-manager', ['manage-clients']);
    await kc.clients.addRealmScopeMappings({ id: ids.app }, [{ id: await roleId('reader'), name: 'reader' }]);
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/clients/${ids.app}`), clientManager, [{ roleId: await roleId('reader') }])).status).toBe(403);
    expect((await kc.clients.listRealmScopeMappings({ id: ids.app })).map((r) => r.name)).toEqual(['reader']);
    // A role's composites need manage-realm.
    expect((await api(t.url, 'POST', path(`ui-ext/role-mapping-delete/roles/${await roleId('editor')}`), manager, [{ roleId: await roleId('reader') }])).status).toBe(403);
    expect((await kc.roles.getCompositeRoles({ id: await roleId('editor') })).map((r) => r.name)).toEqual(['reader']);
  });

  it("Consents: a client holding the user's offline token is listed as Keycloak's 'Offline Token' grant, and revoked", async () => {
    expect(await kc.users.listConsents({ id: ids.bob })).toEqual([]);
    const grant = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'app', client_secret: 'app-secret', username: 'bob', password: 'bob-pass-1', scope: 'openid offline_access' });
    expect(grant.status).toBe(200);
    expect(await kc.users.listConsents({ id: ids.bob })).toEqual([
      { clientId: 'app', grantedClientScopes: [], createdDate: null, lastUpdatedDate: null, additionalGrants: [{ client: ids.app, key: 'Offline Token' }] },
    ]);
    const viewer = await administrator('consent-viewer', ['view-users']);
    expect((await api(t.url, 'GET', path(`users/${ids.bob}/consents`), viewer)).status).toBe(200);
    expect((await api(t.url, 'DELETE', path(`users/${ids.bob}/consents/app`), viewer)).status).toBe(403);
    await kc.users.revokeConsent({ id: ids.bob, clientId: 'app' });
    expect(await kc.users.listConsents({ id: ids.bob })).toEqual([]);
    const refresh = await tokenRequest(t.url, REALM, { grant_type: 'refresh_token', client_id: 'app', client_secret: 'app-secret', refresh_token: grant.body.refresh_token as string });
    expect(refresh.status).toBe(400);
  });

  it("whoami through the admin client: the master administrator's roles over the realm; a realm's viewer sees only its own", async () => {
    const master = new KcAdminClient({ baseUrl: t.url, realmName: 'master' });
    master.setAccessToken(token);
    const me = (await master.whoAmI.find({ currentRealm: REALM })) as unknown as { realm: string; createRealm: boolean; realm_access: Record<string, string[]> };
    expect(me).toMatchObject({ realm: 'master', createRealm: true });
    expect(me.realm_access[REALM]).toEqual(expect.arrayContaining(['manage-users', 'manage-clients', 'manage-realm', 'view-events']));
    const viewer = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
    viewer.setAccessToken(await administrator('whoami-viewer', ['view-clients']));
    const them = (await viewer.whoAmI.find({ currentRealm: REALM })) as unknown as { createRealm: boolean; realm_access: Record<string, string[]> };
    expect(them).toMatchObject({ createRealm: false, realm_access: { [REALM]: ['query-clients', 'view-clients'] } });
  });

  it("the client wizard's Authorization switch: a client with authorization services is refused with 400 naming the field, nothing created", async () => {
    await rejects(kc.clients.create({ clientId: 'with-authz', publicClient: false, serviceAccountsEnabled: true, authorizationServicesEnabled: true }), 400, /authorizationServicesEnabled: not supported/);
    expect(await kc.clients.find({ clientId: 'with-authz' })).toEqual([]);
  });

  it('Keys: the certificate attributes a client carries; generate makes a new key (issue 39)', async () => {
    expect(await kc.clients.getKeyInfo({ id: ids.app, attr: 'jwt.credential' })).toEqual({});
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const certificate = selfSignedCertificate(pair.privateKey, pair.publicKey, 'app').toString('base64');
    const current = (await kc.clients.findOne({ id: ids.app }))!;
    await kc.clients.update({ id: ids.app }, { ...current, attributes: { ...current.attributes, 'jwt.credential.certificate': certificate } });
    expect(await kc.clients.getKeyInfo({ id: ids.app, attr: 'jwt.credential' })).toEqual({ certificate });
    const viewer = await administrator('key-viewer', ['view-clients']);
    expect((await api(t.url, 'POST', path(`clients/${ids.app}/certificates/jwt.credential/generate`), viewer)).status).toBe(403);
    expect((await kc.clients.findOne({ id: ids.app }))!.attributes!['jwt.credential.certificate']).toBe(certificate);
    const generate = await api(t.url, 'POST', path(`clients/${ids.app}/certificates/jwt.credential/generate`), token);
    expect(generate.status).toBe(200);
    expect((await kc.clients.findOne({ id: ids.app }))!.attributes!['jwt.credential.certificate']).toBe(generate.body.certificate);
    // A certificate that does not parse is refused (400 naming the attribute), nothing written.
    const current2 = (await kc.clients.findOne({ id: ids.app }))!;
    await rejects(kc.clients.update({ id: ids.app }, { ...current2, attributes: { ...current2.attributes, 'jwt.credential.certificate': 'MIIBszCCAVmgAwIBAgIUexample' } }), 400, /jwt\.credential\.certificate/);
    await rejects(new KcAdminClient({ baseUrl: t.url, realmName: REALM }).clients.getKeyInfo({ id: ids.app, attr: 'jwt.credential' }), 401);
  });
});
