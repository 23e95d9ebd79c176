import type { FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import type { AccessTokenClaims } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { TokenVerificationError, unauthorized } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { bearerToken } from '../protocol/openid-connect/index.js';
import { rolesStillHeld } from '../services/index.js';

export interface AdminAuth {
  /** The realm that issued the token. */
  realm: Realm;
  claims: AccessTokenClaims;
  userId: string;
  clientId: string | null;
}

/** Who is calling: a valid access token of some realm of this server, or a 401. */
export async function authenticateAdmin(ctx: ServerContext, request: FastifyRequest): Promise<AdminAuth> {
  const token = bearerToken(request);
  if (!token) throw unauthorized('Missing or malformed bearer token');
  let issuer: string;
  try {
    issuer = String(decodeJwt(token).iss ?? '');
  } catch {
    throw unauthorized('Malformed token');
  }
  const match = /\/realms\/([^/]+)$/.exec(issuer);
  let realmName: string | null = null;
  try {
    realmName = match ? decodeURIComponent(match[1]) : null;
  } catch {
    realmName = null;
  }
  // Every admin request names its issuer: read through the configuration cache (frozen, never changed here).
  const realm = realmName ? await ctx.storage.realms.cachedByName(realmName) : null;
  if (!realm || !realm.enabled) throw unauthorized('Token issued by an unknown realm');
  try {
    const claims = await ctx.tokens.verify(realm, token, 'Bearer', ctx.config.hostname);
    return { realm, claims: await rolesStillHeld(ctx.storage, realm.id, claims), userId: claims.sub, clientId: claims.azp ?? null };
  } catch (error) {
    if (error instanceof TokenVerificationError) throw unauthorized(error.message);
    throw error;
  }
}
