import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 13, point 1: the form login and the password grant run one password authentication, so a refusal is
 * recorded the same way whichever door the user came through. As Keycloak, a failed login's details.username is
 * what the user typed (its username authenticator records the attempted username before the lookup), not the
 * stored username; each entry point adds its own details (grant_type for the password grant).
 */

const REALM = 'signin';
const R = `/realms/${REALM}`;
const PASSWORD = 'Sign-in-password-9';
const callback = 'http://127.0.0.1:9/cb';

let t: TestServer;
let token: string;

interface EventRep {
  type: string;
  error?: string;
  userId?: string;
  clientId?: string;
  details?: Record<string, string>;
}

beforeAll(async () => {
  t = await startServer();
  token = await adminToken(t.url);
  const ok = (response: { status: number }) => expect(response.status).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true, verifyEmail: true, loginWithEmailAllowed: true }));
  ok(await api(t.url, 'PUT', `/admin/realms/${REALM}/events/config`, token, { eventsEnabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'dora', email: 'dora@example.com', emailVerified: true, enabled: false, credentials: [{ type: 'password', value: PASSWORD }] }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'una', email: 'una@example.com', emailVerified: false, enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
});
afterAll(() => t?.close());

const loginErrors = async (): Promise<EventRep[]> => (await api(t.url, 'GET', `/admin/realms/${REALM}/events?type=LOGIN_ERROR&max=100`, token)).body as EventRep[];

/** The LOGIN_ERROR recorded for `typed`, waiting for it (events are stored before the response, but be patient). */
const errorFor = (typed: string, error: string) => eventually(async () => (await loginErrors()).find((e) => e.error === error && e.details?.username === typed));

async function formLogin(username: string, password: string) {
  const client = new FormClient(t.url);
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
  const page = await client.get(`${R}/protocol/openid-connect/auth?${query}`);
  expect(page.status).toBe(200);
  return client.post(`${R}/login-actions/authenticate`, { username, password, session_code: inputValue(page.text, 'session_code')! });
}

const grant = (username: string, password: string) => tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'web', username, password });

describe('one password authentication behind the form login and the password grant', () => {
  it('user_disabled records the typed username, not the stored one, at both entry points', async () => {
    expect((await formLogin('DORA', PASSWORD)).status).toBe(403);
    const form = await errorFor('DORA', 'user_disabled');
    expect(form.details).toEqual({ auth_method: 'openid-connect', username: 'DORA' });
    expect(form.clientId).toBe('web');
    expect(form.userId).toBeTruthy();

    const refused = await grant('Dora@Example.com', PASSWORD);
    expect(refused).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Account disabled' } });
    const direct = await errorFor('Dora@Example.com', 'user_disabled');
    expect(direct.details).toEqual({ auth_method: 'openid-connect', grant_type: 'password', username: 'Dora@Example.com' });
    expect(direct.userId).toBe(form.userId);
  });

  it('a pending e-mail verification refuses the password grant with the typed username', async () => {
    const refused = await grant('UNA', PASSWORD);
    expect(refused).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Account is not fully set up' } });
    const event = await errorFor('UNA', 'resolve_required_actions');
    expect(event.details).toEqual({ auth_method: 'openid-connect', grant_type: 'password', username: 'UNA' });
  });

  it('unknown users and wrong passwords are recorded alike at both entry points', async () => {
    expect((await formLogin('nobody-form', PASSWORD)).status).toBe(401);
    expect((await grant('nobody-grant', PASSWORD)).status).toBe(400);
    expect((await formLogin('Dora', 'wrong-password')).status).toBe(401);
    expect((await grant('dorA', 'wrong-password')).status).toBe(400);
    expect((await errorFor('nobody-form', 'user_not_found')).details).toEqual({ auth_method: 'openid-connect', username: 'nobody-form' });
    expect((await errorFor('nobody-grant', 'user_not_found')).details).toEqual({ auth_method: 'openid-connect', grant_type: 'password', username: 'nobody-grant' });
    expect((await errorFor('Dora', 'invalid_user_credentials')).details).toEqual({ auth_method: 'openid-connect', username: 'Dora' });
    expect((await errorFor('dorA', 'invalid_user_credentials')).details).toEqual({ auth_method: 'openid-connect', grant_type: 'password', username: 'dorA' });
  });
});
