import KcAdminClient from '@keycloak/keycloak-admin-client';
import { X509Certificate, createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, firstForm, pkce } from './support/forms.js';
import { adminToken, api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue "Real Keycloak exports import whole": a realm file's RSA signing keys (`rsa-generated`/`rsa` key providers
 * with their privateKey) become the realm's keys, with Keycloak's kid, so the published key and the tokens stay
 * the same across a migration. What cannot be taken is named by JSON path with the reason, never with the key.
 */

const KEYS = 'org.keycloak.keys.KeyProvider';
const FILE = join(import.meta.dirname, 'fixtures/keycloak-exports/keycloak-26.7.3-full-export.json');
type Rep = Record<string, any>;
type Provider = { name: string; providerId: string; config: Record<string, string[]> };
const fullExport = (realm: string): Rep => ({ ...(JSON.parse(readFileSync(FILE, 'utf8')) as Rep), realm });
const providers = (rep: Rep): Provider[] => rep.components[KEYS];
const fileRsa = (rep: Rep) => providers(rep).find((c) => c.providerId === 'rsa-generated')!;
const fileRsaIndex = (rep: Rep) => providers(rep).indexOf(fileRsa(rep));
/** Keycloak's kid of a public key (KeyUtils.createKeyId): base64url SHA-256 of its SPKI DER. */
const keycloakKid = (key: KeyObject) => createHash('sha256').update(key.export({ type: 'spki', format: 'der' })).digest('base64url');
const certificateKey = (b64: string) => new X509Certificate(Buffer.from(b64, 'base64')).publicKey;
const pkcs8 = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'der' }).toString('base64');
const pkcs1 = (key: KeyObject) => key.export({ type: 'pkcs1', format: 'der' }).toString('base64');
const spki = (key: KeyObject) => key.export({ type: 'spki', format: 'der' }).toString('base64');
const rsaKey = (bits = 2048) => generateKeyPairSync('rsa', { modulusLength: bits });
const path = (i: number) => `realm.components["${KEYS}"][${i}]`;

async function jwks(t: TestServer, realm: string): Promise<Rep[]> {
  return ((await (await fetch(`${t.url}/realms/${realm}/protocol/openid-connect/certs`)).json()) as { keys: Rep[] }).keys;
}

describe.each(httpDatabases)('a realm file\'s RSA signing keys (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    token = await adminToken(t.url);
  });
  afterAll(() => t?.close());

  /** POST /admin/realms with a file; its answer's report. */
  async function importRealm(rep: Rep): Promise<{ notImported: string[]; keptAsData: string[] }> {
    const res = await api(t.url, 'POST', '/admin/realms', token, rep);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return (res.body ?? { notImported: [], keptAsData: [] }) as { notImported: string[]; keptAsData: string[] };
  }

  it('imports the full Keycloak 26 export with its key: same kid, modulus and certificate; tokens verify with the file\'s key', async () => {
    const rep = fullExport('kc26-full');
    const file = fileRsa(rep);
    const publicKey = certificateKey(file.config.certificate[0]);
    const kid = keycloakKid(publicKey);
    // Through the official admin client, as a migration script would.
    await kc.realms.create(rep);
    const fileEnc = providers(rep).find((c) => c.providerId === 'rsa-enc-generated')!;
    const encKey = certificateKey(fileEnc.config.certificate[0]);
    const encKid = keycloakKid(encKey);
    const published = await jwks(t, 'kc26-full');
    // The signing key and the encryption key, each with its certificate; the secrets (HMAC, AES) are never published.
    expect(published).toHaveLength(2);
    expect(published.find((k) => k.use === 'sig')).toMatchObject({ kid, kty: 'RSA', alg: 'RS256', use: 'sig', n: publicKey.export({ format: 'jwk' }).n, e: 'AQAB', x5c: [file.config.certificate[0]] });
    expect(published.find((k) => k.use === 'enc')).toMatchObject({ kid: encKid, kty: 'RSA', alg: 'RSA-OAEP', use: 'enc', n: encKey.export({ format: 'jwk' }).n, x5c: [fileEnc.config.certificate[0]] });

    kc.setConfig({ realmName: 'kc26-full' });
    try {
      const keys = await kc.realms.getKeys({ realm: 'kc26-full' });
      // Every provider of the file as the same provider, with the file's kids (the secrets' from their config).
      const hmac = providers(rep).find((c) => c.providerId === 'hmac-generated')!;
      const aes = providers(rep).find((c) => c.providerId === 'aes-generated')!;
      expect(keys.active).toEqual({ RS256: kid, 'RSA-OAEP': encKid, HS512: hmac.config.kid[0], AES: aes.config.kid[0] });
      const signing = keys.keys!.find((k) => k.kid === kid)!;
      expect(signing).toEqual(expect.objectContaining({ kid, providerId: expect.any(String), status: 'ACTIVE', type: 'RSA', algorithm: 'RS256', use: 'SIG', certificate: file.config.certificate[0], publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') }));
      expect(keys.keys!.find((k) => k.kid === hmac.config.kid[0])).toEqual(expect.objectContaining({ type: 'OCT', algorithm: 'HS512', use: 'SIG', status: 'ACTIVE' }));
      expect(keys.keys!.find((k) => k.kid === aes.config.kid[0])).toEqual(expect.objectContaining({ type: 'OCT', algorithm: 'AES', use: 'ENC', status: 'ACTIVE' }));
      // One key-provider component per key, the file's provider and name, no key material.
      const components = await kc.components.find({ type: KEYS });
      expect(components.map((c) => [c.providerId, c.name]).sort()).toEqual(providers(rep).map((c) => [c.providerId, c.name]).sort());
      expect(components.find((c) => c.id === signing.providerId)).toEqual(expect.objectContaining({ providerId: file.providerId, config: expect.objectContaining({ active: ['true'], priority: ['100'] }) }));
      for (const c of providers(rep)) for (const secret of [c.config.privateKey?.[0], c.config.secret?.[0]].filter(Boolean)) expect(JSON.stringify(components)).not.toContain(secret!.slice(10, 40));
    } finally {
      kc.setConfig({ realmName: 'master' });
    }

    // A token issued now verifies with the key a resource server pinned from the file (keycloak.json's realm-public-key).
    const grant = await tokenRequest(t.url, 'kc26-full', { grant_type: 'password', client_id: 'web-app', username: 'alice', password: 'Alice-pass-1', scope: 'openid' });
    expect(grant.status, JSON.stringify(grant.body)).toBe(200);
    const { access_token: access, id_token: id, refresh_token: refresh } = grant.body as Record<string, string>;
    for (const jwt of [access, id]) {
      expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: 'RS256', kid });
      await jwtVerify(jwt, publicKey);
    }
    // The refresh token's HS512 key is derived from the imported key: refreshing works.
    const refreshed = await tokenRequest(t.url, 'kc26-full', { grant_type: 'refresh_token', client_id: 'web-app', refresh_token: refresh });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    await jwtVerify((refreshed.body as Record<string, string>).access_token, publicKey);

    // The same file imported under another name: one key, one realm here; that realm gets a generated key.
    const again = await importRealm(fullExport('kc26-again'));
    expect(again.notImported).toContain(`${path(fileRsaIndex(rep))} (the key is another realm's already: the realm gets a generated key instead)`);
    const other = await jwks(t, 'kc26-again');
    expect(again.notImported).toContain(`${path(providers(rep).indexOf(fileEnc))} (the key is another realm's already: not taken)`);
    expect(other).toHaveLength(1);
    expect(other[0].kid).not.toBe(kid);
    expect((await jwks(t, 'kc26-full')).map((k) => k.kid).sort()).toEqual([kid, encKid].sort());
  });

  it('takes every key provider of a Keycloak 26 export (HMAC, AES, encryption keys too): none is named', async () => {
    const rep = fullExport('kc26-report');
    // Its own RSA keys, so this realm's kids are not another realm's.
    const { privateKey, publicKey } = rsaKey();
    Object.assign(fileRsa(rep).config, { privateKey: [pkcs1(privateKey)], certificate: [] });
    Object.assign(providers(rep).find((c) => c.providerId === 'rsa-enc-generated')!.config, { privateKey: [pkcs1(rsaKey().privateKey)], certificate: [] });
    const report = await importRealm(rep);
    const named = report.notImported.filter((p) => p.startsWith(`realm.components["${KEYS}"]`));
    expect(named).toEqual([]);
    // A PKCS#1 key without a certificate: taken, with a self-signed certificate of it.
    const published = (await jwks(t, 'kc26-report')).find((k) => k.use === 'sig')!;
    expect(published.kid).toBe(keycloakKid(publicKey));
    expect(certificateKey(published.x5c[0]).equals(publicKey)).toBe(true);
  });

  it('signs with the active enabled key of highest priority; passive keys verify; a file without an active key gets a generated one', async () => {
    const [low, high, passive, disabled] = [rsaKey(), rsaKey(), rsaKey(), rsaKey()];
    const rsa = (name: string, key: KeyObject, config: Record<string, string[]>): Provider => ({ name, providerId: 'rsa', config: { privateKey: [pkcs8(key)], ...config } });
    const rep = {
      realm: 'priorities',
      enabled: true,
      clients: [{ clientId: 'svc', secret: 'svc-secret-1', publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false }],
      components: {
        [KEYS]: [
          rsa('low', low.privateKey, { priority: ['100'] }),
          rsa('passive', passive.privateKey, { priority: ['500'], active: ['false'] }),
          rsa('high', high.privateKey, { priority: ['200'], keyUse: ['sig'], algorithm: ['RS256'], enabled: ['true'], active: ['true'] }),
          rsa('disabled', disabled.privateKey, { priority: ['900'], enabled: ['false'] }),
        ],
      },
    };
    const report = await importRealm(rep);
    // A disabled key is kept disabled, as Keycloak keeps it: listed, neither signs nor verifies, not published.
    expect(report.notImported ?? []).toEqual([]);
    const keys = await api(t.url, 'GET', '/admin/realms/priorities/keys', token);
    expect((keys.body as Rep).active).toEqual({ RS256: keycloakKid(high.publicKey) });
    const status = Object.fromEntries(((keys.body as Rep).keys as Rep[]).map((k) => [k.kid, k.status]));
    expect(status).toEqual({ [keycloakKid(high.publicKey)]: 'ACTIVE', [keycloakKid(low.publicKey)]: 'ACTIVE', [keycloakKid(passive.publicKey)]: 'PASSIVE', [keycloakKid(disabled.publicKey)]: 'DISABLED' });
    expect((await jwks(t, 'priorities')).map((k) => k.kid)).not.toContain(keycloakKid(disabled.publicKey));
    const grant = await tokenRequest(t.url, 'priorities', { grant_type: 'client_credentials', client_id: 'svc', client_secret: 'svc-secret-1' });
    expect(grant.status).toBe(200);
    await jwtVerify((grant.body as Rep).access_token, high.publicKey);

    // Only passive keys: they are published, and a generated key signs.
    const onlyPassive = await importRealm({ realm: 'only-passive', enabled: true, components: { [KEYS]: [rsa('old', rsaKey().privateKey, { active: ['false'] })] } });
    expect(onlyPassive.notImported ?? []).toEqual([]);
    const body = (await api(t.url, 'GET', '/admin/realms/only-passive/keys', token)).body as Rep;
    expect((body.keys as Rep[]).map((k) => k.status).sort()).toEqual(['ACTIVE', 'PASSIVE']);
  });

  it('refuses hostile and broken keys, naming them without the key; the realm is imported with a generated key', async () => {
    const file = fileRsa(fullExport('x'));
    const small = rsaKey(1024);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const ec2 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const ed = generateKeyPairSync('ed25519');
    const other = rsaKey();
    const base = (config: Record<string, string[]>) => ({ name: 'k', providerId: 'rsa-generated', config });
    const garbage = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC-not-a-key-at-all-but-long-enough-to-be-noticed';
    const cases: [Provider, string][] = [
      [base({ privateKey: [garbage] }), 'privateKey does not parse (base64 DER, PKCS#8 or PKCS#1, expected)'],
      [base({ privateKey: [Buffer.from('a'.repeat(300)).toString('base64')] }), 'privateKey does not parse (base64 DER, PKCS#8 or PKCS#1, expected)'],
      [base({ privateKey: [pkcs8(small.privateKey)] }), 'RSA key of 1024 bits: at least 2048 are required'],
      [base({ privateKey: [pkcs8(ec.privateKey)] }), 'privateKey is not an RSA key (ec)'],
      [base({ privateKey: [pkcs8(other.privateKey)], certificate: file.config.certificate }), 'certificate is not of this privateKey'],
      [base({ privateKey: [pkcs8(other.privateKey)], certificate: ['bm90IGEgY2VydGlmaWNhdGU='] }), 'certificate does not parse (base64 DER expected)'],
      [base({ privateKey: [pkcs8(other.privateKey)], algorithm: ['RS999'] }), 'algorithm "RS999" is not one of RS256, RS384, RS512, PS256, PS384, PS512'],
      [{ ...base({ privateKey: [pkcs8(other.privateKey)], algorithm: ['HS256'] }), providerId: 'rsa' }, 'algorithm "HS256" is not one of RS256, RS384, RS512, PS256, PS384, PS512'],
      [base({ privateKey: [pkcs8(other.privateKey)], keyUse: ['enc'] }), 'keyUse "enc": a rsa-generated key is for SIG'],
      [{ ...base({}), providerId: 'rsa' }, 'no privateKey'],
      [base({ privateKey: [pkcs8(other.privateKey)], enabled: ['yes'] }), 'enabled is not "true" or "false"'],
      [base({ privateKey: [pkcs8(other.privateKey)], priority: ['high'] }), 'priority is not a whole number'],
      [{ name: 'ec', providerId: 'ecdsa-generated', config: { ecdsaPrivateKey: [pkcs8(ec.privateKey)] } }, 'no ecdsaPublicKey'],
      [{ name: 'ec', providerId: 'ecdsa-generated', config: { ecdsaPrivateKey: [pkcs8(ec.privateKey)], ecdsaPublicKey: [spki(ec2.publicKey)] } }, 'ecdsaPublicKey is not of this ecdsaPrivateKey'],
      [{ name: 'ec', providerId: 'ecdsa-generated', config: { ecdsaPrivateKey: [pkcs8(ec.privateKey)], ecdsaPublicKey: [spki(ec.publicKey)], ecdsaEllipticCurveKey: ['P-384'] } }, 'ecdsaPrivateKey is not of the curve P-384 (ecdsaEllipticCurveKey)'],
      [{ name: 'ec', providerId: 'ecdsa-generated', config: { ecdsaPrivateKey: [pkcs8(ec.privateKey)], ecdsaPublicKey: [spki(ec.publicKey)], certificate: file.config.certificate } }, 'certificate is not of this privateKey'],
      [{ name: 'ed', providerId: 'eddsa-generated', config: { eddsaPrivateKey: [pkcs8(ec.privateKey)], eddsaPublicKey: [spki(ec.publicKey)] } }, 'eddsaPrivateKey is not an Ed25519 key (ec)'],
      [{ name: 'ed', providerId: 'eddsa-generated', config: { eddsaPrivateKey: [pkcs8(ed.privateKey)], eddsaPublicKey: [spki(ed.publicKey)], eddsaEllipticCurveKey: ['Ed448'] } }, 'eddsaEllipticCurveKey "Ed448" is not one of Ed25519'],
      [{ name: 'h', providerId: 'hmac-generated', config: { kid: ['h1'], secret: [Buffer.alloc(8, 1).toString('base64url')] } }, 'secret of 8 bytes: at least 16 are required'],
      [{ name: 'h', providerId: 'hmac-generated', config: { secret: [Buffer.alloc(64, 1).toString('base64url')] } }, 'no kid'],
      [{ name: 'h', providerId: 'hmac-generated', config: { kid: ['h2'], secret: ['not base64url!'] } }, 'secret is not base64url'],
      [{ name: 'h', providerId: 'hmac-generated', config: { kid: ['h3'], secret: [Buffer.alloc(64, 1).toString('base64url')], algorithm: ['HS1'] } }, 'algorithm "HS1" is not one of HS256, HS384, HS512'],
      [{ name: 'a', providerId: 'aes-generated', config: { kid: ['a1'], secret: [Buffer.alloc(20, 1).toString('base64url')] } }, 'secret of 20 bytes: 16, 24 or 32 are required'],
      [{ name: 'x', providerId: 'rsa-enc', config: {} }, 'a key provider this server does not have'],
    ];
    const report = await importRealm({ realm: 'hostile', enabled: true, components: { [KEYS]: cases.map(([c]) => c) } });
    expect(report.notImported).toEqual(cases.map(([c, reason], i) => `${path(i)} (${c.providerId} "${c.name}": ${reason})`));
    // The realm is whole, with a generated key of its own.
    const published = await jwks(t, 'hostile');
    expect(published).toHaveLength(1);
    expect(published[0].kid).not.toBe(keycloakKid(other.publicKey));
    // No key material in the answer or the log.
    const everything = JSON.stringify(report) + JSON.stringify(t.logs);
    for (const secret of [garbage.slice(40), pkcs8(other.privateKey).slice(100, 160), pkcs8(small.privateKey).slice(100, 160), pkcs8(ec.privateKey).slice(40, 80), pkcs8(ed.privateKey).slice(20, 48), 'secret-pass', Buffer.alloc(64, 1).toString('base64url')]) expect(everything).not.toContain(secret);
  });

  it('signs in through the login form with a key whose Keycloak kid has `_` and `-` (the login state names the kid)', async () => {
    let pair = rsaKey();
    while (!/_/.test(keycloakKid(pair.publicKey)) || !/-/.test(keycloakKid(pair.publicKey))) pair = rsaKey();
    const rep = fullExport('kc26-form');
    Object.assign(fileRsa(rep).config, { privateKey: [pkcs8(pair.privateKey)], certificate: [] });
    await importRealm(rep);
    const redirectUri = `${t.url}/realms/kc26-form/account/`;
    const browser = new FormClient(t.url);
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({ client_id: 'account-console', redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 's1', code_challenge: challenge, code_challenge_method: 'S256' });
    const page = await browser.get(`/realms/kc26-form/protocol/openid-connect/auth?${query}`);
    expect(page.status).toBe(200);
    const form = firstForm(page.text);
    const signedIn = await browser.post(form.action, { ...form.hidden, username: 'alice', password: 'Alice-pass-1' });
    expect(signedIn.status, signedIn.text.slice(0, 500)).toBe(302);
    const code = new URL(signedIn.location!).searchParams.get('code')!;
    const tokens = await tokenRequest(t.url, 'kc26-form', { grant_type: 'authorization_code', client_id: 'account-console', code, redirect_uri: redirectUri, code_verifier: verifier });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    await jwtVerify(tokens.body.id_token as string, pair.publicKey);
  });

  it('--import-realm takes the file\'s key as well', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-keys-'));
    const rep = fullExport('kc26-cli');
    const { privateKey, publicKey } = rsaKey();
    Object.assign(fileRsa(rep).config, { privateKey: [pkcs8(privateKey)], certificate: [] });
    Object.assign(providers(rep).find((c) => c.providerId === 'rsa-enc-generated')!.config, { privateKey: [pkcs1(rsaKey().privateKey)], certificate: [] });
    writeFileSync(join(dir, 'realm.json'), JSON.stringify(rep));
    const cli = await startServer({ database, config: { REALMGATE_IMPORT_REALM: dir } });
    try {
      expect((await jwks(cli, 'kc26-cli')).filter((k) => k.use === 'sig').map((k) => k.kid)).toEqual([keycloakKid(publicKey)]);
      const report = cli.logs.find((l) => l.msg === 'realm import: parts of the file are not imported' && l.realm === 'kc26-cli');
      expect(((report?.notImported ?? []) as string[]).filter((p) => p.startsWith(`realm.components["${KEYS}"]`))).toEqual([]);
      const grant = await tokenRequest(cli.url, 'kc26-cli', { grant_type: 'client_credentials', client_id: 'backend', client_secret: 'backend-secret-1' });
      expect(grant.status, JSON.stringify(grant.body)).toBe(200);
      await jwtVerify((grant.body as Rep).access_token, publicKey);
    } finally {
      await cli.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
