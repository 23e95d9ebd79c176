import { createHash } from 'node:crypto';
import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import type { EventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { addressBlocked, loginLockout, recordAddressFailure, recordLoginFailure, releaseProof, reserveProof } from './brute-force.js';

/**
 * The limits on every proof checked once the user is known (README, "Second-factor limits"): the OTP code today
 * (the browser's step and the password grant's `totp`), any later second factor (WebAuthn, recovery codes), and
 * the account page's current password, which someone already signed in gives. Written once, in this order: the
 * address's limit (blocked addresses are refused unchecked), the realm's brute-force lockout (as Keycloak's, only
 * when the realm is protected), then the always-on per-user cap; then the proof is checked, and a wrong one counts
 * for all three (Keycloak's per-user counter with the password failures). Each refusal is recorded as an event.
 */

type SecondFactorContext = Pick<AuthenticationContext, 'events' | 'hostStore' | 'storage' | 'config'>;

export interface SecondFactorAttempt {
  /** The client the proof is for (its clientId), for the event. */
  clientId: string;
  /** The entry point's event details (auth_method, grant_type, context …). */
  details: Record<string, string>;
  request: RequestInfo;
  /** The user session the proof is made in (the account page), for the event. */
  sessionId?: string;
  /** The event a refusal is recorded as: LOGIN_ERROR (a sign-in, the default), UPDATE_PASSWORD_ERROR … */
  errorEvent?: string;
}

export type SecondFactorError = Extract<EventError, 'invalid_user_credentials' | 'user_temporarily_disabled' | 'user_disabled' | 'ip_temporarily_blocked'>;

export type SecondFactorResult = { ok: true } | { ok: false; error: SecondFactorError };

/**
 * Checks one proof of `user` through the limits: `verify` runs only when none refuses, at most
 * SECOND_FACTOR_MAX_FAILURES wrong ones in the window however many run at once. A user over the cap is recorded as
 * `user_temporarily_disabled`, as Keycloak records a temporarily locked-out one.
 */
export async function checkSecondFactor(ctx: SecondFactorContext, realm: Realm, user: User, attempt: SecondFactorAttempt, verify: () => Promise<boolean>): Promise<SecondFactorResult> {
  const ip = attempt.request.ipAddress;
  const refuse = async (error: SecondFactorError): Promise<SecondFactorResult> => {
    await ctx.events.user(realm, {
      type: attempt.errorEvent ?? 'LOGIN_ERROR',
      clientId: attempt.clientId,
      userId: user.id,
      sessionId: attempt.sessionId ?? null,
      error,
      details: { ...attempt.details, username: user.username },
      request: attempt.request,
    });
    return { ok: false, error };
  };
  if (await addressBlocked(ctx, ip)) return refuse('ip_temporarily_blocked');
  const lockout = await loginLockout(ctx, realm, user);
  if (lockout === 'temporary') return refuse('user_temporarily_disabled');
  if (lockout === 'permanent') return refuse('user_disabled');
  const reservation = await reserveProof(ctx, realm, user);
  if (reservation === null) return refuse('user_temporarily_disabled');
  if (await verify()) {
    await releaseProof(ctx, realm, user, reservation);
    return { ok: true };
  }
  await recordLoginFailure(ctx, realm, user, ip);
  await recordAddressFailure(ctx, ip);
  return refuse('invalid_user_credentials');
}

/** Proofs one page of a second factor takes (its key): after them the step is dead and the sign-in starts again. */
export const STEP_ATTEMPTS = 5;

/**
 * Takes one of the attempts of the step page whose key is `key` (kept in the shared store for the key's
 * `lifetimeMs`): the attempts left after this one, or null when none was left.
 */
export async function takeStepAttempt(ctx: Pick<AuthenticationContext, 'hostStore'>, key: string, lifetimeMs: number): Promise<number | null> {
  const taken = await ctx.hostStore.increment(`second-factor-step:${createHash('sha256').update(key).digest('base64url')}`, lifetimeMs);
  return taken > STEP_ATTEMPTS ? null : STEP_ATTEMPTS - taken;
}

/**
 * UPDATE_CREDENTIAL for a credential a user just set up (an OTP app, a WebAuthn key, recovery codes), as Keycloak
 * records it: the entry point's details, the credential's type and the username, and what the type adds.
 */
export async function recordCredentialSetUp(ctx: Pick<AuthenticationContext, 'events'>, realm: Realm, user: User, credentialType: string, attempt: SecondFactorAttempt, extra: Record<string, string> = {}): Promise<void> {
  await ctx.events.user(realm, {
    type: 'UPDATE_CREDENTIAL',
    clientId: attempt.clientId,
    userId: user.id,
    details: { ...attempt.details, credential_type: credentialType, username: user.username, ...extra },
    request: attempt.request,
  });
}
