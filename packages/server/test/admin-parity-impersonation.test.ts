import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { FormClient, pkce } from './support/forms.js';
import { api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 41: impersonation as Keycloak's (`POST users/{id}/impersonation`), and tried as an attacker would: the
 * `impersonation` role alone opens it, never for a user holding administrative roles the caller lacks, never across
 * realms; every impersonation is an admin event, an IMPERSONATE event and a session of the user.
 */
const REALM = 'imp';
const callback = 'http://127.0.0.1:9/cb';
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

describe('impersonation', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let target: string;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true, eventsEnabled: true, adminEventsEnabled: true, enabledEventTypes: ['IMPERSONATE', 'IMPERSONATE_ERROR', 'LOGIN'] });
    kc.setConfig({ realmName: REALM });
    ({ id: target } = await kc.users.create({ username: 'tina', enabled: true, email: 'tina@example.com', firstName: 'Tina', lastName: 'T', emailVerified: true }));
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [callback], standardFlowEnabled: true });
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Follows the link as the caller's browser would: an SSO cookie of the user, then the account console. */
  const follow = async (redirect: string) => {
    const browser = new FormClient(t.url);
    const answer = await browser.get(redirect);
    return { browser, answer };
  };

  /** The user the browser's SSO cookie signs in (prompt=none, code exchanged). */
  const signedInAs = async (browser: FormClient) => {
    const { verifier, challenge } = pkce();
    const auth = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' })}`);
    const code = new URL(auth.location!).searchParams.get('code');
    expect(code, auth.location ?? auth.text).toBeTruthy();
    const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'web', code: code!, redirect_uri: callback, code_verifier: verifier });
    return claimsOf((tokens.body as { access_token: string }).access_token).preferred_username;
  };

  it("signs the caller's browser in as the user, records it, and shows the session among the user's", async () => {
    const answer = (await kc.users.impersonation({ id: target }, { user: target, realm: REALM })) as { redirect: string; sameRealm: boolean };
    expect(Object.keys(answer).sort()).toEqual(['redirect', 'sameRealm']);
    expect(answer.sameRealm).toBe(false);
    expect(answer.redirect).toMatch(new RegExp(`^${t.url}/realms/${REALM}/login-actions/action-token\\?key=`));
    const { browser, answer: followed } = await follow(answer.redirect);
    expect(followed.status).toBe(302);
    expect(followed.location).toBe(`${t.url}/realms/${REALM}/account`);
    expect(followed.setCookies).toContain('REALMGATE_SESSION');
    expect(await signedInAs(browser)).toBe('tina');
    const sessions = await kc.users.listSessions({ id: target });
    expect(sessions.length).toBeGreaterThanOrEqual(1);
    const events = await kc.realms.findEvents({ realm: REALM, type: 'IMPERSONATE' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ userId: target, details: { impersonator: 'admin', impersonator_realm: 'master' } });
    expect(sessions.map((s) => s.id)).toContain(events[0].sessionId);
    const admin = await kc.realms.findAdminEvents({ realm: REALM, operationTypes: 'ACTION' as never });
    expect(admin.some((e) => e.resourcePath === `users/${target}/impersonation` && e.resourceType === 'USER')).toBe(true);
    // The link is used once.
    const again = await follow(answer.redirect);
    expect(again.answer.status).toBe(400);
    expect(again.answer.setCookies).not.toContain('REALMGATE_SESSION');
    expect((await kc.realms.findEvents({ realm: REALM, type: 'IMPERSONATE_ERROR' }))[0]).toMatchObject({ error: 'invalid_token' });
  });

  it('tells the console whether the caller may impersonate (access.impersonate)', async () => {
    expect((await kc.users.findOne({ id: target }))!.access!.impersonate).toBe(true);
    const manager = await tokenOfUserWithRoles(kc, t.url, 'only-manage-users', ['manage-users']);
    expect(((await api(t.url, 'GET', `/admin/realms/${REALM}/users/${target}`, manager)).body as { access: { impersonate: boolean } }).access.impersonate).toBe(false);
  });

  it("provisions the impersonation role as Keycloak: in realm-management, inside realm-admin, and in master's {realm}-realm", async () => {
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    const role = await kc.clients.findRole({ id: management.id!, roleName: 'impersonation' });
    expect(role).toMatchObject({ name: 'impersonation', clientRole: true });
    const realmAdmin = await kc.clients.findRole({ id: management.id!, roleName: 'realm-admin' });
    expect((await kc.roles.getCompositeRoles({ id: realmAdmin!.id! })).map((r) => r.name)).toContain('impersonation');
    const master = await masterAdminClient(t.url);
    const [adminClient] = await master.clients.find({ clientId: `${REALM}-realm` });
    expect((await master.clients.listRoles({ id: adminClient.id! })).map((r) => r.name)).toContain('impersonation');
  });

  it('refuses a manage-users holder without the impersonation role (403)', async () => {
    const manager = await tokenOfUserWithRoles(kc, t.url, 'manager-no-imp', ['manage-users', 'view-users']);
    const answer = await api(t.url, 'POST', `/admin/realms/${REALM}/users/${target}/impersonation`, manager);
    expect(answer.status).toBe(403);
  });

  it('refuses to impersonate a user holding an administrative role the caller lacks (403); a same-realm caller may impersonate an ordinary user and its own session ends', async () => {
    const { management, roles } = await realmManagement(kc);
    const { id: boss } = await kc.users.create({ username: 'boss', enabled: true });
    await kc.users.addClientRoleMappings({ id: boss, clientUniqueId: management, roles: [roles.get('manage-realm')!] as never });
    const impersonator = await tokenOfUserWithRoles(kc, t.url, 'impersonator', ['impersonation']);
    const refused = await api(t.url, 'POST', `/admin/realms/${REALM}/users/${boss}/impersonation`, impersonator);
    expect(refused.status).toBe(403);
    // A realm administrator (realm-admin) of this realm impersonating the master administrator: no power over master.
    const [masterAdmin] = await (await masterAdminClient(t.url)).users.find({ username: 'admin', exact: true });
    expect((await api(t.url, 'POST', `/admin/realms/master/users/${masterAdmin.id}/impersonation`, impersonator)).status).toBe(403);
    const realmAdmin = await tokenOfUserWithRoles(kc, t.url, 'realm-admin-user', ['realm-admin']);
    expect((await api(t.url, 'POST', `/admin/realms/master/users/${masterAdmin.id}/impersonation`, realmAdmin)).status).toBe(403);
    // Another realm's user named under this realm's path is not found.
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/users/${masterAdmin.id}/impersonation`, realmAdmin)).status).toBe(404);
    const allowed = await api(t.url, 'POST', `/admin/realms/${REALM}/users/${target}/impersonation`, impersonator);
    expect(allowed.status).toBe(200);
    expect((allowed.body as { sameRealm: boolean }).sameRealm).toBe(true);
    // The impersonator's own session ended: its token no longer calls the admin API.
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/users/${target}/impersonation`, impersonator)).status).toBe(401);
    const { browser } = await follow((allowed.body as { redirect: string }).redirect);
    expect(await signedInAs(browser)).toBe('tina');
    const events = await kc.realms.findEvents({ realm: REALM, type: 'IMPERSONATE' });
    expect(events.some((e) => e.details?.impersonator === 'impersonator' && e.details?.impersonator_realm === REALM)).toBe(true);
  });

  it('refuses a disabled user and a service account (400), and an unknown user (404)', async () => {
    const { id: off } = await kc.users.create({ username: 'off', enabled: false });
    await rejects(kc.users.impersonation({ id: off }, { user: off, realm: REALM }), 400, /disabled/);
    const { id: svcClient } = await kc.clients.create({ clientId: 'svc', serviceAccountsEnabled: true, publicClient: false });
    const svcUser = await kc.clients.getServiceAccountUser({ id: svcClient });
    await rejects(kc.users.impersonation({ id: svcUser.id! }, { user: svcUser.id!, realm: REALM }), 400, /Service accounts/);
    await rejects(kc.users.impersonation({ id: '00000000-0000-4000-8000-000000000000' }, { user: '', realm: REALM }), 404);
  });
});
