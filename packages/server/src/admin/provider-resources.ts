import type { FastifyInstance } from 'fastify';
import type { AdminResourceRoute } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { ProviderLoadError } from '../model/errors.js';
import { resourceRequest, sendResourceResponse } from '../providers/index.js';
import { hasRole } from './permissions.js';
import { callerOf, recordAdminEvent, targetRealm } from './routing.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Marks a provider's admin route: its permission is the role it declares, not an entry of route-permissions.ts. */
    providerAdminRole?: string;
  }
}

/**
 * Mounts each provider's admin routes (SPI `adminResource()`) under /admin/realms/{realm}/{providerId}: behind
 * the admin API's authentication, each requiring the role it declares over the realm in the path, and a
 * successful write recorded as an admin event (ACTION, resource type CUSTOM), as Keycloak's own resources are.
 */
export function providerAdminRoutes(app: FastifyInstance, ctx: ServerContext): void {
  for (const [providerId, resource] of ctx.providers.adminResources) {
    for (const route of resource.routes) {
      const relative = route.path.startsWith('/') ? route.path : `/${route.path}`;
      const url = `/realms/:realm/${providerId}${relative}`;
      try {
        mount(app, ctx, url, route);
      } catch (error) {
        throw new ProviderLoadError(`provider ${providerId} cannot mount admin route ${String(route.method)} ${url}: ${(error as Error).message}`);
      }
    }
  }
}

function mount(app: FastifyInstance, ctx: ServerContext, url: string, route: AdminResourceRoute): void {
  app.route<{ Params: Record<string, string>; Querystring: Record<string, unknown> }>({
    method: route.method,
    url,
    config: { providerAdminRole: route.role },
    handler: async (request, reply) => {
      const realm = await targetRealm(ctx, request);
      const caller = callerOf(request);
      const response = await route.handler({
        ...resourceRequest(request, realm),
        admin: { realmId: caller.realm.id, clientId: caller.clientId, userId: caller.userId, hasRole: (role) => hasRole(caller, realm, role) },
      });
      if ((route.audited ?? route.method !== 'GET') && response.status >= 200 && response.status < 300) {
        const path = request.url.split('?')[0].replace(/^\/admin\/realms\/[^/]+\//, '');
        await recordAdminEvent(ctx, request, realm, 'ACTION', 'CUSTOM', path, request.body ?? undefined);
      }
      return sendResourceResponse(reply, response);
    },
  });
}
