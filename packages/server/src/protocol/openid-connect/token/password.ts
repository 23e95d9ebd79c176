import type { FastifyRequest } from 'fastify';
import { answeredAsBadCredentials, authenticatePassword, completeDirectLogin, directGrantOtp } from '../../../authentication/index.js';
import { oauthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ServerContext } from '../../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { checkedScope } from './scope.js';
import { formField } from '../client-auth.js';
import { offlineRequested, openOfflineSession } from '../offline.js';

/** Resource-owner password grant (Keycloak's "direct access grants"). */
export async function passwordGrant(ctx: ServerContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  if (!client.directAccessGrantsEnabled) {
    throw oauthError.unauthorized_client('Client not allowed for direct access grants');
  }
  const username = formField(request.body, 'username');
  const password = formField(request.body, 'password');
  if (!username || password === undefined) throw oauthError.invalid_request('Missing parameter: username or password');
  const info = requestInfo(request);
  const details = { auth_method: 'openid-connect', grant_type: 'password' };
  const scope = await checkedScope(ctx, client, formField(request.body, 'scope'), true, (reason) =>
    ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, error: 'invalid_request', details: { ...details, username, reason }, request: info }),
  );
  const result = await authenticatePassword(ctx, realm, {
    username,
    password,
    clientId: client.clientId,
    details,
    request: info,
    requiredActions: 'refuse',
    secondFactor: (user) => directGrantOtp(ctx, realm, user, formField(request.body, 'otp') ?? formField(request.body, 'totp'), { clientId: client.clientId, details, request: info }),
  });
  if (!result.ok) {
    // A locked-out user is told what a wrong password is told (Keycloak's answer), the same status included.
    if (answeredAsBadCredentials(result)) throw oauthError.invalid_grant('Invalid user credentials', { status: 401 });
    if (result.error === 'ip_temporarily_blocked') {
      throw oauthError.invalid_grant('Too many failed logins from this address, try again later', { status: 429, headers: { 'retry-after': String(ctx.config.bruteForceIpWindowSeconds) } });
    }
    if (result.error === 'user_disabled') throw oauthError.invalid_grant('Account disabled');
    // Keycloak's answer while a required action (VERIFY_EMAIL, CONFIGURE_TOTP …) is pending: the browser flow does it.
    if (result.error === 'resolve_required_actions') throw oauthError.invalid_grant('Account is not fully set up');
    throw oauthError.invalid_grant('Invalid user credentials', { status: 401 });
  }
  const offline = await offlineRequested(ctx, realm, client, result.user, scope, () =>
    ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, userId: result.user.id, error: 'not_allowed', details: { ...details, username }, request: info }),
  );
  return completeDirectLogin(ctx, realm, client, result.user, { scope, details, request: info }, async (session) => {
    // With offline_access the tokens belong to an offline session beside the one the login opened.
    const held = offline ? await openOfflineSession(ctx, realm, client, result.user, scope, info.ipAddress) : session;
    return ctx.tokens.issue(
      { base: baseUrl(request, ctx.config.hostname), realm, client, user: result.user, sessionId: held.id, sessionStarted: held.started, scope, refreshTokenId: held.refreshTokenId, authTime: Math.floor(session.started / 1000), offline },
      true,
    );
  });
}
