import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TargetGuard } from '../src/http/target-guard.js';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { ClientKeys } from '../src/keys/client-keys.js';
import { adminToken, api, eventually, startServerPair, type TestServer } from './support/server.js';

/**
 * Issue 39's performance work: a client's keys given in its attributes (`jwks.string`, `jwt.credential.certificate`)
 * are parsed once per value and kept (keys/client-keys.ts), not at every assertion. Kept by the value, so a key
 * changed on node A is the only one node B takes within a second (B's client comes from the shared configuration
 * cache), and the old key is refused on both; the kept values are bounded.
 */

const REALM = 'keycache';
const rsaPair = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwksOf = (publicKey: KeyObject, kid: string) => JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }] });

describe('client keys parsed once, on two nodes', () => {
  let a: TestServer;
  let b: TestServer;
  let close: () => Promise<void>;
  let admin: string;

  const assertion = (clientId: string, privateKey: KeyObject, kid: string | undefined, t: TestServer) =>
    new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: 'RS256', ...(kid ? { kid } : {}) })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(`${t.url}/realms/${REALM}`)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
  const grant = async (t: TestServer, clientId: string, privateKey: KeyObject, kid?: string) => {
    const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await assertion(clientId, privateKey, kid, t) }),
    });
    return response.status;
  };
  /** Replaces the client's attributes on node A (the whole representation, as the console's save). */
  const setAttributes = async (clientId: string, attributes: Record<string, string>) => {
    const [rep] = (await api(a.url, 'GET', `/admin/realms/${REALM}/clients?clientId=${clientId}`, admin)).body as Record<string, unknown>[];
    expect((await api(a.url, 'PUT', `/admin/realms/${REALM}/clients/${rep.id as string}`, admin, { ...rep, attributes: { ...(rep.attributes as object), ...attributes } })).status).toBe(204);
  };

  beforeAll(async () => {
    ({ a, b, close } = await startServerPair());
    admin = await adminToken(a.url);
    expect((await api(a.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
  });
  afterAll(async () => {
    await close?.();
  });

  it('a jwks.string changed on A: B takes the new key and refuses the old one within a second; one parse per value', async () => {
    const first = rsaPair();
    const second = rsaPair();
    const client = { clientId: 'by-jwks-string', clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, standardFlowEnabled: false };
    expect((await api(a.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { ...client, attributes: { 'use.jwks.string': 'true', 'jwks.string': jwksOf(first.publicKey, 'k1') } })).status).toBe(201);
    // B's configuration cache listens before it keeps anything: until then the old key might be read again.
    await eventually(() => !b.server.context.storage.cache.bypass);
    for (const t of [a, b]) expect(await grant(t, 'by-jwks-string', first.privateKey, 'k1')).toBe(200);
    // Kept: more grants with the same key parse nothing more.
    const held = b.server.context.clientKeys.parsedCount;
    for (let i = 0; i < 3; i++) expect(await grant(b, 'by-jwks-string', first.privateKey, 'k1')).toBe(200);
    expect(b.server.context.clientKeys.parsedCount).toBe(held);

    await setAttributes('by-jwks-string', { 'jwks.string': jwksOf(second.publicKey, 'k2') });
    await eventually(async () => (await grant(b, 'by-jwks-string', second.privateKey, 'k2')) === 200, 1000);
    for (const t of [a, b]) {
      expect(await grant(t, 'by-jwks-string', first.privateKey, 'k1')).toBe(400);
      // The old key under the new kid, and with no kid: still refused.
      expect(await grant(t, 'by-jwks-string', first.privateKey, 'k2')).toBe(400);
      expect(await grant(t, 'by-jwks-string', first.privateKey)).toBe(400);
      expect(await grant(t, 'by-jwks-string', second.privateKey, 'k2')).toBe(200);
    }
  });

  it('a certificate replaced on A: B refuses the old key within a second', async () => {
    const first = rsaPair();
    const second = rsaPair();
    const certificate = (pair: ReturnType<typeof rsaPair>) => selfSignedCertificate(pair.privateKey, pair.publicKey, 'by-certificate').toString('base64');
    const client = { clientId: 'by-certificate', clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, standardFlowEnabled: false };
    expect((await api(a.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { ...client, attributes: { 'jwt.credential.certificate': certificate(first) } })).status).toBe(201);
    await eventually(async () => (await grant(b, 'by-certificate', first.privateKey)) === 200);
    await setAttributes('by-certificate', { 'jwt.credential.certificate': certificate(second) });
    await eventually(async () => (await grant(b, 'by-certificate', first.privateKey)) === 400, 1000);
    expect(await grant(b, 'by-certificate', second.privateKey)).toBe(200);
    expect(await grant(a, 'by-certificate', first.privateKey)).toBe(400);
  });

  it('keeps at most maxEntries parsed values; a value that does not parse is not kept', async () => {
    const keys = new ClientKeys({ guard: new TargetGuard({ mode: 'development' }), maxEntries: 2 });
    for (let i = 0; i < 4; i++) {
      const pair = rsaPair();
      expect(await keys.keysFor({ 'use.jwks.string': 'true', 'jwks.string': jwksOf(pair.publicKey, `k${i}`) }, `k${i}`)).toHaveLength(1);
      expect(keys.parsedCount).toBe(Math.min(i + 1, 2));
    }
    await expect(keys.keysFor({ 'use.jwks.string': 'true', 'jwks.string': '{not json' }, undefined)).rejects.toThrow('not JSON');
    expect(keys.parsedCount).toBe(2);
  });

  it('an attributes object whose value changed in place gives the new value\'s keys, never the ones it gave before', async () => {
    const keys = new ClientKeys({ guard: new TargetGuard({ mode: 'development' }) });
    const [first, second] = [rsaPair(), rsaPair()];
    const attributes: Record<string, string> = { 'use.jwks.string': 'true', 'jwks.string': jwksOf(first.publicKey, 'k') };
    const before = await keys.keysFor(attributes, 'k');
    expect(before[0].key.equals(first.publicKey)).toBe(true);
    expect(await keys.keysFor(attributes, 'k')).toEqual(before);
    attributes['jwks.string'] = jwksOf(second.publicKey, 'k');
    const after = await keys.keysFor(attributes, 'k');
    expect(after).toHaveLength(1);
    expect(after[0].key.equals(second.publicKey)).toBe(true);
    // Switched to a certificate in place: the certificate's key, not the JWKS's.
    delete attributes['use.jwks.string'];
    attributes['jwt.credential.certificate'] = selfSignedCertificate(first.privateKey, first.publicKey, 'c').toString('base64');
    expect((await keys.keysFor(attributes, 'k'))[0].key.equals(first.publicKey)).toBe(true);
  });
});
