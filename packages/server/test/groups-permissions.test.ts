import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement } from './support/admin-client.js';
import { api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Groups as a way around the admin-role rule, tried by limited administrators: a manage-users holder may
 * manage groups and their members (as in Keycloak) but cannot reach realm-admin through a group; a member of a
 * group that carries realm-admin is a realm administrator, as in Keycloak.
 */

const PASSWORD = 'Secret-pass-1';
const R = '/admin/realms/demo';

describe('groups and the admin-role rule', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let management: string;
  let mgmt: Map<string, { id: string; name: string }>;
  const users = new Map<string, string>();
  const groups = new Map<string, string>();
  const token = async (username: string) => {
    const response = await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.access_token as string;
  };
  const adminRolesOf = (accessToken: string) => ((decodeJwt(accessToken).resource_access as Record<string, { roles: string[] }> | undefined)?.['realm-management']?.roles ?? []).sort();
  const membersOf = async (group: string) => (await kc.groups.listMembers({ id: groups.get(group)! })).map((u) => u.username).sort();

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
    kc.setConfig({ realmName: 'demo' });
    ({ management, roles: mgmt } = await realmManagement(kc));
    await kc.roles.create({ name: 'plain' });
    for (const [username, role] of [['mu', 'manage-users'], ['mr', 'manage-realm'], ['vu', 'view-users'], ['ra', 'realm-admin'], ['target', null]] as const) {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      users.set(username, id);
      if (role) await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [mgmt.get(role)!] });
    }
    // The master administrator makes a group that carries realm-admin, with a subgroup, and an ordinary group.
    groups.set('admins', (await kc.groups.create({ name: 'admins' })).id);
    groups.set('admins-sub', (await kc.groups.createChildGroup({ id: groups.get('admins')! }, { name: 'sub' })).id);
    await kc.groups.addClientRoleMappings({ id: groups.get('admins')!, clientUniqueId: management, roles: [mgmt.get('realm-admin')!] });
    groups.set('staff', (await kc.groups.create({ name: 'staff' })).id);
  });
  afterAll(() => t?.close());

  it('manage-users manages groups and members, and maps ordinary roles to a group', async () => {
    const mu = await token('mu');
    const created = await api(t.url, 'POST', `${R}/groups`, mu, { name: 'team' });
    expect(created.status).toBe(201);
    const team = created.headers.get('location')!.split('/').pop()!;
    expect((await api(t.url, 'POST', `${R}/groups/${team}/children`, mu, { name: 'inner' })).status).toBe(201);
    expect((await api(t.url, 'PUT', `${R}/groups/${team}`, mu, { name: 'team2' })).status).toBe(204);
    const plain = (await kc.roles.findOneByName({ name: 'plain' }))!;
    expect((await api(t.url, 'POST', `${R}/groups/${team}/role-mappings/realm`, mu, [{ id: plain.id, name: 'plain' }])).status).toBe(204);
    // manage-users is within its own power: a group may carry it.
    expect((await api(t.url, 'POST', `${R}/groups/${team}/role-mappings/clients/${management}`, mu, [mgmt.get('view-users')])).status).toBe(204);
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('target')}/groups/${team}`, mu)).status).toBe(204);
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('target')}/groups/${groups.get('staff')}`, mu)).status).toBe(204);
    expect((await api(t.url, 'DELETE', `${R}/groups/${team}`, mu)).status).toBe(204);
    // view-users reads groups, changes nothing.
    const vu = await token('vu');
    expect((await api(t.url, 'GET', `${R}/groups`, vu)).status).toBe(200);
    expect((await api(t.url, 'GET', `${R}/groups/${groups.get('admins')}/members`, vu)).status).toBe(200);
    expect((await api(t.url, 'POST', `${R}/groups`, vu, { name: 'nope' })).status).toBe(403);
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('vu')}/groups/${groups.get('staff')}`, vu)).status).toBe(403);
  });

  it('manage-users cannot map realm-admin (or manage-realm) to a group, by id or by name, not even in a batch', async () => {
    const mu = await token('mu');
    const staff = groups.get('staff')!;
    for (const role of ['realm-admin', 'manage-realm', 'manage-clients']) {
      const byId = await api(t.url, 'POST', `${R}/groups/${staff}/role-mappings/clients/${management}`, mu, [mgmt.get(role)]);
      expect(byId.status, JSON.stringify(byId.body)).toBe(403);
      expect(byId.body.errorMessage).toContain(role);
      expect((await api(t.url, 'POST', `${R}/groups/${staff}/role-mappings/clients/${management}`, mu, [{ name: role }])).status).toBe(403);
    }
    expect((await api(t.url, 'POST', `${R}/groups/${staff}/role-mappings/clients/${management}`, mu, [mgmt.get('view-users'), mgmt.get('realm-admin')])).status).toBe(403);
    expect(await kc.groups.listClientRoleMappings({ id: staff, clientUniqueId: management })).toEqual([]);
    // Nor take it away from the admins group.
    expect((await api(t.url, 'DELETE', `${R}/groups/${groups.get('admins')}/role-mappings/clients/${management}`, mu, [mgmt.get('realm-admin')])).status).toBe(403);
    expect((await kc.groups.listClientRoleMappings({ id: groups.get('admins')!, clientUniqueId: management })).map((r) => r.name)).toEqual(['realm-admin']);
  });

  it('manage-users cannot join anyone (itself included) to a group carrying realm-admin, or to its subgroup', async () => {
    const mu = await token('mu');
    for (const group of ['admins', 'admins-sub']) {
      for (const who of ['mu', 'target']) {
        const joined = await api(t.url, 'PUT', `${R}/users/${users.get(who)}/groups/${groups.get(group)}`, mu);
        expect(joined.status, `${who} → ${group}: ${JSON.stringify(joined.body)}`).toBe(403);
        expect(joined.body.errorMessage).toContain('realm-admin');
      }
    }
    // Nor create a user straight into it.
    const created = await api(t.url, 'POST', `${R}/users`, mu, { username: 'sneaky', enabled: true, groups: ['/admins/sub'] });
    expect(created.status, JSON.stringify(created.body)).toBe(403);
    expect(await kc.users.find({ username: 'sneaky', exact: true })).toEqual([]);
    expect(await membersOf('admins')).toEqual([]);
    expect(await membersOf('admins-sub')).toEqual([]);
    expect(adminRolesOf(await token('mu'))).not.toContain('realm-admin');
  });

  it('manage-users cannot move a group with members under the admins group, nor make admin groups default; manage-realm cannot either', async () => {
    const mu = await token('mu');
    // mu is in staff (put there by the master administrator): moving staff under admins would make mu realm-admin.
    await kc.users.addToGroup({ id: users.get('mu')!, groupId: groups.get('staff')! });
    const moved = await api(t.url, 'POST', `${R}/groups/${groups.get('admins')}/children`, mu, { id: groups.get('staff'), name: 'staff' });
    expect(moved.status, JSON.stringify(moved.body)).toBe(403);
    expect((await kc.groups.findOne({ id: groups.get('staff')! }))!.path).toBe('/staff');
    // An empty group may move there (nobody gains anything), and be joined by nobody afterwards.
    const empty = (await kc.groups.create({ name: 'empty' })).id;
    expect((await api(t.url, 'POST', `${R}/groups/${groups.get('admins')}/children`, mu, { id: empty, name: 'empty' })).status).toBe(204);
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('mu')}/groups/${empty}`, mu)).status).toBe(403);
    // Default groups: manage-realm's business, and a group with admin roles only by who holds them.
    expect((await api(t.url, 'PUT', `${R}/default-groups/${groups.get('staff')}`, mu)).status).toBe(403);
    const mr = await token('mr');
    const asDefault = await api(t.url, 'PUT', `${R}/default-groups/${groups.get('admins')}`, mr);
    expect(asDefault.status, JSON.stringify(asDefault.body)).toBe(403);
    expect((await api(t.url, 'PUT', `${R}/default-groups/${groups.get('staff')}`, mr)).status).toBe(204);
    expect(await kc.realms.getDefaultGroups({ realm: 'demo' })).toEqual([expect.objectContaining({ name: 'staff' })]);
    expect((await api(t.url, 'DELETE', `${R}/default-groups/${groups.get('staff')}`, mr)).status).toBe(204);
  });

  it('a member of a group carrying realm-admin is realm-admin, at once; removed from it, the same token stops working', async () => {
    const ra = await token('ra');
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('target')}/groups/${groups.get('admins-sub')}`, ra)).status).toBe(204);
    const targetToken = await token('target');
    expect(adminRolesOf(targetToken)).toContain('realm-admin');
    expect((await api(t.url, 'GET', `${R}/clients`, targetToken)).status).toBe(200);
    expect((await api(t.url, 'POST', `${R}/roles`, targetToken, { name: 'made-by-target' })).status).toBe(201);
    expect((await kc.users.listCompositeClientRoleMappings({ id: users.get('target')!, clientUniqueId: management })).map((r) => r.name)).toContain('manage-realm');
    // manage-users cannot take it away (that is taking realm-admin from someone), realm-admin can.
    expect((await api(t.url, 'DELETE', `${R}/users/${users.get('target')}/groups/${groups.get('admins-sub')}`, await token('mu'))).status).toBe(403);
    expect((await api(t.url, 'DELETE', `${R}/groups/${groups.get('admins-sub')}`, await token('mu'))).status).toBe(403);
    expect((await api(t.url, 'DELETE', `${R}/users/${users.get('target')}/groups/${groups.get('admins-sub')}`, ra)).status).toBe(204);
    expect((await api(t.url, 'GET', `${R}/clients`, targetToken)).status).toBe(403);
  });

  it('realm-admin may do all of it (the rule is not a blanket refusal)', async () => {
    const ra = await token('ra');
    expect((await api(t.url, 'POST', `${R}/groups/${groups.get('staff')}/role-mappings/clients/${management}`, ra, [mgmt.get('manage-realm')])).status).toBe(204);
    expect((await api(t.url, 'PUT', `${R}/users/${users.get('target')}/groups/${groups.get('admins')}`, ra)).status).toBe(204);
    expect((await api(t.url, 'POST', `${R}/groups/${groups.get('admins')}/children`, ra, { id: groups.get('staff'), name: 'staff' })).status).toBe(204);
    expect((await api(t.url, 'PUT', `${R}/default-groups/${groups.get('admins-sub')}`, ra)).status).toBe(204);
    expect((await api(t.url, 'DELETE', `${R}/groups/${groups.get('admins')}`, ra)).status).toBe(204);
    expect(await kc.groups.count()).toEqual({ count: 0 });
  });
});
