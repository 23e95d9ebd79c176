import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { badRequest, conflict, forbidden, notFound } from '../model/errors.js';
import type { ClientScope, Realm } from '../model/types.js';
import { isUniqueViolation } from '../storage/index.js';
import { requireMayMapRoles } from './permissions.js';
import { protocolMapperRoutes } from './protocol-mappers.js';
import { clientScopeRep, parseClientScope } from '../representations/client-scope.js';
import { roleMappingRoutes } from './role-mappings.js';
import { locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

const taken = (name: string) => conflict(`Client Scope ${name} already exists`, 'name');

/** A client scope of the realm in the path, or 404 (an id of another realm's scope names nothing here). */
export async function loadClientScope(ctx: ServerContext, realm: Realm, id: string): Promise<ClientScope> {
  const scope = await ctx.storage.clientScopes.byId(realm.id, pathId(id, 'Client scope'));
  if (!scope) throw notFound('Could not find client scope');
  return scope;
}

/**
 * Keycloak's client scopes resource: `/client-scopes` (list, create, read, update, delete), each scope's protocol
 * mappers and its role scope mappings. Reading needs view-clients, writing manage-clients, as Keycloak's. A
 * scope is deleted with its links (realm default lists, clients' scopes), mappers and role scope mappings.
 */
export function clientScopeRoutes(app: FastifyInstance, ctx: ServerContext): void {
  // The caller's role is checked at the door, before the scope is looked up: who may not read scopes learns nothing of their ids.
  const load = async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await targetRealm(ctx, request);
    return { realm, scope: await loadClientScope(ctx, realm, request.params.id) };
  };

  app.get('/realms/:realm/client-scopes', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    return (await ctx.storage.clientScopes.list(realm.id)).map(clientScopeRep);
  });

  app.post('/realms/:realm/client-scopes', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = parseClientScope(request.body);
    const scope: ClientScope = { ...input, id: newId(), realmId: realm.id, protocolMappers: (input.protocolMappers ?? []).map((m) => ({ ...m, id: newId() })) };
    try {
      await ctx.storage.transaction((trx) => ctx.storage.clientScopes.insert(scope, trx));
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(scope.name);
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'CLIENT_SCOPE', `client-scopes/${scope.id}`, clientScopeRep(scope));
    return reply.code(201).header('location', locationOf(ctx, request, scope.id)).send();
  });

  app.get('/realms/:realm/client-scopes/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { scope } = await load(request);
    return clientScopeRep(scope);
  });

  app.put('/realms/:realm/client-scopes/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, scope } = await load(request);
    const body = request.body as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== null && body.id !== scope.id) {
      throw badRequest('clientScope.id: does not match the client scope in the path', 'id');
    }
    // As Keycloak's: the mappers have their own resource, a PUT's `protocolMappers` change nothing.
    const { protocolMappers: _mappers, ...input } = parseClientScope(request.body);
    const updated: ClientScope = { ...scope, ...input };
    try {
      await ctx.storage.clientScopes.update(updated);
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(updated.name);
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'CLIENT_SCOPE', `client-scopes/${scope.id}`, clientScopeRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/client-scopes/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, scope } = await load(request);
    // As Keycloak's: a realm keeps at least one client scope (403 for the last one).
    if ((await ctx.storage.clientScopes.names(realm.id)).size <= 1) throw forbidden('You are not allowed to delete all the client scopes.');
    await ctx.storage.clientScopes.delete(scope.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'CLIENT_SCOPE', `client-scopes/${scope.id}`);
    return reply.code(204).send();
  });

  protocolMapperRoutes(app, ctx, '/realms/:realm/client-scopes/:id', async (request) => {
    const { realm, scope } = await load(request);
    return { realm, owner: { clientScopeId: scope.id }, eventPath: `client-scopes/${scope.id}` };
  });

  roleMappingRoutes(app, ctx, {
    prefix: '/realms/:realm/client-scopes/:id/scope-mappings',
    consoleType: 'clientScopes',
    segment: 'scope-mappings',
    holder: async (request) => {
      const { realm, scope } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, id: scope.id, eventPath: `client-scopes/${scope.id}` };
    },
    resourceTypes: { realm: 'REALM_SCOPE_MAPPING', client: 'CLIENT_SCOPE_MAPPING' },
    manageRealmRoles: 'manage-realm',
    // A scope's roles widen what the tokens of every client using it may carry: an administrative role only by
    // whoever holds it (the admin-role rule).
    mayMap: (caller, roles) => requireMayMapRoles(ctx, caller, roles),
    mappedIds: (scopeId) => ctx.storage.clientScopes.roleIds([scopeId]),
    add: (scopeId, roleIds) => ctx.storage.clientScopes.addRoles(scopeId, roleIds),
    remove: (scopeId, roleIds) => ctx.storage.clientScopes.removeRoles(scopeId, roleIds),
  });
}
