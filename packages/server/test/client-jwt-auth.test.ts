import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KeyObject, createPrivateKey, generateKeyPairSync, sign as nodeSign } from 'node:crypto';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientKeys, clientKeyAttributeProblems } from '../src/keys/client-keys.js';
import { TargetGuard } from '../src/http/target-guard.js';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { movableDate } from './support/clock.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 39: private_key_jwt (`client-jwt`) and client_secret_jwt (`client-secret-jwt`), with openid-client and jose as
 * the clients; every refusal Keycloak makes (replay, audience, expiry, another client's key, `none`, HS256 with the
 * public key), on the token endpoint and the others that take a client.
 */

const insecure = { execute: [oidc.allowInsecureRequests] };
const REALM = 'pkjwt';

interface KeyPair {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  kid: string;
  alg: string;
}
async function keyPair(alg: string, kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicKey, kid, alg };
}
const publicJwk = async (k: KeyPair): Promise<JWK> => ({ ...(await exportJWK(k.publicKey)), kid: k.kid, alg: k.alg, use: 'sig' });

describe('client authentication by signed JWT', () => {
  let t: TestServer;
  let admin: string;
  let jwksServer: Server;
  let jwksUrl: string;
  /** What the loopback JWKS endpoint answers now (the test rotates it). */
  let served: { status: number; body: string } = { status: 200, body: '{"keys":[]}' };
  let rsa: KeyPair;
  let ec: KeyPair;
  let tokenEndpoint: string;
  let issuer: string;

  const createClient = async (rep: Record<string, unknown>) => {
    const response = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { serviceAccountsEnabled: true, standardFlowEnabled: false, ...rep });
    expect(response.status).toBe(201);
    return response.headers.get('location')!.split('/').pop()!;
  };

  const assertion = (key: CryptoKey | Uint8Array, alg: string, claims: Record<string, unknown>, kid?: string) =>
    new SignJWT({ jti: crypto.randomUUID(), ...claims })
      .setProtectedHeader({ alg, ...(kid ? { kid } : {}) })
      .setIssuedAt()
      .setExpirationTime(typeof claims.exp === 'number' ? claims.exp : '1m')
      .sign(key);

  const postAssertion = async (jwt: string, path = 'token', extra: Record<string, string> = { grant_type: 'client_credentials' }) => {
    const response = await fetch(`${issuer}/protocol/openid-connect/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...extra, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: jwt }),
    });
    return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, string> };
  };

  beforeAll(async () => {
    jwksServer = createServer((_req, res) => res.writeHead(served.status, { 'content-type': 'application/json' }).end(served.body));
    await new Promise<void>((done) => jwksServer.listen(0, '127.0.0.1', done));
    jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
    issuer = `${t.url}/realms/${REALM}`;
    tokenEndpoint = `${issuer}/protocol/openid-connect/token`;
    rsa = await keyPair('RS256', 'rsa-1');
    ec = await keyPair('ES256', 'ec-1');
    served = { status: 200, body: JSON.stringify({ keys: [await publicJwk(rsa), await publicJwk(ec)] }) };
    // Introspects its own token: Keycloak 26.6.2+ needs the audience check off for that.
    await createClient({ clientId: 'by-jwks-url', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': jwksUrl, 'allow.token.introspection.without.audience.check': 'true' } });
    await createClient({ clientId: 'by-secret-jwt', clientAuthenticatorType: 'client-secret-jwt', secret: 'a-shared-secret-long-enough-for-hs512-0123456789abcdef0123456789' });
    await createClient({ clientId: 'by-secret', secret: 'plain-secret-3' });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((done) => jwksServer?.close(done));
  });

  it('discovery lists the five methods and the assertion algorithms', async () => {
    const config = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, string[]>;
    expect(config.token_endpoint_auth_methods_supported).toEqual(['private_key_jwt', 'client_secret_basic', 'client_secret_post', 'tls_client_auth', 'client_secret_jwt']);
    expect(config.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256', 'PS256', 'ES256', 'EdDSA', 'HS256', 'HS512']));
    expect(config.token_endpoint_auth_signing_alg_values_supported).not.toContain('none');
    expect(config.introspection_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(config.revocation_endpoint_auth_methods_supported).toContain('client_secret_jwt');
  });

  it('openid-client authenticates with private_key_jwt, RS256 and ES256, keys from a JWKS URL', async () => {
    for (const key of [rsa, ec]) {
      const config = await oidc.discovery(new URL(issuer), 'by-jwks-url', undefined, oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }), insecure);
      const tokens = await oidc.clientCredentialsGrant(config);
      expect(tokens.access_token).toBeTruthy();
      expect(tokens.token_type).toBe('bearer');
      // The same client authentication at introspection.
      const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
      expect(introspected).toMatchObject({ active: true, azp: 'by-jwks-url' });
    }
  });

  it('a key the client adds to its JWKS is fetched again (rotation); one it removes stops working', async () => {
    const clock = movableDate();
    try {
      const next = await keyPair('RS256', 'rsa-2');
      served = { status: 200, body: JSON.stringify({ keys: [await publicJwk(next)] }) };
      clock.pass(11_000); // past the least time between two fetches of one URL
      const config = await oidc.discovery(new URL(issuer), 'by-jwks-url', undefined, oidc.PrivateKeyJwt({ key: next.privateKey, kid: next.kid }), insecure);
      expect((await oidc.clientCredentialsGrant(config)).access_token).toBeTruthy();
      // rsa-1 is gone from the JWKS now; the cache was refreshed with it.
      const old = await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer }, rsa.kid));
      expect(old.status).toBe(400);
      expect(old.body.error).toBe('invalid_client');
    } finally {
      served = { status: 200, body: JSON.stringify({ keys: [await publicJwk(rsa), await publicJwk(ec)] }) };
      clock.pass(11_000);
      await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer }, 'unknown-kid-refetches'));
      clock.restore();
    }
    expect((await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer }, rsa.kid))).status).toBe(200);
  });

  it('openid-client authenticates with client_secret_jwt; that client\'s plain secret is refused', async () => {
    const secret = 'a-shared-secret-long-enough-for-hs512-0123456789abcdef0123456789';
    const config = await oidc.discovery(new URL(issuer), 'by-secret-jwt', undefined, oidc.ClientSecretJwt(secret), insecure);
    expect((await oidc.clientCredentialsGrant(config)).access_token).toBeTruthy();
    for (const alg of ['HS384', 'HS512']) {
      expect((await postAssertion(await assertion(new TextEncoder().encode(secret), alg, { iss: 'by-secret-jwt', sub: 'by-secret-jwt', aud: tokenEndpoint }))).status).toBe(200);
    }
    const plain = await fetch(tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'by-secret-jwt', client_secret: secret }),
    });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { error_description: string }).error_description).toBe('Parameter client_assertion_type is missing');
  });

  it('refuses a replayed assertion, a wrong audience, an expired one, another client\'s key, alg none and HS256 with the public key', async () => {
    const claims = { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer };
    const once = await assertion(rsa.privateKey, 'RS256', claims, rsa.kid);
    expect((await postAssertion(once)).status).toBe(200);
    const replayed = await postAssertion(once);
    expect(replayed).toMatchObject({ status: 400, body: { error: 'invalid_client', error_description: 'Client authentication with signed JWT failed: token reuse detected' } });

    const wrongAudience = await postAssertion(await assertion(rsa.privateKey, 'RS256', { ...claims, aud: 'https://elsewhere.example/realms/pkjwt' }, rsa.kid));
    expect(wrongAudience.body.error_description).toContain('audience');

    const expired = await postAssertion(await assertion(rsa.privateKey, 'RS256', { ...claims, exp: Math.floor(Date.now() / 1000) - 60 }, rsa.kid));
    expect(expired.body.error_description).toContain('expired');

    // Signed with another client's key: by-jwks-url's key, naming by-secret-jwt (whose assertions are MACs) and a
    // client-jwt client whose own key is a certificate of another key pair.
    const { privateKey: certKey, publicKey: certPublic } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await createClient({ clientId: 'by-certificate', clientAuthenticatorType: 'client-jwt', attributes: { 'jwt.credential.certificate': selfSignedCertificate(certKey, certPublic, 'by-certificate').toString('base64') } });
    const foreign = await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-certificate', sub: 'by-certificate', aud: issuer }, rsa.kid));
    expect(foreign).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    const own = await postAssertion(await assertion(certKey as unknown as CryptoKey, 'RS256', { iss: 'by-certificate', sub: 'by-certificate', aud: issuer }));
    expect(own.status).toBe(200);

    const unsecured = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify({ ...claims, jti: 'n1', exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url')}.`;
    const none = await postAssertion(unsecured);
    expect(none).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    expect(none.body.error_description).toContain('"none"');

    // HS256 keyed with the client's public key (PEM, as a confused verifier would read it).
    const pem = new TextEncoder().encode(await exportSPKI(rsa.publicKey));
    const confused = await postAssertion(await assertion(pem, 'HS256', claims, rsa.kid));
    expect(confused).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
    expect(confused.body.error_description).toContain('"HS256" is not accepted');

    // iss other than sub.
    const mismatch = await postAssertion(await assertion(rsa.privateKey, 'RS256', { ...claims, iss: 'someone-else' }, rsa.kid));
    expect(mismatch.body.error_description).toContain('issuer');
    // A client_secret client is not let in by an assertion, nor a client_secret_jwt client by a signature.
    expect((await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-secret', sub: 'by-secret', aud: issuer }, rsa.kid))).status).toBe(401);
    expect((await postAssertion(await assertion(rsa.privateKey, 'RS256', { iss: 'by-secret-jwt', sub: 'by-secret-jwt', aud: issuer }, rsa.kid))).status).toBe(400);
  });

  it('a key generated by the server (the Keys tab\'s generate) authenticates; its private key is answered once', async () => {
    const id = await createClient({ clientId: 'generated', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': jwksUrl } });
    const generated = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential/generate`, admin);
    expect(generated.status).toBe(200);
    expect(generated.body).toMatchObject({ privateKey: expect.any(String), certificate: expect.any(String), kid: expect.any(String) });
    const shown = await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential`, admin);
    expect(shown.body).toEqual({ certificate: generated.body.certificate, kid: generated.body.kid });
    const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, admin)).body;
    expect(rep.attributes['use.jwks.url']).toBe('false');
    expect(JSON.stringify(rep)).not.toContain(generated.body.privateKey.slice(40, 80));
    const key = createPrivateKey({ key: Buffer.from(generated.body.privateKey, 'base64'), format: 'der', type: 'pkcs8' });
    const response = await postAssertion(await assertion(key as unknown as CryptoKey, 'RS256', { iss: 'generated', sub: 'generated', aud: issuer }));
    expect(response.status).toBe(200);
    // An operation the Keys tab does not have: a 400 naming it.
    const unknown = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential/regenerate`, admin);
    expect(unknown.status).toBe(400);
    expect(unknown.body.errorMessage).toContain('regenerate');
  });

  it('the client\'s token.endpoint.auth.signing.alg is the only algorithm it may use', async () => {
    const id = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=by-jwks-url`, admin)).body[0].id as string;
    const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, admin)).body;
    expect(rep.clientAuthenticatorType).toBe('client-jwt');
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, { ...rep, attributes: { ...rep.attributes, 'token.endpoint.auth.signing.alg': 'ES256' } })).status).toBe(204);
    const claims = { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer };
    expect((await postAssertion(await assertion(rsa.privateKey, 'RS256', claims, rsa.kid))).status).toBe(400);
    expect((await postAssertion(await assertion(ec.privateKey, 'ES256', claims, ec.kid))).status).toBe(200);
    const unknown = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, { ...rep, attributes: { ...rep.attributes, 'token.endpoint.auth.signing.alg': 'XS999' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errorMessage).toContain('token.endpoint.auth.signing.alg');
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, rep)).status).toBe(204);
  });

  it('refuses, as jose did before the node:crypto check: a critical extension, a future nbf, time claims that are not numbers, a changed payload, a DER ECDSA signature', async () => {
    // Signed here by hand (jose refuses to sign a `crit` it does not know), with the client's real keys.
    const signed = (alg: 'RS256' | 'ES256', header: Record<string, unknown>, claims: Record<string, unknown>, encoding: 'ieee-p1363' | 'der' = 'ieee-p1363') => {
      const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const input = `${b64({ alg, ...header })}.${b64(claims)}`;
      const key = KeyObject.from(alg === 'RS256' ? rsa.privateKey : ec.privateKey);
      return `${input}.${nodeSign('sha256', Buffer.from(input), alg === 'ES256' ? { key, dsaEncoding: encoding } : key).toString('base64url')}`;
    };
    const now = Math.floor(Date.now() / 1000);
    const claims = () => ({ iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer, jti: crypto.randomUUID(), iat: now, exp: now + 60 });
    // The hand-made assertion itself is good: what follows fails for its one change only.
    expect((await postAssertion(signed('RS256', { kid: rsa.kid }, claims()))).status).toBe(200);
    expect((await postAssertion(signed('ES256', { kid: ec.kid }, claims()))).status).toBe(200);
    const cases: [string, string][] = [
      [signed('RS256', { kid: rsa.kid, crit: ['exp'], exp: 1 }, claims()), 'not a valid JWT'],
      [signed('RS256', { kid: rsa.kid }, { ...claims(), nbf: now + 600 }), 'nbf'],
      [signed('RS256', { kid: rsa.kid }, { ...claims(), iat: String(now) }), 'iat'],
      [signed('RS256', { kid: rsa.kid }, { ...claims(), exp: String(now + 60) }), 'exp'],
      [signed('ES256', { kid: ec.kid }, claims(), 'der'), 'signature'],
    ];
    const good = signed('RS256', { kid: rsa.kid }, claims());
    const [h, , sig] = good.split('.');
    cases.push([`${h}.${Buffer.from(JSON.stringify({ ...claims(), exp: now + 3600 })).toString('base64url')}.${sig}`, 'signature']);
    cases.push([`${good}.extra`, 'not a JWS']);
    for (const [jwt, reason] of cases) {
      // The client named too: an assertion that does not parse names none.
      const answer = await postAssertion(jwt, 'token', { grant_type: 'client_credentials', client_id: 'by-jwks-url' });
      expect(answer, reason).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
      expect(answer.body.error_description).toContain(reason);
    }
  });

  it("Keycloak's time and audience rules: used within token.endpoint.auth.signing.max.exp (60 s) of its iat, an iat not ahead, one audience", async () => {
    const claims = { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer };
    const now = Math.floor(Date.now() / 1000);
    // Signed here with exactly these claims (the helper above sets iat to now).
    const answer = async (extra: Record<string, unknown>) =>
      postAssertion(await new SignJWT({ ...claims, jti: crypto.randomUUID(), iat: now, exp: now + 60, ...extra }).setProtectedHeader({ alg: 'RS256', kid: rsa.kid }).sign(rsa.privateKey));
    // Each refusal is 400 invalid_client naming its check; the same assertion within the rules passes.
    for (const [extra, reason] of [
      [{ iat: now - 300, exp: now + 60 }, 'too far in the past'],
      [{ iat: now + 120, exp: now + 180 }, 'issued in the future'],
      [{ iat: undefined, exp: now + 3600 }, 'iat claim not present'],
      [{ aud: [issuer, 'https://elsewhere.example/'] }, 'multiple audiences'],
      [{ aud: `${issuer}/protocol/openid-connect/revoke` }, 'audience'],
    ] as const) {
      const refused = await answer(extra);
      expect(refused, reason).toMatchObject({ status: 400, body: { error: 'invalid_client' } });
      expect(refused.body.error_description).toContain(reason);
    }
    for (const extra of [{ iat: now - 30 }, { iat: now + 10 }, { iat: undefined, exp: now + 50 }, { aud: [issuer] }, { aud: `${issuer}/protocol/openid-connect/token/introspect` }]) {
      expect((await answer(extra)).status, JSON.stringify(extra)).toBe(200);
    }
    // A client's own bound: 600 s; a value that is not a whole number of seconds is a 400 naming it.
    const id = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=by-jwks-url`, admin)).body[0].id as string;
    const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, admin)).body;
    for (const bad of ['0', '-5', '1.5', 'sixty']) {
      const refused = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, { ...rep, attributes: { ...rep.attributes, 'token.endpoint.auth.signing.max.exp': bad } });
      expect(refused.status, bad).toBe(400);
      expect(refused.body.errorMessage).toContain('token.endpoint.auth.signing.max.exp');
    }
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, { ...rep, attributes: { ...rep.attributes, 'token.endpoint.auth.signing.max.exp': '600' } })).status).toBe(204);
    try {
      expect((await answer({ iat: now - 300, exp: now + 60 })).status).toBe(200);
      expect((await answer({ iat: now - 900, exp: now + 60 })).status).toBe(400);
    } finally {
      expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, rep)).status).toBe(204);
    }
  });

  it('revocation and logout take the same authentication', async () => {
    const claims = { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer };
    const tokens = await postAssertion(await assertion(rsa.privateKey, 'RS256', claims, rsa.kid));
    expect(tokens.status).toBe(200);
    const revoked = await postAssertion(await assertion(rsa.privateKey, 'RS256', claims, rsa.kid), 'revoke', { token: tokens.body.access_token });
    expect(revoked.status).toBe(200);
    const refusedRevoke = await postAssertion(await assertion(rsa.privateKey, 'RS256', { ...claims, aud: 'nope' }, rsa.kid), 'revoke', { token: tokens.body.access_token });
    expect(refusedRevoke.status).toBe(400);
    const refusedLogout = await postAssertion('not-a-jwt', 'logout', { refresh_token: 'x' });
    expect(refusedLogout.status).toBe(401);
  });

  it('the JWKS URL: not JSON, an error status, too large, too slow — refused authentication, never a 5xx', async () => {
    const claims = { iss: 'by-jwks-url', sub: 'by-jwks-url', aud: issuer };
    const clock = movableDate();
    try {
      for (const answer of [{ status: 200, body: '<html>not json</html>' }, { status: 500, body: '{}' }, { status: 200, body: JSON.stringify({ keys: [], pad: 'x'.repeat(300 * 1024) }) }, { status: 200, body: '{"no":"keys"}' }]) {
        served = answer;
        clock.pass(6 * 60_000); // past the cache's age: fetched again
        const response = await postAssertion(await assertion(rsa.privateKey, 'RS256', claims, rsa.kid));
        expect(response.status).toBe(400);
        expect(response.body.error).toBe('invalid_client');
      }
    } finally {
      served = { status: 200, body: JSON.stringify({ keys: [await publicJwk(rsa), await publicJwk(ec)] }) };
      clock.restore();
    }
    // A slow JWKS URL, on its own ClientKeys with a short timeout.
    const slow = createServer(() => undefined);
    await new Promise<void>((done) => slow.listen(0, '127.0.0.1', done));
    try {
      const keys = new ClientKeys({ guard: new TargetGuard({ mode: 'development' }), timeoutMs: 200 });
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;
      await expect(keys.keysFor({ 'use.jwks.url': 'true', 'jwks.url': url }, 'k')).rejects.toThrow(/did not answer within 200 ms/);
    } finally {
      slow.closeAllConnections();
      await new Promise((done) => slow.close(done));
    }
  });

  it('production mode refuses a JWKS URL to an internal address (admin 400, and at authentication)', async () => {
    const keys = new ClientKeys({ guard: new TargetGuard({ mode: 'production' }) });
    for (const url of ['http://127.0.0.1:8080/jwks', 'http://localhost/jwks', 'http://169.254.169.254/latest/meta-data', 'file:///etc/passwd']) {
      expect(clientKeyAttributeProblems({ 'use.jwks.url': 'true', 'jwks.url': url }, keys)).toHaveLength(1);
      await expect(keys.keysFor({ 'use.jwks.url': 'true', 'jwks.url': url }, undefined)).rejects.toThrow(/jwks\.url/);
    }
    // Development mode (this server) allows loopback but never link-local: the admin API says so.
    const response = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'metadata', clientAuthenticatorType: 'client-jwt', attributes: { 'use.jwks.url': 'true', 'jwks.url': 'http://169.254.169.254/jwks' } });
    expect(response.status).toBe(400);
    expect(response.body.errorMessage).toContain('jwks.url');
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=metadata`, admin)).body).toEqual([]);
  });

  it('a key under 2048 bits, or a certificate that does not parse, is a 400 and nothing is stored', async () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const weakCertificate = selfSignedCertificate(weak.privateKey, weak.publicKey, 'weak').toString('base64');
    const weakSpki = weak.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    for (const [clientId, attributes] of [
      ['weak-cert', { 'jwt.credential.certificate': weakCertificate }],
      ['weak-key', { 'jwt.credential.public.key': weakSpki }],
      ['bad-cert', { 'jwt.credential.certificate': 'bm90IGEgY2VydGlmaWNhdGU=' }],
      ['bad-jwks', { 'use.jwks.string': 'true', 'jwks.string': '{"keys":"no"}' }],
    ] as const) {
      const response = await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId, clientAuthenticatorType: 'client-jwt', attributes });
      expect(response.status).toBe(400);
      expect(response.body.errorMessage).toMatch(/jwt\.credential|jwks\.string/);
      expect((await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${clientId}`, admin)).body).toEqual([]);
    }
  });
});
