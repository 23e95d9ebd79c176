import type { FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import type { AccessTokenClaims } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { AppError, forbidden } from '../model/errors.js';
import { REALM_MANAGEMENT } from '../model/defaults.js';
import type { Realm } from '../model/types.js';
import { bearerToken } from '../protocol/openid-connect/index.js';
import { TokenVerificationError } from '../protocol/openid-connect/tokens.js';

export interface AdminAuth {
  /** The realm that issued the token. */
  realm: Realm;
  claims: AccessTokenClaims;
  userId: string;
  clientId: string | null;
}

export type AdminRole =
  | 'view-realm'
  | 'manage-realm'
  | 'view-clients'
  | 'manage-clients'
  | 'view-users'
  | 'manage-users'
  | 'query-users'
  | 'query-clients'
  | 'view-events'
  | 'manage-events'
  | 'create-realm';

const unauthorized = (why: string) => new AppError(401, 'HTTP 401 Unauthorized', why);

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
  const realm = realmName ? await ctx.storage.realms.byName(realmName) : null;
  if (!realm || !realm.enabled) throw unauthorized('Token issued by an unknown realm');
  try {
    const claims = await ctx.tokens.verify(realm, token, 'Bearer', ctx.config.hostname);
    return { realm, claims, userId: claims.sub, clientId: claims.azp ?? null };
  } catch (error) {
    if (error instanceof TokenVerificationError) throw unauthorized(error.message);
    throw error;
  }
}

export function isSuperAdmin(auth: AdminAuth): boolean {
  return auth.realm.name === 'master' && (auth.claims.realm_access?.roles ?? []).includes('admin');
}

/** Keycloak's rules: realm-admin holds everything, manage-X implies view-X, and a realm's roles act on it alone. */
export function hasRole(auth: AdminAuth, target: Realm | null, role: AdminRole): boolean {
  if (isSuperAdmin(auth)) return true;
  if (role === 'create-realm') return auth.realm.name === 'master' && (auth.claims.realm_access?.roles ?? []).includes('create-realm');
  if (!target || auth.realm.id !== target.id) return false;
  const roles = auth.claims.resource_access?.[REALM_MANAGEMENT]?.roles ?? [];
  if (roles.includes('realm-admin') || roles.includes(role)) return true;
  if (role.startsWith('view-') && roles.includes(`manage-${role.slice(5)}`)) return true;
  if (role.startsWith('query-') && (roles.includes(`view-${role.slice(6)}`) || roles.includes(`manage-${role.slice(6)}`))) return true;
  return false;
}

export function requireRole(auth: AdminAuth, target: Realm | null, role: AdminRole): void {
  if (!hasRole(auth, target, role)) throw forbidden(`Missing the ${role} role for this realm`);
}

/** Any management role at all on the realm: enough to read its basic representation, as in Keycloak. */
export function hasAnyRole(auth: AdminAuth, target: Realm): boolean {
  if (isSuperAdmin(auth)) return true;
  if (auth.realm.id !== target.id) return false;
  return (auth.claims.resource_access?.[REALM_MANAGEMENT]?.roles ?? []).length > 0;
}
