import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { SignJWT, exportJWK } from 'jose';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { api, errorText, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 39, point 4: a client's Keys tab as the console and the official admin client use it. Generate new keys
 * downloads a PKCS#12 keystore whose key then signs the client's private_key_jwt assertions; Import key takes a
 * certificate PEM, a public key PEM, a JWKS or a PKCS#12 keystore (multipart, as the console sends it), each then
 * the client's key. Bad uploads are 400s naming the part, nothing written; a view-clients administrator changes
 * nothing (403).
 */

const REALM = 'keys-tab';
const PASSWORD = 'Keys-tab-viewer-1';

describe("a client's Keys tab: generate-and-download, upload, upload-certificate", () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let issuer: string;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    issuer = `${t.url}/realms/${REALM}`;
  });
  afterAll(() => t?.close());

  const client = async (clientId: string) => (await kc.clients.create({ clientId, clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, standardFlowEnabled: false })).id;
  const attributes = async (id: string) => (await kc.clients.findOne({ id }))!.attributes!;

  /** A client_credentials grant authenticated by an assertion signed with `key`. */
  const signIn = async (clientId: string, key: KeyObject, alg = 'RS256') => {
    const assertion = await new SignJWT({ jti: crypto.randomUUID() }).setProtectedHeader({ alg }).setIssuer(clientId).setSubject(clientId).setAudience(issuer).setIssuedAt().setExpirationTime('1m').sign(key);
    return tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion });
  };

  const upload = (id: string, fields: Record<string, string>, file: Buffer | string, operation: 'upload' | 'upload-certificate' = 'upload-certificate') => {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    form.append('file', new Blob([typeof file === 'string' ? file : new Uint8Array(file)]), 'key-file');
    return operation === 'upload' ? kc.clients.uploadKey({ id, attr: 'jwt.credential' }, form) : kc.clients.uploadCertificate({ id, attr: 'jwt.credential' }, form);
  };

  /** The private key and certificate a PKCS#12 file holds, opened with `password` (as keytool or openssl would). */
  function openKeystore(bytes: Buffer, password: string) {
    const p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(bytes.toString('binary'))), password);
    const keyBag = p12.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag })[forge.pki.oids.pkcs8ShroudedKeyBag]![0];
    const certBags = p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag]!;
    return { keyBag, certBags, key: createPrivateKey(forge.pki.privateKeyToPem(keyBag.key!)) };
  }

  it('Generate new keys downloads a PKCS#12 keystore (alias, password, the realm certificate beside it) whose key authenticates the client', async () => {
    const id = await client('generated-p12');
    const bytes = Buffer.from(await kc.clients.generateAndDownloadKey({ id, attr: 'jwt.credential' }, { format: 'PKCS12', keyAlias: 'my-key', keyPassword: 'store-secret', storePassword: 'store-secret' }));
    const { keyBag, certBags, key } = openKeystore(bytes, 'store-secret');
    expect(keyBag.attributes.friendlyName).toEqual(['my-key']);
    expect(certBags).toHaveLength(2);
    const stored = await attributes(id);
    expect(stored['use.jwks.url']).toBe('false');
    expect(Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(certBags[0].cert!)).getBytes(), 'binary').toString('base64')).toBe(stored['jwt.credential.certificate']);
    expect((await signIn('generated-p12', key)).status).toBe(200);
    // The private key is in the download only: not on the client.
    expect(JSON.stringify(await kc.clients.findOne({ id }))).not.toContain('PRIVATE');
    expect(() => openKeystore(bytes, 'wrong')).toThrow();
  });

  it('generate-and-download refuses what it cannot write, naming the field; nothing changes', async () => {
    const id = await client('generate-refused');
    for (const [config, field] of [
      [{ format: 'JKS', storePassword: 'x' }, 'format'],
      [{ format: 'PKCS12' }, 'storePassword'],
      [{ format: 'PKCS12', storePassword: 'a', keyPassword: 'b' }, 'keyPassword'],
    ] as const) {
      const answer = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential/generate-and-download`, (await kc.getAccessToken())!, config);
      expect(answer.status, JSON.stringify(config)).toBe(400);
      expect(errorText(answer.body), JSON.stringify(config)).toContain(field);
    }
    expect(await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).toEqual({});
  });

  it('Import key takes a certificate PEM, a public key PEM, a JWKS and a PKCS#12 keystore; each becomes the key that authenticates', async () => {
    const id = await client('imported');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const der = selfSignedCertificate(rsa.privateKey, rsa.publicKey, 'imported');
    const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`;
    await upload(id, { keystoreFormat: 'Certificate PEM' }, pem);
    expect((await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate).toBe(der.toString('base64'));
    expect((await signIn('imported', rsa.privateKey)).status).toBe(200);

    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await upload(id, { keystoreFormat: 'Public Key PEM' }, ec.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const info = await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' });
    expect(info.certificate).toBeUndefined();
    expect((await signIn('imported', ec.privateKey, 'ES256')).status).toBe(200);
    // The certificate uploaded before no longer authenticates.
    expect((await signIn('imported', rsa.privateKey)).status).toBe(400);

    const ed = generateKeyPairSync('ed25519');
    await upload(id, { keystoreFormat: 'JSON Web Key Set' }, JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed-1', use: 'sig' }] }));
    expect((await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).kid).toBe('ed-1');
    expect((await signIn('imported', ed.privateKey, 'EdDSA')).status).toBe(200);

    // A PKCS#12 file made elsewhere (node-forge, as openssl would): its certificate, found by alias.
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const otherCert = selfSignedCertificate(other.privateKey, other.publicKey, 'elsewhere');
    const p12 = forge.pkcs12.toPkcs12Asn1(
      forge.pki.privateKeyFromPem(other.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
      [forge.pki.certificateFromAsn1(forge.asn1.fromDer(forge.util.createBuffer(otherCert.toString('binary'))))],
      'p12-pass',
      { friendlyName: 'client-key', algorithm: '3des' },
    );
    await upload(id, { keystoreFormat: 'PKCS12', keyAlias: 'client-key', storePassword: 'p12-pass' }, Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'), 'upload');
    expect((await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate).toBe(otherCert.toString('base64'));
    expect((await signIn('imported', other.privateKey)).status).toBe(200);
    expect((await signIn('imported', ed.privateKey, 'EdDSA')).status).toBe(400);
  });

  it('a bad upload is a 400 naming the part, and the key stays as it was', async () => {
    const id = await client('upload-refused');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const good = selfSignedCertificate(rsa.privateKey, rsa.publicKey, 'upload-refused').toString('base64');
    await upload(id, { keystoreFormat: 'Certificate PEM' }, good);
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const p12 = forge.pkcs12.toPkcs12Asn1(
      forge.pki.privateKeyFromPem(rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
      [forge.pki.certificateFromAsn1(forge.asn1.fromDer(forge.util.createBuffer(Buffer.from(good, 'base64').toString('binary'))))],
      'right',
      { algorithm: '3des' },
    );
    for (const [fields, file, pattern] of [
      [{ keystoreFormat: 'Certificate PEM' }, 'not a certificate', /file: the certificate does not parse/],
      [{ keystoreFormat: 'Public Key PEM' }, weak.publicKey.export({ type: 'spki', format: 'pem' }).toString(), /file: .*2048/],
      [{ keystoreFormat: 'JSON Web Key Set' }, '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}', /file: the JWKS holds no signing key/],
      [{ keystoreFormat: 'JSON Web Key Set' }, '{not json', /file:/],
      [{ keystoreFormat: 'PKCS12', storePassword: 'wrong' }, Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'), /file: the keystore does not open/],
      [{ keystoreFormat: 'JKS', storePassword: 'x' }, 'bytes', /keystoreFormat: "JKS" is not read here/],
      [{}, good, /keystoreFormat/],
      [{ keystoreFormat: 'Certificate PEM' }, Buffer.alloc(70 * 1024, 'A'), /too large/],
    ] as const) {
      await rejects(upload(id, fields, file), 400, pattern);
    }
    expect((await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate).toBe(good);
    // Not multipart at all.
    const json = await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential/upload-certificate`, (await kc.getAccessToken())!, { keystoreFormat: 'Certificate PEM' });
    expect(json.status).toBe(400);
    expect((await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).certificate).toBe(good);
  });

  it('a view-clients administrator reads the key but neither generates, downloads nor uploads one (403)', async () => {
    const id = await client('viewed');
    const { management, roles } = await realmManagement(kc);
    const viewer = (await kc.users.create({ username: 'key-viewer', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] })).id;
    await kc.users.addClientRoleMappings({ id: viewer, clientUniqueId: management, roles: [roles.get('view-clients')!] });
    const token = (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'key-viewer', password: PASSWORD })).body.access_token as string;
    const path = `/admin/realms/${REALM}/clients/${id}/certificates/jwt.credential`;
    expect((await api(t.url, 'GET', path, token)).status).toBe(200);
    for (const operation of ['generate', 'generate-and-download', 'upload', 'upload-certificate']) {
      expect((await api(t.url, 'POST', `${path}/${operation}`, token, { format: 'PKCS12', storePassword: 'x' })).status, operation).toBe(403);
    }
    expect(await kc.clients.getKeyInfo({ id, attr: 'jwt.credential' })).toEqual({});
  });
});
