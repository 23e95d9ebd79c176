import { randomUUID } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, DPoP completeness (RFC 9449 10) as Keycloak 26.7.3: `dpop_jkt` on the authorization request and a DPoP
 * proof at the PAR endpoint bind the authorization code to a key; the code is redeemed only with a proof of that key
 * ("DPoP Proof missing", "DPoP Proof public key thumbprint does not match dpop_jkt", both invalid_request).
 */

const REALM = 'dpopcode';
const PASSWORD = 'Dpop-code-password-5';
const callback = 'http://127.0.0.1:9/cb';
const insecure = { execute: [oidc.allowInsecureRequests] };
type KeyPair = { publicKey: CryptoKey; privateKey: CryptoKey };
const newKey = () => generateKeyPair('ES256', { extractable: true }) as Promise<KeyPair>;
const thumbprint = async (key: KeyPair) => calculateJwkThumbprint(await exportJWK(key.publicKey), 'sha256');

async function proof(key: KeyPair, htm: string, htu: string): Promise<string> {
  return new SignJWT({ jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000) })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(key.publicKey) })
    .sign(key.privateKey);
}

describe('DPoP binding of the authorization code (dpop_jkt, PAR)', () => {
  let t: TestServer;
  const endpoint = (path: string) => `${t.server.context.config.hostname ?? t.url}/realms/${REALM}/protocol/openid-connect/${path}`;

  beforeAll(async () => {
    t = await startServer();
    const token = await adminToken(t.url);
    const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'erin', email: 'erin@example.com', emailVerified: true, firstName: 'Erin', lastName: 'Key', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'app', publicClient: false, secret: 'app-secret', redirectUris: [callback] }));
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'spa', publicClient: true, redirectUris: [callback] }));
  });
  afterAll(() => t?.close());

  /** A browser signing erin in at an authorization URL; the redirect back to the client. */
  async function signIn(authUrl: string) {
    const browser = new FormClient(t.url);
    const page = await browser.get(authUrl);
    expect(inputValue(page.text, 'session_code'), page.text.slice(0, 300)).not.toBeNull();
    const back = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'erin', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
    expect(back.status).toBe(302);
    return new URL(back.location!);
  }

  async function push(form: Record<string, string>, headers: Record<string, string> = {}) {
    const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/ext/par/request`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }

  const appPush = () => ({ client_id: 'app', client_secret: 'app-secret', response_type: 'code', redirect_uri: callback, scope: 'openid', state: 's1' });
  const redeem = (code: string, headers: Record<string, string> = {}) =>
    tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'app', client_secret: 'app-secret', code, redirect_uri: callback }, headers);

  it('openid-client: a push with a DPoP proof, the code redeemed with the same key gives DPoP-bound tokens', async () => {
    const config = await oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'app', 'app-secret', oidc.ClientSecretPost('app-secret'), insecure);
    const keyPair = await oidc.randomDPoPKeyPair('ES256');
    const DPoP = oidc.getDPoPHandle(config, keyPair);
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const authUrl = await oidc.buildAuthorizationUrlWithPAR(
      config,
      { redirect_uri: callback, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state },
      { DPoP },
    );
    const back = await signIn(authUrl.href);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP });
    expect(tokens.token_type.toLowerCase()).toBe('dpop');
    expect((decodeJwt(tokens.access_token).cnf as { jkt: string }).jkt).toBe(await thumbprint(keyPair as KeyPair));
  });

  it('attacker: a code pushed with key A is refused with a proof of key B, and is spent', async () => {
    const a = await newKey();
    const b = await newKey();
    const pushed = await push(appPush(), { dpop: await proof(a, 'POST', endpoint('ext/par/request')) });
    expect(pushed.status, JSON.stringify(pushed.body)).toBe(201);
    const back = await signIn(`/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(pushed.body.request_uri)}`);
    const code = back.searchParams.get('code')!;
    const stolen = await redeem(code, { dpop: await proof(b, 'POST', endpoint('token')) });
    expect(stolen).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'DPoP Proof public key thumbprint does not match dpop_jkt' } });
    const again = await redeem(code, { dpop: await proof(a, 'POST', endpoint('token')) });
    expect(again.body).toMatchObject({ error: 'invalid_grant', error_description: 'Code not valid' });
  });

  it('attacker: a code bound to a key is refused without any proof (a Bearer token is not issued)', async () => {
    const a = await newKey();
    const pushed = await push(appPush(), { dpop: await proof(a, 'POST', endpoint('ext/par/request')) });
    const back = await signIn(`/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(pushed.body.request_uri)}`);
    expect(await redeem(back.searchParams.get('code')!)).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'DPoP Proof missing' } });
  });

  it('dpop_jkt on the authorization request binds the code (public client): refused with another key, issued with the named one', async () => {
    const a = await newKey();
    const b = await newKey();
    const codeFor = async () => {
      const { verifier, challenge } = pkce();
      const query = new URLSearchParams({ client_id: 'spa', response_type: 'code', redirect_uri: callback, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', dpop_jkt: await thumbprint(a) });
      const back = await signIn(`/realms/${REALM}/protocol/openid-connect/auth?${query}`);
      return { code: back.searchParams.get('code')!, verifier };
    };
    const spaForm = (c: { code: string; verifier: string }) => ({ grant_type: 'authorization_code', client_id: 'spa', code: c.code, redirect_uri: callback, code_verifier: c.verifier });
    const first = await codeFor();
    const wrong = await tokenRequest(t.url, REALM, spaForm(first), { dpop: await proof(b, 'POST', endpoint('token')) });
    expect(wrong).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'DPoP Proof public key thumbprint does not match dpop_jkt' } });
    const second = await codeFor();
    const right = await tokenRequest(t.url, REALM, spaForm(second), { dpop: await proof(a, 'POST', endpoint('token')) });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    expect(right.body.token_type).toBe('DPoP');
    expect((decodeJwt(right.body.refresh_token as string).cnf as { jkt: string }).jkt).toBe(await thumbprint(a));
  });

  it('a code without dpop_jkt is redeemed with or without a proof, as before', async () => {
    const pushed = await push(appPush());
    const back = await signIn(`/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(pushed.body.request_uri)}`);
    const answer = await redeem(back.searchParams.get('code')!);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.token_type).toBe('Bearer');
  });

  it('the PAR endpoint refuses a proof of another key than dpop_jkt, one for another URL, one replayed', async () => {
    const a = await newKey();
    const b = await newKey();
    expect(await push({ ...appPush(), dpop_jkt: await thumbprint(b) }, { dpop: await proof(a, 'POST', endpoint('ext/par/request')) })).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: 'DPoP Proof public key thumbprint does not match dpop_jkt.' },
    });
    expect(await push(appPush(), { dpop: await proof(a, 'POST', endpoint('token')) })).toEqual({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP HTTP URL mismatch' } });
    const once = await proof(a, 'POST', endpoint('ext/par/request'));
    expect((await push(appPush(), { dpop: once })).status).toBe(201);
    expect(await push(appPush(), { dpop: once })).toEqual({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof has already been used' } });
    // The same key named by dpop_jkt and proved is accepted.
    expect((await push({ ...appPush(), dpop_jkt: await thumbprint(a) }, { dpop: await proof(a, 'POST', endpoint('ext/par/request')) })).status).toBe(201);
  });
});

describe('DPoP binding of the code across two nodes', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  const endpointOf = (node: TestServer, path: string) => `${node.server.context.config.hostname ?? node.url}/realms/${REALM}/protocol/openid-connect/${path}`;
  beforeAll(async () => {
    pair = await startServerPair();
    const token = await adminToken(pair.a.url);
    expect((await api(pair.a.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true })).status).toBe(201);
    expect((await api(pair.a.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'erin', email: 'erin@example.com', emailVerified: true, firstName: 'Erin', lastName: 'Key', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] })).status).toBe(201);
    expect((await api(pair.a.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'app', publicClient: false, secret: 'app-secret', redirectUris: [callback] })).status).toBe(201);
  });
  afterAll(() => pair?.close());

  it('pushed with key A on node A, signed in and redeemed on node B: key B refused, key A served', async () => {
    const { a, b } = pair;
    const keyA = await newKey();
    const keyB = await newKey();
    const codeVia = async () => {
      const response = await fetch(`${a.url}/realms/${REALM}/protocol/openid-connect/ext/par/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', dpop: await proof(keyA, 'POST', endpointOf(a, 'ext/par/request')) },
        body: new URLSearchParams({ client_id: 'app', client_secret: 'app-secret', response_type: 'code', redirect_uri: callback, scope: 'openid' }),
      });
      expect(response.status).toBe(201);
      const { request_uri } = (await response.json()) as { request_uri: string };
      const browser = new FormClient(b.url);
      const page = await browser.get(`/realms/${REALM}/protocol/openid-connect/auth?client_id=app&request_uri=${encodeURIComponent(request_uri)}`);
      const back = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'erin', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
      return new URL(back.location!).searchParams.get('code')!;
    };
    const form = (code: string) => ({ grant_type: 'authorization_code', client_id: 'app', client_secret: 'app-secret', code, redirect_uri: callback });
    const refused = await tokenRequest(b.url, REALM, form(await codeVia()), { dpop: await proof(keyB, 'POST', endpointOf(b, 'token')) });
    expect(refused.body).toMatchObject({ error: 'invalid_request', error_description: 'DPoP Proof public key thumbprint does not match dpop_jkt' });
    const served = await tokenRequest(b.url, REALM, form(await codeVia()), { dpop: await proof(keyA, 'POST', endpointOf(b, 'token')) });
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    expect((decodeJwt(served.body.access_token as string).cnf as { jkt: string }).jkt).toBe(await thumbprint(keyA));
  });
});
