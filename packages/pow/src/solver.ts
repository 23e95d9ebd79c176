import { decodeChallenge } from './challenge.js';
import type { Challenge } from './challenge.js';
import { leadingZeroBits, solutionHash } from './hash.js';

export interface SolveOptions {
  /** First nonce tried; a worker i of n starts at i. */
  start?: number;
  /** Distance between nonces tried; n for n workers. */
  step?: number;
  /** Gives up after this many hashes. */
  maxAttempts?: number;
  signal?: AbortSignal;
}

export interface Solution {
  nonce: string;
  attempts: number;
  hash: Buffer;
  challenge: Challenge;
}

/** Finds a nonce for a `PAYLOAD.SIG` challenge, as a browser would: for scripted clients and tests. */
export async function solve(token: string, options: SolveOptions = {}): Promise<Solution> {
  const challenge = decodeChallenge(token);
  const step = options.step ?? 1;
  const maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
  let nonce = options.start ?? 0;
  for (let attempts = 1; attempts <= maxAttempts; attempts++, nonce += step) {
    options.signal?.throwIfAborted();
    const hash = await solutionHash(challenge, String(nonce));
    if (leadingZeroBits(hash) >= challenge.d) return { nonce: String(nonce), attempts, hash, challenge };
  }
  throw new Error(`no solution within ${maxAttempts} attempts`);
}
