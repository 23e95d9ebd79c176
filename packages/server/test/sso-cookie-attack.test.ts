import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignedState } from '../src/authentication/index.js';
import { masterAdminClient, tokenOfUserWithRoles } from './support/admin-client.js';
import { FormClient, inputValue, pkce, type FormResponse } from './support/forms.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 33, finding 1, tried as an attacker would: the browser's SSO cookie is a credential, so none of the ids the
 * server publishes (a token's `sid`, the authorization response's `session_state`, the session ids a view-users
 * administrator lists, a password-grant session's id) may stand in for it, nor may a cookie that was altered or
 * sealed with another realm's key. A real cookie still signs the browser in without a password, on the node that
 * set it and on another node of the same deployment.
 */

const REALM = 'ssoatk';
const OTHER = 'ssoatk-other';
const PASSWORD = 'Correct-horse-7';
const COOKIE = 'REALMGATE_SESSION';
/** Never contacted: these tests read where the server redirects and do not follow. */
const callback = 'http://127.0.0.1:9/cb';

interface Nodes {
  /** Where the victim signs in. */
  a: TestServer;
  /** Where the attacker (and the victim's next request) goes: another node of the deployment, or the same one. */
  b: TestServer;
  close(): Promise<void>;
}

const setups: { name: string; start: () => Promise<Nodes> }[] = [
  {
    name: 'SQLite, one node',
    start: async () => {
      const t = await startServer();
      return { a: t, b: t, close: () => t.close() };
    },
  },
  { name: 'two nodes sharing PostgreSQL and Redis', start: () => startServerPair() },
];

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

const authPath = (realm: string, extra: Record<string, string> = {}, clientId = 'web', redirectUri = callback) =>
  `/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st', ...extra })}`;

/** A browser (on `node`) holding only this SSO cookie. */
function browserWith(node: TestServer, cookie: string): FormClient {
  const client = new FormClient(node.url);
  client.cookies.set(COOKIE, encodeURIComponent(cookie));
  return client;
}

/** The login page, no code, and no SSO cookie set by it. */
function expectLoginPage(response: FormResponse): void {
  expect(response.status).toBe(200);
  expect(response.location).toBeNull();
  expect(inputValue(response.text, 'password')).not.toBeNull();
  expect(response.setCookies).not.toContain(COOKIE);
}

/** Signed in without a password: the client gets a code. */
function expectCode(response: FormResponse): URL {
  expect(response.status).toBe(302);
  const location = new URL(response.location!);
  expect(location.searchParams.get('code')).toBeTruthy();
  return location;
}

describe.each(setups)('the SSO cookie ($name)', ({ start }) => {
  let nodes: Nodes;
  let a: TestServer;
  let b: TestServer;
  let token: string;
  /** vera's browser sign-in on node A: her browser, the cookie it holds, and what the client learnt. */
  let victim: { browser: FormClient; cookie: string; sid: string; sessionState: string; userId: string };

  /** The browser code flow on `node` with a password; the browser ends up with an SSO cookie. */
  async function signIn(node: TestServer, realm: string, username: string, browser = new FormClient(node.url), extra: Record<string, string> = {}) {
    const { verifier, challenge } = pkce();
    const page = await browser.get(authPath(realm, { code_challenge: challenge, ...extra }));
    expectLoginPage(page);
    const done = await browser.post(`/realms/${realm}/login-actions/authenticate`, { username, password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    const location = expectCode(done);
    const tokens = await tokenRequest(node.url, realm, { grant_type: 'authorization_code', client_id: 'web', code: location.searchParams.get('code')!, redirect_uri: callback, code_verifier: verifier });
    expect(tokens.status).toBe(200);
    const cookie = decodeURIComponent(browser.cookies.get(COOKIE)!);
    expect(cookie).toBeTruthy();
    return { browser, cookie, sid: claimsOf(tokens.body.access_token as string).sid as string, sessionState: location.searchParams.get('session_state')!, refreshToken: tokens.body.refresh_token as string };
  }

  beforeAll(async () => {
    nodes = await start();
    ({ a, b } = nodes);
    token = await adminToken(a.url);
    const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    for (const realm of [REALM, OTHER]) {
      ok(await api(a.url, 'POST', '/admin/realms', token, { realm, enabled: true }));
      ok(await api(a.url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }));
      ok(await api(a.url, 'POST', `/admin/realms/${realm}/users`, token, { username: 'vera', email: 'vera@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
    }
    const userId = ((await api(a.url, 'GET', `/admin/realms/${REALM}/users?username=vera&exact=true`, token)).body as { id: string }[])[0].id;
    const signedIn = await signIn(a, REALM, 'vera');
    victim = { ...signedIn, userId };
  });
  afterAll(async () => {
    await nodes?.close();
  });

  it('is none of the ids the server publishes, and signs the browser in without a password on either node', async () => {
    expect(victim.sid).toBeTruthy();
    expect(victim.sessionState).toBe(victim.sid);
    expect(victim.cookie).not.toBe(victim.sid);
    expect(victim.cookie).not.toContain(victim.sid);
    for (const node of [a, b]) {
      const location = expectCode(await browserWith(node, victim.cookie).get(authPath(REALM)));
      expect(location.searchParams.get('session_state')).toBe(victim.sid);
      expectCode(await browserWith(node, victim.cookie).get(authPath(REALM, { prompt: 'none' })));
    }
    // The account pages and the login-status frame see the same session.
    const account = await browserWith(b, victim.cookie).get(`/realms/${REALM}/account/profile`);
    expect(account.status).toBe(200);
    expect(inputValue(account.text, 'password')).toBeNull();
    const status = await api(b.url, 'POST', `/realms/${REALM}/protocol/openid-connect/login-status-iframe.html/status`, null, { session_state: victim.sid }, { cookie: `${COOKIE}=${encodeURIComponent(victim.cookie)}` });
    expect(status.body).toEqual({ status: 'unchanged' });
  });

  it("set to the token's sid (or an old bare-id cookie) gets the login page, not a code", async () => {
    for (const node of [a, b]) {
      expectLoginPage(await browserWith(node, victim.sid).get(authPath(REALM)));
      const none = await browserWith(node, victim.sid).get(authPath(REALM, { prompt: 'none' }));
      expect(none.status).toBe(302);
      expect(new URL(none.location!).searchParams.get('error')).toBe('login_required');
      // The account pages and the login-status frame do not take it for the session either.
      expectLoginPage(await browserWith(node, victim.sid).get(`/realms/${REALM}/account/profile`));
      const status = await api(node.url, 'POST', `/realms/${REALM}/protocol/openid-connect/login-status-iframe.html/status`, null, { session_state: victim.sid }, { cookie: `${COOKIE}=${victim.sid}` });
      expect(status.body).toEqual({ status: 'changed' });
    }
  });

  it("set to the authorization response's session_state gets the login page", async () => {
    for (const node of [a, b]) expectLoginPage(await browserWith(node, victim.sessionState).get(authPath(REALM)));
  });

  it('set to a session id a view-users administrator lists gets the login page', async () => {
    const kc = await masterAdminClient(a.url, REALM);
    const viewer = await tokenOfUserWithRoles(kc, a.url, 'viewer', ['view-users']);
    const listed = await api(b.url, 'GET', `/admin/realms/${REALM}/users/${victim.userId}/sessions`, viewer);
    expect(listed.status).toBe(200);
    const ids = (listed.body as { id: string }[]).map((s) => s.id);
    expect(ids).toContain(victim.sid);
    for (const id of ids) for (const node of [a, b]) expectLoginPage(await browserWith(node, id).get(authPath(REALM)));
  });

  it("set to a password-grant session's id gets the login page, the admin console's included", async () => {
    const grant = await tokenRequest(a.url, REALM, { grant_type: 'password', client_id: 'web', username: 'vera', password: PASSWORD });
    expect(grant.status).toBe(200);
    const sid = claimsOf(grant.body.access_token as string).sid as string;
    expect(sid).toBeTruthy();
    for (const node of [a, b]) expectLoginPage(await browserWith(node, sid).get(authPath(REALM)));
    // The master administrator's password-grant session does not open the admin console.
    const adminSid = claimsOf(token).sid as string;
    for (const node of [a, b]) {
      expectLoginPage(await browserWith(node, adminSid).get(authPath('master', {}, 'security-admin-console', `${node.url}/admin/master/console/`)));
    }
  });

  it('altered, or sealed with another key or for another session, is refused on both nodes', async () => {
    const [kid, body, mac] = victim.cookie.split('.');
    expect(mac).toBeTruthy();
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    const realmId = async (name: string) => (await a.server.context.storage.realms.byName(name))!.id;
    const signed = new SignedState(a.server.context.keys);
    const lifetime = 3600_000;
    const { exp: _exp, ...fields } = payload;
    // A control: the same payload sealed again with this realm's key works, so the refusals below are the key's.
    expectCode(await browserWith(b, await signed.seal(await realmId(REALM), 'sso-session', fields, lifetime)).get(authPath(REALM)));

    const passwordGrant = await tokenRequest(a.url, REALM, { grant_type: 'password', client_id: 'web', username: 'vera', password: PASSWORD });
    const grantSid = claimsOf(passwordGrant.body.access_token as string).sid as string;
    const other = await signIn(a, OTHER, 'vera');
    const forged = {
      'a byte of the MAC altered': `${kid}.${body}.${flip(mac, 5)}`,
      'a byte of the body altered': `${kid}.${flip(body, 10)}.${mac}`,
      'the kid altered': `${flip(kid, 3)}.${body}.${mac}`,
      "the other realm's own cookie": other.cookie,
      "this session sealed with the other realm's key": await signed.seal(await realmId(OTHER), 'sso-session', fields, lifetime),
      'this realm\'s key, sealed for another purpose': await signed.seal(await realmId(REALM), 'auth-session', fields, lifetime),
      "this realm's key, the password-grant session's id with the browser's other fields": await signed.seal(await realmId(REALM), 'sso-session', { ...fields, sid: grantSid }, lifetime),
      "this realm's key, the password-grant session's id alone": await signed.seal(await realmId(REALM), 'sso-session', { sid: grantSid }, lifetime),
      'expired': await signed.seal(await realmId(REALM), 'sso-session', fields, -1000),
    };
    for (const [what, cookie] of Object.entries(forged)) {
      for (const node of [a, b]) {
        const response = await browserWith(node, cookie).get(authPath(REALM));
        expect(response.status, what).toBe(200);
        expectLoginPage(response);
      }
    }
  });

  it('is replaced at every sign-in, prompt=login over a live session included', async () => {
    const again = await signIn(b, REALM, 'vera', browserWith(b, victim.cookie), { prompt: 'login' });
    expect(again.cookie).not.toBe(victim.cookie);
    expect(again.cookie).not.toBe(again.sid);
    expectCode(await browserWith(a, again.cookie).get(authPath(REALM)));
    expectLoginPage(await browserWith(a, again.sid).get(authPath(REALM)));
  });

  it('of a session from before the upgrade (a bare id) ends cleanly: the login page, while its apps keep refreshing', async () => {
    const old = await signIn(a, REALM, 'vera');
    // What an upgraded database holds for it: the row without a cookie hash, and the bare id in the browser.
    await a.server.context.storage.db.updateTable('user_session').set({ sso_cookie_hash: null }).where('id', '=', old.sid).execute();
    for (const node of [a, b]) expectLoginPage(await browserWith(node, old.sid).get(authPath(REALM)));
    const refreshed = await tokenRequest(b.url, REALM, { grant_type: 'refresh_token', client_id: 'web', refresh_token: old.refreshToken });
    expect(refreshed.status).toBe(200);
    expect(claimsOf(refreshed.body.access_token as string).sid).toBe(old.sid);
  });
});
