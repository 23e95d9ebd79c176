import * as oidc from 'openid-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { movableDate, type MovableClock } from './support/clock.js';
import { FormClient, firstForm, inputValue, pkce } from './support/forms.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40: PKCE (RFC 7636) on the device authorization grant as Keycloak 26.7.3 (DeviceEndpoint's checkPKCEParams,
 * DeviceGrantType's verifier check): a `code_challenge` at the device endpoint, required by the client's
 * `pkce.code.challenge.method`; the poll must send the matching `code_verifier` once the user approved.
 */

const REALM = 'tvpkce';
const PASSWORD = 'Device-pkce-password-2';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const ENABLED = { 'oauth2.device.authorization.grant.enabled': 'true' };
const insecure = { execute: [oidc.allowInsecureRequests] };

describe('PKCE on the device authorization grant', () => {
  let t: TestServer;
  let clock: MovableClock;
  beforeAll(async () => {
    clock = movableDate();
    t = await startServer({ sharedStoreClock: () => Date.now() });
    const token = await adminToken(t.url);
    const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'tv', publicClient: true, attributes: ENABLED }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'strict-tv', publicClient: true, attributes: { ...ENABLED, 'pkce.code.challenge.method': 'S256' } }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'alice', email: 'alice@example.com', emailVerified: true, firstName: 'Alice', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
  });
  afterAll(async () => {
    await t?.close();
    clock?.restore();
  });
  afterEach(() => clock.pass(10_000));

  async function deviceAuthorization(form: Record<string, string>) {
    const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/auth/device`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }

  /** alice types the user code, signs in and accepts. */
  async function approve(userCode: string) {
    const browser = new FormClient(t.url);
    const typed = await browser.post(`/realms/${REALM}/device`, { device_user_code: userCode });
    const consent = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'alice', password: PASSWORD, session_code: inputValue(typed.text, 'session_code')! });
    expect(consent.text).toContain('Grant Access to');
    const form = firstForm(consent.text);
    expect((await browser.post(form.action, { ...form.hidden, accept: 'yes' })).status).toBe(302);
  }

  const poll = (clientId: string, deviceCode: string, extra: Record<string, string> = {}) =>
    tokenRequest(t.url, REALM, { grant_type: DEVICE_GRANT, client_id: clientId, device_code: deviceCode, ...extra });

  it('openid-client: a challenge at the device endpoint, the verifier in the poll, tokens for the user', async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'tv', undefined, oidc.None(), insecure);
    const verifier = oidc.randomPKCECodeVerifier();
    const response = await oidc.initiateDeviceAuthorization(config, { scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    await approve(response.user_code);
    const tokens = await oidc.pollDeviceAuthorizationGrant(config, response, { code_verifier: verifier });
    expect(tokens.claims()?.preferred_username).toBe('alice');
  });

  it('attacker: a poll with another verifier, or none, is refused and spends nothing; the right verifier then gets the tokens once', async () => {
    const { verifier, challenge } = pkce();
    const started = await deviceAuthorization({ client_id: 'tv', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    // Before the user answers, the verifier is not looked at: pending.
    expect((await poll('tv', started.body.device_code, { code_verifier: pkce().verifier })).body.error).toBe('authorization_pending');
    clock.pass(6_000);
    await approve(started.body.user_code);
    expect(await poll('tv', started.body.device_code, { code_verifier: pkce().verifier })).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'PKCE verification failed' } });
    clock.pass(6_000);
    expect(await poll('tv', started.body.device_code)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'PKCE code verifier not specified or malformed' } });
    clock.pass(6_000);
    const right = await poll('tv', started.body.device_code, { code_verifier: verifier });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    clock.pass(6_000);
    expect((await poll('tv', started.body.device_code, { code_verifier: verifier })).body).toMatchObject({ error: 'invalid_grant', error_description: 'Device code not valid' });
  });

  it('a device code started without a challenge is refused with a verifier, and redeemed without one', async () => {
    const started = await deviceAuthorization({ client_id: 'tv', scope: 'openid' });
    await approve(started.body.user_code);
    expect(await poll('tv', started.body.device_code, { code_verifier: pkce().verifier })).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'PKCE code verifier given for a request without a challenge' },
    });
    clock.pass(6_000);
    expect((await poll('tv', started.body.device_code)).status).toBe(200);
  });

  it("the device endpoint checks the challenge, and requires one of a client with pkce.code.challenge.method", async () => {
    expect(await deviceAuthorization({ client_id: 'strict-tv', scope: 'openid' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Missing parameter: code_challenge_method' } });
    expect(await deviceAuthorization({ client_id: 'tv', code_challenge: pkce().challenge, code_challenge_method: 'plain' })).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: 'Invalid parameter: code challenge method is not supported (use S256)' },
    });
    expect(await deviceAuthorization({ client_id: 'tv', code_challenge: 'short', code_challenge_method: 'S256' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid parameter: code_challenge' } });
    expect((await deviceAuthorization({ client_id: 'strict-tv', code_challenge: pkce().challenge, code_challenge_method: 'S256' })).status).toBe(200);
  });
});
