import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { verifyPbkdf2 } from './keycloak-hash.js';

// Algorithm.Argon2id; the package's const enum cannot be imported under verbatimModuleSyntax.
const ARGON2ID = 2;

// Keycloak 26's Argon2id defaults; @node-rs/argon2 hashes on libuv's thread pool, off the event loop.
const argon2Options = { algorithm: ARGON2ID, memoryCost: 7168, timeCost: 5, parallelism: 1, outputLen: 32 } as const;

/** An Argon2id hash at Keycloak 26's parameters; `timeCost` is a password policy's hashIterations. */
export function hashPassword(password: string, timeCost: number = argon2Options.timeCost): Promise<string> {
  return hash(password, { ...argon2Options, timeCost });
}

/**
 * Whether a stored hash was made otherwise than hashPassword(…, timeCost) would make it now (another algorithm,
 * memory, iterations or parallelism), so that the next successful login should hash the password again.
 */
export function hashNeedsUpgrade(passwordHash: string, timeCost: number = argon2Options.timeCost): boolean {
  const params = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(passwordHash);
  if (!params) return true;
  const [, m, t, p] = params.map(Number);
  return m !== argon2Options.memoryCost || t !== timeCost || p !== argon2Options.parallelism;
}

/** `timeCost` is what a missing hash costs: the realm's hashIterations, as its users' hashes have. */
export async function verifyPassword(password: string, passwordHash: string | null, timeCost: number = argon2Options.timeCost): Promise<boolean> {
  if (!passwordHash) {
    // Spend the same time as a real check so a missing user or password is not told apart by timing.
    await hash(password, { ...argon2Options, timeCost });
    return false;
  }
  try {
    return (await verifyPbkdf2(password, passwordHash)) ?? (await verify(passwordHash, password));
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
