import type { FastifyRequest } from 'fastify';
import { newId } from '../../../credentials/index.js';
import { oauthError, TokenVerificationError, type EventError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { formField } from '../client-auth.js';
import { refreshTokenType } from '../offline.js';
import { tokenRequestProof } from '../dpop.js';
import { narrowedScope } from './scope.js';
import { CERTIFICATE_MISMATCH, certificateBound, presentedWithItsCertificate } from '../mtls.js';

/**
 * Refresh as Keycloak 26: a refresh token may be used again until it expires or its session ends, unless the
 * realm's `revokeRefreshToken` is on. Then only the token issued last, or the one used last, is accepted ("Stale
 * token" for an older one), and the one used last at most `refreshTokenMaxReuse` more times ("Maximum allowed
 * refresh token reuse exceeded"). A refusal does not end the session, as in Keycloak. An `Offline` token refreshes
 * its offline session.
 */
export async function refreshTokenGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  const presented = formField(request.body, 'refresh_token');
  if (!presented) throw oauthError.invalid_request('Missing parameter: refresh_token');
  const refuse = async (description: string, error: EventError = 'invalid_token', userId: string | null = null) => {
    await ctx.events.user(realm, { type: 'REFRESH_TOKEN_ERROR', clientId: client.clientId, userId, error, request: info });
    return oauthError.invalid_grant(description);
  };
  const refuseWith = async (error: Error, userId: string | null = null) => {
    await ctx.events.user(realm, { type: 'REFRESH_TOKEN_ERROR', clientId: client.clientId, userId, error: 'invalid_token', request: info });
    return error;
  };
  let claims;
  try {
    claims = await ctx.tokens.verify(realm, presented, refreshTokenType(presented), ctx.config.hostname ? ctx.config.hostname : null);
  } catch (error) {
    if (error instanceof TokenVerificationError) throw await refuse(error.reason === 'session_ended' ? 'Session not active' : 'Invalid refresh token');
    throw error;
  }
  if (claims.azp !== client.clientId) throw await refuse('Invalid refresh token. Token client and authorized client don\'t match', 'invalid_token', claims.sub);
  // RFC 9449 5: a DPoP-bound refresh token (a public client's) is refreshed only with a proof of the same key.
  const boundTo = (claims.cnf as { jkt?: unknown } | undefined)?.jkt;
  if (boundTo !== undefined) {
    const proof = tokenRequestProof(request);
    if (!proof) throw oauthError.invalid_dpop_proof('DPoP proof is missing');
    if (proof.jkt !== boundTo) throw oauthError.invalid_dpop_proof('DPoP proof and token binding verification failed');
  }
  // RFC 8705 3: a certificate-bound client's refresh token (or any token bound to a certificate) only with that certificate.
  if ((certificateBound(client) || (claims.cnf as Record<string, unknown> | undefined)?.['x5t#S256'] !== undefined) && !presentedWithItsCertificate(ctx, claims, request)) {
    throw await refuseWith(oauthError.unauthorized_client(CERTIFICATE_MISMATCH));
  }
  const sessionId = claims.sid as string;
  const session = await ctx.storage.sessions.byId(sessionId);
  const clientSession = session ? await ctx.storage.sessions.clientSession(sessionId, client.id) : null;
  const user = session ? await ctx.storage.users.byId(realm.id, session.userId) : null;
  if (!session || !clientSession || !user) throw await refuse('Session not active', 'invalid_token', claims.sub);
  if (!user.enabled) throw await refuse('User disabled', 'user_disabled', user.id);
  const next = newId();
  const reuseId = typeof claims.reuse_id === 'string' ? claims.reuse_id : '';
  if (realm.revokeRefreshToken) {
    const use = await ctx.storage.sessions.useRefreshToken(clientSession.id, reuseId, claims.jti as string, next, realm.refreshTokenMaxReuse);
    if (use !== 'ok') {
      // As Keycloak: the client's part of the session ends (its tokens stop working); the user's session stays.
      await ctx.storage.sessions.deleteClientSession(clientSession.id);
      throw await refuse(use === 'stale' ? 'Stale token' : 'Maximum allowed refresh token reuse exceeded', 'invalid_token', user.id);
    }
  }
  const scope = await narrowedScope(ctx, client, clientSession.scope, formField(request.body, 'scope'));
  if (scope === null) throw oauthError.invalid_scope(`Invalid scopes: ${formField(request.body, 'scope')}`);
  const now = Date.now();
  await ctx.storage.sessions.touch(sessionId, now);
  const tokens = await ctx.tokens.issue(
    {
      base: baseUrl(request, ctx.config.hostname),
      realm,
      client,
      user,
      sessionId,
      sessionStarted: session.started,
      scope,
      refreshTokenId: next,
      authTime: Math.floor(session.started / 1000),
      offline: session.offline,
      reuseId,
    },
    true,
  );
  await ctx.events.user(realm, { type: 'REFRESH_TOKEN', clientId: client.clientId, userId: user.id, sessionId, request: info, details: { refresh_token_id: next } });
  return tokens;
}
