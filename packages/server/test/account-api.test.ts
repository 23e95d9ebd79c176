/**
 * The account REST API (/realms/{realm}/account with application/json) against a real server: Keycloak's shapes,
 * the profile rules (the realm's and the disposable-e-mail blocker's, through the demo realm's registration flow),
 * events, bad input, and an attacker's attempts: no token, another realm's token, a token without manage-account,
 * a token of a client whose scope leaves the account roles (and audience) out, and signing out another user's session.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upgradeAccountRoles } from '../src/services/index.js';
import { REPO_ROOT, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

const REJECTION = 'Disposable e-mail addresses are not accepted. Please use a permanent address.';
const APP_ORIGIN = 'http://app.example';

let t: TestServer;
let kc: KcAdminClient;
let scratch: string;

const password = (username: string) => `${username}-pass-1`;
async function tokenOf(username: string, realm = 'demo', clientId = 'admin-cli') {
  const { status, body } = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: clientId, username, password: password(username) });
  expect(status).toBe(200);
  return body.access_token as string;
}
const account = (token: string | null, method = 'GET', path = '', body?: unknown, headers: Record<string, string> = {}) =>
  api(t.url, method, `/realms/demo/account${path}`, token, body, { accept: 'application/json', ...headers });
const events = (type: string) => kc.realms.findEvents({ realm: 'demo', type: type as never });

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'account-api-'));
  const providersDir = join(scratch, 'providers');
  mkdirSync(providersDir);
  symlinkSync(join(REPO_ROOT, 'packages', 'disposable-email'), join(providersDir, 'disposable-email'));
  // The demo realm's registration flow requires the proof of work too: without it the flow could not run.
  symlinkSync(join(REPO_ROOT, 'packages', 'pow'), join(providersDir, 'pow'));
  t = await startServer({ providersDir, config: { REALMGATE_IMPORT_REALM: join(REPO_ROOT, 'demo') } });
  kc = await masterAdminClient(t.url, 'demo');
  for (const [username, email] of [['alice', 'alice@example.com'], ['bob', 'bob@example.com'], ['viewer', 'viewer@example.com']]) {
    await kc.users.create({ username, email, emailVerified: true, firstName: username, enabled: true, credentials: [{ type: 'password', value: password(username) }] });
  }
  await kc.clients.create({ clientId: 'narrow', publicClient: true, directAccessGrantsEnabled: true, fullScopeAllowed: false });
  await kc.clients.create({ clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [`${APP_ORIGIN}/*`], webOrigins: ['+'] });
  await kc.realms.create({ realm: 'other', enabled: true });
  kc.setConfig({ realmName: 'other' });
  await kc.users.create({ username: 'alice', email: 'alice@example.com', enabled: true, credentials: [{ type: 'password', value: password('alice') }] });
  kc.setConfig({ realmName: 'demo' });
});
afterAll(async () => {
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the profile', () => {
  it('GET answers Keycloak’s account UserRepresentation for JSON, and the page for a browser', async () => {
    const token = await tokenOf('alice');
    const { status, body } = await account(token);
    expect(status).toBe(200);
    expect(body).toMatchObject({ username: 'alice', firstName: 'alice', email: 'alice@example.com', emailVerified: true });
    // No custom attributes: no `attributes` field, as Keycloak 26.7.3 (account-api.keycloak.ts).
    expect(body).not.toHaveProperty('attributes');
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.userProfileMetadata.attributes.map((a: { name: string }) => a.name)).toEqual(['username', 'email', 'firstName', 'lastName']);
    expect(body.userProfileMetadata.attributes[0]).toMatchObject({ name: 'username', readOnly: true, required: true });
    expect((await account(token, 'GET', '?userProfileMetadata=false')).body.userProfileMetadata).toBeUndefined();

    const page = await fetch(`${t.url}/realms/demo/account`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toContain('text/html');
  });

  it('POST changes names and e-mail (204), recorded as UPDATE_PROFILE and UPDATE_EMAIL with the token’s client', async () => {
    const token = await tokenOf('alice');
    const before = (await account(token)).body;
    const { status } = await account(token, 'POST', '', { ...before, firstName: 'Alice', lastName: 'Liddell', email: 'alice@example.org' });
    expect(status).toBe(204);
    expect((await account(token)).body).toMatchObject({ firstName: 'Alice', lastName: 'Liddell', email: 'alice@example.org', emailVerified: false });
    const profile = await eventually(async () => (await events('UPDATE_PROFILE')).find((e) => e.details?.updated_last_name === 'Liddell'));
    expect(profile).toMatchObject({ clientId: 'admin-cli', details: { context: 'ACCOUNT', previous_first_name: 'alice', updated_first_name: 'Alice' } });
    const email = await eventually(async () => (await events('UPDATE_EMAIL')).find((e) => e.details?.updated_email === 'alice@example.org'));
    expect(email.details).toMatchObject({ previous_email: 'alice@example.com', context: 'ACCOUNT' });
    // The profile's own attributes may come inside `attributes`, as the account console sends them.
    expect((await account(token, 'POST', '', { attributes: { firstName: ['Al'] } })).status).toBe(204);
    expect((await account(token)).body.firstName).toBe('Al');
  });

  it('refuses what the realm’s rules refuse, in Keycloak’s validation-error shape (always `errors`, as the account console reads it), and saves nothing', async () => {
    const token = await tokenOf('bob');
    const one = await account(token, 'POST', '', { email: 'not-an-email' });
    expect(one).toMatchObject({ status: 400, body: { errors: [{ field: 'email', errorMessage: 'error-invalid-email' }] } });
    const taken = await account(token, 'POST', '', { email: 'alice@example.org' });
    expect(taken).toMatchObject({ status: 400, body: { errors: [{ field: 'email', errorMessage: 'emailExistsMessage' }] } });
    const several = await account(token, 'POST', '', { firstName: 'B<b>', email: '' });
    expect(several.status).toBe(400);
    expect(several.body.errors).toEqual([
      { field: 'firstName', errorMessage: 'error-person-name-invalid-character', params: ['firstName'] },
      { field: 'email', errorMessage: 'error-user-attribute-required', params: ['email'] },
    ]);
    expect((await account(token, 'POST', '', { username: 'robert' })).body).toMatchObject({ errors: [{ field: 'username', errorMessage: 'updateReadOnlyAttributesRejectedMessage' }] });
    expect((await account(token)).body).toMatchObject({ username: 'bob', firstName: 'bob', email: 'bob@example.com' });
  });

  it('refuses a disposable address through the registration flow’s profile rules (UPDATE_EMAIL_ERROR), keeping the old one', async () => {
    const token = await tokenOf('bob');
    const refused = await account(token, 'POST', '', { email: 'bob@sub.mailinator.com' });
    expect(refused).toMatchObject({ status: 400, body: { errors: [{ field: 'email', errorMessage: REJECTION }] } });
    expect((await account(token)).body.email).toBe('bob@example.com');
    const event = await eventually(async () => (await events('UPDATE_EMAIL_ERROR')).find((e) => e.details?.updated_email === 'bob@sub.mailinator.com'));
    expect(event).toMatchObject({ error: 'invalid_email_domain', clientId: 'admin-cli', details: { previous_email: 'bob@example.com', context: 'ACCOUNT' } });
  });

  it('answers bad input with 400 naming the field', async () => {
    const token = await tokenOf('bob');
    const cases: [unknown, string | undefined][] = [
      [{ firstName: 5 }, 'firstName'],
      [{ email: ['bob@example.com'] }, 'email'],
      [{ emailVerified: 'yes' }, 'emailVerified'],
      [{ nickname: 'b' }, 'nickname'],
      [{ attributes: { nickname: ['b'] } }, 'nickname'],
      [{ attributes: { firstName: ['a', 'b'] } }, 'firstName'],
      [{ attributes: { lastName: [7] } }, 'lastName'],
      [{ attributes: ['x'] }, 'attributes'],
      [{ firstName: 'a'.repeat(256) }, 'firstName'],
      [{ lastName: 'a'.repeat(100_000) }, 'lastName'],
      [{ email: `${'a'.repeat(250)}@example.com` }, 'email'],
      [[], undefined],
      ['"text"', undefined],
    ];
    for (const [body, field] of cases) {
      const answer = await account(token, 'POST', '', body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      // A malformed body is a plain 400 {errorMessage} naming the field (Keycloak's shape for it has no `field`); a
      // value the profile's rules refuse, Keycloak's `errors` with the field.
      const error = answer.body.errors?.[0] ?? answer.body;
      if (field) expect(error.field ?? error.errorMessage, JSON.stringify(body).slice(0, 80)).toContain(field);
      expect(typeof error.errorMessage).toBe('string');
    }
    expect((await account(token, 'POST', '', '{not json')).status).toBe(400);
    const form = await fetch(`${t.url}/realms/demo/account`, { method: 'POST', headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' }, body: 'firstName=Form' });
    expect(form.status).toBe(415);
    expect((await account(token)).body).toMatchObject({ firstName: 'bob', email: 'bob@example.com' });
  });
});

describe('credentials, sessions, applications, groups, linked accounts', () => {
  it('lists the password credential, and the OTP type with no credential yet', async () => {
    const token = await tokenOf('viewer');
    const { status, body } = await account(token, 'GET', '/credentials');
    expect(status).toBe(200);
    expect(body).toEqual([
      expect.objectContaining({ type: 'password', category: 'basic-authentication', updateAction: 'UPDATE_PASSWORD', removeable: false, userCredentialMetadatas: [{ credential: expect.objectContaining({ type: 'password', createdDate: expect.any(Number) }) }] }),
      expect.objectContaining({ type: 'otp', category: 'two-factor', createAction: 'CONFIGURE_TOTP', removeable: true, userCredentialMetadatas: [] }),
    ]);
    expect((await account(token, 'GET', '/credentials?type=otp')).body).toEqual([expect.objectContaining({ type: 'otp', userCredentialMetadatas: [] })]);
    expect((await account(token, 'GET', '/credentials?type=webauthn')).body).toEqual([]);
    expect((await account(token, 'GET', '/credentials?user-credentials=false')).body[0].userCredentialMetadatas).toBeUndefined();
  });

  it('lists sessions and devices with the current one marked, applications in use, and empty groups and linked accounts', async () => {
    const first = await tokenOf('viewer');
    const second = await tokenOf('viewer', 'demo', 'spa');
    const sessions = (await account(second, 'GET', '/sessions')).body as { id: string; current: boolean; clients: { clientId: string }[]; started: number; expires: number }[];
    expect(sessions.length).toBeGreaterThanOrEqual(2);
    expect(sessions.filter((s) => s.current)).toHaveLength(1);
    expect(sessions.find((s) => s.current)!.clients).toEqual([{ clientId: 'spa', userConsentRequired: false, inUse: true, offlineAccess: false }]);
    expect(sessions[0].expires).toBeGreaterThan(sessions[0].started);
    const devices = (await account(first, 'GET', '/sessions/devices')).body;
    expect(devices[0]).toMatchObject({ os: 'Other', browser: 'Other/Unknown', mobile: false, sessions: [expect.objectContaining({ id: devices[0].id })] });
    const apps = (await account(first, 'GET', '/applications')).body.map((a: { clientId: string; inUse: boolean }) => [a.clientId, a.inUse]);
    expect(apps).toEqual([['admin-cli', true], ['spa', true]]);
    expect((await account(first, 'GET', '/groups')).body).toEqual([]);
    expect((await account(first, 'GET', '/linked-accounts')).body).toEqual([]);
  });

  it('an offline token shows as offline access of its application, not as a session', async () => {
    const offline = await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'spa', username: 'alice', password: password('alice'), scope: 'openid offline_access' });
    expect(offline.status).toBe(200);
    const token = await tokenOf('alice');
    const apps = (await account(token, 'GET', '/applications')).body as { clientId: string; inUse: boolean; offlineAccess: boolean }[];
    expect(apps.find((a) => a.clientId === 'spa')).toMatchObject({ offlineAccess: true });
    expect(apps.find((a) => a.clientId === 'admin-cli')).toMatchObject({ inUse: true, offlineAccess: false });
    // The offline session is not among the sessions (nor signed out by DELETE /sessions): its token keeps working.
    const offlineSession = JSON.parse(Buffer.from(String(offline.body.refresh_token).split('.')[1], 'base64url').toString()).sid as string;
    const sessions = (await account(token, 'GET', '/sessions')).body as { id: string }[];
    expect(sessions.map((s) => s.id)).not.toContain(offlineSession);
    expect((await account(token, 'DELETE', `/sessions/${offlineSession}`)).status).toBe(204);
    expect(await t.server.context.storage.sessions.byId(offlineSession)).not.toBeNull();
  });

  it('signs a session out (LOGOUT event); DELETE /sessions ends every other one', async () => {
    const keep = await tokenOf('viewer');
    const end = await tokenOf('viewer');
    const current = (await account(end, 'GET', '/sessions')).body.find((s: { current: boolean }) => s.current).id;
    expect((await account(keep, 'DELETE', `/sessions/${current}`)).status).toBe(204);
    expect((await account(end)).status).toBe(401);
    expect((await account(keep)).status).toBe(200);
    await eventually(async () => (await events('LOGOUT')).find((e) => e.sessionId === current && e.details?.context === 'ACCOUNT'));
    const another = await tokenOf('viewer');
    expect((await account(keep, 'DELETE', '/sessions')).status).toBe(204);
    expect((await account(another)).status).toBe(401);
    expect((await account(keep, 'GET', '/sessions')).body.map((s: { current: boolean }) => s.current)).toEqual([true]);
    expect((await account(keep, 'DELETE', '/sessions?current=true')).status).toBe(204);
    expect((await account(keep)).status).toBe(401);
  });
});

describe('as an attacker', () => {
  it('no token, a malformed one, or another realm’s token: 401', async () => {
    expect(await account(null)).toMatchObject({ status: 401, body: { error: 'HTTP 401 Unauthorized' } });
    expect((await account('not.a.token')).status).toBe(401);
    const foreign = await tokenOf('alice', 'other');
    expect((await account(foreign)).status).toBe(401);
    expect((await account(foreign, 'POST', '', { firstName: 'Mallory' })).status).toBe(401);
    expect((await api(t.url, 'GET', '/realms/nowhere/account', foreign, undefined, { accept: 'application/json' })).status).toBe(404);
  });

  it('a token without manage-account reads but cannot change the profile or sign sessions out: 403', async () => {
    const user = (await kc.users.find({ username: 'viewer', exact: true }))[0];
    const defaults = (await kc.roles.find()).find((r) => r.name === 'default-roles-demo')!;
    await kc.users.delRealmRoleMappings({ id: user.id!, roles: [{ id: defaults.id!, name: defaults.name! }] });
    const accountClient = (await kc.clients.find({ clientId: 'account' }))[0];
    const viewProfile = await kc.clients.findRole({ id: accountClient.id!, roleName: 'view-profile' });
    await kc.users.addClientRoleMappings({ id: user.id!, clientUniqueId: accountClient.id!, roles: [{ id: viewProfile!.id!, name: 'view-profile' }] });
    const token = await tokenOf('viewer');
    expect((await account(token)).status).toBe(200);
    expect((await account(token, 'GET', '/sessions')).status).toBe(200);
    expect((await account(token, 'POST', '', { firstName: 'Changed' })).status).toBe(403);
    expect((await account(token, 'DELETE', '/sessions?current=true')).status).toBe(403);
    expect((await account(token, 'GET', '/groups')).status).toBe(403);
    expect((await account(token, 'GET', '/applications')).status).toBe(403);
    expect((await account(token)).body.firstName).toBe('viewer');
  });

  it('a token of a client whose scope leaves the account roles (and so the account audience) out: 401, as Keycloak', async () => {
    const token = await tokenOf('bob', 'demo', 'narrow');
    expect((await account(token)).status).toBe(401);
    expect((await account(token, 'POST', '', { firstName: 'Changed' })).status).toBe(401);
  });

  it('one user cannot sign out another’s session: 204 as Keycloak, and the session lives on', async () => {
    const alice = await tokenOf('alice');
    const bob = await tokenOf('bob');
    const aliceSession = (await account(alice, 'GET', '/sessions')).body.find((s: { current: boolean }) => s.current).id;
    expect((await account(bob, 'DELETE', `/sessions/${aliceSession}`)).status).toBe(204);
    expect((await account(alice)).status).toBe(200);
    expect((await account(bob, 'GET', '/sessions')).body.some((s: { id: string }) => s.id === aliceSession)).toBe(false);
    expect((await account(bob, 'DELETE', `/sessions/${'x'.repeat(400)}`)).status).toBe(204);
  });
});

describe('CORS and the account client', () => {
  it('grants the token’s client’s web origins, and answers the preflight', async () => {
    const token = await tokenOf('alice', 'demo', 'spa');
    const allowed = await account(token, 'GET', '', undefined, { origin: APP_ORIGIN });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    const other = await account(token, 'GET', '', undefined, { origin: 'http://evil.example' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${t.url}/realms/demo/account`, { method: 'OPTIONS', headers: { origin: APP_ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, accept' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    const refused = await fetch(`${t.url}/realms/demo/account/sessions`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'DELETE' } });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('every realm’s account client has Keycloak’s roles and account-console its scope; a realm from before gets the missing roles at start-up', async () => {
    const accountClient = (await kc.clients.find({ clientId: 'account' }))[0];
    const names = (await kc.clients.listRoles({ id: accountClient.id! })).map((r) => r.name).sort();
    expect(names).toEqual(['delete-account', 'manage-account', 'manage-account-links', 'manage-consent', 'view-applications', 'view-consent', 'view-groups', 'view-profile']);
    const manage = (await kc.clients.listRoles({ id: accountClient.id! })).find((r) => r.name === 'manage-account')!;
    expect((await kc.roles.getCompositeRoles({ id: manage.id! })).map((r) => r.name)).toEqual(['manage-account-links']);
    // account-console's tokens carry what Keycloak's carry: manage-account (and what it implies) and view-groups.
    const consoleClient = (await kc.clients.find({ clientId: 'account-console' }))[0];
    expect(consoleClient.fullScopeAllowed).toBe(false);
    const consoleScope = await kc.clients.listClientScopeMappings({ id: consoleClient.id!, client: accountClient.id! });
    expect(consoleScope.map((r) => r.name).sort()).toEqual(['manage-account', 'view-groups']);
    const { storage } = t.server.context;
    await storage.db.deleteFrom('role').where('container_id', '=', accountClient.id!).where('name', 'in', ['view-groups', 'manage-account-links']).execute();
    expect(await storage.transaction((trx) => upgradeAccountRoles(storage, trx))).toEqual(['demo']);
    expect((await kc.clients.listRoles({ id: accountClient.id! })).map((r) => r.name)).toEqual(expect.arrayContaining(['view-groups', 'manage-account-links']));
    expect((await kc.roles.getCompositeRoles({ id: manage.id! })).map((r) => r.name)).toEqual(['manage-account-links']);
    expect(await storage.transaction((trx) => upgradeAccountRoles(storage, trx))).toEqual([]);
  });
});
