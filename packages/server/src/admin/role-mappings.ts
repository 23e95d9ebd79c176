import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Realm, Role } from '../model/types.js';
import type { AdminAuth } from './authenticate-admin.js';
import { requireRole, type AdminRole } from './permissions.js';
import { queryInt, queryString } from './query.js';
import { roleReps, rolesFromBody } from '../representations/role.js';
import { callerOf, pathId, recordAdminEvent, type AdminRequest } from './routing.js';

/** Something roles are mapped to: a user (role mappings) or a client (scope mappings). */
export interface MappingHolder {
  realm: Realm;
  id: string;
  /** Resource path of the holder in admin events, e.g. `users/{id}`. */
  eventPath: string;
}

export interface RoleMappingResource {
  /** Route prefix under the realm, e.g. `/realms/:realm/users/:id/role-mappings`. */
  prefix: string;
  /**
   * The holder's name in the console's `ui-ext/available-roles/{type}/{id}` (`users`, `groups`, `clients`,
   * `clientScopes`); without one (an organization's group), no console routes.
   */
  consoleType?: string;
  /** The last segment of admin events' resource path: `role-mappings` or `scope-mappings`. */
  segment: string;
  holder(request: AdminRequest): Promise<MappingHolder>;
  /** Admin event resource types for realm-role and client-role mappings. */
  resourceTypes: { realm: string; client: string };
  /**
   * A role needed besides the table's to change mappings of realm roles where the body decides (the console's
   * Unassign sends realm and client roles together); the `/realm` routes' entries name it themselves.
   */
  manageRealmRoles?: AdminRole;
  /** The check of the roles one call names, before anything is written. */
  mayMap?(caller: AdminAuth, roles: Role[]): Promise<void>;
  mappedIds(holderId: string): Promise<string[]>;
  /** The holder's effective roles (the `/composite` views) when more than its mappings expanded: a user's groups. */
  effectiveIds?(holder: MappingHolder): Promise<Iterable<string>>;
  add(holderId: string, roleIds: string[]): Promise<void>;
  remove(holderId: string, roleIds: string[]): Promise<void>;
}

/** Keycloak's MappingsRepresentation of `roles` (sorted by name): realm roles, and client roles by clientId. */
export async function mappingsRep(ctx: ServerContext, realm: Realm, roles: Role[]) {
  const realmMappings = await roleReps(ctx.storage, roles.filter((r) => !r.clientRole));
  const clientMappings: Record<string, { id: string; client: string; mappings: unknown[] }> = {};
  for (const role of roles.filter((r) => r.clientRole)) {
    const client = await ctx.storage.clients.byId(realm.id, role.containerId);
    if (!client) continue;
    clientMappings[client.clientId] ??= { id: client.id, client: client.clientId, mappings: [] };
    clientMappings[client.clientId].mappings.push(...(await roleReps(ctx.storage, [role])));
  }
  return { ...(realmMappings.length ? { realmMappings } : {}), ...(Object.keys(clientMappings).length ? { clientMappings } : {}) };
}

/**
 * Keycloak's EffectiveRole rows of the console's `ui-ext/effective-roles-all/{type}/{id}` ("Hide inherited roles"
 * unticked): realm roles by name, then client roles by clientId and name; `client` is the clientId, `clientId` the
 * client's id, as in the available-roles rows.
 */
export async function effectiveRoleRows(ctx: ServerContext, realm: Realm, roles: Role[]) {
  const clientIds = new Map<string, string>();
  for (const role of roles.filter((r) => r.clientRole)) {
    if (clientIds.has(role.containerId)) continue;
    const client = await ctx.storage.clients.byId(realm.id, role.containerId);
    if (client) clientIds.set(client.id, client.clientId);
  }
  const rows = roles
    .filter((r) => !r.clientRole || clientIds.has(r.containerId))
    .map((r) => ({
      id: r.id,
      name: r.name,
      description: r.description ?? undefined,
      clientRole: r.clientRole,
      ...(r.clientRole ? { client: clientIds.get(r.containerId), clientId: r.containerId } : {}),
    }));
  const key = (row: (typeof rows)[number]) => `${row.clientRole ? 1 : 0}\u0000${row.client ?? ''}\u0000${row.name}`;
  return rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * The roles named by the console's Unassign (`POST ui-ext/role-mapping-delete/{type}/{id}`): a list of
 * `{roleId, roleName, clientId?}`, read by `roleId`; every one must be a role of this realm or nothing changes.
 */
export async function rolesOfDeleteRequest(ctx: ServerContext, realm: Realm, body: unknown): Promise<Role[]> {
  if (!Array.isArray(body)) throw badRequest('Request body must be an array of {roleId, roleName, clientId}');
  const ids = body.map((item, i) => {
    const roleId = typeof item === 'object' && item !== null ? (item as { roleId?: unknown }).roleId : undefined;
    if (typeof roleId !== 'string') throw badRequest(`[${i}].roleId: is required`);
    return { id: roleId };
  });
  return rolesFromBody(ctx.storage, realm, ids);
}

/**
 * Keycloak's role-mapping resource, the same for every holder: all mappings grouped by realm and client,
 * and per container (`/realm`, `/clients/{client}`) the direct mappings, the roles still available, the
 * effective ones (`/composite`), and POST/DELETE of a role list, all or nothing.
 */
export function roleMappingRoutes(app: FastifyInstance, ctx: ServerContext, resource: RoleMappingResource): void {
  const { prefix } = resource;
  const mappedRoles = async (holderId: string): Promise<Role[]> =>
    (await ctx.storage.roles.byIds(await resource.mappedIds(holderId))).sort((a, b) => a.name.localeCompare(b.name));

  app.get(prefix, async (request: AdminRequest) => {
    const holder = await resource.holder(request);
    return mappingsRep(ctx, holder.realm, await mappedRoles(holder.id));
  });

  type Params = { realm: string; id: string; client?: string };
  const container = async (request: AdminRequest<Params>) => {
    const holder = await resource.holder(request);
    if (request.params.client === undefined) {
      return { holder, containerId: holder.realm.id, type: resource.resourceTypes.realm, path: `${holder.eventPath}/${resource.segment}/realm` };
    }
    const client = await ctx.storage.clients.byId(holder.realm.id, pathId(request.params.client, 'Client'));
    if (!client) throw notFound('Client not found');
    return { holder, containerId: client.id, type: resource.resourceTypes.client, path: `${holder.eventPath}/${resource.segment}/clients/${client.id}` };
  };
  if (resource.consoleType !== undefined) consoleRoutes(resource.consoleType);
  function consoleRoutes(consoleType: string): void {
    // The console's "Assign role → Client roles" dialog: every client role of the realm the holder is not mapped to
    // directly, as Keycloak's {id, role, description, client (its clientId), clientId (its id)}, filtered by `search`
    // (role name or clientId), ordered by clientId and role name, a page of `first`/`max`.
    app.get(`/realms/:realm/ui-ext/available-roles/${consoleType}/:id`, async (request: AdminRequest) => {
      const holder = await resource.holder(request);
      const first = queryInt(request.query, 'first', 0) ?? 0;
      const max = queryInt(request.query, 'max', 100) ?? 100;
      const search = queryString(request.query, 'search')?.toLowerCase() ?? '';
      const mapped = new Set(await resource.mappedIds(holder.id));
      const rows: { id: string; role: string; description?: string; client: string; clientId: string }[] = [];
      for (const client of (await ctx.storage.clients.list(holder.realm.id)).sort((a, b) => a.clientId.localeCompare(b.clientId))) {
        for (const role of (await ctx.storage.roles.list(client.id)).sort((a, b) => a.name.localeCompare(b.name))) {
          if (mapped.has(role.id)) continue;
          if (search && !role.name.toLowerCase().includes(search) && !client.clientId.toLowerCase().includes(search)) continue;
          rows.push({ id: role.id, role: role.name, description: role.description ?? undefined, client: client.clientId, clientId: client.id });
        }
      }
      return rows.slice(first, first + max);
    });

    // "Hide inherited roles" unticked: every role the holder has, mapped directly, through groups or as a composite.
    app.get(`/realms/:realm/ui-ext/effective-roles-all/${consoleType}/:id`, async (request: AdminRequest) => {
      const holder = await resource.holder(request);
      const ids = resource.effectiveIds ? await resource.effectiveIds(holder) : await ctx.storage.roles.expand(await resource.mappedIds(holder.id));
      return effectiveRoleRows(ctx, holder.realm, await ctx.storage.roles.byIds([...ids]));
    });

    // Unassign: the selected rows, realm and client roles together, removed at once under the same checks as the
    // DELETE routes below (the realm-role role where one is needed, the admin-role rule).
    app.post(`/realms/:realm/ui-ext/role-mapping-delete/${consoleType}/:id`, async (request: AdminRequest, reply) => {
      const holder = await resource.holder(request);
      const roles = await rolesOfDeleteRequest(ctx, holder.realm, request.body);
      if (resource.manageRealmRoles && roles.some((r) => !r.clientRole)) requireRole(callerOf(request), holder.realm, resource.manageRealmRoles);
      await resource.mayMap?.(callerOf(request), roles);
      await resource.remove(holder.id, roles.map((r) => r.id));
      const type = roles.some((r) => !r.clientRole) ? resource.resourceTypes.realm : resource.resourceTypes.client;
      await recordAdminEvent(ctx, request, holder.realm, 'DELETE', type, `ui-ext/role-mapping-delete/${consoleType}/${holder.id}`, request.body);
      return reply.code(204).send();
    });
  }

  for (const base of [`${prefix}/realm`, `${prefix}/clients/:client`]) {
    app.get(base, async (request: AdminRequest<Params>) => {
      const c = await container(request);
      return roleReps(ctx.storage, (await mappedRoles(c.holder.id)).filter((r) => r.containerId === c.containerId));
    });
    app.get(`${base}/available`, async (request: AdminRequest<Params>) => {
      const c = await container(request);
      const mapped = new Set(await resource.mappedIds(c.holder.id));
      return roleReps(ctx.storage, (await ctx.storage.roles.list(c.containerId)).filter((r) => !mapped.has(r.id)));
    });
    app.get(`${base}/composite`, async (request: AdminRequest<Params>) => {
      const c = await container(request);
      const ids = resource.effectiveIds ? await resource.effectiveIds(c.holder) : await ctx.storage.roles.expand(await resource.mappedIds(c.holder.id));
      return roleReps(ctx.storage, (await ctx.storage.roles.byIds([...ids])).filter((r) => r.containerId === c.containerId).sort((a, b) => a.name.localeCompare(b.name)));
    });
    for (const [method, operation] of [['POST', 'CREATE'], ['DELETE', 'DELETE']] as const) {
      app.route({
        method,
        url: base,
        handler: async (request: AdminRequest<Params>, reply) => {
          const c = await container(request);
          const roles = await rolesFromBody(ctx.storage, c.holder.realm, request.body, c.containerId);
          await resource.mayMap?.(callerOf(request), roles);
          const ids = roles.map((r) => r.id);
          await (method === 'POST' ? resource.add(c.holder.id, ids) : resource.remove(c.holder.id, ids));
          await recordAdminEvent(ctx, request, c.holder.realm, operation, c.type, c.path, request.body);
          return reply.code(204).send();
        },
      });
    }
  }
}
