import { createHash, createPrivateKey, type KeyObject } from 'node:crypto';

/** The algorithms, curves and encodings the realm's key providers share (keys/providers.ts, keys/import.ts). */

export const RSA_SIGNATURE_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const;
export const EC_SIGNATURE_ALGS = ['ES256', 'ES384', 'ES512'] as const;
/** Every algorithm a realm signs tokens with (defaultSignatureAlgorithm, a client's *.signed.response.alg). */
export const TOKEN_SIGNATURE_ALGS = [...RSA_SIGNATURE_ALGS, ...EC_SIGNATURE_ALGS, 'EdDSA'] as const;
export const RSA_ENC_ALGS = ['RSA-OAEP', 'RSA-OAEP-256', 'RSA1_5'];
export const HMAC_ALGS = ['HS256', 'HS384', 'HS512'];
export const EC_CURVES: Record<string, { alg: string; node: string }> = { 'P-256': { alg: 'ES256', node: 'prime256v1' }, 'P-384': { alg: 'ES384', node: 'secp384r1' }, 'P-521': { alg: 'ES512', node: 'secp521r1' } };

/** The private key of a config value: base64 DER (PKCS#8 or PKCS#1), with or without its PEM armour; null if none parses. */
export function parsePrivateKey(value: string): KeyObject | null {
  const body = value.replace(/-----(BEGIN|END) [A-Z ]+-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) return null;
  const der = Buffer.from(body, 'base64');
  for (const type of ['pkcs8', 'pkcs1'] as const) {
    try {
      return createPrivateKey({ key: der, format: 'der', type });
    } catch {
      // the other encoding, or none
    }
  }
  return null;
}

/** Keycloak's kid of a public key (KeyUtils.createKeyId): base64url of the SHA-256 of its SPKI DER. */
export const keycloakKid = (publicKey: KeyObject): string => createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');

