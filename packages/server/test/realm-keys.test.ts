import { X509Certificate, createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, httpDatabases, startServer, type TestServer } from './support/server.js';

describe.each(httpDatabases)('realm keys: public_key, certificates in the JWKS (%s)', (database) => {
  let t: TestServer;
  let admin: string;
  beforeAll(async () => {
    t = await startServer({ database });
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: 'keys', enabled: true })).status).toBe(201);
  });
  afterAll(() => t?.close());

  const jwks = async () => (await (await fetch(`${t.url}/realms/keys/protocol/openid-connect/certs`)).json()) as { keys: Record<string, any>[] };

  it('publishes a self-signed certificate per key as x5c, with x5t and x5t#S256', async () => {
    const [key] = (await jwks()).keys;
    expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
    expect(key.x5c).toHaveLength(1);
    const der = Buffer.from(key.x5c[0], 'base64');
    const certificate = new X509Certificate(der);
    expect(certificate.subject).toBe('CN=keys');
    expect(certificate.issuer).toBe('CN=keys');
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.publicKey.export({ format: 'jwk' })).toMatchObject({ n: key.n, e: key.e });
    expect(new Date(certificate.validFrom).getTime()).toBeLessThanOrEqual(Date.now());
    expect(new Date(certificate.validTo).getTime()).toBeGreaterThan(Date.now() + 9 * 365 * 24 * 3600 * 1000);
    expect(key['x5t#S256']).toBe(createHash('sha256').update(der).digest('base64url'));
    expect(key.x5t).toBe(createHash('sha1').update(der).digest('base64url'));
    // The same certificate every time: it is kept with the key, not made per request.
    expect((await jwks()).keys[0].x5c).toEqual(key.x5c);
  });

  it('GET /realms/{realm} has Keycloak\'s fields, public_key the active key as base64 SPKI', async () => {
    const response = await api(t.url, 'GET', '/realms/keys', null);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body)).toEqual(['realm', 'public_key', 'token-service', 'account-service', 'tokens-not-before']);
    expect(response.body).toMatchObject({
      realm: 'keys',
      'token-service': `${t.url}/realms/keys/protocol/openid-connect`,
      'account-service': `${t.url}/realms/keys/account`,
      'tokens-not-before': 0,
    });
    const [key] = (await jwks()).keys;
    const spki = createPublicKey({ key: key as JsonWebKey, format: 'jwk' }).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(response.body.public_key).toBe(spki);
    const pem = `-----BEGIN PUBLIC KEY-----\n${response.body.public_key}\n-----END PUBLIC KEY-----`;
    expect(createPublicKey(pem).export({ format: 'jwk' })).toMatchObject({ n: key.n });
  });

  it('a key stored before certificates were kept gets one when first listed, and keeps it; the admin keys API shows it', async () => {
    const realm = await t.server.context.storage.realms.byName('keys');
    const kid = await t.server.context.keys.rotate(realm!.id);
    await t.server.context.storage.db.updateTable('realm_key').set({ certificate: null }).where('kid', '=', kid).execute();
    const listed = (await jwks()).keys.find((k) => k.kid === kid)!;
    expect(new X509Certificate(Buffer.from(listed.x5c[0], 'base64')).subject).toBe('CN=keys');
    const row = await t.server.context.storage.db.selectFrom('realm_key').select('certificate').where('kid', '=', kid).executeTakeFirst();
    expect(row?.certificate).toBe(listed.x5c[0]);
    const adminKeys = await api(t.url, 'GET', '/admin/realms/keys/keys', admin);
    expect(adminKeys.body.keys.find((k: { kid: string }) => k.kid === kid).certificate).toBe(listed.x5c[0]);
    expect((await api(t.url, 'GET', '/realms/keys', null)).body.public_key).toBe(adminKeys.body.keys.find((k: { kid: string }) => k.kid === kid).publicKey);
  });
});
