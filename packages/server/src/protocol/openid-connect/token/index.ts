import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Client, Realm } from '../../../model/types.js';
import { dpopHeader, dpopRequired, rememberTokenRequestProof, verifyDpopProof } from '../dpop.js';
import type { ProtocolContext } from '../../context.js';
import { oauthError } from '../../../model/errors.js';
import { baseUrl, certificateThumbprint, corsPending } from '../../../http/index.js';
import { issuerOf } from '../tokens.js';
import { certificateBound, certificateConfirmation, requestCertificateChain } from '../mtls.js';
import { checkAllowedOrigin } from '../cors.js';
import { authenticateClient, formField, isFormRequest } from '../client-auth.js';
import { realmOrError } from '../realm-lookup.js';
import { enforceClientPolicies } from '../../../services/index.js';
import { authorizationCodeGrant } from './authorization-code.js';
import { clientCredentialsGrant } from './client-credentials.js';
import { deviceCodeGrant } from './device-code.js';
import { DEVICE_CODE_GRANT } from '../device.js';
import { passwordGrant } from './password.js';
import { refreshTokenGrant } from './refresh-token.js';
import { TOKEN_EXCHANGE_GRANT, tokenExchangeGrant } from './token-exchange.js';

export type GrantHandler = typeof passwordGrant;

/**
 * RFC 9449 5 at the token endpoint, as Keycloak's: a request with a `DPoP` header (or of a client with
 * `dpop.bound.access.tokens`, which must send one) has its proof checked for POST and this URL; the grant then
 * issues an access token bound to the proof's key (`cnf.jkt`, `token_type` DPoP), and for a public client the
 * refresh token too (a confidential client's refresh token is bound by its credentials, RFC 9449 5).
 */
async function withDpopProof(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<ProtocolContext> {
  if (!dpopRequired(client) && dpopHeader(request) === undefined) return ctx;
  const proof = await verifyDpopProof(ctx, realm, request);
  rememberTokenRequestProof(request, proof);
  return { ...ctx, tokens: ctx.tokens.withDpop({ jkt: proof.jkt, bindRefresh: client.publicClient }) };
}

/**
 * RFC 8705 3 at the token endpoint, as Keycloak's: a client with `tls.client.certificate.bound.access.tokens` gets
 * tokens bound to the certificate of the request (`cnf["x5t#S256"]`); without one it is refused (400), except that a
 * refresh is first refused by the refresh grant's own check of the token's binding, as Keycloak answers it.
 */
function withCertificateBinding(ctx: ProtocolContext, client: Client, grantType: string, request: FastifyRequest): ProtocolContext {
  if (!certificateBound(client)) return ctx;
  const chain = grantType === 'refresh_token' ? requestCertificateChain(ctx, request) : null;
  const thumbprint = chain ? certificateThumbprint(chain[0]) : grantType === 'refresh_token' ? undefined : certificateConfirmation(ctx, client, request);
  return thumbprint === undefined ? ctx : { ...ctx, tokens: ctx.tokens.withCertificate(thumbprint) };
}

export function tokenRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const grants: Record<string, GrantHandler> = {
    password: passwordGrant,
    client_credentials: clientCredentialsGrant,
    refresh_token: refreshTokenGrant,
    authorization_code: authorizationCodeGrant,
    [DEVICE_CODE_GRANT]: deviceCodeGrant,
    [TOKEN_EXCHANGE_GRANT]: tokenExchangeGrant,
  };
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/token', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    // Keycloak reads the form parameters only: a JSON body has none, so it names the first one missing.
    const grantType = isFormRequest(request) ? formField(request.body, 'grant_type') : undefined;
    if (!grantType) throw oauthError.invalid_request('Missing form parameter: grant_type');
    const grant = Object.hasOwn(grants, grantType) ? grants[grantType] : undefined;
    if (!grant) throw oauthError.unsupported_grant_type(`Unsupported grant_type ${grantType}`);
    const client = await authenticateClient(ctx, realm, request);
    checkAllowedOrigin(ctx, request, client);
    // Keycloak's client policies (TOKEN_REQUEST and its kin): an executor's refusal is the answer.
    await enforceClientPolicies(ctx.storage, realm, {
      event: 'TOKEN_REQUEST',
      client,
      grantType,
      scope: formField(request.body, 'scope'),
      dpopProof: dpopHeader(request) !== undefined,
      clientCertificate: requestCertificateChain(ctx, request) !== null,
      form: (name) => formField(request.body, name),
      issuer: issuerOf(baseUrl(request, ctx.config.hostname), realm.name),
    });
    const tokens = await grant(withCertificateBinding(await withDpopProof(ctx, realm, client, request), client, grantType, request), realm, client, request);
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
  });
  // Keycloak's token endpoint takes POST only: any other method is JAX-RS's 405.
  app.get('/realms/:realm/protocol/openid-connect/token', async (_request, reply) => methodNotAllowed(reply));
}

/** JAX-RS's answer to a method a resource does not take, as Keycloak sends it. */
export const methodNotAllowed = (reply: FastifyReply) => reply.code(405).header('allow', 'POST, OPTIONS').send({ error: 'HTTP 405 Method Not Allowed' });
