import { generateKeyPairSync } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { adminToken, api, eventually, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 39: realm keys as Keycloak's key-provider components (`org.keycloak.keys.KeyProvider`), of every kind;
 * signing algorithms per realm and per client; the JWKS publishing every enabled public key; rotation.
 */
const REALM = 'kp';
const KEYS = 'org.keycloak.keys.KeyProvider';
const PASSWORD = 'Key-provider-password-1';

describe('realm key providers', () => {
  let t: TestServer;
  let admin: string;
  let jwksSet: ReturnType<typeof createRemoteJWKSet>;
  let issuer: string;

  const addProvider = async (providerId: string, config: Record<string, string[]>, name = providerId) => {
    const response = await api(t.url, 'POST', `/admin/realms/${REALM}/components`, admin, { name, providerId, providerType: KEYS, parentId: undefined, config });
    return { status: response.status, body: response.body, id: response.headers.get('location')?.split('/').pop() };
  };
  const keysMetadata = async () => (await api(t.url, 'GET', `/admin/realms/${REALM}/keys`, admin)).body as { active: Record<string, string>; keys: Record<string, any>[] };
  const jwks = async () => ((await (await fetch(`${issuer}/protocol/openid-connect/certs`)).json()) as { keys: Record<string, any>[] }).keys;
  const clientId = async (name: string) => (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${name}`, admin)).body[0].id as string;
  const setClientAttributes = async (name: string, attributes: Record<string, string>) => {
    const id = await clientId(name);
    const rep = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${id}`, admin)).body;
    return api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${id}`, admin, { ...rep, attributes: { ...rep.attributes, ...attributes } });
  };
  const userTokens = async () => {
    const response = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'app', client_secret: 'app-secret-1', username: 'kim', password: PASSWORD, scope: 'openid' });
    expect(response.status).toBe(200);
    return response.body as { access_token: string; id_token: string };
  };

  beforeAll(async () => {
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'app', secret: 'app-secret-1', directAccessGrantsEnabled: true, serviceAccountsEnabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/users`, admin, { username: 'kim', email: 'kim@example.com', emailVerified: true, firstName: 'Kim', lastName: 'Lo', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] })).status).toBe(201);
    issuer = `${t.url}/realms/${REALM}`;
    jwksSet = createRemoteJWKSet(new URL(`${issuer}/protocol/openid-connect/certs`), { cooldownDuration: 0, cacheMaxAge: 0 });
  });
  afterAll(() => t?.close());

  it('adds every kind of key provider; GET /keys and the JWKS show them as Keycloak does', async () => {
    const added: Record<string, string> = {};
    for (const [providerId, config] of [
      ['ecdsa-generated', { ecdsaEllipticCurveKey: ['P-256'], priority: ['50'] }],
      ['ecdsa-generated', { ecdsaEllipticCurveKey: ['P-384'], priority: ['50'] }],
      ['ecdsa-generated', { ecdsaEllipticCurveKey: ['P-521'], priority: ['50'] }],
      ['eddsa-generated', { eddsaEllipticCurveKey: ['Ed25519'], priority: ['50'] }],
      ['rsa-generated', { algorithm: ['PS256'], keySize: ['2048'], priority: ['50'] }],
      ['rsa-enc-generated', { algorithm: ['RSA-OAEP'], priority: ['50'] }],
      ['hmac-generated', { algorithm: ['HS256'], secretSize: ['64'], priority: ['50'] }],
      ['aes-generated', { secretSize: ['16'], priority: ['50'] }],
    ] as const) {
      const response = await addProvider(providerId, config as unknown as Record<string, string[]>, `${providerId}-${Object.values(config)[0][0]}`);
      expect(response.status, providerId).toBe(201);
      added[`${providerId}-${Object.values(config)[0][0]}`] = response.id!;
    }
    const metadata = await keysMetadata();
    const byProvider = (id: string) => metadata.keys.find((k) => k.providerId === id)!;
    expect(byProvider(added['ecdsa-generated-P-256'])).toMatchObject({ type: 'EC', algorithm: 'ES256', use: 'SIG', status: 'ACTIVE', providerPriority: 50 });
    expect(byProvider(added['ecdsa-generated-P-521'])).toMatchObject({ type: 'EC', algorithm: 'ES512' });
    expect(byProvider(added['eddsa-generated-Ed25519'])).toMatchObject({ type: 'OKP', algorithm: 'EdDSA', use: 'SIG' });
    expect(byProvider(added['rsa-generated-PS256'])).toMatchObject({ type: 'RSA', algorithm: 'PS256', certificate: expect.any(String) });
    expect(byProvider(added['rsa-enc-generated-RSA-OAEP'])).toMatchObject({ type: 'RSA', algorithm: 'RSA-OAEP', use: 'ENC' });
    expect(byProvider(added['hmac-generated-HS256'])).toMatchObject({ type: 'OCT', algorithm: 'HS256' });
    expect(byProvider(added['hmac-generated-HS256'])).not.toHaveProperty('publicKey');
    expect(byProvider(added['aes-generated-16'])).toMatchObject({ type: 'OCT', algorithm: 'AES', use: 'ENC' });
    expect(metadata.active).toMatchObject({ RS256: expect.any(String), ES256: expect.any(String), EdDSA: expect.any(String), PS256: expect.any(String) });

    // The JWKS: every enabled public key with alg, use and kid; secret keys never.
    const published = await jwks();
    for (const k of metadata.keys) {
      const jwk = published.find((p) => p.kid === k.kid);
      if (k.type === 'OCT') expect(jwk).toBeUndefined();
      else expect(jwk, k.algorithm).toMatchObject({ alg: k.algorithm, use: k.use.toLowerCase(), kid: k.kid });
    }
    expect(JSON.stringify(published)).not.toMatch(/"d":|"k":/);

    // The components list them with their config, no key material.
    const components = (await api(t.url, 'GET', `/admin/realms/${REALM}/components?type=${KEYS}`, admin)).body as Record<string, any>[];
    expect(components.find((c) => c.id === added['ecdsa-generated-P-384'])).toMatchObject({ providerId: 'ecdsa-generated', providerType: KEYS, config: { ecdsaEllipticCurveKey: ['P-384'], priority: ['50'], active: ['true'], enabled: ['true'] } });
    expect(JSON.stringify(components)).not.toMatch(/"k":|"d":/);
  });

  it('signs with the realm\'s defaultSignatureAlgorithm and each client\'s algorithms; jose verifies through the JWKS', async () => {
    for (const alg of ['ES256', 'ES384', 'ES512', 'PS256', 'EdDSA']) {
      expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { defaultSignatureAlgorithm: alg })).status).toBe(204);
      const tokens = await userTokens();
      for (const token of [tokens.access_token, tokens.id_token]) {
        expect(decodeProtectedHeader(token).alg).toBe(alg);
        const { payload } = await jwtVerify(token, jwksSet, { issuer, algorithms: [alg] });
        expect(payload.azp).toBe('app');
      }
      // The token works where the server verifies it.
      const userinfo = await fetch(`${issuer}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(userinfo.status, alg).toBe(200);
    }
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}`, admin)).body.defaultSignatureAlgorithm).toBe('EdDSA');
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { defaultSignatureAlgorithm: 'RS256' })).status).toBe(204);

    expect((await setClientAttributes('app', { 'access.token.signed.response.alg': 'ES256', 'id.token.signed.response.alg': 'PS256', 'user.info.response.signature.alg': 'EdDSA' })).status).toBe(204);
    const tokens = await userTokens();
    expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');
    expect(decodeProtectedHeader(tokens.id_token).alg).toBe('PS256');
    await jwtVerify(tokens.id_token, jwksSet, { issuer, audience: 'app' });
    const userinfo = await fetch(`${issuer}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(userinfo.headers.get('content-type')).toContain('application/jwt');
    const signed = await jwtVerify(await userinfo.text(), jwksSet, { issuer, audience: 'app', algorithms: ['EdDSA'] });
    expect(signed.payload.preferred_username).toBe('kim');
    expect((await setClientAttributes('app', { 'access.token.signed.response.alg': '', 'id.token.signed.response.alg': '', 'user.info.response.signature.alg': 'unsigned' })).status).toBe(204);
  });

  it('rotation: a newer key of higher priority signs; the old one verifies until it is disabled', async () => {
    const before = await userTokens();
    const oldKid = decodeProtectedHeader(before.access_token).kid!;
    const rotated = await addProvider('rsa-generated', { priority: ['500'] }, 'rotated');
    expect(rotated.status).toBe(201);
    const after = await userTokens();
    const newKid = decodeProtectedHeader(after.access_token).kid;
    expect(newKid).not.toBe(oldKid);
    expect((await keysMetadata()).active.RS256).toBe(newKid);
    const userinfo = (token: string) => fetch(`${issuer}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    expect((await userinfo(before.access_token)).status).toBe(200);
    await jwtVerify(before.access_token, jwksSet, { issuer });

    // Disabling the old key: its tokens are refused and it leaves the JWKS.
    const old = (await keysMetadata()).keys.find((k) => k.kid === oldKid)!;
    const component = (await api(t.url, 'GET', `/admin/realms/${REALM}/components/${old.providerId}`, admin)).body;
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${old.providerId}`, admin, { ...component, config: { ...component.config, enabled: ['false'] } })).status).toBe(204);
    expect((await keysMetadata()).keys.find((k) => k.kid === oldKid)).toMatchObject({ status: 'DISABLED' });
    expect((await jwks()).map((k) => k.kid)).not.toContain(oldKid);
    expect((await userinfo(before.access_token)).status).toBe(401);
    expect((await userinfo(after.access_token)).status).toBe(200);
    // Deleting the rotated key: the next token comes from the remaining key of highest priority.
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/components/${rotated.id}`, admin)).status).toBe(204);
    expect((await userinfo(after.access_token)).status).toBe(401);
    expect(decodeProtectedHeader((await userTokens()).access_token).kid).not.toBe(newKid);
  });

  it('an imported RSA key (rsa) with its certificate signs and is published with it', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const certificate = selfSignedCertificate(privateKey, publicKey, 'imported').toString('base64');
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const added = await addProvider('rsa', { privateKey: [pem], certificate: [certificate], priority: ['1000'] }, 'imported');
    expect(added.status).toBe(201);
    const token = (await userTokens()).access_token;
    const kid = decodeProtectedHeader(token).kid;
    expect((await jwks()).find((k) => k.kid === kid)).toMatchObject({ x5c: [certificate], n: publicKey.export({ format: 'jwk' }).n });
    const component = (await api(t.url, 'GET', `/admin/realms/${REALM}/components/${added.id}`, admin)).body;
    expect(component.config.privateKey).toEqual(['**********']);
    expect(JSON.stringify(component)).not.toContain(pem.slice(40, 80));
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/components/${added.id}`, admin)).status).toBe(204);
  });

  it('bad input: a key under 2048 bits, a certificate of another key, an unknown curve, algorithm or provider — 400, nothing stored', async () => {
    const count = async () => (await keysMetadata()).keys.length;
    const before = await count();
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const strong = generateKeyPairSync('rsa', { modulusLength: 2048 });
    for (const [providerId, config, entry] of [
      ['rsa-generated', { keySize: ['1024'] }, 'keySize'],
      ['rsa', { privateKey: [weak.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()] }, 'privateKey'],
      ['rsa', { privateKey: [strong.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()], certificate: [selfSignedCertificate(other.privateKey, other.publicKey, 'x').toString('base64')] }, 'certificate'],
      ['ecdsa-generated', { ecdsaEllipticCurveKey: ['P-999'] }, 'ecdsaEllipticCurveKey'],
      ['rsa-generated', { algorithm: ['RS999'] }, 'algorithm'],
      ['hmac-generated', { algorithm: ['none'] }, 'algorithm'],
      ['java-keystore', {}, 'keystore'],
    ] as const) {
      const response = await addProvider(providerId, config as unknown as Record<string, string[]>);
      expect(response.status, `${providerId} ${entry}`).toBe(400);
      expect(response.body.errorMessage).toContain(entry);
    }
    expect(await count()).toBe(before);
    const badRealmAlg = await api(t.url, 'PUT', `/admin/realms/${REALM}`, admin, { defaultSignatureAlgorithm: 'HS256' });
    expect(badRealmAlg.status).toBe(400);
    const badClientAlg = await setClientAttributes('app', { 'access.token.signed.response.alg': 'none' });
    expect(badClientAlg.status).toBe(400);
    expect(badClientAlg.body.errorMessage).toContain('access.token.signed.response.alg');
  });
});

describe('realm keys on two nodes', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>> | undefined;
  afterAll(() => pair?.close());

  it('a key added on node A signs on node B; the old key still verifies there', async () => {
    pair = await startServerPair();
    const { a, b } = pair;
    const admin = await adminToken(a.url);
    expect((await api(a.url, 'POST', '/admin/realms', admin, { realm: 'nodes', enabled: true })).status).toBe(201);
    expect((await api(a.url, 'POST', '/admin/realms/nodes/clients', admin, { clientId: 'svc', secret: 'svc-secret-1', serviceAccountsEnabled: true, attributes: { 'allow.token.introspection.without.audience.check': 'true' } })).status).toBe(201);
    const grant = async (url: string) => (await tokenRequest(url, 'nodes', { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' })).body.access_token as string;
    const old = await grant(b.url);
    const added = await api(a.url, 'POST', '/admin/realms/nodes/components', admin, { name: 'ec', providerId: 'ecdsa-generated', providerType: KEYS, config: { priority: ['10'] } });
    expect(added.status).toBe(201);
    expect((await api(a.url, 'PUT', '/admin/realms/nodes', admin, { defaultSignatureAlgorithm: 'ES256' })).status).toBe(204);
    const signed = await eventually(async () => {
      const token = await grant(b.url);
      return decodeProtectedHeader(token).alg === 'ES256' ? token : null;
    });
    const introspect = async (url: string, token: string) =>
      (await (await fetch(`${url}/realms/nodes/protocol/openid-connect/token/introspect`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, client_id: 'svc', client_secret: 'svc-secret-1' }) })).json()) as { active: boolean };
    expect((await introspect(a.url, signed)).active).toBe(true);
    expect((await introspect(b.url, old)).active).toBe(true);
  });
});
