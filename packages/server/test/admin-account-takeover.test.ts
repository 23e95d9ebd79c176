/**
 * A limited administrator cannot take over a greater one's account (src/admin/permissions.ts,
 * requireMayChangeAccount): a manage-users holder may reset the password of, remove credentials from, change the
 * e-mail of, link, disable or delete an ordinary user, but not a user holding administrative roles it lacks — here
 * realm-admin in a realm, and the master realm's `admin`. Tried as an attacker would, with the official admin
 * client, on SQLite (HTTP behaviour, issue 36); after every refusal the victim still signs in with its own password.
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

const REALM = 'takeover';

describe.each(httpDatabases)('no limited administrator takes over a greater one (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let chief: string;
  let plain: string;
  let attacker: KcAdminClient;
  let attackerId: string;

  /** A user of `realm` with a password and the named realm-management roles; its own admin client, signed in. */
  async function person(admin: KcAdminClient, realm: string, username: string, roles: string[]): Promise<{ id: string; client: KcAdminClient }> {
    admin.setConfig({ realmName: realm });
    const { id } = await admin.users.create({ username, enabled: true, email: `${username}@example.test`, credentials: [{ type: 'password', value: `${username}-pass-1`, temporary: false }] });
    if (roles.length) {
      // A realm's own administrators hold realm-management's roles; master's, the `master-realm` client's.
      const [management] = await admin.clients.find({ clientId: realm === 'master' ? 'master-realm' : 'realm-management' });
      const all = await admin.clients.listRoles({ id: management.id! });
      await admin.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: roles.map((r) => all.find((role) => role.name === r)).map((r) => ({ id: r!.id!, name: r!.name! })) });
    }
    const client = new KcAdminClient({ baseUrl: t.url, realmName: realm });
    await client.auth({ grantType: 'password', clientId: 'admin-cli', username, password: `${username}-pass-1` });
    client.setConfig({ realmName: REALM });
    return { id, client };
  }
  const signsIn = async (realm: string, username: string, password = `${username}-pass-1`) =>
    (await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password })).status;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    chief = (await person(kc, REALM, 'chief', ['realm-admin'])).id;
    plain = (await person(kc, REALM, 'plain', [])).id;
    ({ id: attackerId, client: attacker } = await person(kc, REALM, 'helpdesk', ['manage-users']));
    kc.setConfig({ realmName: REALM });
  }, 120_000);
  afterAll(() => t?.close());

  it('a manage-users holder manages an ordinary user: password, credentials, e-mail, enabled', async () => {
    await attacker.users.resetPassword({ id: plain, credential: { type: 'password', value: 'Reset-by-desk-1', temporary: false } });
    expect(await signsIn(REALM, 'plain', 'Reset-by-desk-1')).toBe(200);
    await attacker.users.update({ id: plain }, { email: 'plain-new@example.test', enabled: true });
    expect((await kc.users.findOne({ id: plain }))?.email).toBe('plain-new@example.test');
    // Its own account, too: nothing it holds is beyond itself.
    await attacker.users.update({ id: attackerId }, { firstName: 'Help' });
  });

  it('but not the realm-admin: reset-password, credentials, e-mail, disabling and deleting are 403 and change nothing', async () => {
    // The role named is one of realm-admin's (the user holds them all through it).
    const message = /administrative role [a-z-]+, which the caller does not hold/;
    await rejects(attacker.users.resetPassword({ id: chief, credential: { type: 'password', value: 'Owned-pass-123', temporary: false } }), 403, message);
    await rejects(attacker.users.update({ id: chief }, { email: 'attacker@evil.example' }), 403, message);
    await rejects(attacker.users.update({ id: chief }, { credentials: [{ type: 'password', value: 'Owned-pass-123', temporary: false }] }), 403, message);
    await rejects(attacker.users.update({ id: chief }, { enabled: false }), 403, message);
    const [password] = await kc.users.getCredentials({ id: chief });
    await rejects(attacker.users.deleteCredential({ id: chief, credentialId: password.id! }), 403, message);
    await rejects(attacker.users.del({ id: chief }), 403, message);
    // A link to an identity provider would be a way in once brokering exists.
    await kc.identityProviders.create({ alias: 'corp', providerId: 'oidc', enabled: true, config: { clientId: 'rg' } });
    await rejects(attacker.users.addToFederatedIdentity({ id: chief, federatedIdentityId: 'corp', federatedIdentity: { userId: 'attacker-at-corp' } }), 403, message);
    expect(await kc.users.listFederatedIdentities({ id: chief })).toEqual([]);
    await attacker.users.addToFederatedIdentity({ id: plain, federatedIdentityId: 'corp', federatedIdentity: { userId: 'plain-at-corp' } });
    const after = await kc.users.findOne({ id: chief });
    expect(after).toMatchObject({ email: 'chief@example.test', enabled: true });
    expect(await signsIn(REALM, 'chief')).toBe(200);
    expect(await signsIn(REALM, 'chief', 'Owned-pass-123')).toBe(400);
  });

  it('the power may come through a group: a member of a group carrying realm-admin is protected the same way', async () => {
    const { management, roles } = await realmManagement(kc);
    const { id: board } = await kc.groups.create({ name: 'board' });
    await kc.groups.addClientRoleMappings({ id: board, clientUniqueId: management, roles: [roles.get('realm-admin')!] });
    const member = (await person(kc, REALM, 'member', [])).id;
    kc.setConfig({ realmName: REALM });
    await kc.users.addToGroup({ id: member, groupId: board });
    await rejects(attacker.users.resetPassword({ id: member, credential: { type: 'password', value: 'Owned-pass-123', temporary: false } }), 403, /administrative role/);
    expect(await signsIn(REALM, 'member')).toBe(200);
  });

  it('an administrator holding the same power may: a second realm-admin resets the first one’s password', async () => {
    const { client: peer } = await person(kc, REALM, 'peer', ['realm-admin']);
    kc.setConfig({ realmName: REALM });
    await peer.users.resetPassword({ id: chief, credential: { type: 'password', value: 'Chief-pass-2', temporary: false } });
    expect(await signsIn(REALM, 'chief', 'Chief-pass-2')).toBe(200);
  });

  it("the master realm: a master user holding manage-users over master cannot reset the master administrator's password", async () => {
    const { client: masterDesk } = await person(kc, 'master', 'master-desk', ['manage-users']);
    masterDesk.setConfig({ realmName: 'master' });
    kc.setConfig({ realmName: 'master' });
    const [admin] = await kc.users.find({ username: ADMIN_USERNAME, exact: true });
    await rejects(masterDesk.users.resetPassword({ id: admin.id!, credential: { type: 'password', value: 'Owned-pass-123', temporary: false } }), 403, /administrative role/);
    await rejects(masterDesk.users.update({ id: admin.id! }, { email: 'attacker@evil.example' }), 403);
    expect(await signsIn('master', ADMIN_USERNAME, ADMIN_PASSWORD)).toBe(200);
    kc.setConfig({ realmName: REALM });
  });

  it("a user's id asked of another realm answers only the caller itself, as Keycloak 26 (the console's Email tab)", async () => {
    kc.setConfig({ realmName: 'master' });
    const [masterAdmin] = await kc.users.find({ username: ADMIN_USERNAME, exact: true });
    // view-users of the master-realm client: over master only.
    const viewer = await person(kc, 'master', 'master-viewer', ['view-users']);
    kc.setConfig({ realmName: REALM });
    const get = async (client: KcAdminClient, id: string) => api(t.url, 'GET', `/admin/realms/${REALM}/users/${id}`, (await client.getAccessToken())!);
    // The master administrator reads itself through this realm's path…
    const self = await get(kc, masterAdmin.id!);
    expect(self.status).toBe(200);
    expect(self.body).toMatchObject({ id: masterAdmin.id, username: ADMIN_USERNAME });
    // …but no other master user.
    expect((await get(kc, viewer.id)).status).toBe(404);
    // A limited administrator of this realm asking for the master administrator's id gets 404, not the administrator.
    expect((await get(attacker, masterAdmin.id!)).status).toBe(404);
    // A master user without view-users over this realm gets 403, its own id included.
    expect((await get(viewer.client, viewer.id)).status).toBe(403);
  });
});
