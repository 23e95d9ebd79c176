import { pbkdf2, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * Password hashes exported by Keycloak (a user's `credentials[]` entry of type `password` with `secretData` and
 * `credentialData`), kept as they are so that imported users sign in with their passwords; the next successful
 * sign-in hashes the password again at this server's parameters (hashNeedsUpgrade is true for all of these).
 *
 * - `argon2` (Keycloak 24+): becomes the PHC string @node-rs/argon2 verifies.
 * - `pbkdf2-sha512`, `pbkdf2-sha256`, `pbkdf2` (SHA-1): stored as `$pbkdf2-<digest>$i=<iterations>$<salt>$<hash>`
 *   (standard base64 without padding) and checked here.
 */

const PBKDF2_DIGESTS: Record<string, string> = { 'pbkdf2-sha512': 'sha512', 'pbkdf2-sha256': 'sha256', pbkdf2: 'sha1' };
const ARGON2_TYPES: Record<string, string> = { id: 'argon2id', i: 'argon2i', d: 'argon2d' };
const pbkdf2Async = promisify(pbkdf2);

const unpadded = (b64: string) => b64.replace(/=+$/, '');
const first = (params: Record<string, unknown> | undefined, key: string): string | undefined => {
  const value = params?.[key];
  return Array.isArray(value) ? String(value[0]) : value === undefined ? undefined : String(value);
};
const isBase64 = (s: unknown): s is string => typeof s === 'string' && s.length > 0 && /^[A-Za-z0-9+/]+=*$/.test(s);
const positive = (s: unknown, max: number): number | null => {
  const n = Number(s);
  return Number.isInteger(n) && n > 0 && n <= max ? n : null;
};

/** The stored form of an exported Keycloak password hash, or an error message naming what is wrong with it. */
export function importedPasswordHash(secretData: string, credentialData: string): { hash: string } | { error: string } {
  let secret: { value?: unknown; salt?: unknown };
  let data: { hashIterations?: unknown; algorithm?: unknown; additionalParameters?: Record<string, unknown> };
  try {
    secret = JSON.parse(secretData);
    data = JSON.parse(credentialData);
  } catch {
    return { error: 'secretData and credentialData must be JSON strings' };
  }
  if (!isBase64(secret?.value) || !isBase64(secret?.salt)) return { error: 'secretData must hold base64 "value" and "salt"' };
  const algorithm = String(data?.algorithm ?? '');
  const iterations = positive(data?.hashIterations, 1_000_000);
  if (iterations === null) return { error: 'credentialData.hashIterations must be a positive integer' };
  const digest = PBKDF2_DIGESTS[algorithm];
  if (digest) return { hash: `$pbkdf2-${digest}$i=${iterations}$${unpadded(secret.salt)}$${unpadded(secret.value)}` };
  if (algorithm === 'argon2') {
    const params = data.additionalParameters;
    const type = ARGON2_TYPES[first(params, 'type') ?? 'id'];
    const memory = positive(first(params, 'memory') ?? 7168, 256 * 1024);
    const parallelism = positive(first(params, 'parallelism') ?? 1, 255);
    const version = first(params, 'version') ?? '1.3';
    if (!type || memory === null || parallelism === null || (version !== '1.3' && version !== '1.0')) {
      return { error: 'credentialData.additionalParameters: unsupported Argon2 parameters' };
    }
    const v = version === '1.3' ? 19 : 16;
    return { hash: `$${type}$v=${v}$m=${memory},t=${iterations},p=${parallelism}$${unpadded(secret.salt)}$${unpadded(secret.value)}` };
  }
  return { error: `credentialData.algorithm "${algorithm}" is not supported (argon2, pbkdf2-sha512, pbkdf2-sha256, pbkdf2 are)` };
}

const PBKDF2_HASH = /^\$pbkdf2-(sha512|sha256|sha1)\$i=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/** Checks a password against a stored `$pbkdf2-…` hash (on libuv's thread pool); null when the hash is not one. */
export async function verifyPbkdf2(password: string, stored: string): Promise<boolean | null> {
  const parts = PBKDF2_HASH.exec(stored);
  if (!parts) return null;
  const [, digest, iterations, salt, value] = parts;
  const expected = Buffer.from(value, 'base64');
  // Keycloak salts with the raw bytes of the decoded salt and derives as many bytes as the stored hash holds.
  const derived = await pbkdf2Async(password, Buffer.from(salt, 'base64'), Number(iterations), expected.length, digest);
  return derived.length === expected.length && timingSafeEqual(derived, expected);
}

const b64 = (unpaddedValue: string) => Buffer.from(unpaddedValue, 'base64').toString('base64');

/**
 * A stored hash as Keycloak exports a password credential (the inverse of importedPasswordHash): Argon2 hashes
 * as `argon2` with their parameters, `$pbkdf2-…` ones as Keycloak's pbkdf2 algorithms. Null for a hash neither is.
 */
export function exportedPasswordCredential(stored: string, createdDate: number | null): Record<string, unknown> | null {
  const credential = (value: string, salt: string, credentialData: object) => ({
    type: 'password',
    ...(createdDate !== null ? { createdDate } : {}),
    secretData: JSON.stringify({ value: b64(value), salt: b64(salt), additionalParameters: {} }),
    credentialData: JSON.stringify(credentialData),
  });
  const argon = /^\$(argon2id|argon2i|argon2d)\$v=(\d+)\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(stored);
  if (argon) {
    const [, type, v, m, t, p, salt, value] = argon;
    return credential(value, salt, {
      hashIterations: Number(t),
      algorithm: 'argon2',
      additionalParameters: {
        hashLength: [String(Buffer.from(value, 'base64').length)],
        memory: [m],
        type: [type.slice('argon2'.length)],
        version: [v === '19' ? '1.3' : '1.0'],
        parallelism: [p],
      },
    });
  }
  const pbkdf = PBKDF2_HASH.exec(stored);
  if (pbkdf) {
    const [, digest, iterations, salt, value] = pbkdf;
    const algorithm = Object.keys(PBKDF2_DIGESTS).find((k) => PBKDF2_DIGESTS[k] === digest)!;
    return credential(value, salt, { hashIterations: Number(iterations), algorithm, additionalParameters: {} });
  }
  return null;
}
