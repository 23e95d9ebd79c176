import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RsaKeyPairSource } from '../../src/keys/index.js';

/**
 * Realm signing keys for test servers (issue 36): 2048-bit RSA pairs made once and kept in a fixture, since generating
 * one costs 0.2-1 s of CPU and every realm a test creates (master included) needs one. Test keys only, published with
 * the repository: never a deployment's.
 */
const POOL: string[] = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'fixtures', 'rsa-2048-test-keys.json'), 'utf8'));

const RS256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;
/** Pairs handed out in this process; the pool goes round, so no two of any 128 realms in a row share a key. */
let taken = 0;

/** The next pair of the pool, as jose's generateKeyPair('RS256') makes them (kids are the server's own, always new). */
export const testRsaKeyPairs: RsaKeyPairSource = async () => {
  const der = Buffer.from(POOL[taken++ % POOL.length], 'base64');
  const spki = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'der', type: 'spki' });
  const [privateKey, publicKey] = await Promise.all([
    webcrypto.subtle.importKey('pkcs8', der, RS256, true, ['sign']),
    webcrypto.subtle.importKey('spki', spki, RS256, true, ['verify']),
  ]);
  return { privateKey, publicKey } as Awaited<ReturnType<RsaKeyPairSource>>;
};
