import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
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
