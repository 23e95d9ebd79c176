import { execFileSync } from 'node:child_process';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { pkcs12Keystore } from '../src/keys/keystore.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 39: Keycloak's `java-keystore` key provider. A PKCS12 file on the server (path, store password, alias, key
 * password) gives the realm a key with the keystore's certificate, read when the provider is saved or a realm file
 * brings it; JKS (and any other format) is refused naming it; every refusal names the file or the entry, never a
 * password; nothing is stored then.
 */
const KEYS = 'org.keycloak.keys.KeyProvider';
const REALM = 'ks';
const PASSWORD = 'Store-pass-1';

describe('java-keystore key provider', () => {
  let t: TestServer;
  let admin: string;
  let dir: string;
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificate = selfSignedCertificate(key.privateKey, key.publicKey, 'keystore-cert');
  let storePath: string;

  const add = (config: Record<string, string[]>, realm = REALM) => api(t.url, 'POST', `/admin/realms/${realm}/components`, admin, { name: 'from-keystore', providerId: 'java-keystore', providerType: KEYS, config });
  const config = (over: Record<string, string[]> = {}) => ({ keystore: [storePath], keystorePassword: [PASSWORD], keyAlias: ['realm-key'], keyPassword: [PASSWORD], priority: ['500'], ...over });
  const keyCount = async () => ((await api(t.url, 'GET', `/admin/realms/${REALM}/keys`, admin)).body as { keys: unknown[] }).keys.length;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'realmgate-jks-'));
    storePath = join(dir, 'realm.p12');
    writeFileSync(storePath, await pkcs12Keystore({ alias: 'realm-key', privateKey: key.privateKey, certificate }, PASSWORD));
    t = await startServer();
    admin = await adminToken(t.url);
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, admin, { clientId: 'svc', secret: 'svc-secret-1', serviceAccountsEnabled: true, standardFlowEnabled: false })).status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the key and certificate of a PKCS12 file: it signs, and the JWKS publishes it with the certificate', async () => {
    const created = await add(config());
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    const meta = (await api(t.url, 'GET', `/admin/realms/${REALM}/keys`, admin)).body as { active: Record<string, string>; keys: Record<string, any>[] };
    const mine = meta.keys.find((k) => k.providerId === id)!;
    expect(mine).toMatchObject({ type: 'RSA', algorithm: 'RS256', use: 'SIG', status: 'ACTIVE', providerPriority: 500, certificate: certificate.toString('base64') });
    expect(meta.active.RS256).toBe(mine.kid);
    const jwk = ((await (await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/certs`)).json()) as { keys: Record<string, any>[] }).keys.find((k) => k.kid === mine.kid)!;
    expect(jwk.x5c).toEqual([certificate.toString('base64')]);
    const grant = await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' });
    expect(grant.status).toBe(200);
    const token = (grant.body as Record<string, string>).access_token;
    expect(decodeProtectedHeader(token).kid).toBe(mine.kid);
    await jwtVerify(token, new X509Certificate(certificate).publicKey);
    // The component shows the path and alias, the passwords masked; no password anywhere in answers or the log.
    const component = (await api(t.url, 'GET', `/admin/realms/${REALM}/components/${id}`, admin)).body as { config: Record<string, string[]> };
    expect(component.config).toMatchObject({ keystore: [storePath], keyAlias: ['realm-key'], keystorePassword: ['**********'], keyPassword: ['**********'], priority: ['500'] });
    // A change of priority keeps the key without the passwords; a change of alias needs them again.
    expect((await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${id}`, admin, { ...component, config: { ...component.config, priority: ['600'] } })).status).toBe(204);
    expect(((await api(t.url, 'GET', `/admin/realms/${REALM}/keys`, admin)).body as { keys: Record<string, any>[] }).keys.find((k) => k.providerId === id)).toMatchObject({ kid: mine.kid, providerPriority: 600 });
    const again = await api(t.url, 'PUT', `/admin/realms/${REALM}/components/${id}`, admin, { ...component, config: { ...component.config, keyAlias: ['other'] } });
    expect(again.status).toBe(400);
    expect(again.body.errorMessage).toContain('keystorePassword');
    expect(JSON.stringify(t.logs)).not.toContain(PASSWORD);
    // serverinfo offers it to the console's Add provider form.
    const info = (await api(t.url, 'GET', '/admin/serverinfo', admin)).body as { componentTypes: Record<string, { id: string; properties: { name: string }[] }[]> };
    expect(info.componentTypes[KEYS].find((c) => c.id === 'java-keystore')!.properties.map((p) => p.name)).toEqual(expect.arrayContaining(['keystore', 'keystorePassword', 'keyAlias', 'keyPassword', 'keystoreType']));
  });

  it('refuses, naming the file or the entry, nothing stored: missing file, JKS, other type, wrong password or alias, a directory, a large file, a small key', async () => {
    const jks = join(dir, 'store.jks');
    writeFileSync(jks, Buffer.concat([Buffer.from('feedfeed00000002', 'hex'), Buffer.alloc(100)]));
    const large = join(dir, 'large.p12');
    writeFileSync(large, Buffer.alloc(70 * 1024));
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const smallPath = join(dir, 'small.p12');
    writeFileSync(smallPath, await pkcs12Keystore({ alias: 'realm-key', privateKey: small.privateKey, certificate: selfSignedCertificate(small.privateKey, small.publicKey, 'small') }, PASSWORD));
    const missing = join(dir, 'missing.p12');
    const before = await keyCount();
    const cases: [Record<string, string[]>, string][] = [
      [config({ keystore: [missing] }), `component.config.keystore: the file "${missing}" cannot be read (ENOENT)`],
      [config({ keystore: [jks] }), `component.config.keystore: the file "${jks}" is a JKS keystore: only PKCS12 is read`],
      [config({ keystoreType: ['JKS'] }), 'component.config.keystoreType: "JKS" keystores are not read: only PKCS12'],
      [config({ keystorePassword: ['Wrong-pass-1'], keyPassword: ['Wrong-pass-1'] }), `component.config.keystore: the file "${storePath}" does not open: not PKCS12, or the keystorePassword is wrong`],
      [config({ keyPassword: ['Other-pass-1'] }), 'component.config.keyPassword: must be the keystore password'],
      [config({ keyAlias: ['nope'] }), `component.config.keyAlias: the keystore "${storePath}" has no key named "nope"`],
      [config({ keystore: [dir] }), `component.config.keystore: "${dir}" is not a file`],
      [config({ keystore: [large] }), `component.config.keystore: the file "${large}" is larger than 65536 bytes`],
      [config({ keystore: [smallPath] }), 'component.config.keyAlias: an RSA key of 1024 bits: at least 2048 are required'],
      [config({ keystorePassword: [] }), 'component.config.keystorePassword: is required'],
      [config({ algorithm: ['ES256'] }), 'component.config.algorithm: "ES256" is not one of RS256'],
    ];
    for (const [body, message] of cases) {
      const res = await add(body);
      expect(res.status, message).toBe(400);
      expect(res.body.errorMessage).toContain(message);
      expect(JSON.stringify(res.body)).not.toContain('Wrong-pass-1');
    }
    expect(await keyCount()).toBe(before);
  });

  it('reads an EC P-256 key from a PKCS12 file made by openssl (AES-256 and PBKDF2, its defaults): ES256, the JWKS and tokens signed with it', async () => {
    // openssl, as an operator makes such a file; node-forge leaves an EC key and certificate as ASN.1 for node:crypto.
    const ecKey = join(dir, 'ec-key.pem');
    const ecCert = join(dir, 'ec-cert.pem');
    const ecStore = join(dir, 'ec.p12');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-keyout', ecKey, '-out', ecCert, '-days', '2', '-nodes', '-subj', '/CN=ec-keystore'], { stdio: 'ignore' });
    execFileSync('openssl', ['pkcs12', '-export', '-inkey', ecKey, '-in', ecCert, '-name', 'ec-key', '-passout', `pass:${PASSWORD}`, '-out', ecStore], { stdio: 'ignore' });
    const ecCertificate = new X509Certificate(readFileSync(ecCert));
    expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: 'ks-ec', enabled: true, defaultSignatureAlgorithm: 'ES256' })).status).toBe(201);
    expect((await api(t.url, 'POST', '/admin/realms/ks-ec/clients', admin, { clientId: 'svc', secret: 'svc-secret-1', serviceAccountsEnabled: true, standardFlowEnabled: false })).status).toBe(201);
    const created = await add(config({ keystore: [ecStore], keyAlias: ['ec-key'], priority: ['900'] }), 'ks-ec');
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    const meta = (await api(t.url, 'GET', '/admin/realms/ks-ec/keys', admin)).body as { active: Record<string, string>; keys: Record<string, any>[] };
    const mine = meta.keys.find((k) => k.providerId === id)!;
    expect(mine).toMatchObject({ type: 'EC', algorithm: 'ES256', use: 'SIG', status: 'ACTIVE', certificate: ecCertificate.raw.toString('base64') });
    expect(meta.active.ES256).toBe(mine.kid);
    const jwk = ((await (await fetch(`${t.url}/realms/ks-ec/protocol/openid-connect/certs`)).json()) as { keys: Record<string, any>[] }).keys.find((k) => k.kid === mine.kid)!;
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', x5c: [ecCertificate.raw.toString('base64')] });
    const grant = await tokenRequest(t.url, 'ks-ec', { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' });
    expect(grant.status).toBe(200);
    const token = (grant.body as Record<string, string>).access_token;
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES256', kid: mine.kid });
    await jwtVerify(token, ecCertificate.publicKey);
    // The EC key only signs: as an encryption key it is refused, naming the entry.
    const enc = await add(config({ keystore: [ecStore], keyAlias: ['ec-key'], keyUse: ['enc'] }), 'ks-ec');
    expect(enc.status).toBe(400);
    expect(enc.body.errorMessage).toContain('component.config.keyUse: an EC key signs');
  });

  it('a realm file\'s java-keystore provider reads its file; one whose file is missing is named in notImported', async () => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const otherCertificate = selfSignedCertificate(other.privateKey, other.publicKey, 'from-file');
    const otherPath = join(dir, 'other.p12');
    writeFileSync(otherPath, await pkcs12Keystore({ alias: 'k', privateKey: other.privateKey, certificate: otherCertificate }, PASSWORD));
    const missing = join(dir, 'gone.p12');
    const res = await api(t.url, 'POST', '/admin/realms', admin, {
      realm: 'ks-file',
      enabled: true,
      components: {
        [KEYS]: [
          { name: 'ks', providerId: 'java-keystore', config: { keystore: [otherPath], keystorePassword: [PASSWORD], keyAlias: ['k'], keyPassword: [PASSWORD], priority: ['200'] } },
          { name: 'gone', providerId: 'java-keystore', config: { keystore: [missing], keystorePassword: [PASSWORD], keyAlias: ['k'], keyPassword: [PASSWORD] } },
        ],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((res.body as { notImported: string[] }).notImported).toContain(`realm.components["${KEYS}"][1] (java-keystore "gone": config.keystore: the file "${missing}" cannot be read (ENOENT))`);
    const meta = (await api(t.url, 'GET', '/admin/realms/ks-file/keys', admin)).body as { active: Record<string, string>; keys: Record<string, any>[] };
    expect(meta.keys.find((k) => k.kid === meta.active.RS256)!.certificate).toBe(otherCertificate.toString('base64'));
    expect(JSON.stringify(res.body) + JSON.stringify(t.logs)).not.toContain(PASSWORD);
  });
});
