import { CompactEncrypt, SignJWT, UnsecuredJWT, createRemoteJWKSet, importJWK, type JWK, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, firstForm, inputValue, pkce } from './support/forms.js';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import { adminToken, api, startServer, type TestServer } from './support/server.js';
import { selfSignedCertificate } from '../src/keys/certificate.js';

/**
 * Issue 14, point 6: discovery advertises exactly what works. Every endpoint, grant type, response type and mode,
 * client authentication method, PKCE method, scope and claim it lists is exercised here; a value advertised
 * without an exerciser below fails the test, so a new one cannot be advertised untested.
 */
const REALM = 'disco';
const CALLBACK = 'http://127.0.0.1:9/cb';
const PASSWORD = 'Disco-password-1';
let t: TestServer;
let meta: Record<string, any>;
let secret: string;
let adminBearer: string;
/** Sets attributes of the `spa` client (a signing algorithm, say). */
async function spaAttributes(attributes: Record<string, string>) {
  const id = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=spa`, adminBearer)).body[0].id as string;
  const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, adminBearer)).body;
  expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, adminBearer, { ...rep, attributes: { ...rep.attributes, ...attributes } })).status).toBe(204);
}
/** The private_key_jwt client's keys by assertion algorithm (its JWKS is given as text: `jwks.string`). */
const assertionKeys: Record<string, { kid: string; key: CryptoKey }> = {};
const SJWT_SECRET = 'api-sjwt-secret-value-of-sixty-four-bytes-0123456789abcdef0123456';
const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** A client assertion for the client `clientId`, as RFC 7523 makes one. */
const clientAssertion = (clientId: string, alg: string) => {
  const jwt = new SignJWT({ jti: crypto.randomUUID() }).setIssuer(clientId).setSubject(clientId).setAudience(meta.issuer).setExpirationTime('1m');
  if (alg.startsWith('HS')) return jwt.setProtectedHeader({ alg }).sign(new TextEncoder().encode(SJWT_SECRET));
  const { kid, key } = assertionKeys[alg];
  return jwt.setProtectedHeader({ alg, kid }).sign(key);
};
const assertionForm = async (clientId: string, alg: string) => ({ client_assertion_type: JWT_BEARER, client_assertion: await clientAssertion(clientId, alg) });

const form = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
/**
 * tls_client_auth (client-x509.test.ts has the TLS proxy): the certificate of `api-x509` in nginx's header, sent from
 * 127.0.0.2, the address this server trusts as its TLS-terminating proxy.
 */
const x509Keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const x509Header = encodeURIComponent(`-----BEGIN CERTIFICATE-----\n${selfSignedCertificate(x509Keys.privateKey, x509Keys.publicKey, 'api-x509').toString('base64')}\n-----END CERTIFICATE-----`);
const viaProxy = (url: string, body: Record<string, string>) =>
  new Promise<Response>((done, fail) => {
    const target = new URL(url);
    const request = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', localAddress: '127.0.0.2', headers: { 'content-type': 'application/x-www-form-urlencoded', 'ssl-client-cert': x509Header } }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => done(new Response(Buffer.concat(chunks), { status: answer.statusCode ?? 500 })));
    });
    request.on('error', fail);
    request.end(new URLSearchParams({ client_id: 'api-x509', ...body }).toString());
  });
const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, any> });
const basic = (id: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${password}`).toString('base64')}` });
const passwordGrant = async (scope = 'openid') =>
  json(await form(meta.token_endpoint, { grant_type: 'password', client_id: 'spa', username: 'dina', password: PASSWORD, scope }));

/** The device flow for `spa` (RFC 8628): the user approves on the device page, the device's poll gets the tokens. */
async function deviceGrant() {
  await spaAttributes({ 'oauth2.device.authorization.grant.enabled': 'true' });
  const started = await json(await form(meta.device_authorization_endpoint, { client_id: 'spa', scope: 'openid' }));
  const browser = new FormClient(t.url);
  const page = await browser.get(started.body.verification_uri_complete);
  const consent = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dina', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
  const answer = firstForm(consent.text);
  expect((await browser.post(answer.action, { ...answer.hidden, accept: 'yes' })).status).toBe(302);
  return json(await form(meta.token_endpoint, { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', client_id: 'spa', device_code: started.body.device_code }));
}

/** A browser login through the authorization endpoint; the authorization response as the client receives it. */
async function browserLogin(responseMode: string, scope = 'openid'): Promise<{ params: URLSearchParams; verifier: string }> {
  const browser = new FormClient(t.url);
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({ client_id: 'spa', redirect_uri: CALLBACK, response_type: 'code', response_mode: responseMode, scope, state: 'st-1', nonce: 'n-1', code_challenge: challenge, code_challenge_method: 'S256' });
  const page = await browser.get(`${meta.authorization_endpoint}?${query}`);
  expect(page.status).toBe(200);
  const done = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dina', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
  if (responseMode === 'form_post') {
    expect(done.status).toBe(200);
    expect(done.text).toContain(`action="${CALLBACK}"`);
    return { params: new URLSearchParams(['code', 'state', 'iss', 'session_state'].map((n) => [n, inputValue(done.text, n) ?? ''])), verifier };
  }
  expect(done.status).toBe(302);
  const location = new URL(done.location!);
  return { params: responseMode === 'fragment' ? new URLSearchParams(location.hash.slice(1)) : location.searchParams, verifier };
}

async function codeGrant(responseMode = 'query', scope = 'openid') {
  const { params, verifier } = await browserLogin(responseMode, scope);
  expect(params.get('state')).toBe('st-1');
  expect(params.get('iss')).toBe(meta.issuer);
  return json(await form(meta.token_endpoint, { grant_type: 'authorization_code', client_id: 'spa', code: params.get('code')!, redirect_uri: CALLBACK, code_verifier: verifier }));
}

beforeAll(async () => {
  t = await startServer({ config: { REALMGATE_X509CERT_LOOKUP_PROVIDER: 'nginx', REALMGATE_PROXY_TRUSTED_ADDRESSES: '127.0.0.2' } });
  const admin = await adminToken(t.url);
  adminBearer = admin;
  expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
  expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [CALLBACK], attributes: { 'post.logout.redirect.uris': '+' } })).status).toBe(201);
  expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'api', publicClient: false, serviceAccountsEnabled: true, secret: 'api-secret-value-1', webOrigins: ['https://api.example'], attributes: { 'allow.token.introspection.without.audience.check': 'true', 'standard.token.exchange.enabled': 'true' } })).status).toBe(201);
  secret = 'api-secret-value-1';
  const jwks = [];
  for (const alg of ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']) {
    const pair = await generateKeyPair(alg, { extractable: true });
    assertionKeys[alg] = { kid: `k-${alg}`, key: pair.privateKey };
    jwks.push({ ...(await exportJWK(pair.publicKey)), kid: `k-${alg}`, use: 'sig' });
  }
  const pkjwt = { serviceAccountsEnabled: true, clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.string': 'true', 'jwks.string': JSON.stringify({ keys: jwks }), 'allow.token.introspection.without.audience.check': 'true' } };
  expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'api-pkjwt', ...pkjwt })).status).toBe(201);
  expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'api-x509', serviceAccountsEnabled: true, clientAuthenticatorType: 'client-x509', attributes: { 'x509.subjectdn': 'CN=api-x509', 'allow.token.introspection.without.audience.check': 'true' } })).status).toBe(201);
  expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'api-sjwt', serviceAccountsEnabled: true, clientAuthenticatorType: 'client-secret-jwt', secret: SJWT_SECRET, attributes: { 'allow.token.introspection.without.audience.check': 'true' } })).status).toBe(201);
  const user = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'dina', email: 'dina@example.com', emailVerified: true, firstName: 'Dina', lastName: 'Mo', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
  expect(user.status).toBe(201);
  const response = await fetch(`${t.url}/realms/${REALM}/.well-known/openid-configuration`);
  expect(response.status).toBe(200);
  meta = (await response.json()) as Record<string, any>;
});
afterAll(() => t?.close());

/** Runs each exerciser and checks that their names are exactly the advertised list. */
async function exerciseAll(advertised: string[], exercisers: Record<string, () => Promise<void>>) {
  expect([...advertised].sort()).toEqual(Object.keys(exercisers).sort());
  for (const value of advertised) await exercisers[value]();
}

describe('discovery advertises exactly what works', () => {
  it("advertises Keycloak's registration endpoint (client-registration.test.ts); front- and back-channel logout with sid (exercised in logout-notifications.test.ts)", () => {
    expect(meta.issuer).toBe(`${t.url}/realms/${REALM}`);
    expect(meta.registration_endpoint).toBe(`${meta.issuer}/clients-registrations/openid-connect`);
    expect(meta).toMatchObject({ claims_parameter_supported: false, request_parameter_supported: true, request_uri_parameter_supported: false });
    expect(meta).toMatchObject({ frontchannel_logout_supported: true, frontchannel_logout_session_supported: true, backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  });

  it('advertises iss in authorization responses (RFC 9207) and sends it in every mode, errors included', async () => {
    expect(meta.authorization_response_iss_parameter_supported).toBe(true);
    // Success responses: codeGrant checks iss in each mode (below). Errors: prompt=none without a session.
    for (const mode of meta.response_modes_supported as string[]) {
      const { challenge } = pkce();
      const query = new URLSearchParams({ client_id: 'spa', redirect_uri: CALLBACK, response_type: 'code', response_mode: mode, scope: 'openid', state: 'st-e', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' });
      const answer = await new FormClient(t.url).get(`${meta.authorization_endpoint}?${query}`);
      const params =
        mode === 'form_post'
          ? new URLSearchParams(['error', 'state', 'iss'].map((n) => [n, inputValue(answer.text, n) ?? '']))
          : mode === 'fragment'
            ? new URLSearchParams(new URL(answer.location!).hash.slice(1))
            : new URL(answer.location!).searchParams;
      expect(Object.fromEntries(['error', 'state', 'iss'].map((n) => [n, params.get(n)])), mode).toEqual({ error: 'login_required', state: 'st-e', iss: meta.issuer });
    }
  });

  it('every endpoint answers as its specification says', async () => {
    const endpoints = Object.keys(meta).filter((k) => k.endsWith('_endpoint') || k === 'jwks_uri' || k === 'check_session_iframe');
    const tokens = await passwordGrant();
    await exerciseAll(endpoints, {
      authorization_endpoint: async () => {
        expect((await browserLogin('query')).params.get('code')).toBeTruthy();
      },
      token_endpoint: async () => {
        expect(tokens.status).toBe(200);
      },
      userinfo_endpoint: async () => {
        const info = await json(await fetch(meta.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.body.access_token}` } }));
        expect(info.body).toMatchObject({ preferred_username: 'dina', email: 'dina@example.com' });
      },
      introspection_endpoint: async () => {
        const introspected = await json(await form(meta.introspection_endpoint, { token: tokens.body.access_token }, basic('api', secret)));
        expect(introspected.body).toMatchObject({ active: true, username: 'dina' });
      },
      revocation_endpoint: async () => {
        const other = await passwordGrant();
        expect((await form(meta.revocation_endpoint, { client_id: 'spa', token: other.body.refresh_token })).status).toBe(200);
        expect((await form(meta.token_endpoint, { grant_type: 'refresh_token', client_id: 'spa', refresh_token: other.body.refresh_token })).status).toBe(400);
      },
      end_session_endpoint: async () => {
        const other = await passwordGrant();
        const query = new URLSearchParams({ id_token_hint: other.body.id_token, post_logout_redirect_uri: CALLBACK, state: 'bye' });
        const response = await fetch(`${meta.end_session_endpoint}?${query}`, { redirect: 'manual' });
        expect(response.status).toBe(302);
        expect(response.headers.get('location')).toBe(`${CALLBACK}?state=bye`);
        expect((await form(meta.token_endpoint, { grant_type: 'refresh_token', client_id: 'spa', refresh_token: other.body.refresh_token })).status).toBe(400);
      },
      device_authorization_endpoint: async () => expect((await deviceGrant()).body.access_token).toBeTruthy(),
      pushed_authorization_request_endpoint: async () => {
        const { verifier, challenge } = pkce();
        const pushed = await json(await form(meta.pushed_authorization_request_endpoint, { client_id: 'spa', response_type: 'code', redirect_uri: CALLBACK, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }));
        expect(pushed.status).toBe(201);
        const browser = new FormClient(t.url);
        const page = await browser.get(`${meta.authorization_endpoint}?${new URLSearchParams({ client_id: 'spa', request_uri: pushed.body.request_uri })}`);
        const done = await browser.post(`/realms/${REALM}/login-actions/authenticate`, { username: 'dina', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
        const code = new URL(done.location!).searchParams.get('code')!;
        expect((await json(await form(meta.token_endpoint, { grant_type: 'authorization_code', client_id: 'spa', code, redirect_uri: CALLBACK, code_verifier: verifier }))).status).toBe(200);
      },
      registration_endpoint: async () => {
        const initial = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, adminBearer, { count: 1 });
        const registered = await json(await fetch(meta.registration_endpoint, { method: 'POST', headers: { authorization: `Bearer ${initial.body.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [CALLBACK] }) }));
        expect(registered.status).toBe(201);
        expect(registered.body.registration_client_uri).toBe(`${meta.registration_endpoint}/${registered.body.client_id}`);
      },
      check_session_iframe: async () => {
        // The frame page and its script; what it answers is tested in browser-session-monitor.test.ts.
        const frame = await fetch(meta.check_session_iframe);
        expect(frame.status).toBe(200);
        expect(frame.headers.get('content-type')).toContain('text/html');
        expect(await frame.text()).toContain('login-status-iframe.js');
      },
      jwks_uri: async () => {
        const keys = (await json(await fetch(meta.jwks_uri))).body.keys as { kid: string }[];
        expect(keys.map((k) => k.kid)).toContain(decodeProtectedHeader(tokens.body.access_token).kid);
      },
    });
  });

  it('every grant type, response type and response mode', async () => {
    await exerciseAll(meta.grant_types_supported, {
      authorization_code: async () => expect((await codeGrant()).body.id_token).toBeTruthy(),
      password: async () => expect((await passwordGrant()).status).toBe(200),
      refresh_token: async () => {
        const tokens = await passwordGrant();
        expect((await json(await form(meta.token_endpoint, { grant_type: 'refresh_token', client_id: 'spa', refresh_token: tokens.body.refresh_token }))).status).toBe(200);
      },
      'urn:ietf:params:oauth:grant-type:device_code': async () => expect((await deviceGrant()).status).toBe(200),
      // Token exchange (its own test: token-exchange.test.ts): api trades its own access token for a new one.
      'urn:ietf:params:oauth:grant-type:token-exchange': async () => {
        const own = await json(await form(meta.token_endpoint, { grant_type: 'client_credentials' }, basic('api', secret)));
        const exchanged = await json(await form(meta.token_endpoint, { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: own.body.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' }, basic('api', secret)));
        expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
        expect(exchanged.body.issued_token_type).toBe('urn:ietf:params:oauth:token-type:access_token');
      },
      client_credentials: async () => {
        const response = await json(await form(meta.token_endpoint, { grant_type: 'client_credentials' }, basic('api', secret)));
        expect(decodeJwt(response.body.access_token).preferred_username).toBe('service-account-api');
      },
    });
    await exerciseAll(meta.response_types_supported, { code: async () => expect((await codeGrant()).status).toBe(200) });
    await exerciseAll(meta.response_modes_supported, {
      query: async () => expect((await codeGrant('query')).status).toBe(200),
      fragment: async () => expect((await codeGrant('fragment')).status).toBe(200),
      form_post: async () => expect((await codeGrant('form_post')).status).toBe(200),
    });
    await exerciseAll(meta.code_challenge_methods_supported, { S256: async () => expect((await codeGrant()).status).toBe(200) });
  });

  it('every client authentication method at the token, introspection and revocation endpoints', async () => {
    const methods = (url: string, body: Record<string, string>, expectOk: (r: Response) => Promise<void>) => ({
      client_secret_basic: async () => expectOk(await form(url, body, basic('api', secret))),
      client_secret_post: async () => expectOk(await form(url, { ...body, client_id: 'api', client_secret: secret })),
      private_key_jwt: async () => expectOk(await form(url, { ...body, ...(await assertionForm('api-pkjwt', 'ES256')) })),
      client_secret_jwt: async () => expectOk(await form(url, { ...body, ...(await assertionForm('api-sjwt', 'HS256')) })),
      tls_client_auth: async () => expectOk(await viaProxy(url, body)),
    });
    const wrong = await form(meta.token_endpoint, { grant_type: 'client_credentials', client_id: 'api', client_secret: 'wrong' });
    expect(wrong.status).toBe(401);
    await exerciseAll(meta.token_endpoint_auth_methods_supported, methods(meta.token_endpoint, { grant_type: 'client_credentials' }, async (r) => expect(r.status).toBe(200)));
    const access = (await passwordGrant()).body.access_token as string;
    await exerciseAll(meta.introspection_endpoint_auth_methods_supported, methods(meta.introspection_endpoint, { token: access }, async (r) => expect((await r.json()).active).toBe(true)));
    const own = async () => (await json(await form(meta.token_endpoint, { grant_type: 'client_credentials' }, basic('api', secret)))).body.access_token as string;
    const revokeMethods = {
      client_secret_basic: async () => {
        const token = await own();
        expect((await form(meta.revocation_endpoint, { token }, basic('api', secret))).status).toBe(200);
        expect((await (await form(meta.introspection_endpoint, { token }, basic('api', secret))).json()).active).toBe(false);
      },
      client_secret_post: async () => {
        const token = await own();
        expect((await form(meta.revocation_endpoint, { token, client_id: 'api', client_secret: secret })).status).toBe(200);
        expect((await (await form(meta.introspection_endpoint, { token }, basic('api', secret))).json()).active).toBe(false);
      },
    };
    const revokeBy = async (clientId: string, alg: string) => {
      const token = (await json(await form(meta.token_endpoint, { grant_type: 'client_credentials', ...(await assertionForm(clientId, alg)) }))).body.access_token as string;
      expect((await form(meta.revocation_endpoint, { token, ...(await assertionForm(clientId, alg)) })).status).toBe(200);
      expect((await (await form(meta.introspection_endpoint, { token }, basic('api', secret))).json()).active).toBe(false);
    };
    await exerciseAll(meta.revocation_endpoint_auth_methods_supported, {
      ...revokeMethods,
      private_key_jwt: () => revokeBy('api-pkjwt', 'RS256'),
      client_secret_jwt: () => revokeBy('api-sjwt', 'HS512'),
      tls_client_auth: async () => {
        const token = (await json(await viaProxy(meta.token_endpoint, { grant_type: 'client_credentials' }))).body.access_token as string;
        expect((await viaProxy(meta.revocation_endpoint, { token })).status).toBe(200);
        expect((await (await form(meta.introspection_endpoint, { token }, basic('api', secret))).json()).active).toBe(false);
      },
    });
  });

  it('every client assertion signing algorithm, at each endpoint that lists them', async () => {
    expect(meta.introspection_endpoint_auth_signing_alg_values_supported).toEqual(meta.token_endpoint_auth_signing_alg_values_supported);
    expect(meta.revocation_endpoint_auth_signing_alg_values_supported).toEqual(meta.token_endpoint_auth_signing_alg_values_supported);
    const grant = (clientId: string, alg: string) => async () => {
      const response = await form(meta.token_endpoint, { grant_type: 'client_credentials', ...(await assertionForm(clientId, alg)) });
      expect(response.status, alg).toBe(200);
    };
    const exercisers: Record<string, () => Promise<void>> = {};
    for (const alg of Object.keys(assertionKeys)) exercisers[alg] = grant('api-pkjwt', alg);
    for (const alg of ['HS256', 'HS384', 'HS512']) exercisers[alg] = grant('api-sjwt', alg);
    await exerciseAll(meta.token_endpoint_auth_signing_alg_values_supported, exercisers);
  });

  it('every request object signing algorithm, at the PAR endpoint (the authorization endpoint reads them alike)', async () => {
    // A client with the assertion keys (asymmetric algorithms) and a secret long enough for HS512.
    const admin = await adminToken(t.url);
    const jwks = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=api-pkjwt`, admin)).body[0].attributes['jwks.string'];
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'jar', secret: SJWT_SECRET, redirectUris: [CALLBACK], attributes: { 'use.jwks.string': 'true', 'jwks.string': jwks } });
    expect([201, 409]).toContain(created.status);
    const request = { client_id: 'jar', iss: 'jar', aud: meta.issuer, response_type: 'code', redirect_uri: CALLBACK, scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' };
    const pushed = (object: string) => async () => {
      const answer = await json(await form(meta.pushed_authorization_request_endpoint, { client_id: 'jar', client_secret: SJWT_SECRET, request: object }));
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    };
    const signedWith = (alg: string) => async () => {
      const jwt = () => new SignJWT(request).setExpirationTime('1m');
      const object = alg.startsWith('HS') ? await jwt().setProtectedHeader({ alg }).sign(new TextEncoder().encode(SJWT_SECRET)) : await jwt().setProtectedHeader({ alg, kid: assertionKeys[alg].kid }).sign(assertionKeys[alg].key);
      await pushed(object)();
      // Signed by another key, the same algorithm is refused: the signature is what is checked.
      const other = alg.startsWith('HS') ? await jwt().setProtectedHeader({ alg }).sign(new TextEncoder().encode(`${SJWT_SECRET}-other`)) : await jwt().setProtectedHeader({ alg, kid: assertionKeys[alg].kid }).sign((await generateKeyPair(alg)).privateKey);
      expect((await form(meta.pushed_authorization_request_endpoint, { client_id: 'jar', client_secret: SJWT_SECRET, request: other })).status, alg).toBe(400);
    };
    const exercisers: Record<string, () => Promise<void>> = { none: pushed(new UnsecuredJWT(request).encode()) };
    for (const alg of [...Object.keys(assertionKeys), 'HS256', 'HS384', 'HS512']) exercisers[alg] = signedWith(alg);
    await exerciseAll(meta.request_object_signing_alg_values_supported, exercisers);
  });

  it('every request object encryption algorithm and content encryption (a JWE to a realm rsa-enc-generated key)', async () => {
    const admin = await adminToken(t.url);
    for (const algorithm of meta.request_object_encryption_alg_values_supported as string[]) {
      const made = await api(t.url, 'POST', `/admin/realms/${REALM}/components`, admin, { name: `enc-${algorithm}`, providerId: 'rsa-enc-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { algorithm: [algorithm] } });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    const jwks = ((await (await fetch(meta.jwks_uri)).json()) as { keys: JWK[] }).keys.filter((k) => k.use === 'enc');
    if (!(await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=jar`, admin)).body.length) {
      expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'jar', secret: SJWT_SECRET, redirectUris: [CALLBACK] })).status).toBe(201);
    }
    const request = { client_id: 'jar', iss: 'jar', aud: meta.issuer, response_type: 'code', redirect_uri: CALLBACK, scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' };
    const inner = await new SignJWT(request).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1m').sign(new TextEncoder().encode(SJWT_SECRET));
    const encrypted = async (alg: string, enc: string) => {
      const jwk = jwks.find((k) => k.alg === alg)!;
      return new CompactEncrypt(new TextEncoder().encode(inner)).setProtectedHeader({ alg, enc, kid: jwk.kid, cty: 'JWT' }).encrypt(await importJWK(jwk, alg));
    };
    const pushed = (alg: string, enc: string) => async () => {
      const answer = await json(await form(meta.pushed_authorization_request_endpoint, { client_id: 'jar', client_secret: SJWT_SECRET, request: await encrypted(alg, enc) }));
      expect(answer.status, `${alg} ${enc}: ${JSON.stringify(answer.body)}`).toBe(201);
    };
    await exerciseAll(meta.request_object_encryption_alg_values_supported, Object.fromEntries(meta.request_object_encryption_alg_values_supported.map((alg: string) => [alg, pushed(alg, 'A256GCM')])));
    await exerciseAll(meta.request_object_encryption_enc_values_supported, Object.fromEntries(meta.request_object_encryption_enc_values_supported.map((enc: string) => [enc, pushed('RSA-OAEP', enc)])));
  });

  it('every scope, signing algorithm, subject type and claim', async () => {
    // The scopes whose include.in.token.scope is "false" (roles, web-origins, basic, acr) apply without being named in `scope`.
    const granted = async (scope: string, named = true) => {
      const tokens = await passwordGrant(scope);
      expect(tokens.status, scope).toBe(200);
      if (named) expect((tokens.body.scope as string).split(' '), scope).toContain(scope);
      return { tokens: tokens.body, access: decodeJwt(tokens.body.access_token as string) };
    };
    await exerciseAll(meta.scopes_supported, {
      openid: async () => expect((await granted('openid')).tokens.id_token).toBeTruthy(),
      profile: async () => expect((await granted('profile')).access.preferred_username).toBe('dina'),
      email: async () => expect((await granted('email')).access.email).toBe('dina@example.com'),
      roles: async () => expect((await granted('roles', false)).access.realm_access).toMatchObject({ roles: expect.arrayContaining(['offline_access']) }),
      'web-origins': async () => {
        const tokens = await json(await form(meta.token_endpoint, { grant_type: 'client_credentials', scope: 'web-origins' }, basic('api', secret)));
        expect(decodeJwt(tokens.body.access_token as string)['allowed-origins']).toEqual(['https://api.example']);
      },
      basic: async () => expect((await granted('basic', false)).access).toMatchObject({ sub: expect.any(String), auth_time: expect.any(Number) }),
      acr: async () => expect((await granted('acr', false)).access.acr).toBe('1'),
      phone: async () => void (await granted('phone')),
      address: async () => expect((await granted('address')).access.address).toEqual({}),
      'microprofile-jwt': async () => expect((await granted('microprofile-jwt')).access.upn).toBe('dina'),
      organization: async () => void (await granted('organization')),
      offline_access: async () => expect(decodeJwt((await granted('offline_access')).tokens.refresh_token as string).typ).toBe('Offline'),
    });
    const { tokens } = await granted('openid');
    const realmKeys = createRemoteJWKSet(new URL(meta.jwks_uri), { cooldownDuration: 0, cacheMaxAge: 0 });
    const idTokenSignedWith = (alg: string) => async () => {
      await spaAttributes({ 'id.token.signed.response.alg': alg });
      const idToken = (await granted('openid')).tokens.id_token as string;
      expect(decodeProtectedHeader(idToken).alg).toBe(alg);
      await jwtVerify(idToken, realmKeys, { issuer: meta.issuer, audience: 'spa', algorithms: [alg] });
    };
    await exerciseAll(meta.id_token_signing_alg_values_supported, Object.fromEntries(meta.id_token_signing_alg_values_supported.map((alg: string) => [alg, idTokenSignedWith(alg)])));
    await spaAttributes({ 'id.token.signed.response.alg': '' });
    const userinfoSignedWith = (alg: string) => async () => {
      await spaAttributes({ 'user.info.response.signature.alg': alg });
      const access = (await granted('openid')).tokens.access_token as string;
      const response = await fetch(meta.userinfo_endpoint, { headers: { authorization: `Bearer ${access}` } });
      expect(response.headers.get('content-type')).toMatch(/^application\/jwt/);
      await jwtVerify(await response.text(), realmKeys, { issuer: meta.issuer, audience: 'spa', algorithms: [alg] });
    };
    await exerciseAll(meta.userinfo_signing_alg_values_supported, {
      ...Object.fromEntries(meta.userinfo_signing_alg_values_supported.filter((alg: string) => alg !== 'none').map((alg: string) => [alg, userinfoSignedWith(alg)])),
      none: async () => {
        await spaAttributes({ 'user.info.response.signature.alg': 'unsigned' });
        const response = await fetch(meta.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } });
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      },
    });
    await exerciseAll(meta.subject_types_supported, {
      public: async () => {
        const viaCode = decodeJwt((await codeGrant()).body.id_token as string);
        expect(viaCode.sub).toBe(decodeJwt(tokens.id_token as string).sub);
      },
    });
    const id = decodeJwt(tokens.id_token as string);
    const access = decodeJwt(tokens.access_token as string);
    const userinfo = (await json(await fetch(meta.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } }))).body;
    for (const claim of meta.claims_supported as string[]) {
      expect(claim in id || claim in access || claim in userinfo, `claim ${claim}`).toBe(true);
    }
  });
});
