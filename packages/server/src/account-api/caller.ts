import type { FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { allowCorsForClient, baseUrl, corsPending, originRefused } from '../http/index.js';
import { ACCOUNT } from '../model/defaults.js';
import { forbidden, InvalidOriginError, notFound, TokenVerificationError, unauthorized } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { bearerToken } from '../protocol/openid-connect/index.js';
import { rolesStillHeld } from '../services/index.js';

export type AccountRequest = FastifyRequest<{ Params: { realm: string } }>;

/** Who calls the account REST API: a user of the realm in the path, with a bearer token of that realm. */
export interface AccountCaller {
  realm: Realm;
  user: User;
  claims: AccessTokenClaims;
  /** The client the token was issued to (`azp`): what the account events record, as Keycloak's do. */
  clientId: string;
  /** The token's session (`sid`), when it has one. */
  sessionId: string | null;
  /** The `account` client roles the token carries and the user still holds. */
  roles: ReadonlySet<string>;
}

/**
 * Authenticates the caller: the realm of the path, a bearer access token issued by that realm (a token of another
 * realm fails its signature check), a person rather than a service account. The token's client's web origins
 * decide the CORS grant, from here on also for the errors that follow.
 */
export async function accountCaller(ctx: ServerContext, request: AccountRequest): Promise<AccountCaller> {
  corsPending(request);
  const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
  if (!realm || !realm.enabled) throw notFound('Realm not found');
  const token = bearerToken(request);
  if (!token) throw unauthorized('Bearer token required');
  let claims: AccessTokenClaims;
  try {
    claims = await ctx.tokens.verify(realm, token, 'Bearer', ctx.config.hostname);
  } catch (error) {
    if (error instanceof TokenVerificationError) throw unauthorized(error.message);
    throw error;
  }
  const client = claims.azp ? await ctx.storage.clients.byClientId(realm.id, claims.azp) : null;
  if (client) allowCorsForClient(request, client, baseUrl(request, ctx.config.hostname));
  // As Keycloak 26.7.3's account API (Cors.checkAllowedOrigins): an Origin the token's client does not allow is refused.
  if (client && originRefused(request, client, baseUrl(request, ctx.config.hostname))) throw new InvalidOriginError();
  // As Keycloak's account API: a token meant for the `account` client (its audience), else not authenticated at all.
  const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audience.includes(ACCOUNT)) throw unauthorized('The token is not meant for the account API');
  const user = await ctx.storage.users.byId(realm.id, claims.sub);
  if (!user || !client) throw unauthorized('user or client not found');
  if (user.serviceAccountClientId) throw unauthorized('Service accounts cannot use the account API');
  const held = await rolesStillHeld(ctx.storage, realm.id, claims);
  return {
    realm,
    user,
    claims,
    clientId: client.clientId,
    sessionId: typeof claims.sid === 'string' ? claims.sid : null,
    roles: new Set(held.resource_access?.[ACCOUNT]?.roles ?? []),
  };
}

/** Keycloak's rule for each account resource: the caller's token must carry one of these `account` roles. */
export function requireOneOf(caller: AccountCaller, ...roles: string[]): void {
  if (!roles.some((role) => caller.roles.has(role))) throw forbidden(`The account API needs the account role ${roles.join(' or ')}`);
}

/** Authenticates and checks the roles in one step: what every account route starts with. */
export async function accountCallerWith(ctx: ServerContext, request: AccountRequest, ...roles: string[]): Promise<AccountCaller> {
  const caller = await accountCaller(ctx, request);
  requireOneOf(caller, ...roles);
  return caller;
}
