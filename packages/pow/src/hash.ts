import { createHash } from 'node:crypto';
import { hashRaw } from '@node-rs/argon2';
import type { Algorithm, Version } from '@node-rs/argon2';
import type { Challenge } from './challenge.js';

// The package declares these as const enums, which isolatedModules cannot inline; values from its index.d.ts.
const ARGON2ID = 2 as Algorithm;
const VERSION_0X13 = 1 as Version;

/** Leading zero bits, counted from the most significant bit of the first byte. */
export function leadingZeroBits(bytes: Uint8Array): number {
  let bits = 0;
  for (const byte of bytes) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

export type HashParams = Pick<Challenge, 'alg' | 'id' | 'm' | 't'>;

/** Argon2id(password = nonce, salt = id, m, t, p = 1, 32 bytes), on libuv's thread pool. */
export function argon2idHash(params: Pick<Challenge, 'id' | 'm' | 't'>, nonce: string): Promise<Buffer> {
  return hashRaw(Buffer.from(nonce, 'utf8'), {
    algorithm: ARGON2ID,
    version: VERSION_0X13,
    memoryCost: params.m,
    timeCost: params.t,
    parallelism: 1,
    outputLen: 32,
    salt: Buffer.from(params.id, 'utf8'),
  });
}

/** SHA-256(id + ":" + nonce). */
export function sha256Hash(id: string, nonce: string): Buffer {
  return createHash('sha256').update(`${id}:${nonce}`, 'utf8').digest();
}

export async function solutionHash(params: HashParams, nonce: string): Promise<Buffer> {
  return params.alg === 'argon2id' ? argon2idHash(params, nonce) : sha256Hash(params.id, nonce);
}
