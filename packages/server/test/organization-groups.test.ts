import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient, tokenOfUserWithRoles } from './support/admin-client.js';

/**
 * Issue 41, point 2: Keycloak 26.7's organization groups over plain HTTP (the official admin client of this version
 * has no methods for them): create, list, get, by path, update, delete, subgroups and moves, members (only the
 * organization's), a member's groups, role mappings; kept out of the realm's /groups, of a user's groups and of the
 * token's groups and roles; refused to an administrator who may only view.
 */
describe.each(databases)('organization groups (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;
  let acme: string;
  let other: string;
  let ann: string;
  let bob: string;
  const base = () => `${t.url}/admin/realms/orgs/organizations`;

  const call = async (method: string, path: string, body?: unknown, bearer = token) => {
    const response = await fetch(`${base()}${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, json: text ? JSON.parse(text) : undefined, location: response.headers.get('location') };
  };
  const create = async (org: string, name: string, parent?: string) => {
    const answer = await call('POST', parent ? `/${org}/groups/${parent}/children` : `/${org}/groups`, { name });
    expect(answer.status, JSON.stringify(answer.json)).toBe(201);
    return answer.json.id as string;
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    token = (await kc.getAccessToken())!;
    await kc.realms.create({ realm: 'orgs', enabled: true, organizationsEnabled: true, adminEventsEnabled: true });
    kc.setConfig({ realmName: 'orgs' });
    acme = (await kc.organizations.create({ name: 'acme', alias: 'acme', domains: [{ name: 'acme.example' }] })).id;
    other = (await kc.organizations.create({ name: 'other', alias: 'other', domains: [{ name: 'other.example' }] })).id;
    ann = (await kc.users.create({ username: 'ann', email: 'ann@acme.example', enabled: true, credentials: [{ type: 'password', value: 'ann-Pass-1', temporary: false }] })).id;
    bob = (await kc.users.create({ username: 'bob', enabled: true })).id;
    await kc.organizations.addMember({ orgId: acme, userId: ann });
  });
  afterAll(() => t?.close());

  it('creates, lists, reads, finds by path, renames and deletes groups and subgroups, as Keycloak answers', async () => {
    const eng = await create(acme, 'engineering');
    const created = await call('GET', `/${acme}/groups/${eng}`);
    expect(created.json).toMatchObject({ id: eng, name: 'engineering', path: '/engineering', subGroups: [], attributes: {}, realmRoles: [], clientRoles: {} });
    const post = await call('POST', `/${acme}/groups`, { name: 'sales', description: 'the sales', attributes: { region: ['eu'] } });
    expect(post.status).toBe(201);
    expect(post.location).toBe(`${base()}/${acme}/groups/${post.json.id}`);
    expect(post.json).toMatchObject({ name: 'sales', path: '/sales', description: 'the sales' });
    expect(post.json.attributes).toBeUndefined();
    const backend = await create(acme, 'backend', eng);
    expect((await call('GET', `/${acme}/groups`)).json.map((g: { name: string }) => g.name)).toEqual(['engineering', 'sales']);
    expect((await call('GET', `/${acme}/groups?search=back`)).json.map((g: { path: string }) => g.path)).toEqual(['/engineering/backend']);
    expect((await call('GET', `/${acme}/groups?q=region:eu`)).json.map((g: { name: string }) => g.name)).toEqual(['sales']);
    expect((await call('GET', `/${acme}/groups?subGroupsCount=true`)).json.find((g: { id: string }) => g.id === eng).subGroupCount).toBe(1);
    expect((await call('GET', `/${acme}/groups/${eng}/children`)).json.map((g: { id: string }) => g.id)).toEqual([backend]);
    expect((await call('GET', `/${acme}/groups/group-by-path/${encodeURIComponent('/engineering/backend')}`)).json.id).toBe(backend);
    expect(await call('GET', `/${acme}/groups/group-by-path/nowhere`)).toMatchObject({ status: 404 });

    // Keycloak's refusals: a name missing, a sibling taken, an id that is not the path's.
    expect((await call('POST', `/${acme}/groups`, { name: ' ' })).status).toBe(400);
    expect(await call('POST', `/${acme}/groups`, { name: 'sales' })).toMatchObject({ status: 409 });
    expect((await call('POST', `/${acme}/groups/${eng}/children`, { name: 'backend' })).status).toBe(409);
    expect((await call('PUT', `/${acme}/groups/${eng}`, { name: 'sales' })).status).toBe(409);
    expect((await call('PUT', `/${acme}/groups/${eng}`, { id: backend, name: 'x' })).status).toBe(400);

    // Another organization has a tree of its own: the same names are free there, and its groups are not acme's.
    const otherSales = await create(other, 'sales');
    expect((await call('GET', `/${acme}/groups/${otherSales}`)).status).toBe(400);
    expect((await call('POST', `/${acme}/groups`, { id: otherSales, name: 'sales' })).status).toBe(400);
    expect((await call('GET', `/${acme}/groups/00000000-0000-4000-8000-000000000000`)).status).toBe(404);

    // Update, move to the top level and back under a parent, delete with its subgroups.
    expect((await call('PUT', `/${acme}/groups/${backend}`, { name: 'platform', attributes: { a: ['b'] } })).status).toBe(204);
    expect((await call('GET', `/${acme}/groups/${backend}`)).json).toMatchObject({ name: 'platform', path: '/engineering/platform', attributes: { a: ['b'] } });
    expect((await call('POST', `/${acme}/groups`, { id: backend, name: 'platform' })).status).toBe(204);
    expect((await call('GET', `/${acme}/groups/${backend}`)).json.path).toBe('/platform');
    expect((await call('POST', `/${acme}/groups/${eng}/children`, { id: backend, name: 'platform' })).status).toBe(204);
    expect((await call('POST', `/${acme}/groups/${backend}/children`, { id: eng, name: 'engineering' })).status).toBe(400);
    expect((await call('DELETE', `/${acme}/groups/${eng}`)).status).toBe(204);
    expect((await call('GET', `/${acme}/groups/${backend}`)).status).toBe(404);

    const events = (await kc.realms.findAdminEvents({ realm: 'orgs', resourceTypes: ['ORGANIZATION_GROUP'] as never })) as { operationType: string; resourcePath: string }[];
    expect(events.some((e) => e.operationType === 'CREATE' && e.resourcePath === `organizations/${acme}/groups`)).toBe(true);
    expect(events.some((e) => e.operationType === 'DELETE' && e.resourcePath === `organizations/${acme}/groups/${eng}`)).toBe(true);
  });

  it('only members of the organization join its groups; they leave them with the organization', async () => {
    const team = await create(acme, 'team');
    expect(await call('PUT', `/${acme}/groups/${team}/members/${bob}`)).toMatchObject({ status: 400, json: { errorMessage: 'User is not member of the organization' } });
    expect((await call('PUT', `/${acme}/groups/${team}/members/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    expect((await call('PUT', `/${acme}/groups/${team}/members/${ann}`)).status).toBe(204);
    expect((await call('PUT', `/${acme}/groups/${team}/members/${ann}`)).status).toBe(409);
    const members = (await call('GET', `/${acme}/groups/${team}/members`)).json;
    expect(members.map((m: { username: string; membershipType: string }) => [m.username, m.membershipType])).toEqual([['ann', 'UNMANAGED']]);
    expect((await call('GET', `/${acme}/members/${ann}/groups`)).json.map((g: { name: string }) => g.name)).toEqual(['team']);

    // Not a realm group: not in the realm's listings, nor the user's groups, nor reachable through /groups.
    await kc.groups.create({ name: 'realm-group' });
    expect((await kc.groups.find()).map((g) => g.name)).toEqual(['realm-group']);
    expect(await kc.groups.count()).toEqual({ count: 1 });
    expect(await kc.users.listGroups({ id: ann })).toEqual([]);
    const viaRealm = await fetch(`${t.url}/admin/realms/orgs/groups/${team}`, { headers: { authorization: `Bearer ${token}` } });
    expect([viaRealm.status, ((await viaRealm.json()) as { errorMessage: string }).errorMessage]).toEqual([400, 'Cannot manage organization related group via non Organization API.']);
    const join = await fetch(`${t.url}/admin/realms/orgs/users/${bob}/groups/${team}`, { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
    expect(join.status).toBe(400);
    expect(await kc.users.listGroups({ id: bob })).toEqual([]);

    // Leaving the group, then the organization: its groups go with it.
    expect((await call('DELETE', `/${acme}/groups/${team}/members/${ann}`)).status).toBe(204);
    expect((await call('GET', `/${acme}/groups/${team}/members`)).json).toEqual([]);
    expect((await call('PUT', `/${acme}/groups/${team}/members/${ann}`)).status).toBe(204);
    await kc.organizations.delMember({ orgId: acme, userId: ann });
    expect((await call('GET', `/${acme}/groups/${team}/members`)).json).toEqual([]);
    await kc.organizations.addMember({ orgId: acme, userId: ann });
  });

  it("role mappings are kept and listed, and reach neither the members' roles nor the token's groups", async () => {
    await kc.roles.create({ name: 'org-only' });
    const role = (await kc.roles.findOneByName({ name: 'org-only' }))!;
    const staff = await create(acme, 'staff');
    expect((await call('POST', `/${acme}/groups/${staff}/role-mappings/realm`, [{ id: role.id, name: 'org-only' }])).status).toBe(204);
    expect((await call('GET', `/${acme}/groups/${staff}/role-mappings/realm`)).json.map((r: { name: string }) => r.name)).toEqual(['org-only']);
    expect((await call('GET', `/${acme}/groups/${staff}`)).json.realmRoles).toEqual(['org-only']);
    expect((await call('PUT', `/${acme}/groups/${staff}/members/${ann}`)).status).toBe(204);
    const effective = await kc.users.listCompositeRealmRoleMappings({ id: ann });
    expect(effective.map((r) => r.name)).not.toContain('org-only');
    const answer = await fetch(`${t.url}/realms/orgs/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'ann', password: 'ann-Pass-1' }),
    });
    const { access_token } = (await answer.json()) as { access_token: string };
    const claims = JSON.parse(Buffer.from(access_token.split('.')[1], 'base64url').toString());
    expect(claims.realm_access?.roles ?? []).not.toContain('org-only');
  });

  it('an administrator who may only view (view-realm, view-users) reads but cannot create, change or add members', async () => {
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'viewer', ['view-realm', 'view-users']);
    const usersOnly = await tokenOfUserWithRoles(kc, t.url, 'users-only', ['view-users', 'manage-users']);
    const group = await create(acme, 'guarded');
    expect((await call('GET', `/${acme}/groups`, undefined, viewer)).status).toBe(200);
    expect((await call('GET', `/${acme}/groups/${group}/members`, undefined, viewer)).status).toBe(200);
    expect((await call('POST', `/${acme}/groups`, { name: 'mine' }, viewer)).status).toBe(403);
    expect((await call('POST', `/${acme}/groups`, { name: 'mine' }, usersOnly)).status).toBe(403);
    expect((await call('PUT', `/${acme}/groups/${group}`, { name: 'renamed' }, viewer)).status).toBe(403);
    expect((await call('DELETE', `/${acme}/groups/${group}`, undefined, viewer)).status).toBe(403);
    expect((await call('PUT', `/${acme}/groups/${group}/members/${ann}`, undefined, viewer)).status).toBe(403);
    expect((await call('PUT', `/${acme}/groups/${group}/members/${ann}`, undefined, usersOnly)).status).toBe(403);
    expect((await call('GET', `/${acme}/groups`)).json.map((g: { name: string }) => g.name)).not.toContain('mine');
    expect((await call('GET', `/${acme}/groups/${group}`)).json.name).toBe('guarded');
  });
});
