import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, httpDatabases, startServer, tokenRequest, type TestServer, errorText } from './support/server.js';

/**
 * Issue 14, point 5: refresh tokens as Keycloak 26. Reuse is allowed unless the realm's revokeRefreshToken is on;
 * then refreshTokenMaxReuse bounds it. offline_access gives an Offline token whose offline session outlives the
 * SSO session, is listed by the admin API and can be revoked. The realm's session timeouts apply. On SQLite (issue 36):
 * the sessions repository (refresh-token families and their concurrent uses, offline sessions and their lists, what
 * goes with a session) is checked on both databases by storage-sessions.test.ts.
 */
const REALM = 'refresh';
const PASSWORD = 'Refresh-password-1';
const CALLBACK = 'http://127.0.0.1:9/cb';
let t: TestServer;
let admin: string;
let userId: string;
let appUuid: string;

const password = (scope?: string, clientId = 'app') =>
  tokenRequest(t.url, REALM, { grant_type: 'password', client_id: clientId, username: 'rita', password: PASSWORD, ...(scope ? { scope } : {}) });
const refresh = (refreshToken: string, clientId = 'app') => tokenRequest(t.url, REALM, { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken });
const setRealm = async (settings: Record<string, unknown>) => expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, settings)).status).toBe(204);
/** Moves a session's last refresh and start into the past, as if that much time had gone by. */
const age = async (sessionId: string, seconds: number) => {
  const row = await t.server.context.storage.db.selectFrom('user_session').select(['started', 'last_refresh']).where('id', '=', sessionId).executeTakeFirstOrThrow();
  await t.server.context.storage.db
    .updateTable('user_session')
    .set({ started: row.started - seconds * 1000, last_refresh: row.last_refresh - seconds * 1000 })
    .where('id', '=', sessionId)
    .execute();
};

describe.each(httpDatabases)('refresh and offline tokens (%s)', (database) => {
  beforeAll(async () => {
    t = await startServer({ database });
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [CALLBACK] })).status).toBe(201);
    appUuid = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=app`, admin)).body[0].id;
    expect(
      (await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'narrow', publicClient: true, directAccessGrantsEnabled: true, fullScopeAllowed: false })).status,
    ).toBe(201);
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'rita', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
    expect(created.status).toBe(201);
    userId = created.headers.get('location')!.split('/').pop()!;
  });
  afterAll(() => t?.close());

  describe('refresh token reuse', () => {
    it("Keycloak 26's defaults are in the realm representation", async () => {
      const realm = (await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body;
      expect(realm).toMatchObject({ revokeRefreshToken: false, refreshTokenMaxReuse: 0, ssoSessionIdleTimeout: 1800, ssoSessionMaxLifespan: 36000, offlineSessionIdleTimeout: 2592000, offlineSessionMaxLifespanEnabled: false, offlineSessionMaxLifespan: 5184000 });
    });

    it('by default a refresh token may be used again and again; the session stays', async () => {
      const first = await password();
      for (let i = 0; i < 3; i++) expect((await refresh(first.body.refresh_token as string)).status).toBe(200);
    });

    it('revokeRefreshToken with refreshTokenMaxReuse 0: a reuse is refused and ends the client\'s part of the session', async () => {
      await setRealm({ revokeRefreshToken: true, refreshTokenMaxReuse: 0 });
      const login = await password();
      const rt1 = login.body.refresh_token as string;
      const second = await refresh(rt1);
      expect(second.status).toBe(200);
      expect(await refresh(rt1)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Maximum allowed refresh token reuse exceeded' } });
      // As Keycloak 26, the client session is detached: the current token and the access tokens stop working too.
      expect((await refresh(second.body.refresh_token as string)).body.error_description).toBe('Session not active');
      const userinfo = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${second.body.access_token}` } });
      expect(userinfo.status).toBe(401);
    });

    it('revokeRefreshToken: of five concurrent uses of one token with refreshTokenMaxReuse 0, one succeeds', async () => {
      await setRealm({ revokeRefreshToken: true, refreshTokenMaxReuse: 0 });
      const rt = (await password()).body.refresh_token as string;
      const results = await Promise.all(Array.from({ length: 5 }, () => refresh(rt)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status !== 200 && r.status !== 400)).toEqual([]);
    });

    it('revokeRefreshToken: a token older than the last used and the last issued is stale', async () => {
      await setRealm({ revokeRefreshToken: true, refreshTokenMaxReuse: 0 });
      const rt1 = (await password()).body.refresh_token as string;
      const rt2 = (await refresh(rt1)).body.refresh_token as string;
      const third = await refresh(rt2);
      expect(third.status).toBe(200);
      expect(await refresh(rt1)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Stale token' } });
      expect((await refresh(third.body.refresh_token as string)).body.error_description).toBe('Session not active');
    });

    it('revokeRefreshToken: two sign-ins of one browser session (two tabs) rotate independently', async () => {
      await setRealm({ revokeRefreshToken: true, refreshTokenMaxReuse: 0 });
      const browser = new FormClient(t.url);
      const signIn = async () => {
        const { verifier, challenge } = pkce();
        const query = new URLSearchParams({ client_id: 'app', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' });
        let response = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${query}`);
        if (response.status === 200) {
          response = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'rita', password: PASSWORD, session_code: inputValue(response.text, 'session_code')! });
        }
        expect(response.status).toBe(302);
        const code = new URL(response.location!).searchParams.get('code')!;
        return (await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'app', code, redirect_uri: CALLBACK, code_verifier: verifier })).body;
      };
      const tabA = await signIn();
      const tabB = await signIn();
      expect(decodeJwt(tabA.refresh_token as string).sid).toBe(decodeJwt(tabB.refresh_token as string).sid);
      const a2 = await refresh(tabA.refresh_token as string);
      expect(a2.status).toBe(200);
      const b2 = await refresh(tabB.refresh_token as string);
      expect(b2.status).toBe(200);
      expect((await refresh(a2.body.refresh_token as string)).status).toBe(200);
      expect((await refresh(b2.body.refresh_token as string)).status).toBe(200);
    });

    it('refreshTokenMaxReuse 2: the token used last works two more times, then is refused', async () => {
      await setRealm({ revokeRefreshToken: true, refreshTokenMaxReuse: 2 });
      const rt1 = (await password()).body.refresh_token as string;
      for (let i = 0; i < 3; i++) expect((await refresh(rt1)).status, `use ${i + 1}`).toBe(200);
      expect((await refresh(rt1)).body.error_description).toBe('Maximum allowed refresh token reuse exceeded');
      expect((await refresh(rt1)).body.error_description).toBe('Session not active');
      await setRealm({ revokeRefreshToken: false, refreshTokenMaxReuse: 0 });
      const again = (await password()).body.refresh_token as string;
      for (let i = 0; i < 4; i++) expect((await refresh(again)).status).toBe(200);
    });

    it('refuses bad realm settings with 400 naming the field', async () => {
      for (const [field, value] of [['refreshTokenMaxReuse', -1], ['refreshTokenMaxReuse', 'x'], ['revokeRefreshToken', 'yes'], ['offlineSessionIdleTimeout', 0]] as const) {
        const response = await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { [field]: value });
        expect(response.status, field).toBe(400);
        expect(errorText(response.body)).toContain(field);
      }
    });
  });

  describe('SSO session timeouts', () => {
    it('a refresh after ssoSessionIdleTimeout, or beyond ssoSessionMaxLifespan, is refused: Session not active', async () => {
      const tokens = await password();
      const sid = decodeJwt(tokens.body.refresh_token as string).sid as string;
      await age(sid, 1801);
      expect(await refresh(tokens.body.refresh_token as string)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Session not active' } });
      const userinfo = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.body.access_token}` } });
      expect(userinfo.status).toBe(401);
    });

    it('the refresh token expires with the session: refresh_expires_in is the idle timeout', async () => {
      const tokens = await password();
      expect(tokens.body.refresh_expires_in).toBe(1800);
      const claims = decodeJwt(tokens.body.refresh_token as string);
      expect(claims.typ).toBe('Refresh');
      expect(claims.exp! - claims.iat!).toBe(1800);
    });
  });

  describe('offline tokens', () => {
    it('offline_access gives an Offline refresh token that outlives the SSO session and refreshes as Offline', async () => {
      const tokens = await password('openid offline_access');
      expect(tokens.status).toBe(200);
      expect((tokens.body.scope as string).split(' ')).toContain('offline_access');
      const offline = decodeJwt(tokens.body.refresh_token as string);
      expect(offline.typ).toBe('Offline');
      // As Keycloak: no expiry in the Offline token unless the realm limits offline sessions; the session idles out.
      expect(tokens.body.refresh_expires_in).toBe(0);
      expect(offline.exp).toBeUndefined();
      // The SSO sessions of the user end (idle for longer than ssoSessionIdleTimeout): the offline one stays.
      for (const s of await t.server.context.storage.sessions.forUser((await t.server.context.storage.realms.byName(REALM))!.id, userId)) await age(s.id, 1801);
      await age(offline.sid as string, 1801);
      const refreshed = await refresh(tokens.body.refresh_token as string);
      expect(refreshed.status).toBe(200);
      expect(decodeJwt(refreshed.body.refresh_token as string).typ).toBe('Offline');
      expect(decodeJwt(refreshed.body.access_token as string).sid).toBe(offline.sid);
      const introspected = await api(t.url, 'GET', `/admin/realms/${REALM}/users/${userId}/offline-sessions/${appUuid}`, admin);
      expect(introspected.status).toBe(200);
      expect(introspected.body.map((s: { id: string }) => s.id)).toContain(offline.sid);
    });

    it('through the authorization code flow too: the browser keeps its SSO session, the app an offline one', async () => {
      const browser = new FormClient(t.url);
      const { verifier, challenge } = pkce();
      const query = new URLSearchParams({ client_id: 'app', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid offline_access', code_challenge: challenge, code_challenge_method: 'S256' });
      const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${query}`);
      const signedIn = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'rita', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
      expect(signedIn.status).toBe(302);
      const callback = new URL(signedIn.location!);
      const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'app', code: callback.searchParams.get('code')!, redirect_uri: CALLBACK, code_verifier: verifier });
      expect(tokens.status).toBe(200);
      const offline = decodeJwt(tokens.body.refresh_token as string);
      expect(offline.typ).toBe('Offline');
      expect(offline.sid).not.toBe(callback.searchParams.get('session_state'));
      // The browser's session ends; the offline token still refreshes.
      await t.server.context.storage.sessions.delete(callback.searchParams.get('session_state')!);
      expect((await refresh(tokens.body.refresh_token as string)).status).toBe(200);
    });

    it('offlineSessionIdleTimeout ends an offline session', async () => {
      const tokens = await password('offline_access');
      await age(decodeJwt(tokens.body.refresh_token as string).sid as string, 2592001);
      expect((await refresh(tokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
    });

    it('offlineSessionMaxLifespan applies when enabled', async () => {
      await setRealm({ offlineSessionMaxLifespanEnabled: true, offlineSessionMaxLifespan: 3600 });
      const tokens = await password('offline_access');
      expect(tokens.body.refresh_expires_in).toBe(3600);
      const claims = decodeJwt(tokens.body.refresh_token as string);
      expect(claims.exp! - claims.iat!).toBe(3600);
      await age(decodeJwt(tokens.body.refresh_token as string).sid as string, 3601);
      expect((await refresh(tokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
      await setRealm({ offlineSessionMaxLifespanEnabled: false });
    });

    it('are listed by the admin API (user and client, with a count) and revoked there', async () => {
      const tokens = await password('offline_access');
      const sid = decodeJwt(tokens.body.refresh_token as string).sid as string;
      const ofUser = await api(t.url, 'GET', `/admin/realms/${REALM}/users/${userId}/offline-sessions/${appUuid}`, admin);
      const session = ofUser.body.find((s: { id: string }) => s.id === sid);
      expect(session).toMatchObject({ id: sid, username: 'rita', userId, clients: { [appUuid]: 'app' }, rememberMe: false });
      expect(typeof session.start).toBe('number');
      const ofClient = await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${appUuid}/offline-sessions`, admin);
      expect(ofClient.body.map((s: { id: string }) => s.id)).toContain(sid);
      const count = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${appUuid}/offline-session-count`, admin)).body.count;
      expect(count).toBe(ofClient.body.length);
      // The SSO sessions the same logins opened are not offline sessions.
      const realmId = (await t.server.context.storage.realms.byName(REALM))!.id;
      const online = (await t.server.context.storage.sessions.forUser(realmId, userId)).map((s) => s.id);
      expect(online.length).toBeGreaterThan(0);
      expect(ofClient.body.filter((s: { id: string }) => online.includes(s.id))).toEqual([]);

      expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/users/${userId}/consents/app`, admin)).status).toBe(204);
      expect((await refresh(tokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
      expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${appUuid}/offline-session-count`, admin)).body.count).toBe(0);
      expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/users/${userId}/consents/app`, admin)).status).toBe(404);
    });

    it('DELETE /admin/realms/{realm}/sessions/{id} ends one session, ?isOffline=true an offline one', async () => {
      const offlineTokens = await password('offline_access');
      const offlineSid = decodeJwt(offlineTokens.body.refresh_token as string).sid as string;
      const path = (id: string, offline: boolean) => `/admin/realms/${REALM}/sessions/${id}${offline ? '?isOffline=true' : ''}`;
      expect((await api(t.url, 'DELETE', path(offlineSid, false), admin)).status).toBe(404);
      expect((await api(t.url, 'DELETE', path(offlineSid, true), admin)).status).toBe(204);
      expect((await refresh(offlineTokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
      const online = await password();
      const sid = decodeJwt(online.body.refresh_token as string).sid as string;
      expect((await api(t.url, 'DELETE', path(sid, true), admin)).status).toBe(404);
      expect((await api(t.url, 'DELETE', path(sid, false), admin)).status).toBe(204);
      expect((await refresh(online.body.refresh_token as string)).body.error_description).toBe('Session not active');
      expect((await api(t.url, 'DELETE', path(sid, false), admin)).status).toBe(404);
      expect((await api(t.url, 'DELETE', `/admin/realms/master/sessions/${offlineSid}?isOffline=true`, admin)).status).toBe(404);
      expect((await api(t.url, 'DELETE', path(sid, false), null)).status).toBe(401);
    });

    it('the revocation endpoint ends an offline session', async () => {
      const tokens = await password('offline_access');
      const form = (path: string, body: Record<string, string>) =>
        fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });
      expect((await form('revoke', { client_id: 'app', token: tokens.body.refresh_token as string, token_type_hint: 'refresh_token' })).status).toBe(200);
      expect((await refresh(tokens.body.refresh_token as string)).status).toBe(400);
    });

    it('a client whose scope lacks the offline_access role is refused, as Keycloak: 400 not_allowed', async () => {
      // As in Keycloak, the built-in offline_access client scope maps the offline_access role: applied, it brings
      // the role into a fullScopeAllowed: false client's scope.
      const offered = await password('openid offline_access', 'narrow');
      expect(offered.status).toBe(200);
      expect(decodeJwt(offered.body.refresh_token as string).typ).toBe('Offline');
      // Without that mapping the client's scope lacks the role.
      const scopes = (await api(t.url, 'GET', `/admin/realms/${REALM}/client-scopes`, admin)).body as { id: string; name: string }[];
      const scope = scopes.find((s) => s.name === 'offline_access')!;
      const mappings = `/admin/realms/${REALM}/client-scopes/${scope.id}/scope-mappings/realm`;
      const roles = (await api(t.url, 'GET', mappings, admin)).body as { id: string; name: string }[];
      expect(roles.map((r) => r.name)).toEqual(['offline_access']);
      expect((await api(t.url, 'DELETE', mappings, admin, roles)).status).toBe(204);
      try {
        expect(await password('openid offline_access', 'narrow')).toEqual({ status: 400, body: { error: 'not_allowed', error_description: 'Offline tokens not allowed for the user or client' } });
        const ordinary = await password('openid', 'narrow');
        expect(ordinary.status).toBe(200);
        expect(decodeJwt(ordinary.body.refresh_token as string).typ).toBe('Refresh');
      } finally {
        expect((await api(t.url, 'POST', mappings, admin, roles)).status).toBe(204);
      }
    });
  });

  describe("the realm's client session lifespans (issue 41)", () => {
    /** Moves a client's part of a session into the past: its start, as if it had begun that long ago. */
    const ageClientSession = async (sessionId: string, seconds: number) => {
      const row = await t.server.context.storage.db.selectFrom('client_session').select(['id', 'started']).where('session_id', '=', sessionId).where('client_id', '=', appUuid).executeTakeFirstOrThrow();
      await t.server.context.storage.db.updateTable('client_session').set({ started: row.started - seconds * 1000 }).where('id', '=', row.id).execute();
    };

    it("Keycloak's defaults (0: the user session's own) are answered, and a refresh token lives by the SSO session", async () => {
      const realm = (await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body;
      expect(realm).toMatchObject({ clientSessionIdleTimeout: 0, clientSessionMaxLifespan: 0, clientOfflineSessionIdleTimeout: 0, clientOfflineSessionMaxLifespan: 0 });
      expect((await password()).body.refresh_expires_in).toBe(1800);
    });

    it('clientSessionIdleTimeout shortens the refresh token', async () => {
      await setRealm({ clientSessionIdleTimeout: 300 });
      try {
        const tokens = await password();
        expect(tokens.body.refresh_expires_in).toBe(300);
        const claims = decodeJwt(tokens.body.refresh_token as string);
        expect(claims.exp! - claims.iat!).toBe(300);
      } finally {
        await setRealm({ clientSessionIdleTimeout: 0 });
      }
    });

    it('a refresh token whose client session is past clientSessionMaxLifespan is refused, though its own exp and the user session are not past', async () => {
      await setRealm({ clientSessionMaxLifespan: 600 });
      try {
        const tokens = await password();
        expect(tokens.body.refresh_expires_in).toBe(600);
        const sid = decodeJwt(tokens.body.refresh_token as string).sid as string;
        expect((await refresh(tokens.body.refresh_token as string)).status).toBe(200);
        await ageClientSession(sid, 601);
        expect((await refresh(tokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
        // The user session itself is alive: another client's part of it is not ended by this one's lifespan.
        expect(await t.server.context.storage.sessions.byId(sid)).not.toBeNull();
      } finally {
        await setRealm({ clientSessionMaxLifespan: 0 });
      }
      // Without the lifespan the same aged client session refreshes again (the check is the setting's).
    });

    it('clientOfflineSessionMaxLifespan gives offline tokens an expiry and ends them', async () => {
      await setRealm({ clientOfflineSessionMaxLifespan: 1000 });
      try {
        const tokens = await password('offline_access');
        expect(decodeJwt(tokens.body.refresh_token as string).typ).toBe('Offline');
        expect(tokens.body.refresh_expires_in).toBe(1000);
        await ageClientSession(decodeJwt(tokens.body.refresh_token as string).sid as string, 1001);
        expect((await refresh(tokens.body.refresh_token as string)).body.error_description).toBe('Session not active');
      } finally {
        await setRealm({ clientOfflineSessionMaxLifespan: 0 });
      }
    });

    it('the other lifespans are kept, answered and round-trip through export and import; a negative one is a 400', async () => {
      const kept = { ssoSessionIdleTimeoutRememberMe: 120, ssoSessionMaxLifespanRememberMe: 240, accessTokenLifespanForImplicitFlow: 600, accessCodeLifespanUserAction: 400, accessCodeLifespanLogin: 900, clientSessionMaxLifespan: 7200, displayNameHtml: '<b>Refresh</b>' };
      await setRealm(kept);
      try {
        expect((await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body).toMatchObject(kept);
        const exported = (await api(t.url, 'POST', `/admin/realms/${REALM}/partial-export`, admin)).body;
        expect(exported).toMatchObject(kept);
        const copy = `${REALM}-copy-${database}`;
        expect((await api(t.url, 'POST', '/admin/realms', admin, { ...exported, id: undefined, realm: copy, clients: [], users: [], roles: undefined, groups: undefined })).status).toBe(201);
        expect((await api(t.url, 'GET', `/admin/realms/${copy}`, admin)).body).toMatchObject(kept);
        expect((await api(t.url, 'DELETE', `/admin/realms/${copy}`, admin)).status).toBe(204);
        const refused = await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { clientSessionIdleTimeout: -1 });
        expect(refused.status).toBe(400);
        expect(errorText(refused.body)).toContain('clientSessionIdleTimeout');
      } finally {
        await setRealm({ ssoSessionIdleTimeoutRememberMe: 0, ssoSessionMaxLifespanRememberMe: 0, accessTokenLifespanForImplicitFlow: 900, accessCodeLifespanUserAction: 300, accessCodeLifespanLogin: 1800, clientSessionMaxLifespan: 0, displayNameHtml: '' });
      }
    });
  });

  describe("the realm's browserSecurityHeaders (issue 41)", () => {
    const loginPage = async () => {
      const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`, { redirect: 'manual' });
      expect(response.status).toBe(200);
      return response;
    };

    it("are answered in Keycloak's names with the headers the pages send, and a realm's value replaces one", async () => {
      const realm = (await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body;
      expect(realm.browserSecurityHeaders).toMatchObject({ xFrameOptions: 'DENY', xContentTypeOptions: 'nosniff', referrerPolicy: 'no-referrer', xRobotsTag: 'none', contentSecurityPolicyReportOnly: '' });
      const before = await loginPage();
      expect(before.headers.get('x-frame-options')).toBe('DENY');
      expect(before.headers.get('content-security-policy')).toBe(realm.browserSecurityHeaders.contentSecurityPolicy);
      await setRealm({ browserSecurityHeaders: { xFrameOptions: 'SAMEORIGIN', xRobotsTag: '', contentSecurityPolicyReportOnly: "default-src 'self'" } });
      try {
        const after = await loginPage();
        expect(after.headers.get('x-frame-options')).toBe('SAMEORIGIN');
        expect(after.headers.get('x-robots-tag')).toBeNull();
        expect(after.headers.get('content-security-policy-report-only')).toBe("default-src 'self'");
        // The others are kept.
        expect(after.headers.get('x-content-type-options')).toBe('nosniff');
      } finally {
        await setRealm({ browserSecurityHeaders: { xFrameOptions: 'DENY', xRobotsTag: 'none', contentSecurityPolicyReportOnly: '' } });
      }
    });

    it('an unknown header name, or a value that would start another header, is a 400 and changes nothing', async () => {
      for (const headers of [{ xFrameOption: 'DENY' }, { xFrameOptions: 'DENY\r\nSet-Cookie: a=b' }]) {
        const refused = await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { browserSecurityHeaders: headers });
        expect(refused.status).toBe(400);
        expect(errorText(refused.body)).toContain('browserSecurityHeaders');
      }
      expect((await loginPage()).headers.get('set-cookie') ?? '').not.toContain('a=b');
    });
  });
});
