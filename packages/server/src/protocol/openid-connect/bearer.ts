import type { FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from '@realmgate/spi';
import type { ProtocolContext } from '../context.js';
import { oauthError, TokenVerificationError } from '../../model/errors.js';
import type { Realm } from '../../model/types.js';
import type { DpopProof } from './dpop.js';

/** The bearer token of the Authorization header, or null when there is none or it is not a Bearer one. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return match ? match[1] : null;
}

export function requireBearer(request: FastifyRequest): string {
  const token = bearerToken(request);
  if (!token) {
    throw oauthError.invalid_token('Missing or malformed bearer token', { headers: { 'www-authenticate': 'Bearer realm="realmgate"' } });
  }
  return token;
}

/**
 * An access token presented to a protocol endpoint (userinfo, the broker's token), verified: its claims, or
 * RFC 6750's `invalid_token` with the challenge of the scheme it came with (DPoP for a proof-bound one).
 */
export async function verifiedAccessToken(
  ctx: Pick<ProtocolContext, 'tokens' | 'config'>,
  realm: Realm,
  token: string,
  options: { scheme?: 'Bearer' | 'DPoP'; dpop?: DpopProof } = {},
): Promise<AccessTokenClaims> {
  try {
    return await ctx.tokens.verify(realm, token, 'Bearer', ctx.config.hostname, { dpop: options.dpop });
  } catch (error) {
    if (!(error instanceof TokenVerificationError)) throw error;
    const scheme = options.scheme === 'DPoP' || error.reason === 'dpop_binding' ? 'DPoP' : 'Bearer realm="realmgate",';
    throw oauthError.invalid_token(error.message, { headers: { 'www-authenticate': `${scheme} error="invalid_token"` } });
  }
}
