import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableDate, type MovableClock } from './support/clock.js';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, startServer, startServerPair, type TestServer } from './support/server.js';

/**
 * Issue 40, item 3: pushed authorization requests (RFC 9126) as Keycloak 26.7.3, with openid-client as the client:
 * the request_uri is single-use, short-lived and its client's only; `require.pushed.authorization.requests`.
 */

const REALM = 'pushed';
const PASSWORD = 'Pushed-password-3';
const callback = 'http://127.0.0.1:9/cb';
const insecure = { execute: [oidc.allowInsecureRequests] };

async function setUpRealm(url: string): Promise<void> {
  const token = await adminToken(url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true, attributes: { parRequestUriLifespan: '30' } }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'app', publicClient: false, secret: 'app-secret', redirectUris: [callback] }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'other', publicClient: false, secret: 'other-secret', redirectUris: [callback] }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'strict', publicClient: false, secret: 'strict-secret', redirectUris: [callback], attributes: { 'require.pushed.authorization.requests': 'true' } }));
  ok(await api(url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'bob', email: 'bob@example.com', emailVerified: true, firstName: 'Bob', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
}

const configFor = (url: string, clientId: string, secret: string) => oidc.discovery(new URL(`${url}/realms/${REALM}`), clientId, secret, oidc.ClientSecretPost(secret), insecure);

/** A browser signing bob in at an authorization URL; the redirect back to the client (or the page shown instead). */
async function signIn(url: string, authUrl: string) {
  const browser = new FormClient(url);
  const page = await browser.get(authUrl);
  if (page.status !== 200 || inputValue(page.text, 'session_code') === null) return page;
  return browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'bob', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
}

async function push(url: string, form: Record<string, string>) {
  const response = await fetch(`${url}/realms/${REALM}/protocol/openid-connect/ext/par/request`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const appRequest = () => ({ client_id: 'app', client_secret: 'app-secret', response_type: 'code', redirect_uri: callback, scope: 'openid', state: 's1' });

describe('pushed authorization requests', () => {
  let t: TestServer;
  let clock: MovableClock;
  beforeAll(async () => {
    clock = movableDate();
    t = await startServer({ sharedStoreClock: () => Date.now() });
    await setUpRealm(t.url);
  });
  afterAll(async () => {
    await t?.close();
    clock?.restore();
  });

  it('openid-client pushes, the user signs in through the request_uri, the code is redeemed', async () => {
    const config = await configFor(t.url, 'app', 'app-secret');
    expect(config.serverMetadata().pushed_authorization_request_endpoint).toBe(`${t.url}/realms/${REALM}/protocol/openid-connect/ext/par/request`);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const authUrl = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: callback,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    expect([...authUrl.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri']);
    expect(authUrl.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:[0-9a-f-]{36}$/);
    const back = await signIn(t.url, authUrl.href);
    expect(back.status).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.location!), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.claims()?.preferred_username).toBe('bob');
    expect(tokens.scope).toContain('email');
  });

  it('answers 201 with the request_uri and its lifespan; refuses a request_uri in the push, a wrong secret, a bad redirect_uri', async () => {
    const pushed = await push(t.url, appRequest());
    expect(pushed.status).toBe(201);
    expect(pushed.body).toEqual({ request_uri: expect.stringMatching(/^urn:ietf:params:oauth:request_uri:/), expires_in: 30 });
    expect(await push(t.url, { ...appRequest(), request_uri: pushed.body.request_uri })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'It is not allowed to include request_uri to PAR.' } });
    expect(await push(t.url, { ...appRequest(), client_secret: 'wrong' })).toEqual({ status: 401, body: { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' } });
    expect(await push(t.url, { ...appRequest(), redirect_uri: 'http://127.0.0.1:9/elsewhere' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid parameter: redirect_uri' } });
    expect(await push(t.url, { ...appRequest(), response_type: 'token' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Unsupported response type' } });
  });

  it('a request_uri is single-use', async () => {
    const { body } = await push(t.url, appRequest());
    const authUrl = `/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(body.request_uri)}`;
    const first = await signIn(t.url, authUrl);
    expect(first.status).toBe(302);
    expect(new URL(first.location!).searchParams.get('state')).toBe('s1');
    const again = await new FormClient(t.url).get(authUrl);
    expect(again.status).toBe(400);
    expect(again.text).toContain('Invalid parameter: request_uri');
  });

  it("client B cannot use client A's request_uri, and its attempt does not spend it", async () => {
    const { body } = await push(t.url, appRequest());
    const stolen = await new FormClient(t.url).get(`/realms/${REALM}/protocol/openid-connect/auth?client_id=other&request_uri=${encodeURIComponent(body.request_uri)}`);
    expect(stolen.status).toBe(400);
    expect(stolen.text).toContain('Invalid parameter: request_uri');
    const own = await signIn(t.url, `/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(body.request_uri)}`);
    expect(own.status).toBe(302);
    expect(new URL(own.location!).searchParams.get('code')).toBeTruthy();
  });

  it('the query cannot change what was pushed', async () => {
    const { body } = await push(t.url, appRequest());
    const back = await signIn(t.url, `/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(body.request_uri)}&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/evil')}&state=forged`);
    expect(back.status).toBe(302);
    expect(back.location!.startsWith(`${callback}?`)).toBe(true);
    expect(new URL(back.location!).searchParams.get('state')).toBe('s1');
  });

  it("expires after the realm's parRequestUriLifespan", async () => {
    const { body } = await push(t.url, appRequest());
    clock.pass(31_000);
    const late = await new FormClient(t.url).get(`/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(body.request_uri)}`);
    expect(late.status).toBe(400);
  });

  it('require.pushed.authorization.requests: a plain request is sent back with invalid_request, a pushed one works', async () => {
    const { challenge } = pkce();
    const plain = await new FormClient(t.url).get(
      `/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'strict', redirect_uri: callback, response_type: 'code', scope: 'openid', state: 'p', code_challenge: challenge, code_challenge_method: 'S256' })}`,
    );
    expect(plain.status).toBe(302);
    const refused = new URL(plain.location!).searchParams;
    expect([refused.get('error'), refused.get('error_description'), refused.get('state')]).toEqual(['invalid_request', 'Pushed Authorization Request is only allowed.', 'p']);
    const config = await configFor(t.url, 'strict', 'strict-secret');
    const authUrl = await oidc.buildAuthorizationUrlWithPAR(config, { redirect_uri: callback, scope: 'openid', state: 'q' });
    const back = await signIn(t.url, authUrl.href);
    expect(back.status).toBe(302);
    expect(new URL(back.location!).searchParams.get('code')).toBeTruthy();
  });
});

describe('pushed authorization requests on two nodes', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    pair = await startServerPair();
    await setUpRealm(pair.a.url);
  });
  afterAll(() => pair?.close());

  it('pushed on A, used on B, then refused on both', async () => {
    const { a, b } = pair;
    const { body } = await push(a.url, appRequest());
    const path = `/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(body.request_uri)}`;
    expect((await signIn(b.url, path)).status).toBe(302);
    expect((await new FormClient(a.url).get(path)).status).toBe(400);
    expect((await new FormClient(b.url).get(path)).status).toBe(400);
  });
});
