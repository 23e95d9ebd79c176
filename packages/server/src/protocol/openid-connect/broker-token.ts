import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { badRequest, forbidden, notFound, oauthError } from '../../model/errors.js';
import { requireBearer, verifiedAccessToken } from './bearer.js';
import { realmOrError } from './realm-lookup.js';

/**
 * Keycloak's `GET /realms/{r}/broker/{alias}/token`: the upstream token response stored with the caller's link
 * (the provider's `storeToken`), for an access token that holds the `broker` client's `read-token` role. The stored
 * token is answered as it was received; it is never logged.
 */
export function brokerTokenRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  app.get('/realms/:realm/broker/:alias/token', async (request: FastifyRequest<{ Params: { realm: string; alias: string } }>, reply) => {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const claims = await verifiedAccessToken(ctx, realm, requireBearer(request));
    const alias = request.params.alias.slice(0, 255);
    const roles = (claims.resource_access as Record<string, { roles?: unknown }> | undefined)?.broker?.roles;
    if (!Array.isArray(roles) || !roles.includes('read-token')) throw forbidden(`Client [${String(claims.azp ?? '')}] not authorized to retrieve tokens from identity provider [${alias}].`);
    const provider = await ctx.storage.federation.providerByAlias(realm.id, alias);
    if (!provider) throw notFound('Identity Provider not found.');
    if (provider.rest.storeToken !== true) throw badRequest(`Identity Provider [${alias}] does not support this operation.`);
    const user = await ctx.storage.users.byId(realm.id, claims.sub);
    if (!user || !user.enabled) throw oauthError.invalid_token('User not found or disabled');
    const stored = await ctx.storage.federation.linkToken(user.id, provider.internalId);
    if (!stored) throw badRequest(`Identity Provider [${alias}] has no token stored for this user.`);
    return reply.header('cache-control', 'no-store').type('application/json').send(stored);
  });
}
