import KcAdminClient from '@keycloak/keycloak-admin-client';
import type GroupRepresentation from '@keycloak/keycloak-admin-client/lib/defs/groupRepresentation.js';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects } from './support/admin-client.js';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { api, httpDatabases, startServer, type TestServer } from './support/server.js';

/**
 * Groups as Keycloak 26 has them, through the official admin client: the tree, searches, role mappings,
 * members, a user's groups, default groups, realm import, and the roles a group gives its members in tokens.
 * HTTP behaviour on SQLite (issue 36); what the groups repository stores is checked on both databases by
 * storage-groups.test.ts, and the one behaviour that differs by database (concurrent tree changes) runs on both here.
 */

const REALM = 'teams';
const PASSWORD = 'Group-pass-1';

describe.each(httpDatabases)('groups through the official admin client (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let clientUuid: string;
  let secret: string;
  const roles = new Map<string, { id: string; name: string }>();
  const ids = new Map<string, string>();
  const id = (name: string) => ids.get(name)!;
  const userId = async (username: string) => (await kc.users.find({ username, exact: true }))[0].id!;
  const names = (groups: GroupRepresentation[]) => groups.map((g) => g.name);

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true, registrationAllowed: true });
    kc.setConfig({ realmName: REALM });
    ({ id: clientUuid } = await kc.clients.create({ clientId: 'api', publicClient: false, directAccessGrantsEnabled: true, serviceAccountsEnabled: true, redirectUris: ['http://127.0.0.1:9/cb'] }));
    secret = (await kc.clients.getClientSecret({ id: clientUuid })).value!;
    for (const name of ['reader', 'writer', 'auditor', 'composite-boss']) {
      await kc.roles.create({ name });
      const role = (await kc.roles.findOneByName({ name }))!;
      roles.set(name, { id: role.id!, name });
    }
    await kc.roles.createComposite({ roleId: roles.get('composite-boss')!.id }, [roles.get('auditor')!]);
    await kc.clients.createRole({ id: clientUuid, name: 'deploy' });
    await kc.clients.createRole({ id: clientUuid, name: 'observe' });
    for (const username of ['ann', 'ben', 'cid']) {
      await kc.users.create({ username, enabled: true, email: `${username}@example.com`, firstName: 'F', lastName: 'L', emailVerified: true, credentials: [{ type: 'password', value: PASSWORD }] });
    }
  });
  afterAll(() => t?.close());

  it('builds a tree: top-level groups and subgroups with path, parentId, subGroupCount, attributes', async () => {
    ids.set('eng', (await kc.groups.create({ name: 'eng', description: 'Engineering', attributes: { site: ['paris'], cost: ['42'] } })).id);
    ids.set('ops', (await kc.groups.create({ name: 'ops' })).id);
    ids.set('sales', (await kc.groups.create({ name: 'sales', attributes: { site: ['lyon'] } })).id);
    ids.set('backend', (await kc.groups.createChildGroup({ id: id('eng') }, { name: 'backend', attributes: { site: ['lyon'] } })).id);
    ids.set('frontend', (await kc.groups.createChildGroup({ id: id('eng') }, { name: 'frontend' })).id);
    ids.set('db', (await kc.groups.createChildGroup({ id: id('backend') }, { name: 'db' })).id);

    const top = await kc.groups.find();
    expect(names(top)).toEqual(['eng', 'ops', 'sales']);
    expect(top[0]).toMatchObject({ id: id('eng'), name: 'eng', path: '/eng', subGroupCount: 2, subGroups: [] });
    expect(top[0].attributes).toBeUndefined(); // brief by default

    const eng = (await kc.groups.findOne({ id: id('eng') }))!;
    expect(eng).toMatchObject({ name: 'eng', description: 'Engineering', path: '/eng', subGroupCount: 2, attributes: { site: ['paris'], cost: ['42'] }, realmRoles: [], clientRoles: {} });
    const db = (await kc.groups.findOne({ id: id('db') }))!;
    expect(db).toMatchObject({ name: 'db', path: '/eng/backend/db', parentId: id('backend'), subGroupCount: 0 });

    expect(await kc.groups.count()).toEqual({ count: 6 });
    expect(await kc.groups.count({ top: true } as never)).toEqual({ count: 3 });
    expect(await kc.groups.count({ search: 'END' })).toEqual({ count: 2 }); // backend, frontend: case-insensitive

    const full = await kc.groups.find({ briefRepresentation: false, first: 0, max: 2 });
    expect(names(full)).toEqual(['eng', 'ops']);
    expect(full[0].attributes).toEqual({ site: ['paris'], cost: ['42'] });
    expect(names(await kc.groups.find({ first: 2, max: 5 }))).toEqual(['sales']);
    const uncounted = await api(t.url, 'GET', `/admin/realms/${REALM}/groups?subGroupsCount=false&search=db`, (await kc.getAccessToken())!);
    expect(uncounted.body[0].subGroupCount).toBeUndefined();
    expect(uncounted.body[0].subGroups[0].subGroupCount).toBeUndefined();

    const children = await kc.groups.listSubGroups({ parentId: id('eng') });
    expect(children.map((g) => [g.name, g.path, g.subGroupCount])).toEqual([['backend', '/eng/backend', 1], ['frontend', '/eng/frontend', 0]]);
    expect(names(await kc.groups.listSubGroups({ parentId: id('eng'), search: 'front' }))).toEqual(['frontend']);
    expect(names(await kc.groups.listSubGroups({ parentId: id('eng'), first: 1, max: 1 }))).toEqual(['frontend']);
  });

  it('searches by name (contained, exact) and by attributes (q), with or without the hierarchy', async () => {
    const found = await kc.groups.find({ search: 'db' });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ name: 'eng', subGroups: [{ name: 'backend', subGroups: [{ name: 'db', path: '/eng/backend/db' }] }] });
    const flat = await kc.groups.find({ search: 'end', populateHierarchy: false });
    expect(flat.map((g) => g.path)).toEqual(['/eng/backend', '/eng/frontend']);
    expect(await kc.groups.find({ search: 'backen', exact: true, populateHierarchy: false })).toEqual([]);
    expect(names(await kc.groups.find({ search: 'backend', exact: true, populateHierarchy: false }))).toEqual(['backend']);
    const lyon = await kc.groups.find({ q: 'site:lyon', populateHierarchy: false } as never);
    expect(lyon.map((g) => g.path).sort()).toEqual(['/eng/backend', '/sales']);
    expect(await kc.groups.find({ q: 'site:lyon cost:42' } as never)).toEqual([]);
    expect(names(await kc.groups.find({ q: 'site:paris cost:42' } as never))).toEqual(['eng']);
  });

  it('updates a group: name, description, attributes; a path follows its parent', async () => {
    await kc.groups.update({ id: id('backend') }, { name: 'back-end', attributes: { site: ['lyon', 'nice'] } });
    expect(await kc.groups.findOne({ id: id('backend') })).toMatchObject({ name: 'back-end', path: '/eng/back-end', attributes: { site: ['lyon', 'nice'] } });
    expect((await kc.groups.findOne({ id: id('db') }))!.path).toBe('/eng/back-end/db');
    await kc.groups.update({ id: id('backend') }, { name: 'backend' });
    // Attributes not given are kept, the description is what the body says.
    expect((await kc.groups.findOne({ id: id('backend') }))!.attributes).toEqual({ site: ['lyon', 'nice'] });
    const path = await kc.realms.getGroupByPath({ realm: REALM, path: 'eng/backend/db' });
    expect(path).toMatchObject({ id: id('db'), path: '/eng/backend/db' });
  });

  it('refuses bad input, naming the problem, and writes nothing', async () => {
    await rejects(kc.groups.create({ name: '' }), 400, /name/);
    await rejects(kc.groups.create({ name: '   ' }), 400, /name/);
    await rejects(kc.groups.create({}), 400, /name/);
    await rejects(kc.groups.create({ name: 'eng' }), 409, /top-level group named 'eng'/);
    await rejects(kc.groups.createChildGroup({ id: id('eng') }, { name: 'backend' }), 409, /sibling group named 'backend'/);
    await rejects(kc.groups.update({ id: id('frontend') }, { name: 'backend' }), 409, /backend/);
    await rejects(kc.groups.update({ id: id('frontend') }, { name: '' }), 400, /name/);
    // A group cannot go under itself or one of its own subgroups.
    await rejects(kc.groups.updateChildGroup({ id: id('db') }, { id: id('eng'), name: 'eng' }), 400, /'eng'.*own subgroup 'db'/);
    await rejects(kc.groups.updateChildGroup({ id: id('eng') }, { id: id('eng'), name: 'eng' }), 400, /itself/);
    // Unknown ids: 404.
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(await kc.groups.findOne({ id: unknown })).toBeNull();
    await rejects(kc.groups.update({ id: unknown }, { name: 'x' }), 404);
    await rejects(kc.groups.del({ id: unknown }), 404);
    await rejects(kc.groups.createChildGroup({ id: unknown }, { name: 'x' }), 404);
    await rejects(kc.groups.updateRoot({ id: unknown, name: 'x' }), 404);
    await rejects(kc.users.addToGroup({ id: await userId('ann'), groupId: unknown }), 404);
    await rejects(kc.groups.addRealmRoleMappings({ id: id('ops'), roles: [{ id: unknown, name: 'nope' }] }), 404);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/groups/not-a-uuid`, (await kc.getAccessToken())!)).status).toBe(404);
    expect(await kc.groups.count()).toEqual({ count: 6 });
    expect((await kc.groups.findOne({ id: id('eng') }))!.parentId).toBeUndefined();
  });

  it('maps realm and client roles to a group: list, available, composite (ancestors and composites), delete', async () => {
    await kc.groups.addRealmRoleMappings({ id: id('eng'), roles: [roles.get('reader')!, roles.get('composite-boss')!] });
    await kc.groups.addRealmRoleMappings({ id: id('backend'), roles: [roles.get('writer')!] });
    const deploy = (await kc.clients.findRole({ id: clientUuid, roleName: 'deploy' }))!;
    const observe = (await kc.clients.findRole({ id: clientUuid, roleName: 'observe' }))!;
    await kc.groups.addClientRoleMappings({ id: id('eng'), clientUniqueId: clientUuid, roles: [{ id: observe.id!, name: 'observe' }] });
    await kc.groups.addClientRoleMappings({ id: id('backend'), clientUniqueId: clientUuid, roles: [{ id: deploy.id!, name: 'deploy' }] });

    expect(names(await kc.groups.listRealmRoleMappings({ id: id('backend') }))).toEqual(['writer']);
    const all = await kc.groups.listRoleMappings({ id: id('eng') });
    expect(names(all.realmMappings ?? [])).toEqual(['composite-boss', 'reader']);
    expect(all.clientMappings?.api.mappings.map((r: { name: string }) => r.name)).toEqual(['observe']);
    expect(names(await kc.groups.listAvailableRealmRoleMappings({ id: id('backend') }))).not.toContain('writer');
    expect(names(await kc.groups.listAvailableRealmRoleMappings({ id: id('backend') }))).toContain('reader');
    // Effective: its own, its ancestors', and their composites.
    expect(names(await kc.groups.listCompositeRealmRoleMappings({ id: id('db') })).sort()).toEqual(['auditor', 'composite-boss', 'reader', 'writer']);
    expect(names(await kc.groups.listClientRoleMappings({ id: id('backend'), clientUniqueId: clientUuid }))).toEqual(['deploy']);
    expect(names(await kc.groups.listAvailableClientRoleMappings({ id: id('backend'), clientUniqueId: clientUuid }))).toEqual(['observe']);
    expect(names(await kc.groups.listCompositeClientRoleMappings({ id: id('backend'), clientUniqueId: clientUuid })).sort()).toEqual(['deploy', 'observe']);
    const eng = (await kc.groups.findOne({ id: id('eng') }))!;
    expect(eng.realmRoles).toEqual(['composite-boss', 'reader']);
    expect(eng.clientRoles).toEqual({ api: ['observe'] });

    await kc.groups.addClientRoleMappings({ id: id('ops'), clientUniqueId: clientUuid, roles: [{ id: deploy.id!, name: 'deploy' }] });
    await kc.groups.delClientRoleMappings({ id: id('ops'), clientUniqueId: clientUuid, roles: [{ id: deploy.id!, name: 'deploy' }] });
    await kc.groups.addRealmRoleMappings({ id: id('ops'), roles: [roles.get('auditor')!] });
    await kc.groups.delRealmRoleMappings({ id: id('ops'), roles: [roles.get('auditor')!] });
    expect(await kc.groups.listRoleMappings({ id: id('ops') })).toEqual({});
    const groupsOfWriter = await api(t.url, 'GET', `/admin/realms/${REALM}/roles/writer/groups`, (await kc.getAccessToken())!);
    expect(groupsOfWriter.body.map((g: GroupRepresentation) => g.path)).toEqual(['/eng/backend']);
    const groupsOfDeploy = await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${clientUuid}/roles/deploy/groups`, (await kc.getAccessToken())!);
    expect(groupsOfDeploy.body.map((g: GroupRepresentation) => g.path)).toEqual(['/eng/backend']);
  });

  it('members: join, list (paged, brief), a user\'s groups (search, count), leave', async () => {
    const [ann, ben, cid] = [await userId('ann'), await userId('ben'), await userId('cid')];
    await kc.users.addToGroup({ id: ann, groupId: id('db') });
    await kc.users.addToGroup({ id: ann, groupId: id('db') }); // twice: still one membership
    await kc.users.addToGroup({ id: ann, groupId: id('ops') });
    await kc.users.addToGroup({ id: ben, groupId: id('db') });
    await kc.users.addToGroup({ id: cid, groupId: id('db') });

    expect((await kc.groups.listMembers({ id: id('db') })).map((u) => u.username)).toEqual(['ann', 'ben', 'cid']);
    expect((await kc.groups.listMembers({ id: id('db'), first: 1, max: 1 })).map((u) => u.username)).toEqual(['ben']);
    const [brief] = await kc.groups.listMembers({ id: id('db'), briefRepresentation: true, max: 1 });
    expect(brief).toMatchObject({ id: ann, username: 'ann', enabled: true });
    expect(brief.attributes).toBeUndefined();
    expect(await kc.groups.listMembers({ id: id('eng') })).toEqual([]); // members of subgroups are not members

    const annGroups = await kc.users.listGroups({ id: ann });
    expect(annGroups.map((g) => g.path)).toEqual(['/eng/backend/db', '/ops']);
    expect(annGroups[0]).toEqual({ id: id('db'), name: 'db', path: '/eng/backend/db', parentId: id('backend'), subGroups: [] });
    expect((await kc.users.listGroups({ id: ann, search: 'op' })).map((g) => g.name)).toEqual(['ops']);
    expect((await kc.users.listGroups({ id: ann, first: 1, max: 1 })).map((g) => g.name)).toEqual(['ops']);
    expect((await kc.users.listGroups({ id: ann, briefRepresentation: false }))[0].realmRoles).toEqual([]);
    expect(await kc.users.countGroups({ id: ann })).toEqual({ count: 2 });
    const accountToken = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'ann', password: PASSWORD }) }).then((r) => r.json() as Promise<{ access_token: string }>);
    expect((await api(t.url, 'GET', `/realms/${REALM}/account/groups`, accountToken.access_token)).body).toEqual([
      { id: id('db'), name: 'db', path: '/eng/backend/db', subGroups: [] },
      { id: id('ops'), name: 'ops', path: '/ops', subGroups: [] },
    ]);
    expect(await kc.users.countGroups({ id: ann, search: 'db' })).toEqual({ count: 1 });

    // The user's effective roles include the group's and its ancestors' (composites expanded); direct mappings do not.
    expect(names(await kc.users.listCompositeRealmRoleMappings({ id: ann }))).toEqual(expect.arrayContaining(['auditor', 'composite-boss', 'reader', 'writer']));
    expect(names(await kc.users.listRealmRoleMappings({ id: ann }))).not.toContain('reader');
    expect(names(await kc.users.listCompositeClientRoleMappings({ id: ann, clientUniqueId: clientUuid })).sort()).toEqual(['deploy', 'observe']);

    await kc.users.delFromGroup({ id: cid, groupId: id('db') });
    await kc.users.delFromGroup({ id: cid, groupId: id('db') });
    expect(await kc.users.countGroups({ id: cid })).toEqual({ count: 0 });
    expect(names(await kc.users.listCompositeRealmRoleMappings({ id: cid }))).not.toContain('reader');
  });

  it("tokens from openid-client carry the roles of the user's groups and their ancestors; leaving a group takes them away", async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'api', secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const claims = async (username: string) => decodeJwt((await oidc.genericGrantRequest(config, 'password', { username, password: PASSWORD })).access_token);
    const ann = await claims('ann');
    expect((ann.realm_access as { roles: string[] }).roles).toEqual(expect.arrayContaining(['reader', 'writer', 'composite-boss', 'auditor', `default-roles-${REALM}`]));
    expect((ann.resource_access as Record<string, { roles: string[] }>).api.roles.sort()).toEqual(['deploy', 'observe']);
    const cid = await claims('cid');
    expect((cid.realm_access as { roles: string[] }).roles).not.toContain('reader');
    expect((cid.resource_access as Record<string, unknown> | undefined)?.api).toBeUndefined();

    // The service account of a client, through client_credentials.
    const sa = await kc.clients.getServiceAccountUser({ id: clientUuid });
    await kc.users.addToGroup({ id: sa.id!, groupId: id('frontend') });
    const service = decodeJwt((await oidc.clientCredentialsGrant(config)).access_token);
    expect((service.realm_access as { roles: string[] }).roles).toEqual(expect.arrayContaining(['reader', 'composite-boss', 'auditor']));
    expect((service.realm_access as { roles: string[] }).roles).not.toContain('writer');
    expect((service.resource_access as Record<string, { roles: string[] }>).api.roles).toEqual(['observe']);

    // Moving db to the top level: its members keep db's roles only.
    await kc.groups.updateRoot({ id: id('db'), name: 'db' });
    expect((await kc.groups.findOne({ id: id('db') }))!.path).toBe('/db');
    expect((await claims('ann')).realm_access).toEqual({ roles: expect.not.arrayContaining(['reader']) });
    await kc.groups.updateChildGroup({ id: id('backend') }, { id: id('db'), name: 'db' });
    expect((await kc.groups.findOne({ id: id('db') }))!.path).toBe('/eng/backend/db');
    expect((await claims('ann')).realm_access).toEqual({ roles: expect.arrayContaining(['reader', 'writer']) });
    await kc.users.delFromGroup({ id: sa.id!, groupId: id('frontend') });
  });

  it('default groups: listed, new users join them (admin-created and self-registered), removed', async () => {
    await kc.realms.addDefaultGroup({ realm: REALM, id: id('ops') });
    await kc.realms.addDefaultGroup({ realm: REALM, id: id('frontend') });
    expect((await kc.realms.getDefaultGroups({ realm: REALM })).map((g) => g.path)).toEqual(['/eng/frontend', '/ops']);
    const { id: dan } = await kc.users.create({ username: 'dan', enabled: true });
    expect((await kc.users.listGroups({ id: dan })).map((g) => g.path)).toEqual(['/eng/frontend', '/ops']);

    const browser = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'api', redirect_uri: 'http://127.0.0.1:9/cb', response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/registrations?${query}`);
    expect(page.status).toBe(200);
    const registered = await browser.post(`/realms/${REALM}/login-actions/registration`, {
      firstName: 'Eve', lastName: 'Self', email: 'eve@example.com', username: 'eve', password: PASSWORD, 'password-confirm': PASSWORD, session_code: inputValue(page.text, 'session_code')!,
    });
    expect(registered.status, registered.text.slice(0, 300)).toBe(302);
    expect((await kc.users.listGroups({ id: await userId('eve') })).map((g) => g.path)).toEqual(['/eng/frontend', '/ops']);

    await kc.realms.removeDefaultGroup({ realm: REALM, id: id('ops') });
    await kc.realms.removeDefaultGroup({ realm: REALM, id: id('frontend') });
    expect(await kc.realms.getDefaultGroups({ realm: REALM })).toEqual([]);
    const { id: fay } = await kc.users.create({ username: 'fay', enabled: true });
    expect(await kc.users.listGroups({ id: fay })).toEqual([]);
    // Created with groups (paths), as Keycloak's user representation allows; an unknown path creates nobody.
    const { id: gil } = await kc.users.create({ username: 'gil', enabled: true, groups: ['/ops', 'eng/frontend'] });
    expect((await kc.users.listGroups({ id: gil })).map((g) => g.path)).toEqual(['/eng/frontend', '/ops']);
    await rejects(kc.users.create({ username: 'hal', enabled: true, groups: ['/ops', '/nowhere'] }), 400, /user\.groups\[1\].*nowhere/);
    expect(await kc.users.find({ username: 'hal', exact: true })).toEqual([]);
    await rejects(kc.realms.addDefaultGroup({ realm: REALM, id: '00000000-0000-4000-8000-000000000000' }), 404);
  });

  it('deletes a group with its subgroups, their memberships and role mappings', async () => {
    const ann = await userId('ann');
    await kc.groups.del({ id: id('backend') });
    expect(await kc.groups.findOne({ id: id('db') })).toBeNull();
    expect(await kc.groups.count()).toEqual({ count: 4 });
    expect((await kc.users.listGroups({ id: ann })).map((g) => g.path)).toEqual(['/ops']);
    expect(names(await kc.users.listCompositeRealmRoleMappings({ id: ann }))).not.toContain('writer');
    // The roles themselves stay.
    expect(await kc.roles.findOneByName({ name: 'writer' })).toBeDefined();
  });

  it('imports groups, subgroups, their roles, users\' groups and default groups from a realm file', async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({
      realm: 'imported',
      enabled: true,
      roles: { realm: [{ name: 'staff' }, { name: 'lead' }], client: { portal: [{ name: 'edit' }] } },
      clients: [{ clientId: 'portal', publicClient: true, directAccessGrantsEnabled: true }],
      groups: [
        { name: 'company', attributes: { tier: ['gold'] }, realmRoles: ['staff'], subGroups: [{ name: 'leads', realmRoles: ['lead'], clientRoles: { portal: ['edit'] }, subGroups: [] }] },
        { name: 'guests' },
      ],
      defaultGroups: ['/guests'],
      users: [{ username: 'zoe', enabled: true, groups: ['/company/leads'], credentials: [{ type: 'password', value: PASSWORD }] }],
    });
    kc.setConfig({ realmName: 'imported' });
    const top = await kc.groups.find({ briefRepresentation: false });
    expect(top.map((g) => [g.name, g.subGroupCount])).toEqual([['company', 1], ['guests', 0]]);
    expect(top[0]).toMatchObject({ attributes: { tier: ['gold'] }, realmRoles: ['staff'] });
    const leads = (await kc.realms.getGroupByPath({ realm: 'imported', path: 'company/leads' }))!;
    expect(leads).toMatchObject({ realmRoles: ['lead'], clientRoles: { portal: ['edit'] } });
    const zoe = await userId('zoe');
    // Imported users are in the groups the file lists, not in the default ones.
    expect((await kc.users.listGroups({ id: zoe })).map((g) => g.path)).toEqual(['/company/leads']);
    expect((await kc.realms.getDefaultGroups({ realm: 'imported' })).map((g) => g.path)).toEqual(['/guests']);
    const token = await fetch(`${t.url}/realms/imported/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'password', client_id: 'portal', username: 'zoe', password: PASSWORD }),
    }).then((r) => r.json() as Promise<{ access_token: string }>);
    const claims = decodeJwt(token.access_token);
    expect((claims.realm_access as { roles: string[] }).roles).toEqual(expect.arrayContaining(['staff', 'lead']));
    expect((claims.resource_access as Record<string, { roles: string[] }>).portal.roles).toEqual(['edit']);

    // A file naming an unknown group, or a role the realm lacks, creates nothing.
    kc.setConfig({ realmName: 'master' });
    await rejects(kc.realms.create({ realm: 'broken', users: [{ username: 'x', groups: ['/nowhere'] }] }), 400, /realm\.users\[0\]\.groups\[0\].*nowhere/);
    await rejects(kc.realms.create({ realm: 'broken', groups: [{ name: 'g', realmRoles: ['missing'] }] }), 400, /realm\.groups\[0\]\.realmRoles.*missing/);
    await rejects(kc.realms.create({ realm: 'broken', groups: [{ name: 'g' }, { name: 'g' }] }), 409, /'g'/);
    expect(await kc.realms.findOne({ realm: 'broken' })).toBeNull();
    // A realm with groups, memberships, mappings and default groups is deleted whole.
    await kc.realms.del({ realm: 'imported' });
    expect(await kc.realms.findOne({ realm: 'imported' })).toBeNull();
    expect(await t.server.context.storage.db.selectFrom('realm_group').select('id').where('name', '=', 'company').execute()).toEqual([]);
    kc.setConfig({ realmName: REALM });
  });

  it('orders names by code unit (capitals first) and keeps a "/" in a name as it is, in paths and group-by-path', async () => {
    const { id: upper } = await kc.groups.create({ name: 'Zed' });
    const { id: slash } = await kc.groups.createChildGroup({ id: upper }, { name: 'x/y' });
    expect(names(await kc.groups.find())[0]).toBe('Zed');
    expect((await kc.groups.findOne({ id: slash }))!.path).toBe('/Zed/x/y');
    expect((await kc.realms.getGroupByPath({ realm: REALM, path: 'Zed/x/y' }))!.id).toBe(slash);
    await kc.groups.del({ id: upper });
  });

  it('concurrent changes of the tree: two moves that would make a cycle together (one is refused), a subgroup created while its parent is deleted', async () => {
    await concurrentTreeChanges(t.url, kc);
  });

  it('the group methods Keycloak answers only with fine-grained admin permissions or organizations are not there', async () => {
    await rejects(kc.groups.listPermissions({ id: id('eng') }), 404);
    await rejects(kc.groups.updatePermission({ id: id('eng') }, { enabled: true }), 404);
  });
});

/**
 * Two moves that would make a cycle together (one is refused) and a subgroup created while its parent is deleted,
 * five rounds, in realm REALM: run on SQLite with the file and on PostgreSQL on its own (the tree's row lock).
 */
async function concurrentTreeChanges(url: string, kc: KcAdminClient): Promise<void> {
  const token = (await kc.getAccessToken())!;
  for (let round = 0; round < 5; round++) {
    const { id: x } = await kc.groups.create({ name: `x${round}` });
    const { id: y } = await kc.groups.create({ name: `y${round}` });
    const moves = await Promise.all([
      api(url, 'POST', `/admin/realms/${REALM}/groups/${y}/children`, token, { id: x, name: `x${round}` }),
      api(url, 'POST', `/admin/realms/${REALM}/groups/${x}/children`, token, { id: y, name: `y${round}` }),
    ]);
    expect(moves.map((m) => m.status).sort()).toEqual([204, 400]);
    const paths = [(await kc.groups.findOne({ id: x }))!.path, (await kc.groups.findOne({ id: y }))!.path].sort();
    expect([[`/x${round}`, `/x${round}/y${round}`], [`/y${round}`, `/y${round}/x${round}`]]).toContainEqual(paths);
    await kc.groups.del({ id: paths[0] === `/x${round}` ? x : y });
    // A subgroup created while its parent is deleted: created and deleted with it, or 404; never left behind.
    const { id: parent } = await kc.groups.create({ name: `p${round}` });
    const [created] = await Promise.all([
      api(url, 'POST', `/admin/realms/${REALM}/groups/${parent}/children`, token, { name: `orphan${round}` }),
      api(url, 'DELETE', `/admin/realms/${REALM}/groups/${parent}`, token),
    ]);
    expect([201, 404]).toContain(created.status);
    expect(await kc.groups.find({ search: `orphan${round}`, populateHierarchy: false })).toEqual([]);
  }
}

/** What differs by database in groups: concurrent changes of the tree (PostgreSQL locks the realm's row; SQLite has one connection). */
describe('groups: concurrent changes of the tree on postgres', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  beforeAll(async () => {
    t = await startServer({ database: 'postgres' });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
  });
  afterAll(() => t?.close());

  it('two moves that would make a cycle together (one is refused), a subgroup created while its parent is deleted', async () => {
    await concurrentTreeChanges(t.url, kc);
  });
});
