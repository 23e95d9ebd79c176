import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 4: DPoP (RFC 9449) as Keycloak 26.7.3 — bound access and refresh tokens (`cnf.jkt`, token_type
 * DPoP), proof checks (typ, alg, jwk, htm, htu, iat, jti once across nodes, ath), `dpop.bound.access.tokens`,
 * userinfo and introspection. openid-client makes the proofs where it can; hand-made ones (jose) test the refusals.
 */

const REALM = 'dpop';
const PASSWORD = 'Dpop-password-7';
const SECRET = 'api-secret-value-1';
const insecure = { execute: [oidc.allowInsecureRequests] };

type KeyPair = { publicKey: CryptoKey; privateKey: CryptoKey };
const newKey = () => generateKeyPair('ES256', { extractable: true }) as Promise<KeyPair>;
const thumbprint = async (key: KeyPair) => calculateJwkThumbprint(await exportJWK(key.publicKey), 'sha256');
const ath = (token: string) => createHash('sha256').update(token).digest('base64url');

/** A proof made by hand: claims and header can be changed to what an attacker would send. */
async function proof(key: KeyPair, htm: string, htu: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const jwk: JWK = await exportJWK(key.publicKey);
  return new SignJWT({ jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk, ...header })
    .sign(key.privateKey);
}

async function setUp(t: TestServer): Promise<void> {
  const token = await adminToken(t.url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'dora', email: 'dora@example.com', emailVerified: true, firstName: 'Dora', lastName: 'Pop', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true, webOrigins: ['https://spa.example'] }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'api', publicClient: false, secret: SECRET, directAccessGrantsEnabled: true, serviceAccountsEnabled: true, attributes: { 'allow.token.introspection.without.audience.check': 'true' } }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'strict', publicClient: true, directAccessGrantsEnabled: true, attributes: { 'dpop.bound.access.tokens': 'true' } }));
}

/** The endpoint's public URL, what a proof's htu names: the configured hostname when there is one. */
const endpoint = (t: TestServer, path: string) => `${t.server.context.config.hostname ?? t.url}/realms/${REALM}/protocol/openid-connect/${path}`;
/** Where the request goes (the node itself). */
const address = (t: TestServer, path: string) => `${t.url}/realms/${REALM}/protocol/openid-connect/${path}`;
const passwordForm = (clientId: string) => ({ grant_type: 'password', client_id: clientId, username: 'dora', password: PASSWORD, scope: 'openid' });

async function userinfo(t: TestServer, headers: Record<string, string>) {
  const response = await fetch(address(t, 'userinfo'), { headers });
  return { status: response.status, body: (await response.json().catch(() => null)) as Record<string, unknown> | null, challenge: response.headers.get('www-authenticate') };
}

/** A DPoP-bound access token of `spa` for `key` (hand-made proof). */
async function boundToken(t: TestServer, key: KeyPair, clientId = 'spa') {
  const answer = await tokenRequest(t.url, REALM, passwordForm(clientId), { dpop: await proof(key, 'POST', endpoint(t, 'token')) });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as Record<string, string>;
}

describe('DPoP on one node', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer();
    await setUp(t);
  });
  afterAll(() => t?.close());

  const discover = (clientId: string, auth: oidc.ClientAuth = oidc.None()) => oidc.discovery(new URL(`${t.url}/realms/${REALM}`), clientId, undefined, auth, insecure);

  it('openid-client: a public client gets DPoP-bound access and refresh tokens, refreshes and calls userinfo with proofs', async () => {
    const config = await discover('spa');
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toContain('ES256');
    const key = await newKey();
    const DPoP = oidc.getDPoPHandle(config, key);
    const tokens = await oidc.genericGrantRequest(config, 'password', { username: 'dora', password: PASSWORD, scope: 'openid' }, { DPoP });
    expect(tokens.token_type).toBe('dpop');
    const jkt = await thumbprint(key);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ typ: 'DPoP', cnf: { jkt } });
    expect(decodeJwt(tokens.refresh_token!)).toMatchObject({ cnf: { jkt } });
    expect(decodeJwt(tokens.id_token!).cnf).toBeUndefined();

    const sub = decodeJwt(tokens.access_token).sub!;
    expect(await oidc.fetchUserInfo(config, tokens.access_token, sub, { DPoP })).toMatchObject({ sub, preferred_username: 'dora' });

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP });
    expect(refreshed.token_type).toBe('dpop');
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ cnf: { jkt } });
    expect(decodeJwt(refreshed.refresh_token!)).toMatchObject({ cnf: { jkt } });

    // Introspection by a confidential client: active, with the binding and the token type, and no proof needed.
    const api = await discover('api', oidc.ClientSecretPost(SECRET));
    expect(await oidc.tokenIntrospection(api, refreshed.access_token)).toMatchObject({ active: true, cnf: { jkt }, token_type: 'DPoP' });
  });

  it('a bound refresh token is refused without a proof, and with a proof of another key', async () => {
    const key = await newKey();
    const tokens = await boundToken(t, key);
    const form = { grant_type: 'refresh_token', client_id: 'spa', refresh_token: tokens.refresh_token };
    const none = await tokenRequest(t.url, REALM, form);
    expect(none).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof is missing' } });
    const other = await tokenRequest(t.url, REALM, form, { dpop: await proof(await newKey(), 'POST', endpoint(t, 'token')) });
    expect(other).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof' } });
    const same = await tokenRequest(t.url, REALM, form, { dpop: await proof(key, 'POST', endpoint(t, 'token')) });
    expect(same.status).toBe(200);
  });

  it('a confidential client: the access token is bound, the refresh token not (RFC 9449 5); client_credentials too', async () => {
    const key = await newKey();
    const tokens = await tokenRequest(t.url, REALM, { ...passwordForm('api'), client_secret: SECRET }, { dpop: await proof(key, 'POST', endpoint(t, 'token')) });
    expect(tokens.body).toMatchObject({ token_type: 'DPoP' });
    expect(decodeJwt(tokens.body.access_token as string).cnf).toEqual({ jkt: await thumbprint(key) });
    expect(decodeJwt(tokens.body.refresh_token as string).cnf).toBeUndefined();
    const config = await discover('api', oidc.ClientSecretPost(SECRET));
    const service = await oidc.clientCredentialsGrant(config, undefined, { DPoP: oidc.getDPoPHandle(config, key) });
    expect(service.token_type).toBe('dpop');
    expect(decodeJwt(service.access_token).cnf).toEqual({ jkt: await thumbprint(key) });
  });

  it('without a DPoP header the tokens are Bearer ones; a client with dpop.bound.access.tokens must send a proof', async () => {
    const plain = await tokenRequest(t.url, REALM, passwordForm('spa'));
    expect(plain.body.token_type).toBe('Bearer');
    expect(decodeJwt(plain.body.access_token as string).cnf).toBeUndefined();
    expect(await tokenRequest(t.url, REALM, passwordForm('strict'))).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof is missing' } });
    const bound = await boundToken(t, await newKey(), 'strict');
    expect(bound.token_type).toBe('DPoP');
    // A Bearer token sent with the DPoP scheme is refused, and a bound one with the Bearer scheme.
    const key = await newKey();
    const asDpop = await userinfo(t, { authorization: `DPoP ${plain.body.access_token}`, dpop: await proof(key, 'GET', endpoint(t, 'userinfo'), { ath: ath(plain.body.access_token as string) }) });
    expect(asDpop.status).toBe(401);
    const asBearer = await userinfo(t, { authorization: `Bearer ${bound.access_token}` });
    expect(asBearer).toMatchObject({ status: 401, body: { error: 'invalid_token' } });
    expect(asBearer.challenge).toMatch(/^DPoP /);
  });

  it('userinfo: a proof is accepted once; without one, replayed, for another URL or method, token or key, or out of time it is refused', async () => {
    const key = await newKey();
    const { access_token: token } = await boundToken(t, key);
    const url = endpoint(t, 'userinfo');
    const good = await proof(key, 'GET', url, { ath: ath(token) });
    expect((await userinfo(t, { authorization: `DPoP ${token}`, dpop: good })).status).toBe(200);
    const refusals: Record<string, Record<string, string>> = {
      'no proof': { authorization: `DPoP ${token}` },
      'the same proof again': { authorization: `DPoP ${token}`, dpop: good },
      'a proof for another URL': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', endpoint(t, 'token'), { ath: ath(token) }) },
      'a proof for another method': { authorization: `DPoP ${token}`, dpop: await proof(key, 'POST', url, { ath: ath(token) }) },
      'a proof for another token': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(`${token}x`) }) },
      'a proof without ath': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url) },
      'a proof of another key': { authorization: `DPoP ${token}`, dpop: await proof(await newKey(), 'GET', url, { ath: ath(token) }) },
      'a proof a minute old': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(token), iat: Math.floor(Date.now() / 1000) - 60 }) },
      'a proof from the future': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(token), iat: Math.floor(Date.now() / 1000) + 60 }) },
      'a proof of typ JWT': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(token) }, { typ: 'JWT' }) },
      'a proof without jti': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(token), jti: undefined }) },
      'a proof whose jwk has the private key': { authorization: `DPoP ${token}`, dpop: await proof(key, 'GET', url, { ath: ath(token) }, { jwk: await exportJWK(key.privateKey) }) },
      'a proof MACed with HS256': {
        authorization: `DPoP ${token}`,
        dpop: await new SignJWT({ jti: randomUUID(), htm: 'GET', htu: url, iat: Math.floor(Date.now() / 1000), ath: ath(token) }).setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct', k: 'c2VjcmV0' } as unknown as JWK }).sign(new TextEncoder().encode('secret')),
      },
    };
    const why: Record<string, string> = {
      'no proof': 'DPoP proof is missing',
      'the same proof again': 'DPoP proof has already been used',
      'a proof for another URL': 'DPoP HTTP URL mismatch',
      'a proof for another method': 'DPoP HTTP method mismatch',
      'a proof for another token': 'DPoP proof access token hash mismatch',
      'a proof without ath': 'No access token hash in DPoP proof',
      'a proof of another key': "DPoP confirmation doesn't match DPoP proof",
      'a proof a minute old': 'DPoP proof is not active',
      'a proof from the future': 'DPoP proof is not active',
      'a proof of typ JWT': 'Invalid or missing type in DPoP header: JWT',
      'a proof without jti': 'DPoP mandatory claims are missing',
      'a proof whose jwk has the private key': 'Private key is present in DPoP header',
      'a proof MACed with HS256': 'Unsupported DPoP algorithm: HS256',
    };
    for (const [name, headers] of Object.entries(refusals)) {
      const answer = await userinfo(t, headers);
      expect(answer.status, name).toBe(401);
      expect(answer.body?.error_description, name).toBe(why[name]);
      expect(answer.body?.error, name).toBe(name === 'a proof of another key' ? 'invalid_token' : 'invalid_dpop_proof');
    }
  });

  it('every algorithm discovery lists for proofs is accepted', async () => {
    const config = await discover('spa');
    const algs = config.serverMetadata().dpop_signing_alg_values_supported!;
    expect(algs).toEqual(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);
    for (const alg of algs) {
      const key = (await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) })) as KeyPair;
      const answer = await tokenRequest(t.url, REALM, passwordForm('spa'), { dpop: await proof(key, 'POST', endpoint(t, 'token'), {}, { alg }) });
      expect(answer.status, `${alg}: ${JSON.stringify(answer.body)}`).toBe(200);
      expect(decodeJwt(answer.body.access_token as string).cnf, alg).toEqual({ jkt: await thumbprint(key) });
    }
  });

  it('a browser app may send the DPoP header: CORS preflights of the token and userinfo endpoints allow it', async () => {
    for (const [path, method, headers] of [['token', 'POST', 'content-type, dpop'], ['userinfo', 'GET', 'authorization, dpop']]) {
      const response = await fetch(address(t, path), { method: 'OPTIONS', headers: { origin: 'https://spa.example', 'access-control-request-method': method, 'access-control-request-headers': headers } });
      expect(response.headers.get('access-control-allow-origin'), path).toBe('https://spa.example');
      expect(response.headers.get('access-control-allow-headers')?.toLowerCase(), path).toContain('dpop');
    }
  });

  it('token endpoint: a replayed proof, or one for another URL, is refused', async () => {
    const key = await newKey();
    const once = await proof(key, 'POST', endpoint(t, 'token'));
    expect((await tokenRequest(t.url, REALM, passwordForm('spa'), { dpop: once })).status).toBe(200);
    expect(await tokenRequest(t.url, REALM, passwordForm('spa'), { dpop: once })).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof has already been used' } });
    expect(await tokenRequest(t.url, REALM, passwordForm('spa'), { dpop: await proof(key, 'POST', endpoint(t, 'userinfo')) })).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP HTTP URL mismatch' } });
  });

  it('other bearer endpoints refuse a DPoP-bound token (no proof checked there): the account API', async () => {
    const { access_token: token } = await boundToken(t, await newKey());
    const account = (bearer: string) => fetch(`${t.url}/realms/${REALM}/account/`, { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' } });
    // The same client's unbound token is accepted there: the refusal is the binding's.
    const plain = await tokenRequest(t.url, REALM, passwordForm('spa'));
    expect((await account(plain.body.access_token as string)).status).toBe(200);
    expect((await account(token)).status).toBe(401);
  });
});

describe('DPoP on two nodes (one PostgreSQL, one Redis)', () => {
  let nodes: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    // One public hostname for both nodes, as behind a load balancer: a proof names the same URL whichever node gets it.
    nodes = await startServerPair({ REALMGATE_HOSTNAME: 'http://auth.dpop.localhost' });
    await setUp(nodes.a);
  });
  afterAll(() => nodes?.close());

  it('a proof used on node A is refused on node B (jti once across nodes)', async () => {
    const { a, b } = nodes;
    const key = await newKey();
    const { access_token: token } = await boundToken(a, key);
    expect(endpoint(a, 'userinfo')).toBe(endpoint(b, 'userinfo'));
    const onA = await proof(key, 'GET', endpoint(a, 'userinfo'), { ath: ath(token) });
    expect((await userinfo(a, { authorization: `DPoP ${token}`, dpop: onA })).status).toBe(200);
    const replayed = await userinfo(b, { authorization: `DPoP ${token}`, dpop: onA });
    expect(replayed).toMatchObject({ status: 401, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof has already been used' } });
    // A fresh proof works on B: the token and key are the same deployment's.
    const fresh = await proof(key, 'GET', endpoint(b, 'userinfo'), { ath: ath(token) });
    expect((await userinfo(b, { authorization: `DPoP ${token}`, dpop: fresh })).status).toBe(200);
    // And a token-endpoint proof used on B is refused on A.
    const tokenProof = await proof(key, 'POST', endpoint(b, 'token'));
    expect((await tokenRequest(b.url, REALM, passwordForm('spa'), { dpop: tokenProof })).status).toBe(200);
    expect(await tokenRequest(a.url, REALM, passwordForm('spa'), { dpop: tokenProof })).toMatchObject({ status: 400, body: { error: 'invalid_dpop_proof', error_description: 'DPoP proof has already been used' } });
  });
});
