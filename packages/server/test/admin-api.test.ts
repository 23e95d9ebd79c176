import { randomUUID } from 'node:crypto';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRoutes, fillPath, type PathValues } from './support/admin-routes.js';
import { movableDate } from './support/clock.js';
import { api, eventually, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

const REALM = 'api';
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface HttpFailure {
  response?: { status: number };
  responseData?: unknown;
}

/**
 * Awaits a call of the admin client that must fail with `status`; returns the error body. With `field`, the
 * body must name it in its message (Keycloak's `errorMessage`, or `error_description` for a body its JSON reader
 * refuses), which is what a caller needs to fix its input.
 */
async function rejects(call: Promise<unknown>, status: number, field?: string): Promise<Record<string, unknown>> {
  const error = (await call.then(
    (value) => {
      throw new Error(`expected HTTP ${status}, the call succeeded with ${JSON.stringify(value)}`);
    },
    (e: unknown) => e,
  )) as HttpFailure;
  expect(error.response?.status, JSON.stringify(error.responseData)).toBe(status);
  const body = error.responseData as Record<string, unknown>;
  expect(typeof body === 'object' && body !== null && (typeof body.errorMessage === 'string' || typeof body.error === 'string'), JSON.stringify(body)).toBe(true);
  if (field) expect(String(body.errorMessage ?? body.error_description ?? body.error)).toContain(field);
  return body;
}

/**
 * On SQLite (issue 36): the repositories under this CRUD (users' searches and counts, clients, roles, composites and
 * grants, organizations and their domains, realms, events) are checked on both databases by
 * storage-admin-records.test.ts.
 */
describe.each(httpDatabases)('admin REST API through the official admin client (%s)', (database) => {
  let t: TestServer;
  /** The master administrator, pointed at the `api` realm unless a call names another. */
  let kc: KcAdminClient;
  let adminAccess: string;
  /** A user of the `api` realm without any realm-management role. */
  let nobodyToken: string;
  /** An access token of a realm whose tokens live one second; checked last, when it has long expired. */
  let shortLived: { token: string; obtained: number };

  const passwordToken = async (realm: string, username: string, password: string): Promise<string> => {
    const response = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.access_token as string;
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    adminAccess = (await kc.getAccessToken())!;
    await kc.realms.create({ realm: REALM, enabled: true, organizationsEnabled: true });
    await kc.realms.create({ realm: 'short', enabled: true, accessTokenLifespan: 1 });
    kc.setConfig({ realmName: 'short' });
    await kc.users.create({ username: 'brief', enabled: true, credentials: [{ type: 'password', value: 'brief-pass', temporary: false }] });
    shortLived = { token: await passwordToken('short', 'brief', 'brief-pass'), obtained: Date.now() };
    kc.setConfig({ realmName: REALM });
    await kc.users.create({ username: 'nobody', enabled: true, credentials: [{ type: 'password', value: 'nobody-pass', temporary: false }] });
    nobodyToken = await passwordToken(REALM, 'nobody', 'nobody-pass');
  });
  afterAll(() => t?.close());

  // Realms -----------------------------------------------------------------------------------------------

  it('realms: create, find, findOne, partial update, delete', async () => {
    expect(await kc.realms.create({ realm: 'tmp-realm', enabled: true, displayName: 'Temp' })).toEqual({ realmName: 'tmp-realm' });
    expect((await kc.realms.find()).map((r) => r.realm)).toEqual(expect.arrayContaining(['master', REALM, 'tmp-realm']));
    const before = await kc.realms.findOne({ realm: 'tmp-realm' });
    expect(before).toMatchObject({ realm: 'tmp-realm', enabled: true, displayName: 'Temp', registrationAllowed: false, resetPasswordAllowed: false });
    expect(before!.id).toMatch(uuidPattern);

    // Keycloak's realm PUT changes the fields given and keeps the others.
    await kc.realms.update({ realm: 'tmp-realm' }, { registrationAllowed: true, displayName: 'Temporary' });
    const after = await kc.realms.findOne({ realm: 'tmp-realm' });
    expect(after).toMatchObject({ id: before!.id, realm: 'tmp-realm', registrationAllowed: true, displayName: 'Temporary', enabled: true, resetPasswordAllowed: false });

    await kc.realms.del({ realm: 'tmp-realm' });
    expect(await kc.realms.findOne({ realm: 'tmp-realm' })).toBeNull();
    expect((await kc.realms.find()).map((r) => r.realm)).not.toContain('tmp-realm');
    // Its clients went with it: the token endpoint no longer knows the realm.
    expect((await tokenRequest(t.url, 'tmp-realm', { grant_type: 'password', client_id: 'admin-cli', username: 'x', password: 'y' })).status).toBe(404);
  });

  it('realms: the master realm cannot be deleted', async () => {
    await rejects(kc.realms.del({ realm: 'master' }), 400);
    expect(await kc.realms.findOne({ realm: 'master' })).toMatchObject({ realm: 'master', enabled: true });
  });

  it('realms: 400 naming the field, 404 for unknown realms, 409 for a taken name', async () => {
    await rejects(kc.realms.create({ realm: 5 as unknown as string }), 400, 'realm');
    await rejects(kc.realms.create({ enabled: true }), 400, 'realm');
    await rejects(kc.realms.create({ realm: 'has space' }), 400, 'realm');
    await rejects(kc.realms.create({ realm: 'ok-name', bogus: 1 } as never), 400, 'bogus');
    await rejects(kc.realms.update({ realm: REALM }, { registrationAllowed: 'yes' as unknown as boolean }), 400, 'registrationAllowed');
    await rejects(kc.realms.update({ realm: REALM }, { accessTokenLifespan: 1.5 }), 400, 'accessTokenLifespan');
    expect((await api(t.url, 'GET', '/admin/realms/ok-name', adminAccess)).status).toBe(404);

    for (const missing of [randomUUID(), 'no-such-realm']) {
      expect(await kc.realms.findOne({ realm: missing })).toBeNull();
      await rejects(kc.realms.update({ realm: missing }, { displayName: 'x' }), 404);
      await rejects(kc.realms.del({ realm: missing }), 404);
    }

    await rejects(kc.realms.create({ realm: REALM }), 409);
    await kc.realms.create({ realm: 'rename-me' });
    await rejects(kc.realms.update({ realm: 'rename-me' }, { realm: REALM }), 409);
    await kc.realms.del({ realm: 'rename-me' });
  });

  it('realms: a renamed realm still gives new users its default roles', async () => {
    await kc.realms.create({ realm: 'old-name', enabled: true });
    await kc.realms.update({ realm: 'old-name' }, { realm: 'new-name' });
    expect(await kc.realms.findOne({ realm: 'old-name' })).toBeNull();
    const renamed = new KcAdminClient({ baseUrl: t.url, realmName: 'new-name' });
    renamed.setAccessToken(adminAccess);
    const { id } = await renamed.users.create({ username: 'newcomer', enabled: true });
    expect((await renamed.users.listCompositeRealmRoleMappings({ id })).map((r) => r.name)).toEqual(expect.arrayContaining(['offline_access', 'uma_authorization']));
    await kc.realms.del({ realm: 'new-name' });
  });

  // Clients ----------------------------------------------------------------------------------------------

  it('clients: create returns the id from Location; find by clientId, findOne, update, del', async () => {
    const { id } = await kc.clients.create({ clientId: 'crud-app', redirectUris: ['https://app.example/cb'], description: 'first' });
    expect(id).toMatch(uuidPattern);
    const found = await kc.clients.find({ clientId: 'crud-app' });
    expect(found.map((c) => c.id)).toEqual([id]);
    const one = await kc.clients.findOne({ id });
    expect(one).toMatchObject({ id, clientId: 'crud-app', redirectUris: ['https://app.example/cb'], description: 'first', enabled: true, publicClient: false });

    await kc.clients.update({ id }, { ...one, description: 'second', directAccessGrantsEnabled: true, webOrigins: ['+'] });
    expect(await kc.clients.findOne({ id })).toMatchObject({ description: 'second', directAccessGrantsEnabled: true, webOrigins: ['+'], redirectUris: ['https://app.example/cb'] });

    await kc.clients.del({ id });
    expect(await kc.clients.findOne({ id })).toBeNull();
    expect(await kc.clients.find({ clientId: 'crud-app' })).toEqual([]);
  });

  it('clients: client secret, regeneration, service-account user', async () => {
    const { id } = await kc.clients.create({ clientId: 'svc', publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false });
    const first = await kc.clients.getClientSecret({ id });
    expect(first.type).toBe('secret');
    expect(first.value!.length).toBeGreaterThanOrEqual(32);
    const second = await kc.clients.generateNewClientSecret({ id });
    expect(second.value).toBeTruthy();
    expect(second.value).not.toBe(first.value);
    expect((await kc.clients.getClientSecret({ id })).value).toBe(second.value);
    const grant = (secret: string) => tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'svc', client_secret: secret });
    expect((await grant(second.value!)).status).toBe(200);
    expect((await grant(first.value!)).status).toBe(401);

    const sa = await kc.clients.getServiceAccountUser({ id });
    expect(sa).toMatchObject({ username: 'service-account-svc', enabled: true });
    expect(sa.id).toMatch(uuidPattern);

    const { id: plain } = await kc.clients.create({ clientId: 'no-sa' });
    await rejects(kc.clients.getServiceAccountUser({ id: plain }), 400);

    // Renaming the client renames its service-account user, as Keycloak does.
    await kc.clients.update({ id }, { ...(await kc.clients.findOne({ id })), clientId: 'svc-renamed' });
    expect(await kc.clients.getServiceAccountUser({ id })).toMatchObject({ id: sa.id, username: 'service-account-svc-renamed' });

    // The service-account user's name is taken by a person: 409, and no half-made client.
    await kc.users.create({ username: 'service-account-squatted' });
    await rejects(kc.clients.create({ clientId: 'squatted', serviceAccountsEnabled: true }), 409);
    expect(await kc.clients.find({ clientId: 'squatted' })).toEqual([]);
    await rejects(kc.clients.update({ id }, { clientId: 'squatted', serviceAccountsEnabled: true }), 409);
    expect(await kc.clients.findOne({ id })).toMatchObject({ clientId: 'svc-renamed' });
    expect(await kc.clients.getServiceAccountUser({ id })).toMatchObject({ username: 'service-account-svc-renamed' });
    await kc.clients.update({ id: plain }, { clientId: 'no-sa', serviceAccountsEnabled: true });
    expect(await kc.clients.getServiceAccountUser({ id: plain })).toMatchObject({ username: 'service-account-no-sa' });
  });

  it('clients: client roles (createRole, listRoles, findRole, updateRole, delRole)', async () => {
    const { id } = await kc.clients.create({ clientId: 'roles-app' });
    expect(await kc.clients.createRole({ id, name: 'reader', description: 'reads' })).toEqual({ roleName: 'reader' });
    await kc.clients.createRole({ id, name: 'writer' });
    expect((await kc.clients.listRoles({ id })).map((r) => r.name)).toEqual(['reader', 'writer']);
    const reader = await kc.clients.findRole({ id, roleName: 'reader' });
    expect(reader).toMatchObject({ name: 'reader', description: 'reads', clientRole: true, containerId: id, composite: false });
    await kc.clients.updateRole({ id, roleName: 'reader' }, { name: 'reader', description: 'reads everything' });
    expect((await kc.clients.findRole({ id, roleName: 'reader' }))?.description).toBe('reads everything');
    await rejects(kc.clients.createRole({ id, name: 'reader' }), 409);
    await rejects(kc.clients.updateRole({ id, roleName: 'writer' }, { name: 'reader' }), 409);
    await rejects(kc.clients.createRole({ id, name: 7 as unknown as string }), 400, 'name');
    await kc.clients.delRole({ id, roleName: 'writer' });
    expect(await kc.clients.findRole({ id, roleName: 'writer' })).toBeNull();
    await rejects(kc.clients.delRole({ id, roleName: 'writer' }), 404);
    await rejects(kc.clients.updateRole({ id, roleName: 'nope' }, { name: 'nope' }), 404);
  });

  it('clients: 400 naming the field, 404 for unknown ids, 409 for a taken clientId', async () => {
    await rejects(kc.clients.create({ clientId: 5 as unknown as string }), 400, 'clientId');
    await rejects(kc.clients.create({}), 400, 'clientId');
    await rejects(kc.clients.create({ clientId: 'x', bogus: true } as never), 400, 'bogus');
    await rejects(kc.clients.create({ clientId: 'x', publicClient: 'true' as unknown as boolean }), 400, 'publicClient');
    await rejects(kc.clients.create({ clientId: 'x', redirectUris: 'https://a.example' as unknown as string[] }), 400, 'redirectUris');
    expect(await kc.clients.find({ clientId: 'x' })).toEqual([]);

    const { id } = await kc.clients.create({ clientId: 'taken' });
    const { id: other } = await kc.clients.create({ clientId: 'other' });
    await rejects(kc.clients.create({ clientId: 'taken' }), 409);
    await rejects(kc.clients.update({ id: other }, { clientId: 'taken' }), 409);
    await rejects(kc.clients.update({ id }, { clientId: 'taken', enabled: 'no' as unknown as boolean }), 400, 'enabled');
    expect(await kc.clients.findOne({ id: other })).toMatchObject({ clientId: 'other' });

    for (const missing of [randomUUID(), 'not-a-uuid']) {
      expect(await kc.clients.findOne({ id: missing })).toBeNull();
      await rejects(kc.clients.update({ id: missing }, { clientId: 'z' }), 404);
      await rejects(kc.clients.del({ id: missing }), 404);
      await rejects(kc.clients.getClientSecret({ id: missing }), 404);
      await rejects(kc.clients.generateNewClientSecret({ id: missing }), 404);
      await rejects(kc.clients.getServiceAccountUser({ id: missing }), 404);
      await rejects(kc.clients.listRoles({ id: missing }), 404);
      await rejects(kc.clients.createRole({ id: missing, name: 'r' }), 404);
    }
  });

  // Users ------------------------------------------------------------------------------------------------

  it('users: create (with credentials), find by username/email/search/first/max/exact, count, findOne', async () => {
    const create = (username: string, email: string, firstName: string, lastName: string) =>
      kc.users.create({ username, email, firstName, lastName, enabled: true, credentials: [{ type: 'password', value: `${username}-pass`, temporary: false }] });
    const { id: alice } = await create('alice', 'alice@example.com', 'Alice', 'Liddell');
    expect(alice).toMatch(uuidPattern);
    await create('alicia', 'alicia@example.com', 'Alicia', 'Keys');
    await create('bob', 'bob@example.org', 'Bob', 'Builder');

    const names = (users: { username?: string }[]) => users.map((u) => u.username);
    expect(names(await kc.users.find({ username: 'ali' }))).toEqual(['alice', 'alicia']);
    expect(names(await kc.users.find({ username: 'alice', exact: true }))).toEqual(['alice']);
    expect(names(await kc.users.find({ username: 'ALICE', exact: true }))).toEqual(['alice']);
    expect(names(await kc.users.find({ email: 'example.org' }))).toEqual(['bob']);
    expect(names(await kc.users.find({ email: 'alice@example.com', exact: true }))).toEqual(['alice']);
    expect(names(await kc.users.find({ search: 'liddell' }))).toEqual(['alice']);
    expect(names(await kc.users.find({ search: 'ali', first: 1, max: 1 }))).toEqual(['alicia']);
    expect(names(await kc.users.find({ search: 'ali', max: 1 }))).toEqual(['alice']);
    expect(names(await kc.users.find({ search: '100%_' }))).toEqual([]);
    // Keycloak's search syntax: a prefix by default, *infix*, "exact" (each of username, e-mail, first and last name).
    expect(names(await kc.users.find({ search: 'iddell' }))).toEqual([]);
    expect(names(await kc.users.find({ search: '*iddell*' }))).toEqual(['alice']);
    expect(names(await kc.users.find({ search: 'ALI*' }))).toEqual(['alice', 'alicia']);
    expect(names(await kc.users.find({ search: '"alice"' }))).toEqual(['alice']);
    expect(names(await kc.users.find({ search: '"keys"' }))).toEqual(['alicia']);
    expect(names(await kc.users.find({ search: '"alic"' }))).toEqual([]);
    expect(names(await kc.users.find({ search: 'bob@example.org' }))).toEqual(['bob']);
    expect(names(await kc.users.find({ search: '*' }))).toEqual(expect.arrayContaining(['alice', 'alicia', 'bob']));

    expect(await kc.users.count({ search: 'ali' })).toBe(2);
    expect(await kc.users.count({ email: 'example.org' })).toBe(1);
    const total = await kc.users.count();
    expect(total).toBe((await kc.users.find({ max: 1000 })).length);

    expect(await kc.users.findOne({ id: alice })).toMatchObject({ id: alice, username: 'alice', email: 'alice@example.com', firstName: 'Alice', lastName: 'Liddell', enabled: true, emailVerified: false });
    // An empty e-mail means none, as in Keycloak (forms and scripts send "").
    const { id: noMail } = await kc.users.create({ username: 'no-mail', email: '', firstName: '' });
    expect((await kc.users.findOne({ id: noMail }))?.email).toBeUndefined();
    await kc.users.update({ id: alice }, { email: '' });
    expect((await kc.users.findOne({ id: alice }))?.email).toBeUndefined();
    await kc.users.update({ id: alice }, { email: 'alice@example.com' });
    // The password given at creation works.
    await passwordToken(REALM, 'alice', 'alice-pass');
  });

  it('users: update, resetPassword (then a password grant with the new one works), del', async () => {
    const { id } = await kc.users.create({ username: 'carol', email: 'carol@example.com', firstName: 'Carol', lastName: 'Danvers', enabled: true, credentials: [{ type: 'password', value: 'old-pass' }] });
    await kc.users.update({ id }, { firstName: 'Caroline', attributes: { team: ['blue'] } });
    expect(await kc.users.findOne({ id })).toMatchObject({ firstName: 'Caroline', lastName: 'Danvers', email: 'carol@example.com', attributes: { team: ['blue'] } });

    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'new-pass', temporary: false } });
    const grant = (password: string) => tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'carol', password });
    expect((await grant('new-pass')).status).toBe(200);
    expect((await grant('old-pass')).status).toBe(400);
    await rejects(kc.users.resetPassword({ id, credential: { type: 'password' } }), 400, 'value');
    await rejects(kc.users.resetPassword({ id, credential: { type: 'password', value: 5 as unknown as string } }), 400, 'value');

    const count = await kc.users.count();
    await kc.users.del({ id });
    expect(await kc.users.findOne({ id })).toBeNull();
    expect(await kc.users.count()).toBe(count - 1);
    expect((await grant('new-pass')).status).toBe(400);
  });

  it('users: 400 naming the field, 404 for unknown ids, 409 for a taken username or email', async () => {
    await rejects(kc.users.create({ username: 5 as unknown as string }), 400, 'username');
    await rejects(kc.users.create({ email: 'x@example.com' }), 400, 'username');
    await rejects(kc.users.create({ username: 'dave', email: 'not-an-email' }), 400, 'email');
    await rejects(kc.users.create({ username: 'dave', enabled: 'true' as unknown as boolean }), 400, 'enabled');
    await rejects(kc.users.create({ username: 'dave', bogus: 1 } as never), 400, 'bogus');
    await rejects(kc.users.create({ username: 'dave', credentials: [{ type: 'otp', value: '1' }] }), 400, 'credentials');
    expect(await kc.users.find({ username: 'dave' })).toEqual([]);

    const { id } = await kc.users.create({ username: 'erin', email: 'erin@example.com' });
    const { id: frank } = await kc.users.create({ username: 'frank', email: 'frank@example.com' });
    await rejects(kc.users.create({ username: 'erin' }), 409);
    await rejects(kc.users.create({ username: 'ERIN' }), 409);
    await rejects(kc.users.create({ username: 'erin2', email: 'erin@example.com' }), 409);
    await rejects(kc.users.create({ username: 'erin3', email: 'ERIN@example.com' }), 409);
    await rejects(kc.users.update({ id: frank }, { email: 'erin@example.com' }), 409);
    await rejects(kc.users.update({ id }, { firstName: 5 as unknown as string }), 400, 'firstName');
    expect(await kc.users.findOne({ id: frank })).toMatchObject({ email: 'frank@example.com' });

    for (const missing of [randomUUID(), 'not-a-uuid']) {
      expect(await kc.users.findOne({ id: missing })).toBeNull();
      await rejects(kc.users.update({ id: missing }, { firstName: 'x' }), 404);
      await rejects(kc.users.del({ id: missing }), 404);
      await rejects(kc.users.resetPassword({ id: missing, credential: { type: 'password', value: 'p' } }), 404);
      await rejects(kc.users.listRoleMappings({ id: missing }), 404);
      await rejects(kc.users.listRealmRoleMappings({ id: missing }), 404);
    }
  });

  it('users: realm role mappings (add, list, available, composite, delete) and listRoleMappings', async () => {
    const { id } = await kc.users.create({ username: 'mapped', enabled: true });
    await kc.roles.create({ name: 'editor' });
    const editor = (await kc.roles.findOneByName({ name: 'editor' }))!;

    const available = await kc.users.listAvailableRealmRoleMappings({ id });
    expect(available.map((r) => r.name)).toContain('editor');
    expect(available.map((r) => r.name)).not.toContain(`default-roles-${REALM}`);

    await kc.users.addRealmRoleMappings({ id, roles: [{ id: editor.id!, name: editor.name! }] });
    expect((await kc.users.listRealmRoleMappings({ id })).map((r) => r.name).sort()).toEqual([`default-roles-${REALM}`, 'editor']);
    expect((await kc.users.listAvailableRealmRoleMappings({ id })).map((r) => r.name)).not.toContain('editor');
    expect((await kc.users.listCompositeRealmRoleMappings({ id })).map((r) => r.name)).toEqual(
      expect.arrayContaining([`default-roles-${REALM}`, 'editor', 'offline_access', 'uma_authorization']),
    );
    const all = await kc.users.listRoleMappings({ id });
    expect(all.realmMappings?.map((r) => r.name)).toContain('editor');

    await kc.users.delRealmRoleMappings({ id, roles: [{ id: editor.id!, name: editor.name! }] });
    expect((await kc.users.listRealmRoleMappings({ id })).map((r) => r.name)).toEqual([`default-roles-${REALM}`]);

    await rejects(kc.users.addRealmRoleMappings({ id, roles: [{ id: randomUUID(), name: 'ghost' }] }), 404);
    await rejects(kc.users.addRealmRoleMappings({ id, roles: [{ name: 'ghost' } as never] }), 404);
    await rejects(kc.users.addRealmRoleMappings({ id, roles: {} as never }), 400);
  });

  it('users: client role mappings (add, list, available, composite, delete) and listRoleMappings', async () => {
    const { id } = await kc.users.create({ username: 'client-mapped', enabled: true });
    const { id: clientUniqueId } = await kc.clients.create({ clientId: 'mapped-app' });
    await kc.clients.createRole({ id: clientUniqueId, name: 'viewer' });
    await kc.clients.createRole({ id: clientUniqueId, name: 'admin' });
    const viewer = (await kc.clients.findRole({ id: clientUniqueId, roleName: 'viewer' }))!;

    expect((await kc.users.listAvailableClientRoleMappings({ id, clientUniqueId })).map((r) => r.name)).toEqual(['admin', 'viewer']);
    await kc.users.addClientRoleMappings({ id, clientUniqueId, roles: [{ id: viewer.id!, name: viewer.name! }] });
    expect((await kc.users.listClientRoleMappings({ id, clientUniqueId })).map((r) => r.name)).toEqual(['viewer']);
    expect((await kc.users.listAvailableClientRoleMappings({ id, clientUniqueId })).map((r) => r.name)).toEqual(['admin']);
    expect((await kc.users.listCompositeClientRoleMappings({ id, clientUniqueId })).map((r) => r.name)).toEqual(['viewer']);
    const all = await kc.users.listRoleMappings({ id });
    expect(all.clientMappings?.['mapped-app']).toMatchObject({ id: clientUniqueId, client: 'mapped-app' });
    expect(all.clientMappings?.['mapped-app'].mappings.map((r: { name?: string }) => r.name)).toEqual(['viewer']);

    // A realm role is not a role of this client.
    const editor = (await kc.roles.findOneByName({ name: 'editor' }))!;
    await rejects(kc.users.addClientRoleMappings({ id, clientUniqueId, roles: [{ id: editor.id!, name: editor.name! }] }), 404);

    await kc.users.delClientRoleMappings({ id, clientUniqueId, roles: [{ id: viewer.id!, name: viewer.name! }] });
    expect(await kc.users.listClientRoleMappings({ id, clientUniqueId })).toEqual([]);
    for (const missing of [randomUUID(), 'not-a-uuid']) {
      await rejects(kc.users.listClientRoleMappings({ id, clientUniqueId: missing }), 404);
    }
  });

  // Realm roles ------------------------------------------------------------------------------------------

  it('realm roles: create, find, findOneByName, updateByName, findOneById, composites, delByName', async () => {
    expect(await kc.roles.create({ name: 'parent', description: 'the parent' })).toEqual({ roleName: 'parent' });
    await kc.roles.create({ name: 'child' });
    expect((await kc.roles.find()).map((r) => r.name)).toEqual(expect.arrayContaining(['parent', 'child', 'offline_access']));
    const parent = (await kc.roles.findOneByName({ name: 'parent' }))!;
    expect(parent).toMatchObject({ name: 'parent', description: 'the parent', clientRole: false, composite: false });
    await kc.roles.updateByName({ name: 'parent' }, { name: 'parent', description: 'updated' });
    expect(await kc.roles.findOneById({ id: parent.id! })).toMatchObject({ id: parent.id, name: 'parent', description: 'updated' });

    const child = (await kc.roles.findOneByName({ name: 'child' }))!;
    await kc.roles.createComposite({ roleId: parent.id! }, [child]);
    expect((await kc.roles.getCompositeRoles({ id: parent.id! })).map((r) => r.name)).toEqual(['child']);
    expect((await kc.roles.findOneByName({ name: 'parent' }))?.composite).toBe(true);

    // A user holding the composite gets its child in the access token.
    const { id: user } = await kc.users.create({ username: 'composite-holder', enabled: true, credentials: [{ type: 'password', value: 'holder-pass' }] });
    await kc.users.addRealmRoleMappings({ id: user, roles: [{ id: parent.id!, name: 'parent' }] });
    const claims = decodeJwt(await passwordToken(REALM, 'composite-holder', 'holder-pass')) as { realm_access?: { roles: string[] } };
    expect(claims.realm_access?.roles).toEqual(expect.arrayContaining(['parent', 'child']));

    await kc.roles.create({ name: 'doomed' });
    await kc.roles.delByName({ name: 'doomed' });
    expect(await kc.roles.findOneByName({ name: 'doomed' })).toBeNull();
  });

  it('realm roles: 400 naming the field, 404 for unknown names and ids, 409 for a taken name', async () => {
    await rejects(kc.roles.create({ name: 5 as unknown as string }), 400, 'name');
    await rejects(kc.roles.create({ description: 'no name' }), 400, 'name');
    await rejects(kc.roles.create({ name: 'x', bogus: 1 } as never), 400, 'bogus');
    await rejects(kc.roles.create({ name: 'parent' }), 409);
    await rejects(kc.roles.updateByName({ name: 'child' }, { name: 'parent' }), 409);
    await rejects(kc.roles.updateByName({ name: 'child' }, { description: 5 as unknown as string }), 400, 'description');
    expect(await kc.roles.findOneByName({ name: 'no-such-role' })).toBeNull();
    await rejects(kc.roles.delByName({ name: 'no-such-role' }), 404);
    await rejects(kc.roles.updateByName({ name: 'no-such-role' }, { name: 'x' }), 404);
    for (const missing of [randomUUID(), 'not-a-uuid']) {
      expect(await kc.roles.findOneById({ id: missing })).toBeNull();
      await rejects(kc.roles.getCompositeRoles({ id: missing }), 404);
      await rejects(kc.roles.createComposite({ roleId: missing }, []), 404);
      await rejects(kc.roles.delById({ id: missing }), 404);
    }
    const parent = (await kc.roles.findOneByName({ name: 'parent' }))!;
    await rejects(kc.roles.createComposite({ roleId: parent.id! }, [{ id: randomUUID() }]), 404);
  });

  // Organizations ----------------------------------------------------------------------------------------

  it('organizations: 400 while the realm has organizations disabled', async () => {
    await kc.realms.create({ realm: 'no-orgs', enabled: true });
    const noOrgs = new KcAdminClient({ baseUrl: t.url, realmName: 'no-orgs' });
    noOrgs.setAccessToken(adminAccess);
    await rejects(noOrgs.organizations.find({}), 400);
    await rejects(noOrgs.organizations.create({ name: 'x', alias: 'x', domains: [] }), 400);
    await kc.realms.update({ realm: 'no-orgs' }, { organizationsEnabled: true });
    expect(await noOrgs.organizations.find({})).toEqual([]);
  });

  it('organizations: create with name, alias, domains; find, findOne, update, members, delete', async () => {
    const { id } = await kc.organizations.create({ name: 'Acme', alias: 'acme', domains: [{ name: 'acme.example', verified: false }] });
    expect(id).toMatch(uuidPattern);
    expect((await kc.organizations.find({ search: 'acm' })).map((o) => o.id)).toEqual([id]);
    const org = await kc.organizations.findOne({ id });
    expect(org).toMatchObject({ id, name: 'Acme', alias: 'acme', enabled: true, domains: [{ name: 'acme.example', verified: false }] });

    await kc.organizations.updateById({ id }, { ...org, name: 'Acme Corp', description: 'makes everything', domains: [{ name: 'acme.example' }, { name: 'acme.test' }] });
    expect(await kc.organizations.findOne({ id })).toMatchObject({ name: 'Acme Corp', alias: 'acme', description: 'makes everything' });
    expect((await kc.organizations.findOne({ id })).domains?.map((d: { name?: string }) => d.name).sort()).toEqual(['acme.example', 'acme.test']);

    const { id: userId } = await kc.users.create({ username: 'member', email: 'member@acme.example', enabled: true });
    // The client sends the id as the raw body.
    await kc.organizations.addMember({ orgId: id, userId });
    expect((await kc.organizations.listMembers({ orgId: id })).map((m) => m.id)).toEqual([userId]);
    await rejects(kc.organizations.addMember({ orgId: id, userId }), 409);
    await rejects(kc.organizations.addMember({ orgId: id, userId: randomUUID() }), 404);
    await kc.organizations.delMember({ orgId: id, userId });
    expect(await kc.organizations.listMembers({ orgId: id })).toEqual([]);
    await rejects(kc.organizations.delMember({ orgId: id, userId }), 404);

    await kc.organizations.delById({ id });
    await rejects(kc.organizations.findOne({ id }), 404);
  });

  it('organizations: 400 naming the field, 404 for unknown ids, 409 for a taken name or alias, 400 for a taken domain', async () => {
    await rejects(kc.organizations.create({ name: 5 as unknown as string, alias: 'five' }), 400, 'name');
    await rejects(kc.organizations.create({ alias: 'nameless' }), 400, 'name');
    await rejects(kc.organizations.create({ name: 'Bad', domains: [{ name: 'not a domain' }] }), 400, 'domains');
    await rejects(kc.organizations.create({ name: 'Bad', bogus: 1 } as never), 400, 'bogus');

    const { id } = await kc.organizations.create({ name: 'Globex', alias: 'globex', domains: [{ name: 'globex.example' }] });
    // Keycloak 26.7.3: a taken name or alias is 409, a taken domain 400, each {errorMessage}.
    await rejects(kc.organizations.create({ name: 'Globex', alias: 'globex-2' }), 409, 'name');
    await rejects(kc.organizations.create({ name: 'Globex 2', alias: 'globex-2', domains: [{ name: 'globex.example' }] }), 400, 'domains');
    await rejects(kc.organizations.create({ name: 'Globex 3', alias: 'globex' }), 409, 'alias');
    await rejects(kc.organizations.create({ name: 'Twice', domains: [{ name: 'twice.example' }, { name: 'TWICE.example' }] }), 400, 'domains');
    const { id: initech } = await kc.organizations.create({ name: 'Initech', alias: 'initech' });
    await rejects(kc.organizations.updateById({ id: initech }, { name: 'Globex' }), 409);
    await rejects(kc.organizations.updateById({ id: initech }, { name: 'Initech', domains: [{ name: 'globex.example' }] }), 400, 'domains');
    expect(await kc.organizations.findOne({ id: initech })).toMatchObject({ name: 'Initech', domains: [] });
    expect((await kc.organizations.find({ search: 'Globex' })).map((o) => o.id)).toEqual([id]);

    for (const missing of [randomUUID(), 'not-a-uuid']) {
      await rejects(kc.organizations.findOne({ id: missing }), 404);
      await rejects(kc.organizations.updateById({ id: missing }, { name: 'x' }), 404);
      await rejects(kc.organizations.delById({ id: missing }), 404);
      await rejects(kc.organizations.listMembers({ orgId: missing }), 404);
      await rejects(kc.organizations.addMember({ orgId: id, userId: missing }), 404);
    }
  });

  // Events -----------------------------------------------------------------------------------------------

  it('events config: get, update, and 400 naming the field for an unknown listener or a wrong type', async () => {
    await kc.realms.create({ realm: 'evt', enabled: true });
    const evt = new KcAdminClient({ baseUrl: t.url, realmName: 'evt' });
    evt.setAccessToken(adminAccess);
    expect(await evt.realms.getConfigEvents({ realm: 'evt' })).toMatchObject({ eventsEnabled: false, adminEventsEnabled: false, eventsListeners: ['jboss-logging'] });
    await evt.realms.updateConfigEvents(
      { realm: 'evt' },
      { eventsEnabled: true, adminEventsEnabled: true, adminEventsDetailsEnabled: true, eventsListeners: ['jboss-logging'], enabledEventTypes: [] },
    );
    expect(await evt.realms.getConfigEvents({ realm: 'evt' })).toMatchObject({ eventsEnabled: true, adminEventsEnabled: true, adminEventsDetailsEnabled: true });
    const body = await rejects(evt.realms.updateConfigEvents({ realm: 'evt' }, { eventsListeners: ['jboss-logging', 'no-such-listener'] }), 400, 'eventsListeners');
    expect(String(body.errorMessage)).toContain('no-such-listener');
    await rejects(evt.realms.updateConfigEvents({ realm: 'evt' }, { eventsEnabled: 'yes' as unknown as boolean }), 400, 'eventsEnabled');
    await rejects(evt.realms.updateConfigEvents({ realm: 'evt' }, { bogus: true } as never), 400, 'bogus');
    expect(await evt.realms.getConfigEvents({ realm: 'evt' })).toMatchObject({ eventsEnabled: true, eventsListeners: ['jboss-logging'] });
    for (const missing of [randomUUID(), 'no-such-realm']) {
      await rejects(evt.realms.getConfigEvents({ realm: missing }), 404);
      await rejects(evt.realms.updateConfigEvents({ realm: missing }, { eventsEnabled: true }), 404);
      await rejects(evt.realms.findEvents({ realm: missing }), 404);
    }
  });

  it('stored events: a password login shows up in findEvents; admin writes in findAdminEvents', async () => {
    const evt = new KcAdminClient({ baseUrl: t.url, realmName: 'evt' });
    evt.setAccessToken(adminAccess);
    const { id: userId } = await evt.users.create({ username: 'logger', enabled: true, credentials: [{ type: 'password', value: 'logger-pass' }] });
    await passwordToken('evt', 'logger', 'logger-pass');
    expect((await tokenRequest(t.url, 'evt', { grant_type: 'password', client_id: 'admin-cli', username: 'logger', password: 'wrong' })).status).toBe(400);

    const login = await eventually(async () => (await evt.realms.findEvents({ realm: 'evt', type: 'LOGIN' })).find((e) => e.userId === userId));
    expect(login).toMatchObject({ type: 'LOGIN', clientId: 'admin-cli', userId, ipAddress: expect.any(String) });
    const failed = await eventually(async () => (await evt.realms.findEvents({ realm: 'evt', type: 'LOGIN_ERROR' }))[0]);
    expect(failed).toMatchObject({ type: 'LOGIN_ERROR', error: expect.any(String) });
    expect((await evt.realms.findEvents({ realm: 'evt', user: userId, max: 10 })).every((e) => e.userId === userId)).toBe(true);

    const created = await eventually(async () =>
      (await evt.realms.findAdminEvents({ realm: 'evt', operationTypes: 'CREATE', resourceTypes: 'USER' } as never)).find((e) => e.resourcePath === `users/${userId}`),
    );
    expect(created).toMatchObject({ operationType: 'CREATE', resourceType: 'USER', resourcePath: `users/${userId}` });
    expect(JSON.parse(created!.representation!)).toMatchObject({ username: 'logger' });
    expect(created!.representation).not.toContain('logger-pass');
    expect(created!.authDetails?.userId).toBe(decodeJwt(adminAccess).sub);

    await evt.users.del({ id: userId });
    await eventually(async () => (await evt.realms.findAdminEvents({ realm: 'evt', operationTypes: 'DELETE' } as never)).some((e) => e.resourcePath === `users/${userId}`));
  });

  // Server info ------------------------------------------------------------------------------------------

  it('serverinfo lists the installed providers, jboss-logging among them', async () => {
    const info = await kc.serverInfo.find();
    expect(Object.keys(info.providers?.eventsListener?.providers ?? {})).toContain('jboss-logging');
    expect((await api(t.url, 'GET', '/admin/serverinfo', null)).status).toBe(401);
  });

  // Who may call -----------------------------------------------------------------------------------------

  describe('authentication and authorization on every admin route', () => {
    let values: PathValues;

    beforeAll(async () => {
      const { id: client } = await kc.clients.create({ clientId: 'fixture-app' });
      await kc.clients.createRole({ id: client, name: 'fixture-role' });
      await kc.roles.create({ name: 'fixture-role' });
      const role = (await kc.roles.findOneByName({ name: 'fixture-role' }))!;
      const { id: user } = await kc.users.create({ username: 'fixture-user', enabled: true });
      const { id: org } = await kc.organizations.create({ name: 'Fixture', alias: 'fixture' });
      await kc.organizations.addMember({ orgId: org, userId: user });
      const { id: scope } = await kc.clientScopes.create({ name: 'fixture-scope', protocol: 'openid-connect' });
      await kc.clientScopes.addProtocolMapper({ id: scope }, { name: 'fixture-mapper', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'x', 'claim.value': 'y' } });
      const [mapper] = await kc.clientScopes.listProtocolMappers({ id: scope });
      values = { realm: REALM, 'clients:id': client, 'users:id': user, 'roles-by-id:id': role.id!, 'roles:id': role.id!, 'clientScopes:id': scope, 'organizations:id': org, roleName: 'fixture-role', client, userId: user, 'client-scopes:id': scope, scopeId: scope, mapperId: mapper.id!, protocol: 'openid-connect' };
    });

    const call = (method: string, url: string, headers: Record<string, string>) =>
      fetch(`${t.url}${fillPath(url, values)}`, { method, headers }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) }));

    it('lists every route the brief names', () => {
      const routes = adminRoutes(t.server.app).map((r) => `${r.method} ${r.url}`);
      expect(routes.length).toBeGreaterThanOrEqual(60);
      for (const expected of [
        'GET /admin/serverinfo',
        'POST /admin/realms',
        'PUT /admin/realms/:realm',
        'POST /admin/realms/:realm/clients/:id/client-secret',
        'GET /admin/realms/:realm/users/count',
        'PUT /admin/realms/:realm/users/:id/reset-password',
        'DELETE /admin/realms/:realm/users/:id/role-mappings/clients/:client',
        'POST /admin/realms/:realm/roles-by-id/:id/composites',
        'POST /admin/realms/:realm/organizations/:id/members',
        'PUT /admin/realms/:realm/events/config',
        'GET /admin/realms/:realm/admin-events',
      ]) {
        expect(routes).toContain(expected);
      }
    });

    it('401 without a token, with a malformed, forged, badly signed, unknown-issuer, alg=none or refresh token', async () => {
      const { privateKey } = await generateKeyPair('RS256');
      const claims = decodeJwt(nobodyToken);
      const [header, payload] = nobodyToken.split('.');
      const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const refresh = (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'nobody', password: 'nobody-pass' })).body.refresh_token as string;
      const tokens: Record<string, string | null> = {
        none: null,
        garbage: 'not-a-token',
        'basic auth': 'basic',
        'tampered payload': `${header}.${b64({ ...claims, realm_access: { roles: ['admin'] } })}.${nobodyToken.split('.')[2]}`,
        'foreign key': await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'RS256', kid: JSON.parse(Buffer.from(header, 'base64url').toString()).kid }).sign(privateKey),
        'unknown issuer': await new SignJWT({ ...claims, iss: `${t.url}/realms/nowhere` }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).sign(privateKey),
        'NUL issuer': await new SignJWT({ ...claims, iss: `${t.url}/realms/%00` }).setProtectedHeader({ alg: 'RS256', kid: 'k' }).sign(privateKey),
        'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`,
        'refresh token': refresh,
      };
      // The admin console's page is public (it signs in with keycloak-js); every API route needs a valid token.
      for (const route of adminRoutes(t.server.app).filter((r) => r.url !== '/admin/:realm/console')) {
        for (const [name, token] of Object.entries(tokens)) {
          const authorization: Record<string, string> = token === null ? {} : token === 'basic' ? { authorization: 'Basic YWRtaW46YWRtaW4=' } : { authorization: `Bearer ${token}` };
          const response = await call(route.method, route.url, authorization);
          expect(response.status, `${route.method} ${route.url} with ${name}: ${JSON.stringify(response.body)}`).toBe(401);
          expect(typeof (response.body?.errorMessage ?? response.body?.error), `${route.method} ${route.url}`).toBe('string');
        }
      }
    });

    it('403 for a realm user without realm-management roles, on every route, serverinfo included', async () => {
      // Not the console's public page, nor whoami, which tells any user of the realm its own (empty) access.
      for (const route of adminRoutes(t.server.app).filter((r) => !r.url.startsWith('/admin/:realm/console'))) {
        const response = await call(route.method, route.url, { authorization: `Bearer ${nobodyToken}` });
        expect(response.status, `${route.method} ${route.url}: ${JSON.stringify(response.body)}`).toBe(403);
      }
      // Nothing was touched.
      expect(await kc.users.findOne({ id: values['users:id'] })).toMatchObject({ username: 'fixture-user' });
      expect(await kc.clients.findOne({ id: values['clients:id'] })).toMatchObject({ clientId: 'fixture-app' });
    });

    it('403 for a role that does not cover the operation, and for another realm', async () => {
      const { id } = await kc.users.create({ username: 'viewer', enabled: true, credentials: [{ type: 'password', value: 'viewer-pass' }] });
      const [management] = await kc.clients.find({ clientId: 'realm-management' });
      const viewUsers = (await kc.clients.findRole({ id: management.id!, roleName: 'view-users' }))!;
      await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: [{ id: viewUsers.id!, name: viewUsers.name! }] });
      const viewer = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
      await viewer.auth({ username: 'viewer', password: 'viewer-pass', grantType: 'password', clientId: 'admin-cli' });

      expect((await viewer.users.find({ username: 'viewer' })).map((u) => u.username)).toEqual(['viewer']);
      await rejects(viewer.users.create({ username: 'intruder' }), 403);
      await rejects(viewer.users.update({ id }, { firstName: 'x' }), 403);
      await rejects(viewer.users.del({ id }), 403);
      await rejects(viewer.clients.find({}), 403);
      await rejects(viewer.roles.create({ name: 'sneaky' }), 403);
      await rejects(viewer.realms.update({ realm: REALM }, { registrationAllowed: true }), 403);
      await rejects(viewer.realms.getConfigEvents({ realm: REALM }), 403);
      await rejects(viewer.organizations.create({ name: 'Sneaky', alias: 'sneaky' }), 403);
      viewer.setConfig({ realmName: 'master' });
      await rejects(viewer.users.find({}), 403);
      await rejects(viewer.realms.create({ realm: 'sneaky' }), 403);
      expect(await kc.users.find({ username: 'intruder' })).toEqual([]);

      // A service account holding manage-clients only.
      const { id: robot } = await kc.clients.create({ clientId: 'robot', serviceAccountsEnabled: true, standardFlowEnabled: false });
      const manageClients = (await kc.clients.findRole({ id: management.id!, roleName: 'manage-clients' }))!;
      const robotUser = await kc.clients.getServiceAccountUser({ id: robot });
      await kc.users.addClientRoleMappings({ id: robotUser.id!, clientUniqueId: management.id!, roles: [{ id: manageClients.id!, name: manageClients.name! }] });
      const sa = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
      await sa.auth({ grantType: 'client_credentials', clientId: 'robot', clientSecret: (await kc.clients.getClientSecret({ id: robot })).value! });
      expect((await sa.clients.find({ clientId: 'robot' })).map((c) => c.id)).toEqual([robot]);
      await rejects(sa.users.find({}), 403);
      await rejects(sa.users.create({ username: 'robot-made' }), 403);
      await rejects(sa.roles.find(), 403);
      await rejects(sa.realms.getConfigEvents({ realm: REALM }), 403);
    });
  });

  it('401 with an expired token', async () => {
    // Tokens of the `short` realm live one second; the verifier allows five seconds of clock skew. The seven seconds
    // pass on a moved Date (issue 36: no waiting), put back before the next test.
    const clock = movableDate();
    try {
      clock.pass(shortLived.obtained + 7_000 - Date.now());
      const response = await api(t.url, 'GET', '/admin/realms/short/users', shortLived.token);
      expect(response.status).toBe(401);
      expect(response.body.errorMessage).toMatch(/expired/);
    } finally {
      clock.restore();
    }
  });

  it('answered nothing with a 500', () => {
    expect(t.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
  });
});
