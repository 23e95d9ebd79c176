import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import type { ScopeLink } from '../storage/index.js';
import { loadClientScope } from './client-scopes.js';
import { loadClient, requireMayChangeAdministrationClient } from './clients.js';
import { protocolMapperRoutes } from './protocol-mappers.js';
import { callerOf, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type Params = { realm: string; id: string; scopeId: string };

/** Keycloak's brief form of a linked client scope: its id, name and protocol, by name. */
async function linkedScopes(ctx: ServerContext, realm: Realm, links: ScopeLink[], defaultScope: boolean) {
  const scopes = new Map((await ctx.storage.clientScopes.list(realm.id)).map((sc) => [sc.id, sc]));
  return links
    .filter((l) => l.defaultScope === defaultScope && scopes.has(l.scopeId))
    .map((l) => ({ id: l.scopeId, name: scopes.get(l.scopeId)!.name, protocol: scopes.get(l.scopeId)!.protocol }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The links of client scopes: the realm's default and optional scopes (`default-default-client-scopes`,
 * `default-optional-client-scopes`: what new clients start with; view-clients reads, manage-realm changes, as
 * Keycloak's) and each client's default and optional scopes (view-clients, manage-clients); and a client's own
 * protocol mappers. Linking a scope already linked as the other kind moves it.
 */
export function clientScopeLinkRoutes(app: FastifyInstance, ctx: ServerContext): void {
  for (const [segment, defaultScope] of [['default-default-client-scopes', true], ['default-optional-client-scopes', false]] as const) {
    app.get(`/realms/:realm/${segment}`, async (request: AdminRequest<Params>) => {
      const realm = await targetRealm(ctx, request);
      return linkedScopes(ctx, realm, await ctx.storage.clientScopes.realmLinks(realm.id), defaultScope);
    });
    for (const method of ['PUT', 'DELETE'] as const) {
      app.route({
        method,
        url: `/realms/:realm/${segment}/:scopeId`,
        handler: async (request: AdminRequest<Params>, reply) => {
          const realm = await targetRealm(ctx, request);
          const scope = await loadClientScope(ctx, realm, request.params.scopeId);
          if (method === 'PUT') await ctx.storage.clientScopes.linkToRealm(realm.id, scope.id, defaultScope);
          else await ctx.storage.clientScopes.unlinkFromRealm(realm.id, scope.id);
          await recordAdminEvent(ctx, request, realm, method === 'PUT' ? 'CREATE' : 'DELETE', 'CLIENT_SCOPE', `${segment}/${scope.id}`);
          return reply.code(204).send();
        },
      });
    }
  }

  for (const [segment, defaultScope] of [['default-client-scopes', true], ['optional-client-scopes', false]] as const) {
    app.get(`/realms/:realm/clients/:id/${segment}`, async (request: AdminRequest<Params>) => {
      const { realm, client } = await loadClient(ctx, request);
      return linkedScopes(ctx, realm, await ctx.storage.clientScopes.clientLinks(client.id), defaultScope);
    });
    for (const method of ['PUT', 'DELETE'] as const) {
      app.route({
        method,
        url: `/realms/:realm/clients/:id/${segment}/:scopeId`,
        handler: async (request: AdminRequest<Params>, reply) => {
          const { realm, client } = await loadClient(ctx, request);
          requireMayChangeAdministrationClient(callerOf(request), realm, client);
          const scope = await loadClientScope(ctx, realm, request.params.scopeId);
          if (method === 'PUT') {
            if (scope.protocol !== client.protocol) throw badRequest(`Client scope ${scope.name} has protocol ${scope.protocol}, the client ${client.protocol}`, 'protocol');
            await ctx.storage.clientScopes.linkToClient(client.id, [{ scopeId: scope.id, defaultScope }]);
          } else {
            await ctx.storage.clientScopes.unlinkFromClient(client.id, scope.id);
          }
          await recordAdminEvent(ctx, request, realm, method === 'PUT' ? 'CREATE' : 'DELETE', 'CLIENT_SCOPE_CLIENT_MAPPING', `clients/${client.id}/${segment}/${scope.id}`);
          return reply.code(204).send();
        },
      });
    }
  }

  protocolMapperRoutes(app, ctx, '/realms/:realm/clients/:id', async (request, role) => {
    const { realm, client } = await loadClient(ctx, request);
    if (role === 'manage-clients') requireMayChangeAdministrationClient(callerOf(request), realm, client);
    return { realm, owner: { clientId: client.id }, eventPath: `clients/${client.id}` };
  });
}
