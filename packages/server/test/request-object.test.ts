import { CompactEncrypt, SignJWT, UnsecuredJWT, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 40, item 3: request objects (`request`, RFC 9101) where Keycloak 26 takes them, the authorization endpoint
 * and the PAR endpoint: signed by the client's key or secret, or unsigned unless the client pins an algorithm.
 */

const REALM = 'jar';
const PASSWORD = 'Jar-password-8';
const callback = 'http://127.0.0.1:9/cb';
/** A client for each of Keycloak's `request.object.required` values. */
const REQUIRED = { 'any-object': 'request or request_uri', 'request-only': 'request only', 'uri-only': 'request_uri only', free: 'not required' } as const;
let t: TestServer;
let issuer: string;
let key: CryptoKey;
let stranger: CryptoKey;

beforeAll(async () => {
  t = await startServer();
  issuer = `${t.url}/realms/${REALM}`;
  const token = await adminToken(t.url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = pair.privateKey;
  const publicKey = pair.publicKey;
  ({ privateKey: stranger } = await generateKeyPair('ES256'));
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', use: 'sig' }] });
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'app', secret: 'app-secret-value-long-enough-0123456789', redirectUris: [callback], attributes: { 'use.jwks.string': 'true', 'jwks.string': jwks } }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'pinned', secret: 'pinned-secret', redirectUris: [callback], attributes: { 'use.jwks.string': 'true', 'jwks.string': jwks, 'request.object.signature.alg': 'ES256' } }));
  // Keycloak's `request.object.required`, one client per value (public: PAR and the device endpoint take them by client_id).
  for (const [clientId, required] of Object.entries(REQUIRED)) {
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId, publicClient: true, redirectUris: [callback], attributes: { 'request.object.required': required, 'oauth2.device.authorization.grant.enabled': 'true' } }));
  }
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'dan', email: 'dan@example.com', emailVerified: true, firstName: 'Dan', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
});
afterAll(() => t?.close());

const claims = (clientId = 'app', extra: Record<string, unknown> = {}) => ({
  client_id: clientId,
  iss: clientId,
  aud: issuer,
  response_type: 'code',
  redirect_uri: callback,
  scope: 'openid',
  state: 'from-object',
  code_challenge: pkce().challenge,
  code_challenge_method: 'S256',
  ...extra,
});
const signed = (payload: Record<string, unknown>, signingKey: CryptoKey = key) => new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setExpirationTime('1m').sign(signingKey);
const unsigned = (payload: Record<string, unknown>) => new UnsecuredJWT(payload).encode();

/** The authorization endpoint with a request object; the user signs in when a login page comes. */
async function authorize(clientId: string, requestObject: string, query: Record<string, string> = {}) {
  const browser = new FormClient(t.url);
  const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: clientId, request: requestObject, ...query })}`);
  if (page.status !== 200 || inputValue(page.text, 'session_code') === null) return page;
  return browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dan', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
}

describe('request objects at the authorization endpoint', () => {
  it("signed with the client's key: its parameters win over the query's", async () => {
    const back = await authorize('app', await signed(claims()), { state: 'from-query', redirect_uri: 'http://127.0.0.1:9/evil', response_type: 'code' });
    expect(back.status).toBe(302);
    const location = new URL(back.location!);
    expect(location.origin + location.pathname).toBe(callback);
    expect(location.searchParams.get('state')).toBe('from-object');
    expect(location.searchParams.get('code')).toBeTruthy();
  });

  it('unsigned (alg none) is taken from a client that pins no algorithm, refused from one that does', async () => {
    expect((await authorize('app', unsigned(claims()))).status).toBe(302);
    const refused = await authorize('pinned', unsigned(claims('pinned')));
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Invalid parameter: request');
    expect((await authorize('pinned', await signed(claims('pinned')))).status).toBe(302);
  });

  it("refuses one signed by another key, naming another client, another audience, or expired, on the error page", async () => {
    for (const object of [
      await signed(claims(), stranger),
      await signed(claims('pinned')),
      await signed(claims('app', { aud: 'https://elsewhere.example' })),
      await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(key),
      'not-a-jwt',
    ]) {
      const refused = await authorize('app', object);
      expect(refused.status).toBe(400);
      expect(refused.location).toBeNull();
      expect(refused.text).toContain('Invalid parameter: request');
    }
  });
});

describe('request objects at the PAR endpoint', () => {
  const push = async (form: Record<string, string>) => {
    const response = await fetch(`${issuer}/protocol/openid-connect/ext/par/request`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };

  it('a signed request object pushed by the client becomes the request its request_uri names', async () => {
    const pushed = await push({ client_id: 'app', client_secret: 'app-secret-value-long-enough-0123456789', request: await signed(claims()) });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const browser = new FormClient(t.url);
    const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'app', request_uri: pushed.body.request_uri })}`);
    const back = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dan', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    expect(new URL(back.location!).searchParams.get('state')).toBe('from-object');
  });

  it('a bad one is 400 invalid_request_object', async () => {
    const refused = await push({ client_id: 'app', client_secret: 'app-secret-value-long-enough-0123456789', request: await signed(claims(), stranger) });
    expect(refused).toEqual({ status: 400, body: { error: 'invalid_request_object', error_description: 'failed to verify the signature of the request object' } });
  });
});

describe("request.object.required (Keycloak's four values)", () => {
  const push = async (form: Record<string, string>) => {
    const response = await fetch(`${issuer}/protocol/openid-connect/ext/par/request`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const plain = (clientId: string) => ({ client_id: clientId, response_type: 'code', redirect_uri: callback, scope: 'openid', state: 'st', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
  const open = (query: Record<string, string>) => new FormClient(t.url).get(`/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams(query)}`);
  const loginPage = (page: { status: number; text: string }) => page.status === 200 && inputValue(page.text, 'session_code') !== null;

  it('at the authorization endpoint: a plain request of a client that must send objects is an error page, never a redirect', async () => {
    for (const [clientId, text] of [
      ['any-object', "Client is required to use 'request' or 'request_uri' parameter."],
      ['request-only', "Client is required to use 'request' parameter."],
      ['uri-only', "Client is required to use 'request_uri' parameter."],
    ] as const) {
      const refused = await open(plain(clientId));
      expect(refused.status, clientId).toBe(400);
      expect(refused.location).toBeNull();
      expect(refused.text).toContain(text.replace(/'/g, '&#39;'));
    }
    expect(loginPage(await open(plain('free')))).toBe(true);
    // What each value takes: an object for `request or request_uri` and `request only`, not for `request_uri only`.
    expect(loginPage(await open({ client_id: 'any-object', request: unsigned(plain('any-object')) }))).toBe(true);
    expect(loginPage(await open({ client_id: 'request-only', request: unsigned(plain('request-only')) }))).toBe(true);
    expect((await open({ client_id: 'uri-only', request: unsigned(plain('uri-only')) })).status).toBe(400);
  });

  it('at the PAR endpoint: a push without an object is refused where the client must send one; the request_uri then serves `request_uri only`, not `request only`', async () => {
    for (const clientId of ['any-object', 'request-only']) {
      expect(await push(plain(clientId)), clientId).toEqual({ status: 400, body: { error: 'invalid_request', error_description: "Client is required to use 'request' parameter." } });
    }
    const uriOnly = await push(plain('uri-only'));
    expect(uriOnly.status).toBe(201);
    expect(loginPage(await open({ client_id: 'uri-only', request_uri: uriOnly.body.request_uri }))).toBe(true);
    const requestOnly = await push({ client_id: 'request-only', request: unsigned(plain('request-only')) });
    expect(requestOnly.status).toBe(201);
    // As Keycloak 26.7.3: `request only` wants the object at the authorization endpoint itself, a request_uri is not it.
    expect((await open({ client_id: 'request-only', request_uri: requestOnly.body.request_uri })).status).toBe(400);
    const anyObject = await push({ client_id: 'any-object', request: unsigned(plain('any-object')) });
    expect(loginPage(await open({ client_id: 'any-object', request_uri: anyObject.body.request_uri }))).toBe(true);
  });

  it('never request and request_uri together, and no request_uri inside an object', async () => {
    const pushed = await push(plain('free'));
    const both = await open({ client_id: 'free', request: unsigned(plain('free')), request_uri: pushed.body.request_uri });
    expect(both.status).toBe(400);
    expect(both.text).toContain('Illegal to use both');
    // The pushed request was not spent by the refused one.
    expect(loginPage(await open({ client_id: 'free', request_uri: pushed.body.request_uri }))).toBe(true);
    const chained = await open({ client_id: 'free', request: unsigned({ ...plain('free'), request_uri: 'https://example.test/object' }) });
    expect(chained.status).toBe(400);
    expect(chained.text).toContain('The request_uri claim should not be set in the request object');
  });

  it('at the device endpoint: the setting holds, and a request object is read there (its scope and PKCE challenge)', async () => {
    const device = async (form: Record<string, string>) => {
      const response = await fetch(`${issuer}/protocol/openid-connect/auth/device`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    expect(await device({ client_id: 'request-only', scope: 'openid' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: "Client is required to use 'request' parameter." } });
    const started = await device({ client_id: 'request-only', request: unsigned({ client_id: 'request-only', scope: 'openid email', code_challenge: pkce().challenge, code_challenge_method: 'S256' }) });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    // The object's parameters are the request's: its PKCE method is checked (plain is refused), the form's is not read.
    const plainMethod = await device({ client_id: 'request-only', code_challenge_method: 'S256', request: unsigned({ client_id: 'request-only', code_challenge: pkce().challenge, code_challenge_method: 'plain' }) });
    // (Read from the form, the S256 method without a challenge would be "Invalid parameter: code_challenge".)
    expect(plainMethod).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid parameter: code challenge method is not supported (use S256)' } });
    // A bad object is refused before anything is made.
    expect((await device({ client_id: 'request-only', request: 'not-a-jwt' })).body).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('Invalid parameter: request') });
    expect(await device({ client_id: 'free', request_uri: 'urn:ietf:params:oauth:request_uri:x' })).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Invalid parameter: request_uri' } });
    expect((await device({ client_id: 'free' })).status).toBe(200);
  });
});

describe('encrypted request objects (a JWE to a realm rsa-enc-generated key, as Keycloak 26 takes them)', () => {
  let encKey: { kid: string; key: CryptoKey };
  beforeAll(async () => {
    const token = await adminToken(t.url);
    const made = await api(t.url, 'POST', `/admin/realms/${REALM}/components`, token, { name: 'enc', providerId: 'rsa-enc-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { algorithm: ['RSA-OAEP-256'] } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const jwk = ((await (await fetch(`${issuer}/protocol/openid-connect/certs`)).json()) as { keys: JWK[] }).keys.find((k) => k.use === 'enc')!;
    encKey = { kid: jwk.kid!, key: (await importJWK(jwk, 'RSA-OAEP-256')) as CryptoKey };
    const pinnedEnc = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'pinned-enc', publicClient: true, redirectUris: [callback], attributes: { 'use.jwks.string': 'true', 'jwks.string': (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=app`, token)).body[0].attributes['jwks.string'], 'request.object.encryption.alg': 'RSA-OAEP-256', 'request.object.encryption.enc': 'A128GCM' } });
    expect(pinnedEnc.status).toBe(201);
  });
  const encrypt = async (inner: string, header: { alg?: string; enc?: string; kid?: string } = {}) =>
    new CompactEncrypt(new TextEncoder().encode(inner)).setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid: encKey.kid, cty: 'JWT', ...header }).encrypt(encKey.key);

  it("the signed object inside is read as any other: its parameters win, the user signs in", async () => {
    const back = await authorize('app', await encrypt(await signed(claims())), { state: 'from-query' });
    expect(back.status).toBe(302);
    expect(new URL(back.location!).searchParams.get('state')).toBe('from-object');
  });

  it('refused: another kid, the client pinning other algorithms, a signature that fails inside, garbage', async () => {
    for (const [clientId, object, reason] of [
      ['app', await encrypt(await signed(claims()), { kid: 'not-a-realm-key' }), 'no encryption key of the realm'],
      ['pinned-enc', await encrypt(await signed(claims('pinned-enc'))), 'content encrypted with different algorithm'],
      ['app', await encrypt(await signed(claims(), stranger)), 'failed to verify the signature'],
      ['app', 'a.b.c.d.e', 'not a JWE'],
    ]) {
      const refused = await authorize(clientId, object);
      expect(refused.status, reason).toBe(400);
      expect(refused.text).toContain('Invalid parameter: request');
      expect(refused.text, reason).toContain(reason);
    }
    const pinned = await authorize('pinned-enc', await encrypt(await signed(claims('pinned-enc')), { enc: 'A128GCM' }));
    expect(pinned.status).toBe(302);
  });
});

describe('openid-client with a client that must send request objects', () => {
  it("buildAuthorizationUrlWithJAR for `request only`: the user signs in, the code is redeemed; the plain URL is refused", async () => {
    const token = await adminToken(t.url);
    const jwks = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=app`, token)).body[0].attributes['jwks.string'];
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'jar-required', secret: 'jar-required-secret', redirectUris: [callback], attributes: { 'use.jwks.string': 'true', 'jwks.string': jwks, 'request.object.required': 'request only', 'request.object.signature.alg': 'ES256' } });
    expect(created.status).toBe(201);
    const config = await oidc.discovery(new URL(issuer), 'jar-required', 'jar-required-secret', oidc.ClientSecretPost('jar-required-secret'), { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const params = { redirect_uri: callback, scope: 'openid', state: 'jar-state', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    const refused = await new FormClient(t.url).get(oidc.buildAuthorizationUrl(config, params).href);
    expect(refused.status).toBe(400);
    const url = await oidc.buildAuthorizationUrlWithJAR(config, params, { key, kid: 'k1' });
    expect(url.searchParams.get('request')).toBeTruthy();
    const browser = new FormClient(t.url);
    const page = await browser.get(url.href);
    expect(page.status).toBe(200);
    const back = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dan', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    expect(back.status).toBe(302);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.location!), { pkceCodeVerifier: verifier, expectedState: 'jar-state' });
    expect(tokens.claims()?.azp).toBe('jar-required');
  });
});
