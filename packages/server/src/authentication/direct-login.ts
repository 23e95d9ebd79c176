import type { RequestInfo } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import type { Client, Realm, User } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import { recordLoginSuccess } from './brute-force.js';
import { hasOtpCredential, verifyOtp, type OtpAttempt, type OtpResult } from './otp.js';

/** The user session a direct grant opened: the refresh token it will carry is its only handle (no SSO cookie). */
export interface DirectSession {
  id: string;
  started: number;
  refreshTokenId: string;
  scope: string;
}

/**
 * The end of every successful direct grant (the password grant today): the user session and the client's
 * session in one transaction, the tokens (the protocol's, through `issue`), then the LOGIN event, as
 * `completeLogin` is for the browser.
 */
export async function completeDirectLogin<T>(
  ctx: Pick<ServerContext, 'storage' | 'events' | 'hostStore' | 'config'>,
  realm: Realm,
  client: Client,
  user: User,
  grant: { scope: string; details: Record<string, string>; request: RequestInfo },
  issue: (session: DirectSession) => Promise<T>,
): Promise<T> {
  // The whole login succeeded (password and any OTP): brute-force detection forgets the user's failures.
  await recordLoginSuccess(ctx, realm, user);
  const session: DirectSession = { id: newId(), started: Date.now(), refreshTokenId: newId(), scope: grant.scope };
  await ctx.storage.transaction(async (trx) => {
    await ctx.storage.sessions.create({ id: session.id, realmId: realm.id, userId: user.id, ipAddress: grant.request.ipAddress, started: session.started, lastRefresh: session.started }, trx);
    await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: session.id, clientId: client.id, refreshTokenId: session.refreshTokenId, scope: session.scope, started: session.started }, trx);
  });
  const issued = await issue(session);
  await ctx.events.user(realm, {
    type: 'LOGIN',
    clientId: client.clientId,
    userId: user.id,
    sessionId: session.id,
    details: { ...grant.details, username: user.username },
    request: grant.request,
    user: await userSnapshot(ctx.storage, user),
  });
  return issued;
}

/**
 * The direct grant's conditional OTP (Keycloak's `direct-grant-validate-otp` in "Direct Grant - Conditional OTP"):
 * when the realm's `direct grant` flow asks this user for a code, the `totp` form parameter must be one (a missing
 * one is a wrong one, counted alike). A user the flow requires a code of but who has no credential cannot set one
 * up here: `resolve_required_actions`. Passed to authenticatePassword as its `secondFactor`.
 */
export async function directGrantOtp(
  ctx: Pick<ServerContext, 'storage' | 'events' | 'hostStore' | 'config' | 'flows'>,
  realm: Realm,
  user: User,
  totp: string | undefined,
  attempt: OtpAttempt,
): Promise<OtpResult | { ok: false; error: 'resolve_required_actions' }> {
  const step = await ctx.flows.otpStep(realm, 'direct-grant', await hasOtpCredential(ctx, user));
  if (step === null) return { ok: true };
  if (step === 'configure') return { ok: false, error: 'resolve_required_actions' };
  return verifyOtp(ctx, realm, user, totp ?? '', attempt);
}
