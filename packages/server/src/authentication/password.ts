import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import { verifyPassword } from '../credentials/index.js';
import { MAX_PASSWORD_LENGTH, policyHashCost, realmPasswordPolicy } from '../credentials/password-policy.js';
import { upgradePasswordHash } from '../services/index.js';
import type { EventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { addressBlocked, loginFailureWorkWithoutUser, loginLockout, recordAddressFailure, recordLoginFailure } from './brute-force.js';
import { checkSecondFactor, type SecondFactorAttempt, type SecondFactorResult } from './second-factor.js';

type PasswordContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config'>;

/**
 * The user a login name stands for: the username, or the e-mail address where the realm allows it. Read through
 * the configuration cache (frozen: copy before changing), which every write to the users' table empties.
 */
export async function findLoginUser(ctx: Pick<AuthenticationContext, 'storage'>, realm: Realm, login: string): Promise<User | null> {
  // Keycloak's order (findUserByNameOrEmail): a name with '@' is an e-mail address first, so a user whose username
  // is someone else's address cannot take that person's sign-in by e-mail.
  if (realm.loginWithEmailAllowed && login.includes('@')) {
    const byEmail = await ctx.storage.users.cachedByLogin(realm.id, 'email', login);
    if (byEmail) return byEmail;
  }
  return ctx.storage.users.cachedByLogin(realm.id, 'username', login);
}

export interface PasswordAttempt {
  /** What the user typed: looked up, and recorded as details.username of a refusal (as Keycloak). */
  username: string;
  password: string;
  /** The client the login is for (its clientId), for the event. */
  clientId: string;
  /** The entry point's own event details (auth_method, grant_type …), on every refusal. */
  details: Record<string, string>;
  request: RequestInfo;
}

/** The first required action still due after a right password (an alias of required-actions/): the browser carries it out. */
export type PendingAction = string;

/** Keycloak's event error names for a refused password login. */
export type PasswordError = Extract<
  EventError,
  'user_not_found' | 'invalid_user_credentials' | 'user_disabled' | 'user_temporarily_disabled' | 'ip_temporarily_blocked' | 'resolve_required_actions'
>;

export type PasswordResult =
  | { ok: true; user: User }
  | { ok: false; error: 'user_not_found' | 'ip_temporarily_blocked'; user: null }
  | {
      ok: false;
      error: Exclude<PasswordError, 'user_not_found' | 'ip_temporarily_blocked' | 'resolve_required_actions'>;
      user: User;
      /** Locked out by brute-force detection (user_temporarily_disabled, or user_disabled by a permanent lockout): answered as bad credentials. */
      lockedOut?: boolean;
    };

/** Refusals answered exactly as a wrong password, so an attacker learns nothing from them (Keycloak's answer to a locked-out user). */
export const answeredAsBadCredentials = (result: Extract<PasswordResult, { ok: false }>): boolean =>
  result.error === 'user_not_found' || result.error === 'invalid_user_credentials' || (result.user !== null && result.lockedOut === true);

/**
 * Password authentication, written once for the form login and the password grant: refuse an address that failed
 * too often (no hash spent: nothing about any user is at stake), find the user, verify the password (one Argon2id
 * hash even for an unknown or locked-out user, so timing tells neither), refuse a user brute-force detection has
 * locked out (not counted again), count a wrong password, refuse service accounts as bad credentials, refuse
 * disabled users. What comes after the password (a second factor, required actions) is the flow's (sign-in.ts). Each refusal is recorded here as LOGIN_ERROR with Keycloak's error
 * name and counted against the address; the caller only maps the result to a page or an OAuth error.
 */
export async function authenticatePassword(ctx: PasswordContext, realm: Realm, attempt: PasswordAttempt): Promise<PasswordResult> {
  const ip = attempt.request.ipAddress;
  const refuse = async <R extends Extract<PasswordResult, { ok: false }>>(result: R): Promise<R> => {
    await ctx.events.user(realm, {
      type: 'LOGIN_ERROR',
      clientId: attempt.clientId,
      userId: result.user?.id ?? null,
      error: result.error,
      details: { ...attempt.details, username: attempt.username },
      request: attempt.request,
    });
    return result;
  };
  if (await addressBlocked(ctx, ip)) return refuse({ ok: false, error: 'ip_temporarily_blocked', user: null });
  const fail = async <R extends Extract<PasswordResult, { ok: false }>>(result: R): Promise<R> => {
    await recordAddressFailure(ctx, ip);
    return refuse(result);
  };
  const user = await findLoginUser(ctx, realm, attempt.username);
  // No password is set longer than the cap, so a longer one is wrong: it still costs one hash of its first part.
  const tooLong = attempt.password.length > MAX_PASSWORD_LENGTH;
  const policy = realmPasswordPolicy(realm.passwordPolicy);
  const cost = policyHashCost(policy, ctx.config.passwordHashingTestCost);
  const valid = (await verifyPassword(attempt.password.slice(0, MAX_PASSWORD_LENGTH), user?.passwordHash ?? null, cost)) && !tooLong;
  if (!user) {
    await loginFailureWorkWithoutUser(ctx, realm);
    return fail({ ok: false, error: 'user_not_found', user: null });
  }
  const lockout = await loginLockout(ctx, realm, user);
  if (lockout === 'temporary') return fail({ ok: false, error: 'user_temporarily_disabled', user, lockedOut: true });
  if (lockout === 'permanent') return fail({ ok: false, error: 'user_disabled', user, lockedOut: true });
  if (!valid || user.serviceAccountClientId) {
    await recordLoginFailure(ctx, realm, user, ip);
    return fail({ ok: false, error: 'invalid_user_credentials', user });
  }
  if (!user.enabled) return fail({ ok: false, error: 'user_disabled', user });
  await upgradePasswordHash(ctx.storage, user, attempt.password, cost);
  // Brute-force failures are forgotten only when the whole login completes (after any OTP step): see completeLogin.
  return { ok: true, user };
}

/**
 * The current password a signed-in user gives to change it (the account page): limited as a second factor is
 * (checkSecondFactor: the address, the realm's lockout, the per-user cap; a wrong one counts for all three), so a
 * session left open does not let anyone guess the password at the speed of the hash.
 */
export async function verifyCurrentPassword(ctx: PasswordContext, realm: Realm, user: User, password: string, attempt: SecondFactorAttempt): Promise<SecondFactorResult> {
  return checkSecondFactor(ctx, realm, user, attempt, async () => {
    const cost = policyHashCost(realmPasswordPolicy(realm.passwordPolicy), ctx.config.passwordHashingTestCost);
    return (await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), user.passwordHash, cost)) && password.length <= MAX_PASSWORD_LENGTH;
  });
}
