import type { FastifyRequest } from 'fastify';
import type { AdminOperation, UserSnapshot } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { uuidPattern } from '../representations/fields.js';
import { localePattern } from '../representations/localization.js';
import type { AdminAuth } from './authenticate-admin.js';

declare module 'fastify' {
  interface FastifyRequest {
    adminAuth?: AdminAuth;
  }
}

export type AdminRequest<P = Record<string, string>, B = unknown> = FastifyRequest<{ Params: P; Body: B; Querystring: Record<string, unknown> }>;

export function callerOf(request: FastifyRequest): AdminAuth {
  if (!request.adminAuth) throw new Error('admin route reached without authentication');
  return request.adminAuth;
}

/** The realm in the path, or 404. `cached`: through the configuration cache (frozen), for a check that only reads it. */
export async function targetRealm(ctx: ServerContext, request: FastifyRequest, cached = false): Promise<Realm> {
  const name = (request.params as { realm: string }).realm;
  const realm = name.length > 255 ? null : cached ? await ctx.storage.realms.cachedByName(name) : await ctx.storage.realms.byName(name);
  if (!realm) throw notFound('Realm not found.');
  return realm;
}

/** A path id that is not a UUID names nothing: 404 without touching the database. */
export function pathId(value: string, what: string): string {
  if (!uuidPattern.test(value)) throw notFound(`${what} not found`);
  return value.toLowerCase();
}

export async function recordAdminEvent(
  ctx: ServerContext,
  request: FastifyRequest,
  realm: Realm,
  operationType: AdminOperation,
  resourceType: string,
  resourcePath: string,
  representation?: unknown,
  user?: UserSnapshot | null,
): Promise<void> {
  const caller = callerOf(request);
  await ctx.events.admin(realm, {
    operationType,
    resourceType,
    resourcePath,
    representation,
    auth: { realmId: caller.realm.id, clientId: caller.clientId, userId: caller.userId },
    request: requestInfo(request),
    user: user ?? null,
  });
}

/** Absolute URL of a resource just created under the request's path, for the Location header. */
export function locationOf(ctx: ServerContext, request: FastifyRequest, id: string): string {
  const path = request.url.split('?')[0].replace(/\/$/, '');
  return `${baseUrl(request, ctx.config.hostname)}${path}/${encodeURIComponent(id)}`;
}

/** A locale tag in a path (`en`, `pt-BR`, `zh_Hant`): letters, digits, `-` and `_`; anything else is 400. */
export function localeOf(value: string): string {
  if (!localePattern.test(value)) throw badRequest('Invalid locale', 'locale');
  return value;
}
