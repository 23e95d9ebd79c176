import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { movableDate, type MovableClock } from './support/clock.js';
import { FormClient, firstForm, inputValue } from './support/forms.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 1: the device authorization grant (RFC 8628) as Keycloak 26.7.3 answers it, the user's side driven
 * as a browser without JavaScript (browser-device-flow.test.ts drives it in Chromium): the per-client switch, every
 * polling answer in Keycloak's order, the user code's attempt limit, single use across two nodes.
 */

const REALM = 'tv';
const PASSWORD = 'Device-password-7';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const ENABLED = { 'oauth2.device.authorization.grant.enabled': 'true' };

async function setUpRealm(url: string): Promise<void> {
  const token = await adminToken(url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'tv', publicClient: true, attributes: ENABLED }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'console', publicClient: true, attributes: ENABLED }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'box', publicClient: false, secret: 'box-secret', attributes: { ...ENABLED, 'oauth2.device.polling.interval': '2', 'oauth2.device.code.lifespan': '30' } }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'plain', publicClient: true }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'asking-tv', publicClient: true, consentRequired: true, attributes: ENABLED }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'alice', email: 'alice@example.com', emailVerified: true, firstName: 'Alice', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
}

async function deviceAuthorization(url: string, form: Record<string, string>) {
  const response = await fetch(`${url}/realms/${REALM}/protocol/openid-connect/auth/device`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any>, headers: response.headers };
}

const poll = (url: string, clientId: string, deviceCode: string, extra: Record<string, string> = {}) =>
  tokenRequest(url, REALM, { grant_type: DEVICE_GRANT, client_id: clientId, device_code: deviceCode, ...extra });

/** The user's side: the code typed on the device page, the sign-in, the consent page answered. Returns the last page. */
async function userAnswers(url: string, userCode: string, answer: 'accept' | 'cancel', browser = new FormClient(url)) {
  const typed = await browser.post(`/realms/${REALM}/device`, { device_user_code: userCode.toLowerCase().replace('-', ' ') });
  let consent = typed;
  if (inputValue(typed.text, 'session_code') !== null) {
    expect(typed.status).toBe(200);
    consent = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'alice', password: PASSWORD, session_code: inputValue(typed.text, 'session_code')! });
  }
  expect(consent.status).toBe(200);
  expect(consent.text).toContain('Grant Access to');
  const form = firstForm(consent.text);
  const answered = await browser.post(form.action, { ...form.hidden, [answer]: answer === 'accept' ? 'yes' : 'no' });
  expect(answered.status).toBe(302);
  return { answered, browser };
}

describe('the device authorization grant', () => {
  let t: TestServer;
  let clock: MovableClock;

  beforeAll(async () => {
    clock = movableDate();
    // The shared store counts by the moved Date too, so a poll interval and a lifespan pass without waiting.
    t = await startServer({ sharedStoreClock: () => Date.now() });
    await setUpRealm(t.url);
  });
  afterAll(async () => {
    await t?.close();
    clock?.restore();
  });
  // Each test's polls start a fresh interval.
  afterEach(() => clock.pass(10_000));

  it("answers Keycloak's device authorization response, with the client's interval and lifespan", async () => {
    const plain = await deviceAuthorization(t.url, { client_id: 'tv', scope: 'openid profile' });
    expect(plain.status).toBe(200);
    expect(Object.keys(plain.body)).toEqual(['device_code', 'user_code', 'verification_uri', 'verification_uri_complete', 'expires_in', 'interval']);
    expect(plain.body.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(plain.body.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(plain.body.verification_uri).toBe(`${t.url}/realms/${REALM}/device`);
    expect(plain.body.verification_uri_complete).toBe(`${t.url}/realms/${REALM}/device?user_code=${plain.body.user_code}`);
    expect([plain.body.expires_in, plain.body.interval]).toEqual([600, 5]);
    expect(plain.headers.get('cache-control')).toBe('no-store');

    const box = await deviceAuthorization(t.url, { client_id: 'box', client_secret: 'box-secret' });
    expect([box.body.expires_in, box.body.interval]).toEqual([30, 2]);
    const wrongSecret = await deviceAuthorization(t.url, { client_id: 'box', client_secret: 'nope' });
    expect(wrongSecret).toMatchObject({ status: 401, body: { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' } });
  });

  it("takes the realm's oauth2DeviceCodeLifespan and oauth2DevicePollingInterval (the console's Tokens tab) under the client's own", async () => {
    const token = await adminToken(t.url);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, token, { oauth2DeviceCodeLifespan: 120, oauth2DevicePollingInterval: 3 })).status).toBe(204);
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}`, token)).body).toMatchObject({ oauth2DeviceCodeLifespan: 120, oauth2DevicePollingInterval: 3 });
    const realmDefaults = await deviceAuthorization(t.url, { client_id: 'tv' });
    expect([realmDefaults.body.expires_in, realmDefaults.body.interval]).toEqual([120, 3]);
    const own = await deviceAuthorization(t.url, { client_id: 'box', client_secret: 'box-secret' });
    expect([own.body.expires_in, own.body.interval]).toEqual([30, 2]);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, token, { oauth2DeviceCodeLifespan: 600, oauth2DevicePollingInterval: 5 })).status).toBe(204);
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, token, { oauth2DevicePollingInterval: 0 })).status).toBe(400);
  });

  it("names the realm's shortVerificationUri (the console's Tokens tab) as verification_uri, the complete one built on it", async () => {
    const token = await adminToken(t.url);
    const realm = (await api(t.url, 'GET', `/admin/realms/${REALM}`, token)).body;
    const short = 'https://tv.example.test/go';
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, token, { attributes: { ...realm.attributes, shortVerificationUri: short } })).status).toBe(204);
    const shown = await deviceAuthorization(t.url, { client_id: 'tv' });
    expect(shown.status).toBe(200);
    expect(shown.body.verification_uri).toBe(short);
    expect(shown.body.verification_uri_complete).toBe(`${short}?user_code=${shown.body.user_code}`);
    // The short address is the operator's forward to the device page, which takes the complete URI's query.
    const typed = await new FormClient(t.url).get(`/realms/${REALM}/device?user_code=${shown.body.user_code}`);
    expect(inputValue(typed.text, 'session_code')).not.toBeNull();
    // Empty is unset, as Keycloak reads it: the device page's own address again.
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, token, { attributes: { ...realm.attributes, shortVerificationUri: '' } })).status).toBe(204);
    expect((await deviceAuthorization(t.url, { client_id: 'tv' })).body.verification_uri).toBe(`${t.url}/realms/${REALM}/device`);
  });

  it('is off unless the client switches it on: 400 unauthorized_client at the device endpoint, invalid_grant at the token endpoint', async () => {
    const refused = await deviceAuthorization(t.url, { client_id: 'plain' });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: 'unauthorized_client', error_description: 'Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for the client.' },
    });
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv' });
    expect(await poll(t.url, 'plain', body.device_code)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Client not allowed OAuth 2.0 Device Authorization Grant' } });
    expect(await poll(t.url, 'tv', '')).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Device code not valid' } });
    expect(await tokenRequest(t.url, REALM, { grant_type: DEVICE_GRANT, client_id: 'tv' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Missing parameter: device_code' } });
  });

  it('pending, then slow_down within the interval (which it does not restart), another client refused without a poll stamped', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv' });
    expect(await poll(t.url, 'console', body.device_code)).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'unauthorized client' } });
    expect(await poll(t.url, 'tv', body.device_code)).toEqual({ status: 400, body: { error: 'authorization_pending', error_description: 'The authorization request is still pending' } });
    expect(await poll(t.url, 'tv', body.device_code)).toEqual({ status: 400, body: { error: 'slow_down', error_description: 'Slow down' } });
    clock.pass(3000);
    expect((await poll(t.url, 'tv', body.device_code)).body.error).toBe('slow_down');
    clock.pass(2100);
    expect((await poll(t.url, 'tv', body.device_code)).body.error).toBe('authorization_pending');
  });

  it('approved: tokens once; the same code again, or first by another client, is refused', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv', scope: 'openid email' });
    const { answered } = await userAnswers(t.url, body.user_code, 'accept');
    expect(answered.location).toBe(`/realms/${REALM}/device/status`);
    expect(await poll(t.url, 'console', body.device_code)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'unauthorized client' } });
    const tokens = await poll(t.url, 'tv', body.device_code);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', scope: expect.stringContaining('email') });
    const claims = JSON.parse(Buffer.from((tokens.body.id_token as string).split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ azp: 'tv', aud: 'tv', preferred_username: 'alice' });
    clock.pass(6000);
    expect(await poll(t.url, 'tv', body.device_code)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Device code not valid' } });
    // The user code is spent with the approval.
    const again = await new FormClient(t.url).post(`/realms/${REALM}/device`, { device_user_code: body.user_code });
    expect(again.status).toBe(400);
    expect(again.text).toContain('Invalid code, please try again.');
  });

  it('a consentRequired client: its own device consent page (not the browser sign-in\'s), then tokens', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'asking-tv', scope: 'openid' });
    const { answered } = await userAnswers(t.url, body.user_code, 'accept');
    expect(answered.location).toBe(`/realms/${REALM}/device/status`);
    const tokens = await poll(t.url, 'asking-tv', body.device_code);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  });

  it('denied on the consent page: access_denied, for every later poll', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv' });
    const { answered } = await userAnswers(t.url, body.user_code, 'cancel');
    expect(answered.location).toBe(`/realms/${REALM}/device/status?error=access_denied`);
    const denied = { status: 400, body: { error: 'access_denied', error_description: 'The end user denied the authorization request' } };
    expect(await poll(t.url, 'tv', body.device_code)).toEqual(denied);
    clock.pass(6000);
    expect(await poll(t.url, 'tv', body.device_code)).toEqual(denied);
  });

  it('expired: expired_token after the lifespan, and the device page says so', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'box', client_secret: 'box-secret' });
    clock.pass(31_000);
    expect(await poll(t.url, 'box', body.device_code, { client_secret: 'box-secret' })).toEqual({ status: 400, body: { error: 'expired_token', error_description: 'Device code is expired' } });
    const page = await new FormClient(t.url).get(`/realms/${REALM}/device?user_code=${body.user_code}`);
    expect(page.text).toContain('The code has expired.');
  });

  it('a consent token is single-use and belongs to its grant', async () => {
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv' });
    const browser = new FormClient(t.url);
    const login = await browser.get(`/realms/${REALM}/device?user_code=${body.user_code}`);
    const consent = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'alice', password: PASSWORD, session_code: inputValue(login.text, 'session_code')! });
    const form = firstForm(consent.text);
    const forged = await browser.post(form.action, { ...form.hidden, consent: 'x'.repeat(43), accept: 'yes' });
    expect(forged.location).toBe(`/realms/${REALM}/device/status?error=expired_token`);
    expect((await poll(t.url, 'tv', body.device_code)).body.error).toBe('authorization_pending');
    expect((await browser.post(form.action, { ...form.hidden, accept: 'yes' })).location).toBe(`/realms/${REALM}/device/status`);
    expect((await browser.post(form.action, { ...form.hidden, cancel: 'no' })).location).toBe(`/realms/${REALM}/device/status?error=expired_token`);
    clock.pass(6000);
    expect((await poll(t.url, 'tv', body.device_code)).status).toBe(200);
  });

  it('a signed-in browser goes straight to the consent page', async () => {
    const first = await deviceAuthorization(t.url, { client_id: 'tv' });
    const { browser } = await userAnswers(t.url, first.body.user_code, 'accept');
    const second = await deviceAuthorization(t.url, { client_id: 'console' });
    const page = await browser.get(`/realms/${REALM}/device?user_code=${second.body.user_code}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Grant Access to');
    expect(inputValue(page.text, 'session_code')).toBeNull();
  });

  it('limits wrong user codes per address: after ten, even the right one is refused for a while', async () => {
    clock.pass(10 * 60 * 1000 + 1000); // the earlier tests' wrong codes out of the window
    const { body } = await deviceAuthorization(t.url, { client_id: 'tv' });
    const browser = new FormClient(t.url);
    for (let i = 0; i < 10; i++) {
      const wrong = await browser.post(`/realms/${REALM}/device`, { device_user_code: 'BBBB-BBBB' });
      expect(wrong.status).toBe(400);
    }
    const blocked = await browser.post(`/realms/${REALM}/device`, { device_user_code: body.user_code });
    expect(blocked.status).toBe(429);
    expect(blocked.text).toContain('Too many wrong codes');
    clock.pass(10 * 60 * 1000 + 1000);
    const later = await deviceAuthorization(t.url, { client_id: 'tv' });
    expect((await browser.post(`/realms/${REALM}/device`, { device_user_code: later.body.user_code })).status).toBe(200);
  });
});

/**
 * The client's poll interval passes, as Redis's own expiry would end it: the interval's stamp (the store's
 * `device:<sha-256 of the device code>:poll`, src/authentication/device-code.ts) removed from the shared store instead of
 * waiting out the seconds Redis counts in real time (issue 36: time is not waited for).
 */
async function pollIntervalPasses(node: TestServer, deviceCode: string): Promise<void> {
  const id = createHash('sha256').update(deviceCode).digest('base64url');
  const key = `device:${id}:poll`;
  expect(await node.server.context.hostStore.get(key), 'a poll stamped the interval').not.toBeNull();
  await node.server.context.hostStore.delete(key);
}

describe('the device grant on two nodes (one PostgreSQL, one Redis)', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    pair = await startServerPair();
    await setUpRealm(pair.a.url);
  });
  afterAll(() => pair?.close());

  it('a code issued on B and approved on A is redeemed on B, once: two polls at once on both nodes give one token', async () => {
    const { a, b } = pair;
    const { body } = await deviceAuthorization(b.url, { client_id: 'tv' });
    await userAnswers(a.url, body.user_code, 'accept');
    const both = await Promise.all([poll(b.url, 'tv', body.device_code), poll(a.url, 'tv', body.device_code)]);
    expect(both.filter((r) => r.status === 200)).toHaveLength(1);
    expect(both.filter((r) => r.status === 400)).toHaveLength(1);
  });

  it('an approval on one node is seen by a poll on the other, the poll interval and the spent user code too', async () => {
    const { a, b } = pair;
    const secret = { client_secret: 'box-secret' };
    const { body } = await deviceAuthorization(a.url, { client_id: 'box', ...secret });
    expect((await poll(b.url, 'box', body.device_code, secret)).body.error).toBe('authorization_pending');
    await userAnswers(a.url, body.user_code, 'accept');
    // One poll clock for both nodes: A's poll right after B's is slow_down.
    expect((await poll(a.url, 'box', body.device_code, secret)).body.error).toBe('slow_down');
    await pollIntervalPasses(b, body.device_code);
    const tokens = await poll(b.url, 'box', body.device_code, secret);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    await pollIntervalPasses(a, body.device_code);
    expect(await poll(a.url, 'box', body.device_code, secret)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Device code not valid' } });
    expect((await new FormClient(b.url).post(`/realms/${REALM}/device`, { device_user_code: body.user_code })).status).toBe(400);
  });
});
