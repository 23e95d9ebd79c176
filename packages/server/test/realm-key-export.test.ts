import { X509Certificate, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { parseImportedKeyProviders } from '../src/keys/import.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realmExporter } from '../src/services/realm-export.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';

/**
 * Issue 39: a realm's keys of every kind leave in a realm file as Keycloak's key-provider components (its entry
 * names and encodings) and come back as the same providers with the same keys; the admin API's partial export masks
 * the key material, and importing it makes new keys of the same providers. EC keys carry a certificate when their
 * provider asks for one (`ecGenerateCertificate`), as Keycloak's; EdDSA keys never do.
 */
const KEYS = 'org.keycloak.keys.KeyProvider';
type Rep = Record<string, any>;
type Provider = { name: string; providerId: string; config: Record<string, string[]> };

describe('realm keys in realm files', () => {
  let t: TestServer;
  let admin: string;
  const jwks = async (realm: string) => ((await (await fetch(`${t.url}/realms/${realm}/protocol/openid-connect/certs`)).json()) as { keys: Rep[] }).keys;
  const keyMetadata = async (realm: string) => (await api(t.url, 'GET', `/admin/realms/${realm}/keys`, admin)).body as { active: Record<string, string>; keys: Rep[] };
  const fullExport = async (realm: string) => {
    const stored = (await t.server.context.storage.realms.byName(realm))!;
    return (await realmExporter(t.server.context, stored)).document({ clients: true, groupsAndRoles: true, secrets: true });
  };
  const keyProviders = (rep: Rep): Provider[] => rep.components?.[KEYS] ?? [];
  const importRealm = async (rep: Rep) => {
    const res = await api(t.url, 'POST', '/admin/realms', admin, rep);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return ((res.body ?? {}) as { notImported?: string[] }).notImported ?? [];
  };
  // Order-free: by provider and name.
  const byProvider = (list: Provider[]) => [...list].sort((a, b) => `${a.providerId}/${a.name}`.localeCompare(`${b.providerId}/${b.name}`));

  beforeAll(async () => {
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: 'src', enabled: true, defaultSignatureAlgorithm: 'ES384' })).status).toBe(201);
    expect((await api(t.url, 'POST', '/admin/realms/src/clients', admin, { clientId: 'svc', secret: 'svc-secret-1', serviceAccountsEnabled: true, standardFlowEnabled: false })).status).toBe(201);
    for (const [providerId, name, config] of [
      ['ecdsa-generated', 'ec-384', { ecdsaEllipticCurveKey: ['P-384'], ecGenerateCertificate: ['true'], priority: ['200'] }],
      ['ecdsa-generated', 'ec-256', { ecdsaEllipticCurveKey: ['P-256'], priority: ['50'], active: ['false'] }],
      ['eddsa-generated', 'ed', { priority: ['50'] }],
      ['hmac-generated', 'hs256', { algorithm: ['HS256'], secretSize: ['32'], priority: ['50'] }],
      ['aes-generated', 'aes', { secretSize: ['32'], priority: ['50'], enabled: ['false'] }],
      ['rsa-enc-generated', 'enc', { algorithm: ['RSA-OAEP-256'], priority: ['50'] }],
    ] as const) {
      const res = await api(t.url, 'POST', '/admin/realms/src/components', admin, { name, providerId, providerType: KEYS, config });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
  });
  afterAll(() => t?.close());

  it('publishes an EC key with its self-signed certificate when its provider asks for one; never an EdDSA key\'s', async () => {
    const keys = await jwks('src');
    const ec384 = keys.find((k) => k.alg === 'ES384')!;
    const certificate = new X509Certificate(Buffer.from(ec384.x5c[0], 'base64'));
    expect(certificate.subject).toBe('CN=src');
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.publicKey.equals(createPublicKey({ key: ec384 as any, format: 'jwk' }))).toBe(true);
    expect(ec384['x5t#S256']).toBeTypeOf('string');
    expect(keys.find((k) => k.alg === 'ES256')!.x5c).toBeUndefined();
    expect(keys.find((k) => k.alg === 'EdDSA')!.x5c).toBeUndefined();
    // Asked for later: the same key gets its certificate.
    const components = (await api(t.url, 'GET', `/admin/realms/src/components?type=${KEYS}`, admin)).body as Rep[];
    const ec256 = components.find((c) => c.name === 'ec-256')!;
    const kid = keys.find((k) => k.alg === 'ES256')!.kid;
    expect((await api(t.url, 'PUT', `/admin/realms/src/components/${ec256.id}`, admin, { ...ec256, config: { ...ec256.config, ecGenerateCertificate: ['true'] } })).status).toBe(204);
    const again = (await jwks('src')).find((k) => k.alg === 'ES256')!;
    expect(again.kid).toBe(kid);
    expect(new X509Certificate(Buffer.from(again.x5c[0], 'base64')).publicKey.equals(createPublicKey({ key: again as any, format: 'jwk' }))).toBe(true);
    expect((await api(t.url, 'PUT', `/admin/realms/src/components/${ec256.id}`, admin, { ...ec256, config: { ...ec256.config, ecGenerateCertificate: ['maybe'] } })).status).toBe(400);
  });

  it('the partial export leaves every key out, as Keycloak\'s; importing it makes new keys of the same providers', async () => {
    const res = await api(t.url, 'POST', '/admin/realms/src/partial-export', admin);
    expect(res.status).toBe(200);
    const partial = res.body as Rep;
    const exported = keyProviders(partial);
    const full = keyProviders(await fullExport('src'));
    expect(exported.map((c) => c.providerId).sort()).toEqual(full.map((c) => c.providerId).sort());
    const text = JSON.stringify(partial);
    for (const c of full) {
      for (const entry of ['ecdsaPrivateKey', 'eddsaPrivateKey', 'privateKey', 'secret', 'ecdsaPublicKey', 'eddsaPublicKey', 'certificate', 'kid']) {
        if (!c.config[entry]) continue;
        if (entry !== 'kid') expect(text).not.toContain(c.config[entry][0].slice(8, 40));
        expect(exported.find((e) => e.providerId === c.providerId && e.name === c.name)!.config).not.toHaveProperty(entry);
      }
    }
    expect(exported.find((c) => c.name === 'ec-384')!.config).toEqual({ priority: ['200'], enabled: ['true'], active: ['true'], ecdsaEllipticCurveKey: ['P-384'], ecGenerateCertificate: ['true'] });

    const notImported = await importRealm({ ...partial, id: undefined, realm: 'dst-partial' });
    expect(notImported.filter((p) => p.includes(KEYS))).toEqual([]);
    const [source, copy] = [await keyMetadata('src'), await keyMetadata('dst-partial')];
    const kinds = (m: typeof source) => m.keys.map((k) => [k.type, k.algorithm, k.use, k.status, k.providerPriority]).sort();
    expect(kinds(copy)).toEqual(kinds(source));
    const sourceKids = new Set(source.keys.map((k) => k.kid));
    expect(copy.keys.filter((k) => sourceKids.has(k.kid))).toEqual([]);
    // The new EC key asked for a certificate: it has one of its own.
    const ec = (await jwks('dst-partial')).find((k) => k.alg === 'ES384')!;
    expect(new X509Certificate(Buffer.from(ec.x5c[0], 'base64')).publicKey.equals(createPublicKey({ key: ec as any, format: 'jwk' }))).toBe(true);
  });
  it('a full export writes every key in Keycloak\'s entry names; importing it gives the same providers with the same keys', async () => {
    const source = await fullExport('src');
    const exported = keyProviders(source);
    const find = (providerId: string, name?: string) => exported.find((c) => c.providerId === providerId && (name === undefined || c.name === name))!;
    expect(Object.keys(find('ecdsa-generated', 'ec-384').config).sort()).toEqual(['active', 'certificate', 'ecGenerateCertificate', 'ecdsaEllipticCurveKey', 'ecdsaPrivateKey', 'ecdsaPublicKey', 'enabled', 'priority']);
    expect(Object.keys(find('eddsa-generated').config).sort()).toEqual(['active', 'eddsaEllipticCurveKey', 'eddsaPrivateKey', 'eddsaPublicKey', 'enabled', 'priority']);
    expect(Object.keys(find('hmac-generated').config).sort()).toEqual(['active', 'algorithm', 'enabled', 'kid', 'priority', 'secret', 'secretSize']);
    expect(Object.keys(find('aes-generated').config).sort()).toEqual(['active', 'enabled', 'kid', 'priority', 'secret', 'secretSize']);
    expect(find('rsa-enc-generated').config).toMatchObject({ keyUse: ['ENC'], algorithm: ['RSA-OAEP-256'], privateKey: [expect.stringMatching(/^MII/)], certificate: [expect.any(String)] });
    expect(find('aes-generated').config.enabled).toEqual(['false']);
    expect(find('ecdsa-generated', 'ec-256').config.active).toEqual(['false']);

    // Restored as `kc.sh export` and `--import-realm` restore a realm: the realm deleted, the file imported again (a key
    // belongs to one realm here, so the copy cannot sit beside its source).
    const [published, before] = [await jwks('src'), await keyMetadata('src')];
    expect((await api(t.url, 'DELETE', '/admin/realms/src', admin)).status).toBe(204);
    const notImported = await importRealm(source);
    expect(notImported.filter((p) => p.includes(KEYS))).toEqual([]);
    // The same published keys, kid for kid, with the same certificates.
    const strip = (keys: Rep[]) => keys.map((k) => JSON.stringify(k)).sort();
    expect(strip(await jwks('src'))).toEqual(strip(published));
    const after = await keyMetadata('src');
    const shape = (m: typeof before) => m.keys.map((k) => [k.kid, k.type, k.algorithm, k.use, k.status, k.providerPriority, k.certificate ?? null]).sort();
    expect(shape(after)).toEqual(shape(before));
    expect(after.active).toEqual(before.active);
    // Secrets and private keys too: exporting the copy gives the same components.
    expect(byProvider(keyProviders(await fullExport('src')))).toEqual(byProvider(exported));
    // The copy signs with the file's ES384 key: its tokens verify with the source's published keys.
    const grant = await tokenRequest(t.url, 'src', { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' });
    expect(grant.status, JSON.stringify(grant.body)).toBe(200);
    const token = (grant.body as Rep).access_token as string;
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES384', kid: before.active.ES384 });
    await jwtVerify(token, createLocalJWKSet({ keys: published as any }));
    // Nothing of the key material in the log.
    const logs = JSON.stringify(t.logs);
    for (const c of exported) for (const entry of ['ecdsaPrivateKey', 'eddsaPrivateKey', 'privateKey', 'secret']) if (c.config[entry]) expect(logs).not.toContain(c.config[entry][0].slice(8, 40));
  });


  it('keeps a key pair\'s kid the file gives (this server\'s export of a key made before kids were derived); refuses a malformed one', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const config = { ecdsaPrivateKey: [ec.privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64')], ecdsaPublicKey: [ec.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')] };
    const path = 'realm.components[0]';
    const { keys, notImported } = parseImportedKeyProviders([
      { name: 'a', providerId: 'ecdsa-generated', path, config: { ...config, kid: ['0b1e-legacy-kid'] } },
      { name: 'b', providerId: 'ecdsa-generated', path: 'realm.components[1]', config: { ...config, kid: ['no spaces'] } },
    ]);
    expect(keys.map((k) => [k.material?.kid, k.material?.publicJwk?.kid, k.material?.privateJwk.kid])).toEqual([['0b1e-legacy-kid', '0b1e-legacy-kid', '0b1e-legacy-kid']]);
    expect(notImported).toEqual(['realm.components[1] (ecdsa-generated "b": kid is not 1 to 200 letters, digits or ._~-)']);
  });
});
