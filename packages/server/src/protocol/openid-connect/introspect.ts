import type { FastifyInstance } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { OAuthError, oauthError, TokenVerificationError } from '../../model/errors.js';
import { authenticateClient, formField } from './client-auth.js';
import { baseUrl, corsPending } from '../../http/index.js';
import { corsForClient } from './cors.js';
import { realmOrError } from './realm-lookup.js';
import { audienceClaim, issuerOf, withoutMechanics, type TokenType } from './tokens.js';
import { enforceClientPolicies } from '../../services/index.js';

const INTROSPECTION_WITHOUT_AUDIENCE = 'allow.token.introspection.without.audience.check';

/** RFC 7662; an invalid, expired or revoked token is simply `{"active": false}`. */
export function introspectRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/token/introspect', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const client = await authenticateClient(ctx, realm, request).catch((error: unknown) => {
      // Keycloak 26.7.3's introspection answers a client-secret client's missing or wrong secret as 401
      // `invalid_client` "Client authentication failed.", where the token endpoint says `unauthorized_client`
      // (measured beside it: test/keycloak/client-auth.keycloak.ts).
      if (error instanceof OAuthError && error.error === 'unauthorized_client' && error.status === 401) throw oauthError.invalid_client('Client authentication failed.');
      throw error;
    });
    corsForClient(ctx, request, client);
    await enforceClientPolicies(ctx.storage, realm, { event: 'TOKEN_INTROSPECT', client, form: (name) => formField(request.body, name), issuer: issuerOf(baseUrl(request, ctx.config.hostname), realm.name) });
    if (client.publicClient) throw oauthError.invalid_client('Public clients may not introspect tokens');
    const token = formField(request.body, 'token');
    if (!token) throw oauthError.invalid_request('Missing parameter: token');
    const hint = formField(request.body, 'token_type_hint');
    const order: TokenType[] = hint === 'refresh_token' ? ['Refresh', 'Offline', 'Bearer'] : ['Bearer', 'Refresh', 'Offline'];
    reply.header('cache-control', 'no-store');
    for (const type of order) {
      try {
        // A DPoP-bound token is introspected as any other: the resource server checks the proof it got (RFC 9449 6.2).
        const claims = await ctx.tokens.verify(realm, token, type, ctx.config.hostname, { dpop: 'any' });
        if (type !== 'Bearer') return { ...claims, active: true, client_id: claims.azp, username: claims.preferred_username, token_type: type };
        // An access token: its mechanics, then what the mappers with `introspection.token.claim` write now (as
        // Keycloak 26, the roles are the user's current ones).
        // As Keycloak 26.6.2 and later: an access token is introspected only by a client its `aud` names (the client
        // it was issued to is not in its own audience unless a mapper puts it there); anyone else hears it is inactive.
        const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
        // Keycloak's deprecated per-client way back to the old behaviour: `allow.token.introspection.without.audience.check`.
        if (!audience.includes(client.clientId) && client.attributes[INTROSPECTION_WITHOUT_AUDIENCE] !== 'true') return { active: false };
        const user = await ctx.storage.users.cachedById(realm.id, claims.sub);
        const tokenClient = await ctx.storage.clients.cachedByClientId(realm.id, claims.azp as string);
        if (!user || !tokenClient) return { active: false };
        const mapped = await ctx.tokens.mappedClaims('introspection', { realm, client: tokenClient, user, token: claims, base: baseUrl(request, ctx.config.hostname) });
        const mechanics = Object.fromEntries(['exp', 'iat', 'jti', 'iss'].filter((k) => claims[k] !== undefined).map((k) => [k, claims[k]]));
        return {
          ...mechanics,
          ...audienceClaim(mapped.aud),
          ...(mapped.sub !== undefined ? { sub: mapped.sub } : {}),
          typ: claims.typ,
          azp: claims.azp,
          ...(claims.sid !== undefined ? { sid: claims.sid } : {}),
          ...withoutMechanics(mapped),
          scope: claims.scope,
          ...(claims.cnf !== undefined ? { cnf: claims.cnf } : {}),
          active: true,
          client_id: claims.azp,
          username: typeof mapped.preferred_username === 'string' ? mapped.preferred_username : user.username,
          token_type: claims.typ === 'DPoP' ? 'DPoP' : type,
        };
      } catch (error) {
        if (!(error instanceof TokenVerificationError)) throw error;
      }
    }
    return { active: false };
  });
}
