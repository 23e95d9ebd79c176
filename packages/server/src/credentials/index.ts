import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';

// Algorithm.Argon2id; the package's const enum cannot be imported under verbatimModuleSyntax.
const ARGON2ID = 2;

// Keycloak 26's Argon2id defaults; @node-rs/argon2 hashes on libuv's thread pool, off the event loop.
const argon2Options = { algorithm: ARGON2ID, memoryCost: 7168, timeCost: 5, parallelism: 1, outputLen: 32 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, argon2Options);
}

export async function verifyPassword(password: string, passwordHash: string | null): Promise<boolean> {
  if (!passwordHash) {
    // Spend the same time as a real check so a missing user or password is not told apart by timing.
    await hash(password, argon2Options);
    return false;
  }
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

/** Compares secrets in time independent of where they differ (and of their lengths, by hashing first). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}

export function newId(): string {
  return randomUUID();
}

export function newSecret(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}
