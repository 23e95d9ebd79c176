import type { FastifyRequest } from 'fastify';
import { newId } from '../../../credentials/index.js';
import type { Client, Realm, User, UserSession } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { offlineRequested, openOfflineSession } from '../offline.js';

/**
 * The tokens of a sign-in that happened in the browser (an authorization code's, an approved device code's): the
 * client's session in the user's SSO session, or with `offline_access` an offline session beside it, which outlives it.
 */
export async function tokensForBrowserSession(
  ctx: ProtocolContext,
  request: FastifyRequest,
  realm: Realm,
  client: Client,
  user: User,
  session: UserSession,
  grant: { scope: string; nonce: string | null; authTime: number },
  onOfflineRefused: () => Promise<unknown>,
): Promise<IssuedTokens> {
  const { scope } = grant;
  const offline = await offlineRequested(ctx, realm, client, user, scope, onOfflineRefused);
  const refreshTokenId = newId();
  await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: session.id, clientId: client.id, refreshTokenId, scope, started: Date.now() });
  const offlineSession = offline ? await openOfflineSession(ctx, realm, client, user, scope, requestInfo(request).ipAddress) : null;
  return ctx.tokens.issue(
    {
      base: baseUrl(request, ctx.config.hostname),
      realm,
      client,
      user,
      sessionId: offlineSession?.id ?? session.id,
      sessionStarted: offlineSession?.started ?? session.started,
      scope,
      refreshTokenId: offlineSession?.refreshTokenId ?? refreshTokenId,
      nonce: grant.nonce ?? undefined,
      authTime: grant.authTime,
      offline,
    },
    true,
  );
}
