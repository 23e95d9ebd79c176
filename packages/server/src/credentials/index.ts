import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { verifyPbkdf2 } from './keycloak-hash.js';

// Algorithm.Argon2id; the package's const enum cannot be imported under verbatimModuleSyntax.
const ARGON2ID = 2;

// Keycloak 26's Argon2id defaults; @node-rs/argon2 hashes on libuv's thread pool, off the event loop.
const argon2Options = { algorithm: ARGON2ID, memoryCost: 7168, timeCost: 5, parallelism: 1, outputLen: 32 } as const;

/**
 * The cost of the hashes this server makes: `iterations` is a password policy's hashIterations, `memoryKib` Keycloak
 * 26's 7 MiB, or for test suites only (the passwordHashingTestCost option) the least Argon2 allows. Each hash
 * carries its own parameters, so either kind verifies whatever the server's cost is now.
 */
export interface PasswordHashCost {
  iterations: number;
  memoryKib: number;
}

/** The least memory Argon2 accepts at parallelism 1 (8 KiB per lane): a hash in well under a millisecond. */
const TEST_MEMORY_KIB = 8;

export const PRODUCTION_HASH_COST: PasswordHashCost = { iterations: argon2Options.timeCost, memoryKib: argon2Options.memoryCost };

/** The cost of a new hash at `iterations` (the realm's hashIterations) on a server with or without the test-only cost. */
export function passwordHashCost(iterations: number, testCost: boolean): PasswordHashCost {
  return { iterations, memoryKib: testCost ? TEST_MEMORY_KIB : argon2Options.memoryCost };
}

/** An Argon2id hash at Keycloak 26's parameters, or at `cost`. */
export function hashPassword(password: string, cost: PasswordHashCost = PRODUCTION_HASH_COST): Promise<string> {
  return hash(password, { ...argon2Options, timeCost: cost.iterations, memoryCost: cost.memoryKib });
}

/**
 * Whether a stored hash was made otherwise than hashPassword(…, cost) would make it now (another algorithm,
 * memory, iterations or parallelism), so that the next successful login should hash the password again.
 */
export function hashNeedsUpgrade(passwordHash: string, cost: PasswordHashCost = PRODUCTION_HASH_COST): boolean {
  const params = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(passwordHash);
  if (!params) return true;
  const [, m, t, p] = params.map(Number);
  return m !== cost.memoryKib || t !== cost.iterations || p !== argon2Options.parallelism;
}

/** `cost` is what a missing hash costs: the realm's, as its users' hashes have. */
export async function verifyPassword(password: string, passwordHash: string | null, cost: PasswordHashCost = PRODUCTION_HASH_COST): Promise<boolean> {
  if (!passwordHash) {
    // Spend the same time as a real check so a missing user or password is not told apart by timing.
    await hashPassword(password, cost);
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
