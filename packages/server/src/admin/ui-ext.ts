import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { forbidden } from '../model/errors.js';
import { visibleRealms } from './permissions.js';
import { queryInt, queryString } from './query.js';
import { updateRealm } from './realms.js';
import { callerOf, targetRealm, type AdminRequest } from './routing.js';
import { checkProfileConfig } from './user-profile.js';

/**
 * Endpoints Keycloak's admin console calls that are not part of the documented admin API: `ui-ext/…` (answers
 * shaped for the console's pages). Each answers only what the caller may
 * see of the realm; the ones here need any administrative role on it, as Keycloak's.
 */
export function uiExtensionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  // What every administrator of the realm may know about it: no user storage providers here.
  app.get('/realms/:realm/ui-ext/info', async (request: AdminRequest) => {
    await targetRealm(ctx, request);
    return { userProfileProvidersEnabled: false };
  });

  // The realm picker: names of the realms the caller administers, a page of them, matching `search` if given.
  app.get('/realms/:realm/ui-ext/realms/names', async (request: AdminRequest) => {
    await targetRealm(ctx, request);
    const first = queryInt(request.query, 'first', 0) ?? 0;
    const max = queryInt(request.query, 'max', 100) ?? 100;
    const search = queryString(request.query, 'search')?.toLowerCase() ?? '';
    const visible = await visibleRealms(ctx, callerOf(request));
    // As GET /admin/realms: a caller who administers no realm at all is refused, not answered an empty list.
    if (visible.length === 0) throw forbidden('No realm is visible to this caller');
    return visible
      .filter((r) => r.name.toLowerCase().includes(search))
      .sort((a, b) => a.name.localeCompare(b.name))
      .slice(first, first + max)
      .map((r) => ({ name: r.name, displayName: r.displayName ?? '' }));
  });

  // The console's realm save (Realm settings tabs, Themes among them): Keycloak's UIRealmRepresentation, a realm
  // representation with the user profile configuration as `upConfig`. The realm goes through the realm PUT's own
  // update (manage-realm, its checks, its admin event) and answers as it does (204); `upConfig`, when given, as
  // `PUT …/users/profile` takes it, checked first so that a refused one leaves the realm unchanged (Keycloak's one
  // transaction rolls both back).
  app.put('/realms/:realm/ui-ext', async (request: AdminRequest, reply) => {
    const body = request.body;
    if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'upConfig' in body) {
      const { upConfig, ...realm } = body as Record<string, unknown>;
      if (upConfig !== null && upConfig !== undefined) checkProfileConfig(upConfig);
      await updateRealm(ctx, request, realm);
    } else {
      await updateRealm(ctx, request, body);
    }
    return reply.code(204).send();
  });

  // The event listeners a realm can name (Realm settings → Events): the installed providers'.
  app.get('/realms/:realm/ui-ext/available-event-listeners', async (request: AdminRequest) => {
    await targetRealm(ctx, request);
    return [...ctx.providers.eventListeners.keys()].sort().map((id) => ({ id }));
  });
}
