import { randomUUID } from 'node:crypto';
import type { AuthenticationContext } from './context.js';
import type { BruteForceSettings } from '../model/brute-force.js';
import type { Realm, User } from '../model/types.js';

/**
 * Brute-force detection as Keycloak 26 (the realm's bruteForceProtected … fields), written once for every way of
 * proving who one is: the password (authenticatePassword calls it for the form login and the password grant) and
 * any later proof (checkSecondFactor, second-factor.ts, calls `loginLockout` before checking one and
 * `recordLoginFailure` after a wrong one). Failures are counted per user in the shared store, so every process
 * sees them; each update is a compare-and-set loop, so concurrent failures are all counted. Apart from it, a
 * per-address limit on failed logins (server options `bruteForceIpMaxFailures`, `bruteForceIpWindowSeconds`) stops
 * one address from spraying guesses over many accounts, and an always-on per-user cap limits wrong proofs after
 * the password (second factors) even in a realm without brute-force detection.
 */

type BruteForceContext = Pick<AuthenticationContext, 'hostStore' | 'storage' | 'config'>;

/** A user's login failures, as the shared store keeps them (times in epoch milliseconds). */
export interface LoginFailures {
  numFailures: number;
  /** Temporary lockouts since the failures were last reset (for maxTemporaryLockouts). */
  numTemporaryLockouts: number;
  lastFailure: number;
  lastIPFailure: string;
  /** Locked until then (0: not locked). */
  lockedUntil: number;
  /** Locked out permanently: the user was disabled by it. */
  permanent: boolean;
}

export type Lockout = 'temporary' | 'permanent';

/** Keycloak's answer shape for a user's brute-force status (GET …/attack-detection/brute-force/users/{id}). */
export interface BruteForceStatus {
  numFailures: number;
  /** Temporary lockouts since the failures were last reset. */
  numTemporaryLockouts: number;
  /** Wrong proofs after the password that count now (the always-on cap below, whether or not detection is on). */
  numSecondaryAuthFailures: number;
  disabled: boolean;
  lastIPFailure: string;
  lastFailure: number;
  /** The end of a temporary lockout, epoch seconds as Keycloak's; 0 when none. */
  failedLoginNotBefore: number;
}

/** The clock: Date.now, so a test moves it with fake time. */
const now = (): number => Date.now();

/** Records of a realm live under a generation, so clearing every user's failures is one write. */
const generationKey = (realmId: string): string => `brute-force:${realmId}:generation`;

async function failuresKey(ctx: BruteForceContext, realmId: string, userId: string, kind: 'brute-force' | 'second-factor' = 'brute-force'): Promise<string> {
  const generation = (await ctx.hostStore.get(generationKey(realmId))) ?? '0';
  return `${kind}:${realmId}:${generation}:${userId}`;
}

function parse(raw: string | null): LoginFailures | null {
  if (raw === null) return null;
  try {
    return JSON.parse(raw) as LoginFailures;
  } catch {
    return null;
  }
}

/** The failures that still count at `at`: none once the failure reset time has passed since the last one. */
function current(record: LoginFailures | null, settings: BruteForceSettings, at: number): LoginFailures | null {
  if (record === null || record.permanent) return record;
  return at - record.lastFailure > settings.maxDeltaTimeSeconds * 1000 && at >= record.lockedUntil ? null : record;
}

/** Whether `user` is locked out now; null when the realm is not protected or the user is not locked. */
export async function loginLockout(ctx: BruteForceContext, realm: Realm, user: User): Promise<Lockout | null> {
  if (!realm.bruteForce.bruteForceProtected) return null;
  const record = current(parse(await ctx.hostStore.get(await failuresKey(ctx, realm.id, user.id))), realm.bruteForce, now());
  if (record === null) return null;
  // An administrator who enabled the user again has ended the permanent lockout.
  if (record.permanent) return user.enabled ? null : 'permanent';
  return now() < record.lockedUntil ? 'temporary' : null;
}

/** The record after one more failure at `at` from `ip`, by Keycloak's rules. */
export function nextFailure(previous: LoginFailures | null, settings: BruteForceSettings, at: number, ip: string): LoginFailures {
  const record: LoginFailures = previous ? { ...previous } : { numFailures: 0, numTemporaryLockouts: 0, lastFailure: 0, lastIPFailure: ip, lockedUntil: 0, permanent: false };
  const sinceLast = previous ? at - previous.lastFailure : Infinity;
  record.numFailures += 1;
  record.lastFailure = at;
  record.lastIPFailure = ip;
  const { failureFactor, waitIncrementSeconds, maxFailureWaitSeconds } = settings;
  const locks = settings.bruteForceStrategy === 'LINEAR' ? record.numFailures >= failureFactor : record.numFailures % failureFactor === 0;
  let waitSeconds = 0;
  if (locks) {
    if (settings.permanentLockout && record.numTemporaryLockouts >= settings.maxTemporaryLockouts) {
      record.permanent = true;
      return record;
    }
    if (settings.permanentLockout) record.numTemporaryLockouts += 1;
    const steps = settings.bruteForceStrategy === 'LINEAR' ? 1 + record.numFailures - failureFactor : Math.floor(record.numFailures / failureFactor);
    waitSeconds = Math.min(waitIncrementSeconds * steps, maxFailureWaitSeconds);
  }
  if (sinceLast < settings.quickLoginCheckMilliSeconds) waitSeconds = Math.max(waitSeconds, settings.minimumQuickLoginWaitSeconds);
  if (waitSeconds > 0) record.lockedUntil = Math.max(record.lockedUntil, at + waitSeconds * 1000);
  return record;
}

/**
 * Counts one failed proof (a wrong password, later a wrong code) of `user` from `ip`. Not while the user is
 * locked: the caller refuses those without counting, as Keycloak does. A permanent lockout disables the user.
 */
export async function recordLoginFailure(ctx: BruteForceContext, realm: Realm, user: User, ip: string): Promise<void> {
  const settings = realm.bruteForce;
  if (!settings.bruteForceProtected) return;
  const key = await failuresKey(ctx, realm.id, user.id);
  for (;;) {
    const raw = await ctx.hostStore.get(key);
    const at = now();
    const record = nextFailure(current(parse(raw), settings, at), settings, at, ip);
    // Kept while the failures count, or while locked if that is longer; a permanent lockout until cleared.
    const ttl = record.permanent ? undefined : Math.max(settings.maxDeltaTimeSeconds * 1000, record.lockedUntil - at, 1000);
    if (!(await ctx.hostStore.compareAndSet(key, raw, JSON.stringify(record), ttl))) continue;
    if (record.permanent && !parse(raw)?.permanent) {
      const stored = await ctx.storage.users.byId(realm.id, user.id);
      if (stored?.enabled) {
        await ctx.storage.users.update({ ...stored, enabled: false });
        await ctx.storage.sessions.deleteForUser(user.id);
      }
    }
    return;
  }
}

/**
 * The shared-store round trips of `loginLockout` and `recordLoginFailure`, spent for a login name that names no
 * user, so the time a wrong guess takes does not tell whether the account exists. Reads only: nothing is kept.
 */
export async function loginFailureWorkWithoutUser(ctx: BruteForceContext, realm: Realm): Promise<void> {
  if (!realm.bruteForce.bruteForceProtected) return;
  // As loginLockout (generation, record), then recordLoginFailure (generation, record, compare-and-set).
  await ctx.hostStore.get(await failuresKey(ctx, realm.id, 'no-user'));
  const key = await failuresKey(ctx, realm.id, 'no-user');
  await ctx.hostStore.get(key);
  await ctx.hostStore.get(key);
}

/** A login that succeeded: the user's failures are forgotten, as Keycloak resets them. */
export async function recordLoginSuccess(ctx: BruteForceContext, realm: Realm, user: User): Promise<void> {
  if (!realm.bruteForce.bruteForceProtected) return;
  const key = await failuresKey(ctx, realm.id, user.id);
  if ((await ctx.hostStore.get(key)) !== null) await ctx.hostStore.delete(key);
}

/** The user's status as Keycloak's attack-detection API shows it. */
export async function bruteForceStatus(ctx: BruteForceContext, realm: Realm, user: User): Promise<BruteForceStatus> {
  const record = realm.bruteForce.bruteForceProtected ? current(parse(await ctx.hostStore.get(await failuresKey(ctx, realm.id, user.id))), realm.bruteForce, now()) : null;
  const numSecondaryAuthFailures = liveProofs(await ctx.hostStore.get(await failuresKey(ctx, realm.id, user.id, 'second-factor')), now()).length;
  if (record === null) return { numFailures: 0, numTemporaryLockouts: 0, numSecondaryAuthFailures, disabled: false, lastIPFailure: 'n/a', lastFailure: 0, failedLoginNotBefore: 0 };
  return {
    numFailures: record.numFailures,
    numTemporaryLockouts: record.numTemporaryLockouts ?? 0,
    numSecondaryAuthFailures,
    disabled: (await loginLockout(ctx, realm, user)) !== null,
    lastIPFailure: record.lastIPFailure,
    lastFailure: record.lastFailure,
    failedLoginNotBefore: record.lockedUntil > 0 ? Math.floor(record.lockedUntil / 1000) : 0,
  };
}

/** Forgets one user's failures, the wrong proofs after the password included (an administrator's unlock; enabling a permanently locked-out user). */
export async function clearLoginFailures(ctx: BruteForceContext, realmId: string, userId: string): Promise<void> {
  await ctx.hostStore.delete(await failuresKey(ctx, realmId, userId));
  await ctx.hostStore.delete(await failuresKey(ctx, realmId, userId, 'second-factor'));
}

/** Forgets every user's failures in the realm (both kinds): the records of the old generation are no longer read. */
export async function clearRealmLoginFailures(ctx: BruteForceContext, realmId: string): Promise<void> {
  await ctx.hostStore.set(generationKey(realmId), randomUUID());
}

// ---------------------------------------------------------------------------------------------------------
// The per-address limit

const addressKey = (ip: string): string => `login-failures-ip:${ip}`;

/** True when `ip` has failed to log in too often lately: every login from it is refused until the window slides. */
export async function addressBlocked(ctx: BruteForceContext, ip: string): Promise<boolean> {
  const { bruteForceIpMaxFailures: max, bruteForceIpWindowSeconds: window } = ctx.config;
  if (max === 0) return false;
  return (await ctx.hostStore.countHits(addressKey(ip), window * 1000)) >= max;
}

/** Counts one failed login from `ip`, whatever the realm or user. */
export async function recordAddressFailure(ctx: BruteForceContext, ip: string): Promise<void> {
  const { bruteForceIpMaxFailures: max, bruteForceIpWindowSeconds: window } = ctx.config;
  if (max > 0) await ctx.hostStore.recordHit(addressKey(ip), window * 1000);
}

// ---------------------------------------------------------------------------------------------------------
// The always-on cap on wrong proofs after the password

/**
 * Wrong proofs after the password (second-factor codes, the account page's current password) one user may make
 * within SECOND_FACTOR_WINDOW_SECONDS, whether or not the realm's brute-force detection is on (README, "Second-factor
 * limits"). Every process sees the same count (the shared store).
 */
export const SECOND_FACTOR_MAX_FAILURES = 10;
export const SECOND_FACTOR_WINDOW_SECONDS = 12 * 3600;

/** The user's proofs that count: [id, epoch milliseconds] of each wrong one, and of each one being checked. */
type Proofs = [string, number][];

function liveProofs(raw: string | null, at: number): Proofs {
  if (raw === null) return [];
  try {
    const proofs = JSON.parse(raw) as Proofs;
    return Array.isArray(proofs) ? proofs.filter((p) => Array.isArray(p) && at - p[1] < SECOND_FACTOR_WINDOW_SECONDS * 1000) : [];
  } catch {
    return [];
  }
}

/**
 * Reserves one of the user's wrong proofs before a proof is checked: its id, or null when the cap is reached. The
 * reservation counts as a wrong proof unless `releaseProof` takes it back after a right one, so a burst of
 * concurrent guesses gets no more checks than the cap (a compare-and-set loop, as recordLoginFailure).
 */
export async function reserveProof(ctx: BruteForceContext, realm: Realm, user: User): Promise<string | null> {
  const key = await failuresKey(ctx, realm.id, user.id, 'second-factor');
  for (;;) {
    const raw = await ctx.hostStore.get(key);
    const at = now();
    const proofs = liveProofs(raw, at);
    if (proofs.length >= SECOND_FACTOR_MAX_FAILURES) return null;
    const id = randomUUID();
    if (await ctx.hostStore.compareAndSet(key, raw, JSON.stringify([...proofs, [id, at]]), SECOND_FACTOR_WINDOW_SECONDS * 1000)) return id;
  }
}

/** Takes back the reservation of a proof that was right. */
export async function releaseProof(ctx: BruteForceContext, realm: Realm, user: User, id: string): Promise<void> {
  const key = await failuresKey(ctx, realm.id, user.id, 'second-factor');
  for (;;) {
    const raw = await ctx.hostStore.get(key);
    const proofs = liveProofs(raw, now());
    const rest = proofs.filter((p) => p[0] !== id);
    if (rest.length === proofs.length) return;
    // Nothing left to count: kept a moment only.
    const ttl = rest.length === 0 ? 1000 : SECOND_FACTOR_WINDOW_SECONDS * 1000;
    if (await ctx.hostStore.compareAndSet(key, raw, JSON.stringify(rest), ttl)) return;
  }
}
