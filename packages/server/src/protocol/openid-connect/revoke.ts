import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import type { ProtocolContext } from '../context.js';
import { baseUrl, corsPending, requestInfo } from '../../http/index.js';
import { enforceClientPolicies } from '../../services/index.js';
import { issuerOf } from './tokens.js';
import { checkAllowedOrigin } from './cors.js';
import { oauthError, TokenVerificationError } from '../../model/errors.js';
import { authenticateClient, formField } from './client-auth.js';
import { realmOrError } from './realm-lookup.js';

/**
 * RFC 7009: revoking a refresh token ends its session; revoking an access token blocks it until it expires.
 * Unknown or invalid tokens answer 200 too, so a caller learns nothing.
 */
export function revokeRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/revoke', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const client = await authenticateClient(ctx, realm, request);
    checkAllowedOrigin(ctx, request, client);
    await enforceClientPolicies(ctx.storage, realm, { event: 'TOKEN_REVOKE', client, form: (name) => formField(request.body, name), issuer: issuerOf(baseUrl(request, ctx.config.hostname), realm.name) });
    const token = formField(request.body, 'token');
    if (!token) throw oauthError.invalid_request('Missing parameter: token');
    // RFC 7009: a refresh token (or an offline one) ends its session, an access token is blocked until it expires.
    let typ: unknown;
    try {
      typ = decodeJwt(token).typ;
    } catch {
      return reply.code(200).send();
    }
    try {
      const refresh = typ === 'Refresh' || typ === 'Offline';
      const claims = await ctx.tokens.verify(realm, token, refresh ? (typ as 'Refresh' | 'Offline') : 'Bearer', ctx.config.hostname, { dpop: 'any' });
      if (claims.azp !== client.clientId) throw oauthError.unauthorized_client('Unmatching clients');
      if (refresh && typeof claims.sid === 'string') {
        await ctx.storage.sessions.delete(claims.sid);
      } else {
        await ctx.storage.sessions.revokeToken(claims.jti, claims.exp * 1000);
      }
      await ctx.events.user(realm, { type: 'REVOKE_GRANT', clientId: client.clientId, userId: claims.sub, request: requestInfo(request) });
    } catch (error) {
      if (!(error instanceof TokenVerificationError)) throw error;
    }
    return reply.code(200).send();
  });
}
