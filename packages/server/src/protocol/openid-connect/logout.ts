import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../../context.js';
import { requestInfo } from '../../http/index.js';
import { OAuthError } from '../../model/errors.js';
import { userSnapshot } from '../../services/index.js';
import { authenticateClient, formField } from './client-auth.js';
import { realmOrError } from './realm-lookup.js';
import { TokenVerificationError } from './tokens.js';

/**
 * Back-channel logout with a refresh token (what Keycloak's adapters and the admin client call).
 * RP-initiated browser logout with id_token_hint is added with the browser flows.
 */
export function logoutRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/logout', async (request, reply) => {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const refreshToken = formField(request.body, 'refresh_token');
    if (!refreshToken) throw new OAuthError(400, 'invalid_request', 'Missing parameter: refresh_token');
    const client = await authenticateClient(ctx.storage, realm, request);
    let claims;
    try {
      claims = await ctx.tokens.verify(realm, refreshToken, 'Refresh', ctx.config.hostname);
    } catch (error) {
      if (error instanceof TokenVerificationError) throw new OAuthError(400, 'invalid_grant', error.message === 'session ended' ? 'Session not active' : 'Invalid refresh token');
      throw error;
    }
    if (claims.azp !== client.clientId) throw new OAuthError(400, 'invalid_grant', 'Invalid refresh token');
    const user = await ctx.storage.users.byId(realm.id, claims.sub);
    await ctx.storage.sessions.delete(claims.sid as string);
    await ctx.events.user(realm, {
      type: 'LOGOUT',
      clientId: client.clientId,
      userId: claims.sub,
      sessionId: claims.sid as string,
      request: requestInfo(request),
      user: user ? await userSnapshot(ctx.storage, user) : null,
    });
    return reply.code(204).send();
  });
}
