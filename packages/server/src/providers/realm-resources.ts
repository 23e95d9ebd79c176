import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HttpMethod, RealmResource, ResourceRequest, ResourceResponse, ResourceRoute } from '@realmgate/spi';
import type { Realm } from '../model/types.js';
import type { ServiceContext } from '../services/context.js';
import { realmInfo } from '../events/index.js';
import { requestInfo } from '../http/index.js';
import { notFound, ProviderLoadError } from '../model/errors.js';

/** Mounts each RealmResource's routes under /realms/{realm}/{providerId}, adapting Fastify to the SPI shapes. */
export function mountRealmResources(app: FastifyInstance, ctx: ServiceContext, resources: Map<string, RealmResource>): void {
  for (const [providerId, resource] of resources) {
    for (const route of resource.routes) {
      const path = `/realms/:realm/${providerId}${route.path.startsWith('/') ? route.path : `/${route.path}`}`;
      try {
        mountRoute(app, ctx, path, route);
      } catch (error) {
        // Fastify's own message (a duplicate route, an unknown method) does not say whose route it was.
        throw new ProviderLoadError(`realm resource ${providerId} cannot mount ${String(route.method)} ${path}: ${(error as Error).message}`);
      }
    }
  }
}

function mountRoute(app: FastifyInstance, ctx: ServiceContext, path: string, route: ResourceRoute): void {
  app.route<{ Params: Record<string, string>; Querystring: Record<string, string> }>({
    method: route.method,
    url: path,
    handler: async (request, reply) => {
      const realm = await ctx.storage.realms.byName(request.params.realm);
      if (!realm || !realm.enabled) throw notFound('Realm does not exist');
      return sendResourceResponse(reply, await route.handler(resourceRequest(request, realm)));
    },
  });
}

/** The SPI view of a Fastify request to a provider's route (realm resources and provider admin routes). */
export function resourceRequest(request: FastifyRequest, realm: Realm): ResourceRequest {
  const { realm: _realm, ...params } = request.params as Record<string, string>;
  const query: Record<string, string> = {};
  for (const [k, v] of Object.entries((request.query as Record<string, unknown>) ?? {})) if (typeof v === 'string') query[k] = v;
  return {
    realm: realmInfo(realm),
    method: request.method as HttpMethod,
    params,
    query,
    headers: request.headers as Record<string, string | undefined>,
    body: request.body,
    request: requestInfo(request),
  };
}

export function sendResourceResponse(reply: FastifyReply, response: ResourceResponse): FastifyReply {
  reply.code(response.status);
  if (response.headers) reply.headers(response.headers);
  return reply.send(response.body ?? '');
}
