import { createPublicKey, generateKeyPairSync, sign as nodeSign, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { keyFitsAlgorithm, parseCompactJws, verifyJwsSignature } from '../src/keys/jws.js';

/**
 * keys/jws.ts: the node:crypto signature check of clients' assertions (issue 39's performance work replaced jose's
 * jwtVerify there). Every algorithm a client may use, checked against jose's signatures; and as an attacker: a
 * changed payload, a key of another kind or curve, an ECDSA signature in DER, `none`, a MAC keyed with the public key.
 */

const pairs = {
  rsa: generateKeyPairSync('rsa', { modulusLength: 2048 }),
  p256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  p384: generateKeyPairSync('ec', { namedCurve: 'P-384' }),
  p521: generateKeyPairSync('ec', { namedCurve: 'P-521' }),
  ed25519: generateKeyPairSync('ed25519'),
};
const CASES: [alg: string, pair: keyof typeof pairs][] = [
  ['RS256', 'rsa'], ['RS384', 'rsa'], ['RS512', 'rsa'], ['PS256', 'rsa'], ['PS384', 'rsa'], ['PS512', 'rsa'],
  ['ES256', 'p256'], ['ES384', 'p384'], ['ES512', 'p521'], ['EdDSA', 'ed25519'],
];

const jwt = (alg: string, key: KeyObject | Uint8Array, claims: Record<string, unknown> = { sub: 'c', jti: 'j' }) => new SignJWT(claims).setProtectedHeader({ alg }).sign(key);
const check = (token: string, alg: string, key: KeyObject | Uint8Array) => {
  const parsed = parseCompactJws(token);
  return parsed !== null && verifyJwsSignature(alg, parsed.signingInput, parsed.signature, key);
};
/** The token with its payload replaced, the signature kept. */
const swapPayload = (token: string, claims: Record<string, unknown>) => {
  const [h, , s] = token.split('.');
  return `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
};

describe('JWS signatures checked with node:crypto', () => {
  it.each(CASES)('%s: jose\'s signature verifies with the public key; a changed payload does not', async (alg, pair) => {
    const token = await jwt(alg, pairs[pair].privateKey);
    expect(check(token, alg, pairs[pair].publicKey)).toBe(true);
    expect(check(swapPayload(token, { sub: 'someone-else', jti: 'j' }), alg, pairs[pair].publicKey)).toBe(false);
    // Another key of the same kind does not verify it.
    const other = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : pair === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: pairs[pair].publicKey.asymmetricKeyDetails!.namedCurve! });
    expect(check(token, alg, other.publicKey)).toBe(false);
  });

  it('a key of another kind or curve never verifies, whatever the header claims', async () => {
    for (const [alg, pair] of CASES) {
      for (const [name, other] of Object.entries(pairs)) {
        if (name === pair) continue;
        expect(keyFitsAlgorithm(other.publicKey, alg)).toBe(false);
        // The other key's own signature of the same input, under this alg's name.
        const token = await jwt(alg, pairs[pair].privateKey);
        const [h, p] = token.split('.');
        const hash = name === 'ed25519' ? null : { p256: 'sha256', p384: 'sha384', p521: 'sha512', rsa: 'sha256' }[name]!;
        const forged = nodeSign(hash, Buffer.from(`${h}.${p}`), name.startsWith('p') ? { key: other.privateKey, dsaEncoding: 'ieee-p1363' } : other.privateKey);
        expect(check(`${h}.${p}.${forged.toString('base64url')}`, alg, other.publicKey)).toBe(false);
      }
    }
  });

  it('ECDSA: only the r||s signature of the curve\'s length (RFC 7518 3.4), not DER', async () => {
    const token = await jwt('ES256', pairs.p256.privateKey);
    const [h, p] = token.split('.');
    const der = nodeSign('sha256', Buffer.from(`${h}.${p}`), pairs.p256.privateKey);
    expect(check(`${h}.${p}.${der.toString('base64url')}`, 'ES256', pairs.p256.publicKey)).toBe(false);
    const truncated = token.slice(0, -4);
    expect(check(truncated, 'ES256', pairs.p256.publicKey)).toBe(false);
  });

  it('HS256/384/512 with the shared secret; not with a public key, not keyed with the public key\'s PEM as a public-key alg', async () => {
    const secret = new TextEncoder().encode('a-shared-secret-long-enough-for-hs512-0123456789abcdef0123456789');
    for (const alg of ['HS256', 'HS384', 'HS512']) {
      const token = await jwt(alg, secret);
      expect(check(token, alg, secret)).toBe(true);
      expect(check(token, alg, new TextEncoder().encode('another-secret-long-enough-for-hs512-0123456789abcdef0123456789'))).toBe(false);
      expect(check(token, alg, pairs.rsa.publicKey)).toBe(false);
    }
    const pem = new TextEncoder().encode(pairs.rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const confused = await jwt('HS256', pem);
    expect(check(confused, 'RS256', pairs.rsa.publicKey)).toBe(false);
    expect(check(confused, 'HS256', createPublicKey(pairs.rsa.publicKey.export({ type: 'spki', format: 'pem' })))).toBe(false);
  });

  it('none and unknown algorithms verify nothing', async () => {
    const token = await jwt('RS256', pairs.rsa.privateKey);
    const [h, p, s] = token.split('.');
    for (const alg of ['none', 'RS1', 'ES256K', '']) expect(verifyJwsSignature(alg, Buffer.from(`${h}.${p}`), Buffer.from(s, 'base64url'), pairs.rsa.publicKey)).toBe(false);
  });

  it('parses only three strict base64url parts whose header and payload are JSON objects', async () => {
    const token = await jwt('RS256', pairs.rsa.privateKey);
    const [h, p, s] = token.split('.');
    expect(parseCompactJws(token)).toMatchObject({ header: { alg: 'RS256' }, payload: { sub: 'c', jti: 'j' } });
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const bad of [`${h}.${p}`, `${h}.${p}.${s}.x`, `${h}.${p}.${s}=`, `${h}.${p}+.${s}`, `${h}.${b64([1, 2])}.${s}`, `${h}.${b64('text')}.${s}`, `${b64(null)}.${p}.${s}`, `${h}.bm90IGpzb24.${s}`, '']) {
      expect(parseCompactJws(bad)).toBeNull();
    }
  });
});
