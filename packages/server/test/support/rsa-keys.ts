import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair } from 'jose';
import type { RsaKeyPairSource } from '../../src/keys/index.js';

/**
 * Realm signing keys for test servers (issue 36): 2048-bit RSA pairs made once and kept in a fixture, since generating
 * one costs 0.2-1 s of CPU and every realm a test creates (master included) needs one. Test keys only, published with
 * the repository: never a deployment's.
 */
const POOL: string[] = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'rsa-2048-test-keys.json'), 'utf8'));

const RS256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
/** Pairs handed out in this process: each at most once, so no two realms of a test file share a key. */
let used = 0;

/** The next unused pair of the pool, as jose's generateKeyPair('RS256') makes them; a generated one when all are used. */
export const testRsaKeyPairs: RsaKeyPairSource = async () => {
  if (used >= POOL.length) return generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  const der = Buffer.from(POOL[used++], 'base64');
  const spki = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'der', type: 'spki' });
  const [privateKey, publicKey] = await Promise.all([
    webcrypto.subtle.importKey('pkcs8', der, RS256, true, ['sign']),
    webcrypto.subtle.importKey('spki', spki, RS256, true, ['verify']),
  ]);
  return { privateKey, publicKey } as Awaited<ReturnType<RsaKeyPairSource>>;
};
