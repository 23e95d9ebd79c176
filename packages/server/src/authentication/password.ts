import type { RequestInfo } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { verifyPassword } from '../credentials/index.js';
import { hashIterations, MAX_PASSWORD_LENGTH, passwordExpired, realmPasswordPolicy } from '../credentials/password-policy.js';
import { upgradePasswordHash } from '../services/index.js';
import type { EventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';

type PasswordContext = Pick<ServerContext, 'storage' | 'events'>;

/** The user a login name stands for: the username, or the e-mail address where the realm allows it. */
export async function findLoginUser(ctx: Pick<ServerContext, 'storage'>, realm: Realm, login: string): Promise<User | null> {
  const byName = await ctx.storage.users.byUsername(realm.id, login);
  if (byName) return byName;
  return realm.loginWithEmailAllowed && login.includes('@') ? ctx.storage.users.byEmail(realm.id, login) : null;
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
  /**
   * A pending required action (VERIFY_EMAIL, or UPDATE_PASSWORD when the policy's forceExpiredPasswordChange
   * says the password has expired; the page asks for a new one). The browser flow carries it out (`'perform'`: returned
   * without an event; sending the link records SEND_VERIFY_EMAIL); the password grant cannot (`'refuse'`:
   * LOGIN_ERROR resolve_required_actions).
   */
  requiredActions: 'perform' | 'refuse';
}

/** Keycloak's event error names for a refused password login. */
export type PasswordError = Extract<EventError, 'user_not_found' | 'invalid_user_credentials' | 'user_disabled' | 'resolve_required_actions'>;

export type PasswordResult =
  | { ok: true; user: User }
  | { ok: false; error: 'user_not_found'; user: null }
  | { ok: false; error: Exclude<PasswordError, 'user_not_found'>; user: User; requiredAction?: 'VERIFY_EMAIL' | 'UPDATE_PASSWORD' };

/**
 * Password authentication, written once for the form login and the password grant: find the user, verify the
 * password (one Argon2id hash even for an unknown user, so timing does not tell which exist), refuse service
 * accounts as bad credentials, refuse disabled users, then the verify-email rule. Each refusal is recorded here
 * as LOGIN_ERROR with Keycloak's error name; the caller only maps the result to a page or an OAuth error.
 */
export async function authenticatePassword(ctx: PasswordContext, realm: Realm, attempt: PasswordAttempt): Promise<PasswordResult> {
  const user = await findLoginUser(ctx, realm, attempt.username);
  // No password is set longer than the cap, so a longer one is wrong: it still costs one hash of its first part.
  const tooLong = attempt.password.length > MAX_PASSWORD_LENGTH;
  const policy = realmPasswordPolicy(realm.passwordPolicy);
  const iterations = hashIterations(policy);
  const valid = (await verifyPassword(attempt.password.slice(0, MAX_PASSWORD_LENGTH), user?.passwordHash ?? null, iterations)) && !tooLong;
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
  if (!user) return refuse({ ok: false, error: 'user_not_found', user: null });
  if (!valid || user.serviceAccountClientId) return refuse({ ok: false, error: 'invalid_user_credentials', user });
  if (!user.enabled) return refuse({ ok: false, error: 'user_disabled', user });
  const unverified = realm.verifyEmail && user.email && !user.emailVerified;
  const requiredAction = unverified ? 'VERIFY_EMAIL' : passwordExpired(policy, user.passwordCreated, Date.now()) ? 'UPDATE_PASSWORD' : null;
  if (requiredAction) {
    const pending = { ok: false, error: 'resolve_required_actions', user, requiredAction } as const;
    return attempt.requiredActions === 'refuse' ? refuse(pending) : pending;
  }
  await upgradePasswordHash(ctx.storage, user, attempt.password, iterations);
  return { ok: true, user };
}
