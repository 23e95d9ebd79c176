import { createPrivateKey, createPublicKey, hkdfSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { newId } from '../credentials/index.js';
import type { Db, Storage } from '../storage/index.js';
import { certificateJwkMembers, selfSignedCertificate } from './certificate.js';
import type { ImportedSigningKey } from './import.js';

export { CERTIFICATE_VALIDITY_YEARS } from './certificate.js';

const ALGORITHM = 'RS256';

export interface SigningKey {
  kid: string;
  algorithm: string;
  key: CryptoKey;
  /** The same private key for node:crypto's sign (the token endpoint signs with it: faster than WebCrypto here). */
  keyObject: KeyObject;
}

/** What a secret derived from a realm's private key is for; the HKDF `info` keeps the purposes' secrets apart. */
interface SecretPurpose {
  info: string;
  hash: 'sha256' | 'sha512';
  bytes: number;
  /** Prefixed to the RSA key's kid in what the secret MACs, so a token's kid never names a published key. */
  kidPrefix: string;
}
const STATE_SECRET: SecretPurpose = { info: 'realmgate host state v1', hash: 'sha256', bytes: 32, kidPrefix: '' };
// RFC 7518 3.2: an HS512 key at least as long as the hash's output.
const REFRESH_TOKEN_KEY: SecretPurpose = { info: 'realmgate refresh token HS512 v1', hash: 'sha512', bytes: 64, kidPrefix: 'hs512-' };

/** What the cached key reads depend on (storage/config-cache.ts): a write to realm_key invalidates them. */
const KEY_TABLES = ['realm_key'];

/** Realm signing keys: kept in the database so every process signs and verifies alike; rotatable. */
export class RealmKeys {
  // A kid's key material never changes, so an imported key can be cached for the process's life.
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  /** HKDF outputs by purpose and kid: derived once per process, like the imported keys. */
  private readonly derivedSecrets = new Map<string, Buffer>();

  constructor(private readonly storage: Storage) {}

  async generate(realmId: string, db: Db = this.storage.db): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true, modulusLength: 2048 });
    const kid = newId();
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALGORITHM, use: 'sig' };
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALGORITHM, use: 'sig' };
    const realm = await db.selectFrom('realm').select('name').where('id', '=', realmId).executeTakeFirst();
    const certificate = certificateFor(JSON.stringify(privateJwk), JSON.stringify(publicJwk), realm?.name ?? realmId);
    await db
      .insertInto('realm_key')
      .values({
        kid,
        realm_id: realmId,
        algorithm: ALGORITHM,
        private_jwk: JSON.stringify(privateJwk),
        public_jwk: JSON.stringify(publicJwk),
        certificate,
        active: 1,
        created_at: Date.now(),
      })
      .execute();
    return kid;
  }

  /**
   * A new realm's first keys from its realm file (keys/import.ts checked them): each stored with its certificate (a
   * self-signed one when the file gave none), active or passive as the file says. The signing key is the newest
   * active one (loadSigningKey), so they are stored in order of priority, the highest last: the active key of
   * highest priority signs, as in Keycloak (of equal priorities, the later in the file). A realm left without an
   * active key gets a generated one. A key another realm holds already (the same file imported under another
   * name) is not taken: its path and reason are returned, for the import's report.
   */
  async importKeys(realmId: string, keys: ImportedSigningKey[], db: Db = this.storage.db): Promise<string[]> {
    const notImported: string[] = [];
    const taken = keys.length ? new Set((await db.selectFrom('realm_key').select('kid').where('kid', 'in', keys.map((k) => k.kid)).execute()).map((r) => r.kid)) : new Set<string>();
    const fresh = keys.filter((k) => {
      if (!taken.has(k.kid)) return true;
      notImported.push(`${k.path} (the key is another realm's already: the realm gets a generated key instead)`);
      return false;
    });
    const ordered = fresh.map((k, i) => ({ k, i })).sort((a, b) => a.k.priority - b.k.priority || a.i - b.i).map(({ k }) => k);
    const realm = await db.selectFrom('realm').select('name').where('id', '=', realmId).executeTakeFirst();
    // Before now, so a key generated below (or rotated in later) is newer than all of them.
    const base = Date.now() - ordered.length - 1;
    for (const [i, key] of ordered.entries()) {
      const privateJwk = JSON.stringify(key.privateJwk);
      const publicJwk = JSON.stringify(key.publicJwk);
      await db
        .insertInto('realm_key')
        .values({
          kid: key.kid,
          realm_id: realmId,
          algorithm: ALGORITHM,
          private_jwk: privateJwk,
          public_jwk: publicJwk,
          certificate: key.certificate ?? certificateFor(privateJwk, publicJwk, realm?.name ?? realmId),
          active: key.active ? 1 : 0,
          created_at: base + i,
        })
        .execute();
    }
    if (!ordered.some((k) => k.active)) await this.generate(realmId, db);
    return notImported;
  }

  /** A new active key; older keys stay published so tokens they signed still verify. */
  async rotate(realmId: string): Promise<string> {
    const kid = await this.generate(realmId);
    await this.storage.db.updateTable('realm_key').set({ active: 0 }).where('realm_id', '=', realmId).where('kid', '!=', kid).execute();
    return kid;
  }

  /** The realm's active key, through the configuration cache: one read per key change, not per token. */
  async signingKey(realmId: string): Promise<SigningKey> {
    const key = await this.storage.cache.get(`signing-key\0${realmId}`, KEY_TABLES, () => this.loadSigningKey(realmId));
    if (!key) throw new Error(`realm ${realmId} has no active signing key`);
    return key;
  }

  private async loadSigningKey(realmId: string): Promise<SigningKey | null> {
    const row = await this.storage.db
      .selectFrom('realm_key')
      .select(['kid', 'algorithm', 'private_jwk'])
      .where('realm_id', '=', realmId)
      .where('active', '=', 1)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    if (!row) return null;
    const keyObject = createPrivateKey({ key: JSON.parse(row.private_jwk) as JsonWebKey, format: 'jwk' });
    return { kid: row.kid, algorithm: row.algorithm, key: await this.importOnce(`${row.kid}:private`, row.private_jwk, row.algorithm), keyObject };
  }

  /** A key of the realm by id (found ones cached; an unknown kid is looked up each time and never kept). */
  async verificationKey(realmId: string, kid: string): Promise<CryptoKey | null> {
    return this.storage.cache.get(`verification-key\0${realmId}\0${kid}`, KEY_TABLES, () => this.loadVerificationKey(realmId, kid));
  }

  private async loadVerificationKey(realmId: string, kid: string): Promise<CryptoKey | null> {
    const row = await this.storage.db
      .selectFrom('realm_key')
      .select(['public_jwk', 'algorithm'])
      .where('realm_id', '=', realmId)
      .where('kid', '=', kid)
      .executeTakeFirst();
    return row ? this.importOnce(`${kid}:public`, row.public_jwk, row.algorithm) : null;
  }

  /**
   * A MAC secret for the host's own short-lived state (the login pages' auth-session cookie, logout
   * confirmations), derived from the realm's private key with HKDF: every process derives the same one from
   * the database, and rotating the key replaces it. Without `kid`, the active key's; with it, that key's (to
   * verify what it signed), or null when the realm has no such key.
   */
  async stateSecret(realmId: string, kid?: string): Promise<{ kid: string; secret: Buffer } | null> {
    return this.storage.cache.get(`state-secret\0${realmId}\0${kid ?? ''}`, KEY_TABLES, () => this.derivedSecret(realmId, kid, STATE_SECRET));
  }

  /**
   * The realm's HS512 key for refresh and offline tokens (Keycloak's `hmac-generated-hs512`: tokens only the
   * server reads are MACed, not signed, and the key is never published). It is derived like stateSecret, under
   * a label of its own, from the RSA key whose kid it carries with a prefix: one HMAC instead of an RSA signature
   * per grant, and rotating the realm's key rotates it too. `kid` as in a token's header; null when unknown.
   */
  async refreshTokenKey(realmId: string, kid?: string): Promise<{ kid: string; secret: Buffer } | null> {
    if (kid !== undefined && !kid.startsWith(REFRESH_TOKEN_KEY.kidPrefix)) return null;
    const rsaKid = kid?.slice(REFRESH_TOKEN_KEY.kidPrefix.length);
    return this.storage.cache.get(`refresh-token-key\0${realmId}\0${kid ?? ''}`, KEY_TABLES, () => this.derivedSecret(realmId, rsaKid, REFRESH_TOKEN_KEY));
  }

  private async derivedSecret(realmId: string, kid: string | undefined, purpose: SecretPurpose): Promise<{ kid: string; secret: Buffer } | null> {
    let query = this.storage.db.selectFrom('realm_key').select(['kid', 'private_jwk']).where('realm_id', '=', realmId);
    query = kid === undefined ? query.where('active', '=', 1).orderBy('created_at', 'desc') : query.where('kid', '=', kid);
    const row = await query.executeTakeFirst();
    if (!row) return null;
    const cacheKey = `${purpose.info}\0${row.kid}`;
    let secret = this.derivedSecrets.get(cacheKey);
    if (!secret) {
      const { d } = JSON.parse(row.private_jwk) as JWK;
      if (typeof d !== 'string') throw new Error(`realm key ${row.kid} has no private part`);
      secret = Buffer.from(hkdfSync(purpose.hash, Buffer.from(d, 'base64url'), `realm:${realmId}`, purpose.info, purpose.bytes));
      this.derivedSecrets.set(cacheKey, secret);
    }
    return { kid: purpose.kidPrefix + row.kid, secret };
  }

  /**
   * Every key of the realm, newest first, each with its certificate (base64 DER) and its public key (base64
   * SPKI DER, Keycloak's `public_key`). A key from before certificates were kept gets its certificate here, once.
   */
  async list(realmId: string): Promise<{ kid: string; algorithm: string; active: boolean; publicJwk: JWK; publicKey: string; certificate: string }[]> {
    const rows = await this.storage.db
      .selectFrom('realm_key')
      .select(['kid', 'algorithm', 'active', 'public_jwk', 'private_jwk', 'certificate'])
      .where('realm_id', '=', realmId)
      .orderBy('created_at', 'desc')
      .execute();
    const keys = [];
    for (const r of rows) {
      const certificate = r.certificate ?? (await this.addCertificate(realmId, r.kid, r.private_jwk, r.public_jwk));
      const publicJwk = JSON.parse(r.public_jwk) as JWK;
      const publicKey = createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' }).export({ type: 'spki', format: 'der' }).toString('base64');
      keys.push({ kid: r.kid, algorithm: r.algorithm, active: r.active === 1, publicJwk, publicKey, certificate });
    }
    return keys;
  }

  /** The realm's JWKS: every key, with its certificate as `x5c` and the certificate's thumbprints (cached). */
  async jwks(realmId: string): Promise<{ keys: JWK[] }> {
    const jwks = await this.storage.cache.get(`jwks\0${realmId}`, KEY_TABLES, async () => {
      const keys = await this.list(realmId);
      return { keys: keys.map((k) => ({ ...k.publicJwk, ...certificateJwkMembers(Buffer.from(k.certificate, 'base64')) })) };
    });
    return jwks!;
  }

  private async addCertificate(realmId: string, kid: string, privateJwk: string, publicJwk: string): Promise<string> {
    const realm = await this.storage.realms.byId(realmId);
    const certificate = certificateFor(privateJwk, publicJwk, realm?.name ?? realmId);
    // Another process may have added one first: keep whichever was stored, so every process publishes the same.
    await this.storage.db.updateTable('realm_key').set({ certificate }).where('kid', '=', kid).where('certificate', 'is', null).execute();
    const row = await this.storage.db.selectFrom('realm_key').select('certificate').where('kid', '=', kid).executeTakeFirst();
    return row?.certificate ?? certificate;
  }

  private importOnce(cacheKey: string, jwk: string, algorithm: string): Promise<CryptoKey> {
    let key = this.imported.get(cacheKey);
    if (!key) {
      key = importJWK(JSON.parse(jwk) as JWK, algorithm) as Promise<CryptoKey>;
      this.imported.set(cacheKey, key);
    }
    return key;
  }
}

/** A self-signed certificate (base64 DER) for a stored key pair. */
function certificateFor(privateJwk: string, publicJwk: string, commonName: string): string {
  const privateKey = createPrivateKey({ key: JSON.parse(privateJwk) as JsonWebKey, format: 'jwk' });
  const publicKey = createPublicKey({ key: JSON.parse(publicJwk) as JsonWebKey, format: 'jwk' });
  return selfSignedCertificate(privateKey, publicKey, commonName).toString('base64');
}
