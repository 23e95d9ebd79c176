import { constants as cryptoConstants, createHmac, timingSafeEqual, verify as cryptoVerify, type KeyObject, type SignKeyObjectInput, type VerifyKeyObjectInput } from 'node:crypto';

/**
 * Compact JWS with node:crypto (RFC 7515, the algorithms of RFC 7518 and 8037): the token endpoint's signatures
 * and the checks of clients' assertions. jose on Node 20 goes through WebCrypto, converting a KeyObject at every
 * call; a verification here is node:crypto's own, on the event loop (RS256 40 µs, ES256 120 µs measured).
 */

/** The hash of each signature algorithm (RFC 7518 3; EdDSA's at_hash uses SHA-512, as Keycloak's). */
export const SIGNATURE_HASH: Readonly<Record<string, string>> = {
  RS256: 'sha256', RS384: 'sha384', RS512: 'sha512', PS256: 'sha256', PS384: 'sha384', PS512: 'sha512',
  ES256: 'sha256', ES384: 'sha384', ES512: 'sha512', EdDSA: 'sha512',
  HS256: 'sha256', HS384: 'sha384', HS512: 'sha512',
};

/** ECDSA: the curve each algorithm requires and the length of its r||s signature (RFC 7518 3.4). */
const EC_CURVE_OF: Readonly<Record<string, { curve: string; bytes: number }>> = {
  ES256: { curve: 'prime256v1', bytes: 64 },
  ES384: { curve: 'secp384r1', bytes: 96 },
  ES512: { curve: 'secp521r1', bytes: 132 },
};

/** Whether `key` is of the kind `alg` signs with (an EC key on another curve, an RSA key for ES256, … are not). */
export function keyFitsAlgorithm(key: KeyObject, alg: string): boolean {
  const type = key.asymmetricKeyType;
  if (alg.startsWith('RS')) return type === 'rsa';
  if (alg.startsWith('PS')) return type === 'rsa' || type === 'rsa-pss';
  if (alg in EC_CURVE_OF) return type === 'ec' && key.asymmetricKeyDetails?.namedCurve === EC_CURVE_OF[alg].curve;
  if (alg === 'EdDSA') return type === 'ed25519';
  return false;
}

/** node:crypto's key argument for `alg`: PSS padding with the hash's salt length, ECDSA's r||s encoding. */
export function signatureKeyOptions<K extends KeyObject>(alg: string, key: K): K | SignKeyObjectInput | VerifyKeyObjectInput {
  if (alg.startsWith('PS')) return { key, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: cryptoConstants.RSA_PSS_SALTLEN_DIGEST };
  if (alg.startsWith('ES')) return { key, dsaEncoding: 'ieee-p1363' as const };
  return key;
}

/**
 * Whether `signature` is `alg`'s signature of `signingInput` by `key`: a public key of the algorithm's kind (false
 * for any other), or for HS256/384/512 the shared secret's bytes (compared in constant time). Never `none`.
 */
export function verifyJwsSignature(alg: string, signingInput: Buffer, signature: Buffer, key: KeyObject | Uint8Array): boolean {
  const hash = SIGNATURE_HASH[alg];
  if (!hash) return false;
  if (alg.startsWith('HS')) {
    if (!(key instanceof Uint8Array)) return false;
    const expected = createHmac(hash, key).update(signingInput).digest();
    return expected.length === signature.length && timingSafeEqual(expected, signature);
  }
  if (key instanceof Uint8Array || !keyFitsAlgorithm(key, alg)) return false;
  if (alg in EC_CURVE_OF && signature.length !== EC_CURVE_OF[alg].bytes) return false;
  try {
    return cryptoVerify(alg === 'EdDSA' ? null : hash, signingInput, signatureKeyOptions(alg, key), signature);
  } catch {
    return false;
  }
}

/** A compact JWS taken apart; its header and payload JSON objects. */
export interface ParsedJws {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  /** `header.payload` as received: what the signature covers. */
  signingInput: Buffer;
  signature: Buffer;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

const jsonObject = (part: string): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
};

/**
 * A compact JWS of three strict base64url parts whose header and payload are JSON objects, or null. Nothing is
 * verified: a caller reads the header (and an unverified payload only to find whose key verifies it).
 */
export function parseCompactJws(jws: string): ParsedJws | null {
  const parts = jws.split('.');
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return null;
  const header = jsonObject(parts[0]);
  const payload = jsonObject(parts[1]);
  if (!header || !payload) return null;
  return { header, payload, signingInput: Buffer.from(`${parts[0]}.${parts[1]}`), signature: Buffer.from(parts[2], 'base64url') };
}
