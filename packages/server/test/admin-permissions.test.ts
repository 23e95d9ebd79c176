import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionsPath } from '../../../scripts/admin-permissions.js';
import { permissionTable } from '../src/admin/index.js';
import { requireRoutePermission, routePermission } from '../src/admin/route-permissions.js';
import type { ServerContext } from '../src/context.js';
import { adminRoutes, fillPath, type PathValues } from './support/admin-routes.js';
import { api, startServer, tokenRequest, ADMIN_PASSWORD, ADMIN_USERNAME, type TestServer, errorText } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Keycloak's admin-role rule, tried as a limited administrator would: each caller holds exactly one role and
 * tries to give itself (or anyone) more, through every route that maps or composes roles.
 */

const PASSWORD = 'Secret-pass-1';
type RoleRef = { id: string; name: string };

describe('admin permissions: nobody promotes themselves', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let management: string;
  const mgmt = new Map<string, RoleRef>();
  const users = new Map<string, string>();
  const token = async (realm: string, username: string) => {
    const response = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.access_token as string;
  };
  const adminRolesOf = (accessToken: string, clientId = 'realm-management') =>
    ((decodeJwt(accessToken).resource_access as Record<string, { roles: string[] }> | undefined)?.[clientId]?.roles ?? []).sort();
  const createUser = async (realm: string, username: string) => {
    kc.setConfig({ realmName: realm });
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    users.set(`${realm}/${username}`, id);
    return id;
  };
  const mapDemoRole = async (username: string, role: string) => {
    kc.setConfig({ realmName: 'demo' });
    await kc.users.addClientRoleMappings({ id: users.get(`demo/${username}`)!, clientUniqueId: management, roles: [mgmt.get(role)!] });
  };
  const directMappings = async (realm: string, userId: string) => {
    kc.setConfig({ realmName: realm });
    const all = await kc.users.listRoleMappings({ id: userId });
    return [
      ...(all.realmMappings ?? []).map((r) => r.name),
      ...Object.values(all.clientMappings ?? {}).flatMap((c: { client?: string; mappings?: { name?: string }[] }) => (c.mappings ?? []).map((r) => `${c.client}/${r.name}`)),
    ].sort();
  };

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
    await kc.realms.create({ realm: 'other', enabled: true });
    kc.setConfig({ realmName: 'demo' });
    const [rm] = await kc.clients.find({ clientId: 'realm-management' });
    management = rm.id!;
    for (const role of await kc.clients.listRoles({ id: management })) mgmt.set(role.name!, { id: role.id!, name: role.name! });
    await kc.roles.create({ name: 'plain' });
    await kc.roles.create({ name: 'other-plain' });
    for (const [username, role] of [['mu', 'manage-users'], ['mc', 'manage-clients'], ['mr', 'manage-realm'], ['vu', 'view-users'], ['ra', 'realm-admin']]) {
      await createUser('demo', username);
      await mapDemoRole(username, role);
    }
    await createUser('demo', 'target');
    await createUser('demo', 'nobody');
  });
  afterAll(() => t?.close());

  it('manage-users cannot map realm-admin (or manage-realm, manage-clients) to itself or to anyone, by id or by name', async () => {
    const mu = await token('demo', 'mu');
    const self = users.get('demo/mu')!;
    const path = (user: string) => `/admin/realms/demo/users/${user}/role-mappings/clients/${management}`;
    for (const role of ['realm-admin', 'manage-realm', 'manage-clients', 'impersonation', 'view-clients', 'manage-events']) {
      for (const body of [[mgmt.get(role)], [{ id: mgmt.get(role)!.id }], [{ name: role }]]) {
        for (const user of [self, users.get('demo/target')!]) {
          const response = await api(t.url, 'POST', path(user), mu, body);
          expect(response.status, `${role} ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`).toBe(403);
          expect(response.body.errorMessage).toContain(role);
        }
      }
    }
    expect(await directMappings('demo', self)).toEqual(['default-roles-demo', 'realm-management/manage-users']);
    expect(await directMappings('demo', users.get('demo/target')!)).toEqual(['default-roles-demo']);
    // The next token carries nothing new.
    expect(adminRolesOf(await token('demo', 'mu'))).toEqual(['manage-users']);
    // Taking an administrator's role away is the same rule.
    expect((await api(t.url, 'DELETE', path(users.get('demo/ra')!), mu, [mgmt.get('realm-admin')])).status).toBe(403);
    expect(await directMappings('demo', users.get('demo/ra')!)).toContain('realm-management/realm-admin');
  });

  it('manage-users may hand out what it holds or has the power of', async () => {
    const mu = await token('demo', 'mu');
    const target = users.get('demo/target')!;
    const path = `/admin/realms/demo/users/${target}/role-mappings/clients/${management}`;
    // What it holds or implies, and (as the real Keycloak answers) every query-* role, which reveals names only.
    const allowed = ['manage-users', 'view-users', 'query-users', 'query-groups', 'query-clients', 'query-realms'];
    for (const role of allowed) {
      const response = await api(t.url, 'POST', path, mu, [mgmt.get(role)]);
      expect(response.status, `${role}: ${JSON.stringify(response.body)}`).toBe(204);
    }
    expect((await api(t.url, 'POST', `/admin/realms/demo/users/${target}/role-mappings/realm`, mu, [{ name: 'plain' }])).status).toBe(204);
    expect(await directMappings('demo', target)).toEqual(['default-roles-demo', 'plain', ...allowed.map((r) => `realm-management/${r}`)].sort());
    expect((await api(t.url, 'DELETE', path, mu, allowed.map((r) => mgmt.get(r)))).status).toBe(204);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/users/${target}/role-mappings/realm`, mu, [{ name: 'plain' }])).status).toBe(204);
    expect(await directMappings('demo', target)).toEqual(['default-roles-demo']);
  });

  it('a batch with one forbidden role writes nothing: duplicates, a role of another client, 1,000 roles', async () => {
    const mu = await token('demo', 'mu');
    const target = users.get('demo/target')!;
    const realmPath = `/admin/realms/demo/users/${target}/role-mappings/realm`;
    const clientPath = `/admin/realms/demo/users/${target}/role-mappings/clients/${management}`;
    // Allowed roles first, the forbidden one last: still nothing is written.
    const batch = [mgmt.get('view-users'), mgmt.get('view-users'), { name: 'query-users' }, mgmt.get('realm-admin')];
    expect((await api(t.url, 'POST', clientPath, mu, batch)).status).toBe(403);
    const thousand = [...Array.from({ length: 999 }, () => ({ name: 'query-users' })), { name: 'realm-admin' }];
    expect((await api(t.url, 'POST', clientPath, mu, thousand)).status).toBe(403);
    expect((await api(t.url, 'POST', clientPath, mu, [...thousand, { name: 'query-users' }])).status).toBe(400);
    // A realm role named like an admin role is not one; an admin role's id sent to the realm-level path is not found there.
    expect((await api(t.url, 'POST', realmPath, mu, [{ id: mgmt.get('realm-admin')!.id }])).status).toBe(404);
    expect(await directMappings('demo', target)).toEqual(['default-roles-demo']);
  });

  it('manage-clients cannot add realm-admin to the composites of its own role, by name or by id', async () => {
    const mc = await token('demo', 'mc');
    const ownRole = mgmt.get('manage-clients')!;
    expect((await api(t.url, 'POST', `/admin/realms/demo/roles-by-id/${ownRole.id}/composites`, mc, [mgmt.get('realm-admin')])).status).toBe(403);
    // By name, a composites body names realm roles: realm-admin is none of them.
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${management}/roles/manage-clients/composites`, mc, [{ name: 'realm-admin' }])).status).toBe(404);
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${management}/roles/manage-clients/composites`, mc, [{ id: mgmt.get('realm-admin')!.id }])).status).toBe(403);
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${management}/roles/manage-clients/composites`, mc, [mgmt.get('manage-users')])).status).toBe(403);
    // Nor rename, delete or empty an administrative role, nor add one, nor delete or rename the client that holds them.
    expect((await api(t.url, 'PUT', `/admin/realms/demo/roles-by-id/${mgmt.get('realm-admin')!.id}`, mc, { name: 'renamed' })).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/clients/${management}/roles/manage-realm`, mc)).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/roles-by-id/${mgmt.get('realm-admin')!.id}/composites`, mc, [mgmt.get('manage-users')])).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/clients/${management}`, mc)).status).toBe(403);
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${management}/roles`, mc, { name: 'manage-everything' })).status).toBe(403);
    // The roles of realm-management are fixed for everyone, the realm's own realm-admin included (as in Keycloak).
    const ra = await token('demo', 'ra');
    expect((await api(t.url, 'POST', `/admin/realms/demo/roles-by-id/${ownRole.id}/composites`, ra, [mgmt.get('realm-admin')])).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/roles-by-id/${mgmt.get('realm-admin')!.id}/composites`, ra, [mgmt.get('manage-users')])).status).toBe(403);
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/clients/${management}`, ra)).status).toBe(403);
    const rename = await api(t.url, 'PUT', `/admin/realms/demo/clients/${management}`, mc, { clientId: 'renamed-management' });
    expect(rename.status).toBe(400);
    expect(errorText(rename.body)).toContain('clientId');
    kc.setConfig({ realmName: 'demo' });
    expect((await kc.roles.getCompositeRoles({ id: ownRole.id })).map((r) => r.name)).toEqual([]);
    expect((await kc.clients.findRole({ id: management, roleName: 'realm-admin' }))?.name).toBe('realm-admin');
    expect((await kc.clients.listRoles({ id: management })).length).toBe(19);
    // It may compose what it has the power of (create-client, view-clients) into a client role of its own.
    const { id: app } = await kc.clients.create({ clientId: 'composer-app' });
    await kc.clients.createRole({ id: app, name: 'bundle' });
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${app}/roles/bundle/composites`, mc, [mgmt.get('create-client'), mgmt.get('view-clients')])).status).toBe(204);
    // But not view-users, nor a realm role (that is manage-realm's).
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${app}/roles/bundle/composites`, mc, [mgmt.get('view-users')])).status).toBe(403);
    expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${app}/roles/bundle/composites`, mc, [{ name: 'plain' }])).status).toBe(403);
    expect((await kc.roles.getCompositeRoles({ id: (await kc.clients.findRole({ id: app, roleName: 'bundle' }))!.id! })).map((r) => r.name).sort()).toEqual(['create-client', 'view-clients']);
  });

  it('manage-realm cannot put realm-admin or manage-users into the default roles', async () => {
    const mr = await token('demo', 'mr');
    kc.setConfig({ realmName: 'demo' });
    const defaults = (await kc.roles.findOneByName({ name: 'default-roles-demo' }))!;
    for (const role of ['realm-admin', 'manage-users', 'view-users']) {
      expect((await api(t.url, 'POST', `/admin/realms/demo/roles/default-roles-demo/composites`, mr, [mgmt.get(role)])).status, role).toBe(403);
      expect((await api(t.url, 'POST', `/admin/realms/demo/roles-by-id/${defaults.id}/composites`, mr, [{ id: mgmt.get(role)!.id }])).status, role).toBe(403);
    }
    // A plain realm role is its business.
    expect((await api(t.url, 'POST', `/admin/realms/demo/roles/default-roles-demo/composites`, mr, [{ name: 'plain' }])).status).toBe(204);
    const composites = (await kc.roles.getCompositeRoles({ id: defaults.id! })).map((r) => r.name);
    expect(composites).toContain('plain');
    expect(composites).not.toContain('realm-admin');
    expect((await api(t.url, 'DELETE', `/admin/realms/demo/roles/default-roles-demo/composites`, mr, [{ name: 'plain' }])).status).toBe(204);
    // A new user gets no administrative role.
    await createUser('demo', 'newcomer');
    expect(adminRolesOf(await token('demo', 'newcomer'))).toEqual([]);
  });

  it('a role taken away stops working at once, though the token still names it', async () => {
    await createUser('demo', 'revoked');
    await mapDemoRole('revoked', 'manage-users');
    const issued = await token('demo', 'revoked');
    expect((await api(t.url, 'GET', '/admin/realms/demo/users', issued)).status).toBe(200);
    kc.setConfig({ realmName: 'demo' });
    await kc.users.delClientRoleMappings({ id: users.get('demo/revoked')!, clientUniqueId: management, roles: [mgmt.get('manage-users')!] });
    expect(adminRolesOf(issued)).toEqual(['manage-users']);
    expect((await api(t.url, 'GET', '/admin/realms/demo/users', issued)).status).toBe(403);
  });

  it('realm-admin may grant realm-admin (the rule is not a blanket refusal)', async () => {
    const ra = await token('demo', 'ra');
    const target = users.get('demo/target')!;
    const path = `/admin/realms/demo/users/${target}/role-mappings/clients/${management}`;
    expect((await api(t.url, 'POST', path, ra, [mgmt.get('realm-admin')])).status).toBe(204);
    expect(adminRolesOf(await token('demo', 'target'))).toContain('manage-realm');
    expect((await api(t.url, 'DELETE', path, ra, [mgmt.get('realm-admin')])).status).toBe(204);
    expect(adminRolesOf(await token('demo', 'target'))).toEqual([]);
  });

  describe('the master realm', () => {
    let masterClients: Map<string, string>;
    beforeAll(async () => {
      kc.setConfig({ realmName: 'master' });
      masterClients = new Map((await kc.clients.find()).map((c) => [c.clientId!, c.id!]));
    });
    const masterRole = async (clientId: string, name: string) => {
      kc.setConfig({ realmName: 'master' });
      const role = (await kc.clients.findRole({ id: masterClients.get(clientId)!, roleName: name }))!;
      return { id: role.id!, name: role.name! };
    };

    it("has master-realm and one {realm}-realm client per realm, no realm-management, and admin composed of them", async () => {
      expect([...masterClients.keys()]).toEqual(expect.arrayContaining(['master-realm', 'demo-realm', 'other-realm']));
      expect(masterClients.has('realm-management')).toBe(false);
      kc.setConfig({ realmName: 'master' });
      const demoRoles = (await kc.clients.listRoles({ id: masterClients.get('demo-realm')! })).map((r) => r.name).sort();
      expect(demoRoles).toContain('manage-users');
      expect(demoRoles).not.toContain('realm-admin');
      expect(demoRoles.length).toBe(18);
      const admin = (await kc.roles.findOneByName({ name: 'admin' }))!;
      const composite = await kc.roles.getCompositeRoles({ id: admin.id! });
      expect(composite.filter((r) => r.containerId === masterClients.get('demo-realm')).length).toBe(18);
      expect(composite.map((r) => r.name)).toContain('create-realm');
      // The admin's token names them.
      const adminToken = (await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD })).body.access_token as string;
      expect(adminRolesOf(adminToken, 'demo-realm')).toContain('manage-realm');
    });

    it('a master user holding demo-realm manage-users manages demo users and nothing else', async () => {
      const id = await createUser('master', 'demo-keeper');
      kc.setConfig({ realmName: 'master' });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: masterClients.get('demo-realm')!, roles: [await masterRole('demo-realm', 'manage-users')] });
      const keeper = await token('master', 'demo-keeper');
      expect((await api(t.url, 'GET', '/admin/realms/demo/users', keeper)).status).toBe(200);
      expect((await api(t.url, 'POST', '/admin/realms/demo/users', keeper, { username: 'made-by-keeper' })).status).toBe(201);
      expect((await api(t.url, 'GET', '/admin/realms/master/users', keeper)).status).toBe(403);
      expect((await api(t.url, 'GET', '/admin/realms/other/users', keeper)).status).toBe(403);
      expect((await api(t.url, 'GET', '/admin/realms/demo/clients', keeper)).status).toBe(403);
      expect((await api(t.url, 'GET', '/admin/realms', keeper)).body.map((r: { realm: string }) => r.realm)).toEqual(['demo']);
      // It tries to give itself more: master admin, another realm's roles, demo's manage-realm.
      const ownPath = (client: string) => `/admin/realms/master/users/${id}/role-mappings/clients/${masterClients.get(client)}`;
      expect((await api(t.url, 'POST', `/admin/realms/master/users/${id}/role-mappings/realm`, keeper, [{ name: 'admin' }])).status).toBe(403);
      expect((await api(t.url, 'POST', ownPath('demo-realm'), keeper, [{ name: 'manage-realm' }])).status).toBe(403);
      expect((await api(t.url, 'POST', ownPath('other-realm'), keeper, [{ name: 'manage-users' }])).status).toBe(403);
      expect(await directMappings('master', id)).toEqual(['default-roles-master', 'demo-realm/manage-users']);
    });

    it("a master user with master-realm manage-users cannot take the master admin role or another realm's roles", async () => {
      const id = await createUser('master', 'master-keeper');
      kc.setConfig({ realmName: 'master' });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: masterClients.get('master-realm')!, roles: [await masterRole('master-realm', 'manage-users')] });
      const keeper = await token('master', 'master-keeper');
      expect((await api(t.url, 'GET', '/admin/realms/master/users', keeper)).status).toBe(200);
      for (const body of [[{ name: 'admin' }], [{ name: 'create-realm' }]]) {
        expect((await api(t.url, 'POST', `/admin/realms/master/users/${id}/role-mappings/realm`, keeper, body)).status).toBe(403);
      }
      for (const [client, role] of [['demo-realm', 'manage-users'], ['demo-realm', 'view-users'], ['master-realm', 'manage-realm']]) {
        const path = `/admin/realms/master/users/${id}/role-mappings/clients/${masterClients.get(client)}`;
        expect((await api(t.url, 'POST', path, keeper, [{ name: role }])).status, `${client}/${role}`).toBe(403);
      }
      expect((await api(t.url, 'GET', '/admin/realms/demo/users', keeper)).status).toBe(403);
      expect(await directMappings('master', id)).toEqual(['default-roles-master', 'master-realm/manage-users']);
    });

    it('realms bring their master client with them: created, renamed, deleted', async () => {
      kc.setConfig({ realmName: 'master' });
      await kc.realms.create({ realm: 'passing', enabled: true });
      expect((await kc.clients.find({ clientId: 'passing-realm' })).length).toBe(1);
      await kc.realms.update({ realm: 'passing' }, { realm: 'renamed' });
      kc.setConfig({ realmName: 'master' });
      expect((await kc.clients.find({ clientId: 'passing-realm' })).length).toBe(0);
      expect((await kc.clients.find({ clientId: 'renamed-realm' })).length).toBe(1);
      await kc.realms.del({ realm: 'renamed' });
      kc.setConfig({ realmName: 'master' });
      expect((await kc.clients.find({ clientId: 'renamed-realm' })).length).toBe(0);
      // A client squatting on a future realm's name does not become its administration client.
      await kc.clients.create({ clientId: 'future-realm' });
      const refused = await api(t.url, 'POST', '/admin/realms', (await kc.getAccessToken())!, { realm: 'future', enabled: true });
      expect(refused.status).toBe(409);
      expect((await api(t.url, 'GET', '/admin/realms/future', (await kc.getAccessToken())!)).status).toBe(404);
    });

    it('a creator holding only create-realm administers the realm it made, and only that one', async () => {
      const id = await createUser('master', 'founder');
      kc.setConfig({ realmName: 'master' });
      const createRealm = (await kc.roles.findOneByName({ name: 'create-realm' }))!;
      await kc.users.addRealmRoleMappings({ id, roles: [{ id: createRealm.id!, name: 'create-realm' }] });
      const founder = await token('master', 'founder');
      expect((await api(t.url, 'POST', '/admin/realms', founder, { realm: 'founded', enabled: true })).status).toBe(201);
      const after = await token('master', 'founder');
      expect(adminRolesOf(after, 'founded-realm')).toContain('manage-realm');
      expect((await api(t.url, 'GET', '/admin/realms/founded/users', after)).status).toBe(200);
      expect((await api(t.url, 'GET', '/admin/realms/demo/users', after)).status).toBe(403);
    });
  });

  describe('token scope', () => {
    let thirdId: string;
    let thirdSecret: string;
    const thirdToken = async (username: string) => {
      const response = await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'third', client_secret: thirdSecret, username, password: PASSWORD });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body.access_token as string;
    };
    beforeAll(async () => {
      kc.setConfig({ realmName: 'demo' });
      ({ id: thirdId } = await kc.clients.create({ clientId: 'third', publicClient: false, directAccessGrantsEnabled: true, fullScopeAllowed: false }));
      thirdSecret = (await kc.clients.getClientSecret({ id: thirdId })).value!;
      await kc.clients.createRole({ id: thirdId, name: 'own' });
      const own = (await kc.clients.findRole({ id: thirdId, roleName: 'own' }))!;
      await createUser('demo', 'scoped');
      const scoped = users.get('demo/scoped')!;
      await kc.users.addClientRoleMappings({ id: scoped, clientUniqueId: management, roles: [mgmt.get('manage-users')!] });
      await kc.users.addClientRoleMappings({ id: scoped, clientUniqueId: thirdId, roles: [{ id: own.id!, name: 'own' }] });
      const plain = (await kc.roles.findOneByName({ name: 'plain' }))!;
      const otherPlain = (await kc.roles.findOneByName({ name: 'other-plain' }))!;
      await kc.users.addRealmRoleMappings({ id: scoped, roles: [{ id: plain.id!, name: 'plain' }, { id: otherPlain.id!, name: 'other-plain' }] });
    });

    it('fullScopeAllowed: false keeps every role out of the token but the client\'s own and its scope mappings', async () => {
      const before = decodeJwt(await thirdToken('scoped'));
      // No realm role in scope: no realm_access claim at all, as Keycloak's realm-role mapper writes none.
      expect(before.realm_access).toBeUndefined();
      expect(before.resource_access).toEqual({ third: { roles: ['own'] } });

      kc.setConfig({ realmName: 'demo' });
      const plain = (await kc.roles.findOneByName({ name: 'plain' }))!;
      await kc.clients.addRealmScopeMappings({ id: thirdId }, [{ id: plain.id!, name: 'plain' }]);
      expect((await kc.clients.listRealmScopeMappings({ id: thirdId })).map((r) => r.name)).toEqual(['plain']);
      expect((await kc.clients.listAvailableRealmScopeMappings({ id: thirdId })).map((r) => r.name)).not.toContain('plain');
      expect((await kc.clients.listCompositeRealmScopeMappings({ id: thirdId })).map((r) => r.name)).toEqual(['plain']);
      expect(await kc.clients.listScopeMappings({ id: thirdId })).toMatchObject({ realmMappings: [{ name: 'plain' }] });
      const after = decodeJwt(await thirdToken('scoped'));
      expect((after.realm_access as { roles: string[] }).roles).toEqual(['plain']);

      // The same user's token through a full-scope client carries everything.
      const full = decodeJwt(await token('demo', 'scoped'));
      expect((full.realm_access as { roles: string[] }).roles).toEqual(expect.arrayContaining(['plain', 'other-plain']));

      await kc.clients.delRealmScopeMappings({ id: thirdId }, [{ id: plain.id!, name: 'plain' }]);
      expect(decodeJwt(await thirdToken('scoped')).realm_access).toBeUndefined();
    });

    it("a third-party client's token does not work against the admin API, even for an administrator", async () => {
      const thirdParty = await thirdToken('scoped');
      expect(adminRolesOf(thirdParty)).toEqual([]);
      expect((await api(t.url, 'GET', '/admin/realms/demo/users', thirdParty)).status).toBe(403);
      expect((await api(t.url, 'GET', '/admin/realms/demo/users', await token('demo', 'scoped'))).status).toBe(200);
    });

    it('client scope mappings of a client role: add, list, available, composite, delete; and admin roles only by who holds them', async () => {
      kc.setConfig({ realmName: 'demo' });
      await kc.clients.addClientScopeMappings({ id: thirdId, client: management }, [mgmt.get('view-users')!]);
      expect((await kc.clients.listClientScopeMappings({ id: thirdId, client: management })).map((r) => r.name)).toEqual(['view-users']);
      expect((await kc.clients.listCompositeClientScopeMappings({ id: thirdId, client: management })).map((r) => r.name).sort()).toEqual(['query-groups', 'query-users', 'view-users']);
      expect((await kc.clients.listAvailableClientScopeMappings({ id: thirdId, client: management })).map((r) => r.name)).not.toContain('view-users');
      // The user holds manage-users, which is not in this scope: the token carries the intersection, nothing.
      expect(adminRolesOf(await thirdToken('scoped'))).toEqual([]);
      await kc.clients.addClientScopeMappings({ id: thirdId, client: management }, [mgmt.get('manage-users')!]);
      expect(adminRolesOf(await thirdToken('scoped'))).toEqual(['manage-users']);
      const all = await kc.clients.listScopeMappings({ id: thirdId });
      expect(all.clientMappings?.['realm-management']).toMatchObject({ id: management, client: 'realm-management', mappings: [{ name: 'manage-users' }, { name: 'view-users' }] });
      await kc.clients.delClientScopeMappings({ id: thirdId, client: management }, [mgmt.get('view-users')!, mgmt.get('manage-users')!]);
      expect(await kc.clients.listClientScopeMappings({ id: thirdId, client: management })).toEqual([]);

      // manage-clients edits client-role scopes (a scope only narrows what a token carries, so Keycloak applies no
      // admin-role rule here); a realm-role scope also needs manage-realm.
      const mc = await token('demo', 'mc');
      const path = `/admin/realms/demo/clients/${thirdId}/scope-mappings/clients/${management}`;
      expect((await api(t.url, 'POST', path, mc, [mgmt.get('manage-users')])).status).toBe(204);
      expect(adminRolesOf(await thirdToken('scoped'))).toEqual(['manage-users']);
      expect((await api(t.url, 'DELETE', path, mc, [mgmt.get('manage-users')])).status).toBe(204);
      expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${thirdId}/scope-mappings/realm`, mc, [{ name: 'plain' }])).status).toBe(403);
      expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${thirdId}/scope-mappings/realm`, await token('demo', 'ra'), [{ name: 'plain' }])).status).toBe(204);
      // view-users reads no client's scope; manage-users changes none.
      expect((await api(t.url, 'GET', `/admin/realms/demo/clients/${thirdId}/scope-mappings`, await token('demo', 'vu'))).status).toBe(403);
      expect((await api(t.url, 'POST', `/admin/realms/demo/clients/${thirdId}/scope-mappings/realm`, await token('demo', 'mu'), [{ name: 'other-plain' }])).status).toBe(403);
    });
  });

  describe('every admin route, by a caller holding one role that does not cover it', () => {
    const single: Record<string, string> = {
      'view-realm': 'one-vr', 'manage-realm': 'mr', 'view-users': 'vu', 'manage-users': 'mu',
      'view-clients': 'one-vc', 'manage-clients': 'mc', 'view-events': 'one-ve', 'manage-events': 'one-me',
    };
    // Written here, not imported: manage-X covers view-X, view-users and manage-users cover query-groups (listing groups),
    // view-realm and manage-realm cover view-identity-providers (reading identity providers, as Keycloak).
    const covers = (held: string, needed: string) =>
      held === needed ||
      (held.startsWith('manage-') && needed === `view-${held.slice(7)}`) ||
      (needed === 'query-groups' && ['view-users', 'manage-users'].includes(held)) ||
      (needed === 'view-identity-providers' && ['view-realm', 'manage-realm'].includes(held));
    let values: PathValues;
    const tokens = new Map<string, string>();
    beforeAll(async () => {
      for (const [role, username] of Object.entries(single)) {
        if (!users.has(`demo/${username}`)) {
          await createUser('demo', username);
          await mapDemoRole(username, role);
        }
        tokens.set(role, await token('demo', username));
      }
      kc.setConfig({ realmName: 'demo' });
      const { id: client } = await kc.clients.create({ clientId: 'fixture-app' });
      await kc.clients.createRole({ id: client, name: 'fixture-role' });
      await kc.roles.create({ name: 'fixture-role' });
      const role = (await kc.roles.findOneByName({ name: 'fixture-role' }))!;
      const user = await createUser('demo', 'fixture-user');
      const { id: scope } = await kc.clientScopes.create({ name: 'fixture-scope', protocol: 'openid-connect' });
      await kc.clientScopes.addProtocolMapper({ id: scope }, { name: 'fixture-mapper', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'x', 'claim.value': 'y' } });
      const [mapper] = await kc.clientScopes.listProtocolMappers({ id: scope });
      values = { realm: 'demo', 'clients:id': client, 'users:id': user, 'roles-by-id:id': role.id!, 'roles:id': role.id!, 'clientScopes:id': scope, 'organizations:id': randomUUID(), roleName: 'fixture-role', client, userId: user, flow: 'browser', 'client-scopes:id': scope, scopeId: scope, mapperId: mapper.id!, protocol: 'openid-connect' };
    });

    it('answers 403 to every role below the table\'s requirement, and lets a covering role read', async () => {
      const routes = adminRoutes(t.server.app);
      let checked = 0;
      for (const route of routes) {
        const needed = routePermission(route.method, route.url)!.roles;
        if (needed.length === 0 || needed.includes('create-realm')) continue;
        for (const [held, accessToken] of tokens) {
          const enough = needed.every((n) => covers(held, n));
          if (enough && route.method !== 'GET') continue;
          const response = await api(t.url, route.method, fillPath(route.url, values), accessToken);
          const label = `${route.method} ${route.url} with only ${held}: ${JSON.stringify(response.body)}`;
          if (enough) expect(response.status, label).not.toBe(403);
          else expect(response.status, label).toBe(403);
          checked += 1;
        }
      }
      expect(checked).toBeGreaterThan(500);
      kc.setConfig({ realmName: 'demo' });
      expect((await kc.users.findOne({ id: values['users:id'] }))?.username).toBe('fixture-user');
      expect((await kc.clients.findOne({ id: values['clients:id'] }))?.clientId).toBe('fixture-app');
    });

    it('lets a covering role through every write: with unknown ids the answer is the handler\'s (404, 400), never 403', async () => {
      // A realm of its own, since these writes run: a DELETE of the realm itself is sent last.
      kc.setConfig({ realmName: 'master' });
      await kc.realms.create({ realm: 'sweep', enabled: true });
      kc.setConfig({ realmName: 'sweep' });
      const [rm] = await kc.clients.find({ clientId: 'realm-management' });
      const roles = new Map((await kc.clients.listRoles({ id: rm.id! })).map((r) => [r.name!, r]));
      const sweepTokens = new Map<string, string>();
      for (const role of Object.keys(single)) {
        const { id } = await kc.users.create({ username: `sweep-${role}`, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
        await kc.users.addClientRoleMappings({ id, clientUniqueId: rm.id!, roles: [{ id: roles.get(role)!.id!, name: role }] });
        sweepTokens.set(role, await token('sweep', `sweep-${role}`));
      }
      // Every path parameter but the realm names nothing that exists (an id, a name, an alias alike).
      // (Looked up as `<previous segment>:<name>:<next segment>` first: see fillPath.)
      const unknown = new Proxy({} as PathValues, { get: (_, key) => (String(key).split(':').includes('realm') || key === 'realm' ? 'sweep' : randomUUID()) });
      const writes = adminRoutes(t.server.app)
        .filter((r) => r.method !== 'GET' && r.url.startsWith('/admin/realms/:realm'))
        .sort((a, b) => Number(a.url === '/admin/realms/:realm' && a.method === 'DELETE') - Number(b.url === '/admin/realms/:realm' && b.method === 'DELETE'));
      let checked = 0;
      for (const route of writes) {
        const needed = routePermission(route.method, route.url)!.roles;
        const holder = [...sweepTokens.keys()].find((held) => needed.length > 0 && needed.every((n) => covers(held, n)));
        if (!holder) continue;
        const response = await api(t.url, route.method, fillPath(route.url, unknown), sweepTokens.get(holder)!, []);
        expect(response.status, `${route.method} ${route.url} with ${holder}: ${JSON.stringify(response.body)}`).not.toBe(403);
        expect(response.status, `${route.method} ${route.url} with ${holder}`).toBeLessThan(500);
        checked += 1;
      }
      expect(checked).toBeGreaterThan(80);
    });

    it('refuses a caller without any administrative role on every route but the signed-in ones', async () => {
      const nobody = await token('demo', 'nobody');
      let checked = 0;
      for (const route of adminRoutes(t.server.app)) {
        const permission = routePermission(route.method, route.url)!;
        if (permission.caller === 'signed-in' || permission.caller === 'public') continue;
        const response = await api(t.url, route.method, fillPath(route.url, values), nobody);
        expect(response.status, `${route.method} ${route.url}: ${JSON.stringify(response.body)}`).toBe(403);
        checked += 1;
      }
      expect(checked).toBeGreaterThan(200);
      kc.setConfig({ realmName: 'demo' });
      expect((await kc.users.findOne({ id: values['users:id'] }))?.username).toBe('fixture-user');
    });

    it('has an entry for every admin route the server registers, each naming its roles or who passes', () => {
      const routes = adminRoutes(t.server.app);
      expect(routes.length).toBeGreaterThan(200);
      for (const route of routes) {
        const permission = routePermission(route.method, route.url);
        expect(permission, `${route.method} ${route.url}`).not.toBeNull();
        expect(permission!.roles.length > 0, `${route.method} ${route.url}: roles, or caller alone`).toBe(permission!.caller === undefined);
      }
    });

    it('refuses at the door a route the table does not list (deny by default), before looking at the realm', async () => {
      const request = {
        adminAuth: { realm: { id: 'x', name: 'master' }, claims: { realm_access: { roles: ['admin'] } } },
        method: 'GET',
        params: { realm: 'demo' },
        routeOptions: { url: '/admin/realms/:realm/not-in-the-table', config: {} },
      };
      await expect(requireRoutePermission({} as ServerContext, request as never)).rejects.toMatchObject({ status: 403 });
    });

    it('lists every route in docs/admin-permissions.md, as npm run docs:permissions writes it', () => {
      expect(readFileSync(permissionsPath, 'utf8')).toBe(permissionTable(adminRoutes(t.server.app)));
    });
  });

  it('serverinfo is for administrators only', async () => {
    expect((await api(t.url, 'GET', '/admin/serverinfo', await token('demo', 'nobody'))).status).toBe(403);
    expect((await api(t.url, 'GET', '/admin/serverinfo', await token('demo', 'vu'))).status).toBe(200);
  });
});

describe('a database made before the master admin model is upgraded at start-up', () => {
  it('master realm-management becomes master-realm, every realm gets its {realm}-realm client, holders keep their power', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-upgrade-'));
    const dbUrl = `sqlite:${join(dir, 'old.db')}`;
    try {
      let t = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      const kc = await masterAdminClient(t.url);
      await kc.realms.create({ realm: 'legacy', enabled: true });
      const { id: operator } = await kc.users.create({ username: 'operator', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      // Rewind the database to the earlier model: master's management client was realm-management with a
      // realm-admin role (the admin role's composite, and held directly by `operator`); no {realm}-realm clients.
      const { db } = t.server.context.storage;
      const master = await db.selectFrom('realm').select('id').where('name', '=', 'master').executeTakeFirstOrThrow();
      await db.deleteFrom('role').where('container_id', 'in', db.selectFrom('client').select('id').where('realm_id', '=', master.id).where('client_id', '=', 'legacy-realm')).execute();
      await db.deleteFrom('client').where('realm_id', '=', master.id).where('client_id', '=', 'legacy-realm').execute();
      const managementClient = await db.selectFrom('client').select('id').where('realm_id', '=', master.id).where('client_id', '=', 'master-realm').executeTakeFirstOrThrow();
      await db.updateTable('client').set({ client_id: 'realm-management' }).where('id', '=', managementClient.id).execute();
      const admin = await db.selectFrom('role').select('id').where('container_id', '=', master.id).where('name', '=', 'admin').executeTakeFirstOrThrow();
      const managementRoles = await db.selectFrom('role').select('id').where('container_id', '=', managementClient.id).execute();
      await db.deleteFrom('role_composite').where('parent_id', '=', admin.id).where('child_id', 'in', managementRoles.map((r) => r.id)).execute();
      const realmAdmin = 'aaaaaaaa-0000-4000-8000-000000000001';
      await db.insertInto('role').values({ id: realmAdmin, realm_id: master.id, container_id: managementClient.id, client_role: 1, name: 'realm-admin', description: null }).execute();
      await db.insertInto('role_composite').values([{ parent_id: admin.id, child_id: realmAdmin }, ...managementRoles.map((r) => ({ parent_id: realmAdmin, child_id: r.id }))]).execute();
      await db.insertInto('user_role').values({ user_id: operator!, role_id: realmAdmin }).execute();
      await t.close();

      t = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      try {
        const after = await masterAdminClient(t.url);
        const clientIds = (await after.clients.find()).map((c) => c.clientId);
        expect(clientIds).toEqual(expect.arrayContaining(['master-realm', 'legacy-realm']));
        expect(clientIds).not.toContain('realm-management');
        const [masterRealm] = await after.clients.find({ clientId: 'master-realm' });
        expect((await after.clients.listRoles({ id: masterRealm.id! })).map((r) => r.name)).not.toContain('realm-admin');
        expect(t.logs.some((l) => l.msg === 'master realm: administration clients added for existing realms')).toBe(true);
        // The administrator administers both realms; the operator keeps master (and only master).
        expect((await api(t.url, 'GET', '/admin/realms/legacy/users', (await after.getAccessToken())!)).status).toBe(200);
        const operatorToken = (await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'operator', password: PASSWORD })).body.access_token as string;
        expect((await api(t.url, 'GET', '/admin/realms/master/users', operatorToken)).status).toBe(200);
        expect((await api(t.url, 'GET', '/admin/realms/legacy/users', operatorToken)).status).toBe(403);
      } finally {
        await t.close();
      }
      // A second start finds nothing to do.
      const again = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      expect(again.logs.some((l) => l.msg === 'master realm: administration clients added for existing realms')).toBe(false);
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
