import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest } from '../model/errors.js';
import { queryInt, queryString } from './query.js';
import { adminEventRep, eventRep } from '../representations/event.js';
import { parseRepresentation } from '../representations/fields.js';
import { applyRealmSettings, eventsConfigRep, eventsConfigSpec } from '../representations/realm.js';
import { recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** A date query parameter: `yyyy-MM-dd` (Keycloak's form) or epoch milliseconds. */
function queryDate(query: Record<string, unknown>, name: string, endOfDay: boolean): number | undefined {
  const raw = queryString(query, name, 32);
  if (raw === undefined || raw === '') return undefined;
  if (/^\d{1,15}$/.test(raw)) return Number(raw);
  if (/^\d{4}-\d{2}-\d{2}$/.test(raw) && !Number.isNaN(Date.parse(raw))) return Date.parse(raw) + (endOfDay ? 86_399_999 : 0);
  throw badRequest(`Query parameter "${name}" must be a date (yyyy-MM-dd) or epoch milliseconds`, name);
}

const queryList = (query: Record<string, unknown>, name: string): string[] | undefined => {
  const raw = query[name];
  if (raw === undefined) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length > 100 || list.some((v) => typeof v !== 'string' || v.length > 64 || v.includes('\u0000'))) throw badRequest(`Query parameter "${name}" is malformed`, name);
  return list as string[];
};

export function eventRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;

  app.get('/realms/:realm/events/config', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    return eventsConfigRep(realm);
  });

  app.put('/realms/:realm/events/config', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    // The console sends an empty expiration field as "": as Keycloak (Jackson reads it as null), no expiration.
    const body = request.body as Record<string, unknown> | null;
    const noExpiration = typeof body === 'object' && body !== null && !Array.isArray(body) && (body.eventsExpiration === '' || body.eventsExpiration === null);
    const rep = parseRepresentation(noExpiration ? { ...body, eventsExpiration: null } : request.body, eventsConfigSpec, [], 'eventsConfig');
    const updated = structuredClone(realm);
    applyRealmSettings(updated, rep, 'eventsConfig', isListener);
    if (noExpiration) updated.eventsExpiration = null;
    await ctx.storage.realms.update(updated);
    await recordAdminEvent(ctx, request, updated, 'UPDATE', 'REALM', 'events/config', rep);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/events', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const q = request.query;
    const rows = await ctx.storage.events.list(realm.id, {
      types: queryList(q, 'type'),
      client: queryString(q, 'client'),
      user: queryString(q, 'user'),
      ipAddress: queryString(q, 'ipAddress'),
      dateFrom: queryDate(q, 'dateFrom', false),
      dateTo: queryDate(q, 'dateTo', true),
      first: queryInt(q, 'first', 0),
      max: queryInt(q, 'max', 100),
    });
    return rows.map(eventRep);
  });

  app.delete('/realms/:realm/events', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    await ctx.storage.events.deleteAll(realm.id, false);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/admin-events', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const q = request.query;
    const rows = await ctx.storage.events.listAdmin(realm.id, {
      operationTypes: queryList(q, 'operationTypes'),
      resourceTypes: queryList(q, 'resourceTypes'),
      resourcePath: queryString(q, 'resourcePath'),
      authUser: queryString(q, 'authUser'),
      dateFrom: queryDate(q, 'dateFrom', false),
      dateTo: queryDate(q, 'dateTo', true),
      first: queryInt(q, 'first', 0),
      max: queryInt(q, 'max', 100),
    });
    return rows.map(adminEventRep);
  });

  app.delete('/realms/:realm/admin-events', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    await ctx.storage.events.deleteAll(realm.id, true);
    return reply.code(204).send();
  });
}
