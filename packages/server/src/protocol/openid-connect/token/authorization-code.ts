import type { FastifyRequest } from 'fastify';
import { redeemAuthorizationCode, type CodeRefusal } from '../../../authentication/index.js';
import { oauthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { formField } from '../client-auth.js';
import { tokenRequestProof } from '../dpop.js';
import { tokensForBrowserSession } from './session-tokens.js';

/** Keycloak's error_description for each refusal of a code (all are invalid_grant). */
export const refusalDescription: Record<CodeRefusal, string> = {
  not_valid: 'Code not valid',
  redirect_uri: 'Incorrect redirect_uri',
  verifier_malformed: 'PKCE code verifier not specified or malformed',
  verifier_mismatch: 'PKCE verification failed',
  verifier_unexpected: 'PKCE code verifier given for a request without a challenge',
  session_not_active: 'Session not active',
};

/** Redeems a code once: same client, same redirect_uri, PKCE verifier matching the challenge. */
export async function authorizationCodeGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  const code = formField(request.body, 'code');
  if (!code) throw oauthError.invalid_request('Missing parameter: code');
  const redeemed = await redeemAuthorizationCode(
    ctx,
    realm,
    client,
    { code, redirectUri: formField(request.body, 'redirect_uri'), codeVerifier: formField(request.body, 'code_verifier') },
    info,
  );
  if (!redeemed.ok) throw oauthError.invalid_grant(refusalDescription[redeemed.reason]);
  const { grant, session, user } = redeemed;
  // RFC 9449 10, as Keycloak's DPoPUtil.validateDPoPJkt: a code the authorization request bound to a key (`dpop_jkt`)
  // is redeemed only with a proof of that key; the code is spent either way.
  if (grant.dpopJkt !== undefined) {
    const proof = tokenRequestProof(request);
    const refusal = !proof ? 'DPoP Proof missing' : proof.jkt !== grant.dpopJkt ? 'DPoP Proof public key thumbprint does not match dpop_jkt' : null;
    if (refusal) {
      await ctx.events.user(realm, { type: 'CODE_TO_TOKEN_ERROR', clientId: client.clientId, userId: user.id, sessionId: session.id, error: 'invalid_request', request: info, details: { reason: refusal } });
      throw oauthError.invalid_request(refusal);
    }
  }
  const tokens = await tokensForBrowserSession(ctx, request, realm, client, user, session, grant, () =>
    ctx.events.user(realm, { type: 'CODE_TO_TOKEN_ERROR', clientId: client.clientId, userId: user.id, sessionId: session.id, error: 'not_allowed', request: info }),
  );
  await ctx.events.user(realm, { type: 'CODE_TO_TOKEN', clientId: client.clientId, userId: user.id, sessionId: session.id, request: info, details: { code_id: session.id } });
  return tokens;
}
