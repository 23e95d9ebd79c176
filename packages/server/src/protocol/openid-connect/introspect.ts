import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../../context.js';
import { oauthError, TokenVerificationError } from '../../model/errors.js';
import { authenticateClient, formField } from './client-auth.js';
import { corsPending } from '../../http/index.js';
import { corsForClient } from './cors.js';
import { realmOrError } from './realm-lookup.js';
import type { TokenType } from './tokens.js';

/** RFC 7662; an invalid, expired or revoked token is simply `{"active": false}`. */
export function introspectRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/token/introspect', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const client = await authenticateClient(ctx.storage, realm, request);
    corsForClient(ctx, request, client);
    if (client.publicClient) throw oauthError.invalid_client('Public clients may not introspect tokens');
    const token = formField(request.body, 'token');
    if (!token) throw oauthError.invalid_request('Missing parameter: token');
    const hint = formField(request.body, 'token_type_hint');
    const order: TokenType[] = hint === 'refresh_token' ? ['Refresh', 'Offline', 'Bearer'] : ['Bearer', 'Refresh', 'Offline'];
    reply.header('cache-control', 'no-store');
    for (const type of order) {
      try {
        const claims = await ctx.tokens.verify(realm, token, type, ctx.config.hostname);
        return {
          ...claims,
          active: true,
          client_id: claims.azp,
          username: claims.preferred_username,
          token_type: type,
        };
      } catch (error) {
        if (!(error instanceof TokenVerificationError)) throw error;
      }
    }
    return { active: false };
  });
}
