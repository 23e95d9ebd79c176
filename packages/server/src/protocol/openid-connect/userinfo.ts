import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { baseUrl, corsPending, requestInfo } from '../../http/index.js';
import { USERINFO_ALG_ATTRIBUTE, issuerOf, userinfoClaims, withoutMechanics } from './tokens.js';
import { checkAllowedOrigin, corsForClient } from './cors.js';
import { oauthError } from '../../model/errors.js';
import { requireBearer, verifiedAccessToken } from './bearer.js';
import { formField, isFormRequest } from './client-auth.js';
import { authorizationToken, verifyDpopProof } from './dpop.js';
import { realmOrError } from './realm-lookup.js';
import { CERTIFICATE_MISMATCH, certificateBound, presentedWithItsCertificate } from './mtls.js';

export function userinfoRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const handler = async (request: FastifyRequest<{ Params: { realm: string } }>, reply: FastifyReply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    // `Authorization: DPoP …` with a proof for this request (RFC 9449 7), or a Bearer token (never a DPoP-bound one);
    // RFC 6750 2.2: a POST may carry the token as the form parameter `access_token` instead of the header.
    const presented = authorizationToken(request);
    const formToken = request.method === 'POST' && !presented && isFormRequest(request) ? formField(request.body, 'access_token') : undefined;
    const token = presented?.token ?? (formToken || requireBearer(request));
    const proof = presented?.scheme === 'DPoP' ? await verifyDpopProof(ctx, realm, request, { accessToken: token, status: 401 }) : undefined;
    const claims = await verifiedAccessToken(ctx, realm, token, { scheme: presented?.scheme, dpop: proof });
    const client = typeof claims.azp === 'string' ? await ctx.storage.clients.cachedByClientId(realm.id, claims.azp) : null;
    if (client) checkAllowedOrigin(ctx, request, client);
    const user = await ctx.storage.users.cachedById(realm.id, claims.sub);
    if (!user || !user.enabled || !client) throw oauthError.invalid_token('User not found or disabled');
    // RFC 8705 3: a certificate-bound token (its client's setting, or the token's own cnf) only with that certificate.
    if ((certificateBound(client) || (claims.cnf as Record<string, unknown> | undefined)?.['x5t#S256'] !== undefined) && !presentedWithItsCertificate(ctx, claims, request)) {
      throw oauthError.invalid_token(CERTIFICATE_MISMATCH, { headers: { 'www-authenticate': 'Bearer realm="realmgate", error="invalid_token"' } });
    }
    // The claims of the mappers the token's scopes apply with `userinfo.token.claim`; `sub` always.
    const mapped = await ctx.tokens.mappedClaims('userinfo', { realm, client, user, token: claims, base: baseUrl(request, ctx.config.hostname) });
    await ctx.events.user(realm, { type: 'USER_INFO_REQUEST', clientId: claims.azp ?? null, userId: user.id, sessionId: (claims.sid as string) ?? null, request: requestInfo(request) });
    const userinfo = userinfoClaims(user, mapped);
    // OIDC Core 5.3.2: a client with user.info.response.signature.alg gets the claims as a JWT signed with it.
    const alg = client.attributes[USERINFO_ALG_ATTRIBUTE];
    if (!alg || alg === 'unsigned') return userinfo;
    const base = baseUrl(request, ctx.config.hostname);
    const signed = await ctx.tokens.signDocument(realm.id, { iss: issuerOf(base, realm.name), aud: client.clientId, ...userinfo }, alg);
    return reply.header('content-type', 'application/jwt').send(signed);
  };
  app.get('/realms/:realm/protocol/openid-connect/userinfo', handler);
  app.post('/realms/:realm/protocol/openid-connect/userinfo', handler);
}
