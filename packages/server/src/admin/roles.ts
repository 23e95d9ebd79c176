import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { badRequest, badRequestError, conflict, notFound } from '../model/errors.js';
import type { Realm, Role } from '../model/types.js';
import { isUniqueViolation } from '../storage/index.js';
import { requireMayAddRoleTo, requireMayChangeRole, requireMayCompose, requireRole } from './permissions.js';
import { queryInt, queryString } from './query.js';
import { parseRole, roleRep, roleReps, rolesFromBody } from '../representations/role.js';
import { effectiveRoleRows, mappingsRep, rolesOfDeleteRequest } from './role-mappings.js';
import { userRep } from '../representations/user.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** A role PUT: Keycloak changes name and description; a taken name is a 409. */
async function updateRole(ctx: ServerContext, role: Role, body: unknown): Promise<Role> {
  const input = parseRole(body);
  const updated = { ...role, name: input.name ?? role.name, description: input.description ?? null };
  try {
    await ctx.storage.roles.update(updated);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`Role with name ${updated.name} already exists`, 'name');
    throw error;
  }
  return updated;
}

/** Routes shared by realm roles (/roles) and client roles (/clients/{id}/roles): one container each. */
export function containerRoleRoutes(
  app: FastifyInstance,
  ctx: ServerContext,
  prefix: string,
  resolve: (ctx: ServerContext, request: AdminRequest) => Promise<{ realm: Realm; containerId: string; clientRole: boolean; eventPath: string }>,
): void {
  const resourceType = (clientRole: boolean) => (clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE');

  app.get(prefix, async (request: AdminRequest) => {
    const c = await resolve(ctx, request);
    const roles = await ctx.storage.roles.list(c.containerId, {
      search: queryString(request.query, 'search'),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', undefined),
    });
    return roleReps(ctx.storage, roles);
  });

  app.post(prefix, async (request: AdminRequest, reply) => {
    const c = await resolve(ctx, request);
    await requireMayAddRoleTo(ctx, c.realm, c.containerId);
    const input = parseRole(request.body);
    if (!input.name) throw badRequestError('role.name: is required');
    const role: Role = { id: newId(), realmId: c.realm.id, containerId: c.containerId, clientRole: c.clientRole, name: input.name, description: input.description ?? null };
    try {
      await ctx.storage.roles.insert(role);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Role with name ${input.name} already exists`, 'name');
      throw error;
    }
    await recordAdminEvent(ctx, request, c.realm, 'CREATE', resourceType(c.clientRole), `${c.eventPath}/${role.name}`, roleRep(role, false));
    return reply.code(201).header('location', locationOf(ctx, request, role.name)).send();
  });

  const byName = async (request: AdminRequest) => {
    const c = await resolve(ctx, request);
    const role = await ctx.storage.roles.byName(c.containerId, request.params.roleName);
    if (!role) throw notFound('Could not find role');
    return { ...c, role };
  };

  app.get(`${prefix}/:roleName`, async (request: AdminRequest) => {
    const { role } = await byName(request);
    return (await roleReps(ctx.storage, [role]))[0];
  });

  app.put(`${prefix}/:roleName`, async (request: AdminRequest, reply) => {
    const { realm, role, clientRole, eventPath } = await byName(request);
    await requireMayChangeRole(ctx, callerOf(request), role);
    const updated = await updateRole(ctx, role, request.body);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', resourceType(clientRole), `${eventPath}/${updated.name}`, roleRep(updated, false));
    return reply.code(204).send();
  });

  app.delete(`${prefix}/:roleName`, async (request: AdminRequest, reply) => {
    const { realm, role, clientRole, eventPath } = await byName(request);
    await requireMayChangeRole(ctx, callerOf(request), role);
    if (!clientRole && role.name === `default-roles-${realm.name.toLowerCase()}`) throw badRequest('The default role of a realm cannot be deleted');
    await ctx.storage.roles.delete(role.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', resourceType(clientRole), `${eventPath}/${role.name}`);
    return reply.code(204).send();
  });

  app.get(`${prefix}/:roleName/composites`, async (request: AdminRequest) => {
    const { role } = await byName(request);
    return roleReps(ctx.storage, await ctx.storage.roles.composites(role.id));
  });

  app.get(`${prefix}/:roleName/composites/realm`, async (request: AdminRequest) => {
    const { realm, role } = await byName(request);
    return compositesIn(ctx, realm, role, null);
  });

  app.get(`${prefix}/:roleName/composites/clients/:clientUuid`, async (request: AdminRequest<{ realm: string; roleName: string; clientUuid: string }>) => {
    const { realm, role } = await byName(request);
    return compositesIn(ctx, realm, role, request.params.clientUuid);
  });

  app.post(`${prefix}/:roleName/composites`, async (request: AdminRequest, reply) => {
    const { realm, role, clientRole, eventPath } = await byName(request);
    await ctx.storage.roles.addComposites(role.id, await compositeChange(ctx, request, role));
    await recordAdminEvent(ctx, request, realm, 'CREATE', resourceType(clientRole), `${eventPath}/${role.name}/composites`, request.body);
    return reply.code(204).send();
  });

  app.delete(`${prefix}/:roleName/composites`, async (request: AdminRequest, reply) => {
    const { realm, role, clientRole, eventPath } = await byName(request);
    await ctx.storage.roles.removeComposites(role.id, await compositeChange(ctx, request, role));
    await recordAdminEvent(ctx, request, realm, 'DELETE', resourceType(clientRole), `${eventPath}/${role.name}/composites`, request.body);
    return reply.code(204).send();
  });

  app.get(`${prefix}/:roleName/users`, async (request: AdminRequest) => {
    const { realm, role } = await byName(request);
    const rows = await ctx.storage.db
      .selectFrom('user_role')
      .select('user_id')
      .where('role_id', '=', role.id)
      .limit(queryInt(request.query, 'max', 100)!)
      .offset(queryInt(request.query, 'first', 0)!)
      .execute();
    const users = await Promise.all(rows.map((r) => ctx.storage.users.byId(realm.id, r.user_id)));
    return users.filter((u) => u !== null).map((u) => userRep(u!));
  });
}

/**
 * The direct composites of `role` held by one container, as Keycloak's `composites/realm` and
 * `composites/clients/{client-uuid}` list them: the realm's roles (`clientUuid` null) or that client's.
 */
async function compositesIn(ctx: ServerContext, realm: Realm, role: Role, clientUuid: string | null) {
  let containerId = realm.id;
  if (clientUuid !== null) {
    const client = await ctx.storage.clients.byId(realm.id, pathId(clientUuid, 'Client'));
    if (!client) throw notFound('Could not find client');
    containerId = client.id;
  }
  const children = (await ctx.storage.roles.composites(role.id)).filter((child) => child.clientRole === (clientUuid !== null) && child.containerId === containerId);
  return roleReps(ctx.storage, children);
}

/** The roles a composites call adds to or removes from `parent`, once the caller may (requireMayCompose). */
async function compositeChange(ctx: ServerContext, request: AdminRequest, parent: Role): Promise<string[]> {
  const realm = await targetRealm(ctx, request);
  const children = await rolesFromBody(ctx.storage, realm, request.body);
  await requireMayCompose(ctx, callerOf(request), realm, parent, children);
  return children.map((r) => r.id);
}

export function realmRoleRoutes(app: FastifyInstance, ctx: ServerContext): void {
  containerRoleRoutes(
    app,
    ctx,
    '/realms/:realm/roles',
    async (c, request) => {
      const realm = await targetRealm(c, request);
      return { realm, containerId: realm.id, clientRole: false, eventPath: 'roles' };
    },
  );

  const byId = async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await targetRealm(ctx, request);
    const role = await ctx.storage.roles.byId(realm.id, pathId(request.params.id, 'Role'));
    if (!role) throw notFound('Could not find role with id');
    return { realm, role };
  };
  const permissionFor = (role: Role, write: boolean) =>
    role.clientRole ? (write ? 'manage-clients' : 'view-clients') : write ? 'manage-realm' : 'view-realm';

  app.get('/realms/:realm/roles-by-id/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    return (await roleReps(ctx.storage, [role]))[0];
  });
  app.put('/realms/:realm/roles-by-id/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, true));
    await requireMayChangeRole(ctx, callerOf(request), role);
    const updated = await updateRole(ctx, role, request.body);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', role.clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE', `roles-by-id/${role.id}`, roleRep(updated, false));
    return reply.code(204).send();
  });
  app.delete('/realms/:realm/roles-by-id/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, true));
    await requireMayChangeRole(ctx, callerOf(request), role);
    await ctx.storage.roles.delete(role.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', role.clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE', `roles-by-id/${role.id}`);
    return reply.code(204).send();
  });
  app.get('/realms/:realm/roles-by-id/:id/composites', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    return roleReps(ctx.storage, await ctx.storage.roles.composites(role.id));
  });
  app.get('/realms/:realm/roles-by-id/:id/composites/realm', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    return compositesIn(ctx, realm, role, null);
  });
  app.get('/realms/:realm/roles-by-id/:id/composites/clients/:clientUuid', async (request: AdminRequest<{ realm: string; id: string; clientUuid: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    return compositesIn(ctx, realm, role, request.params.clientUuid);
  });
  // The console's view of a role's composites (Realm settings → User registration edits default-roles-<realm>):
  // its children as a MappingsRepresentation, realm roles and client roles by clientId.
  app.get('/realms/:realm/ui-ext/role-mappings/roles/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    return mappingsRep(ctx, realm, (await ctx.storage.roles.composites(role.id)).sort((a, b) => a.name.localeCompare(b.name)));
  });
  // The console's Associated roles tab with "Hide inherited roles" unticked: the role and everything it contains, as
  // Keycloak answers it (the role itself included).
  app.get('/realms/:realm/ui-ext/effective-roles-all/roles/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, false));
    const ids = await ctx.storage.roles.expand([role.id]);
    ids.add(role.id);
    return effectiveRoleRows(ctx, realm, await ctx.storage.roles.byIds([...ids]));
  });
  // Its Unassign: the selected children removed under the same checks as DELETE …/composites.
  app.post('/realms/:realm/ui-ext/role-mapping-delete/roles/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, true));
    const children = await rolesOfDeleteRequest(ctx, realm, request.body);
    await requireMayCompose(ctx, callerOf(request), realm, role, children);
    await ctx.storage.roles.removeComposites(role.id, children.map((r) => r.id));
    await recordAdminEvent(ctx, request, realm, 'DELETE', role.clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE', `ui-ext/role-mapping-delete/roles/${role.id}`, request.body);
    return reply.code(204).send();
  });
  app.post('/realms/:realm/roles-by-id/:id/composites', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, true));
    await ctx.storage.roles.addComposites(role.id, await compositeChange(ctx, request, role));
    await recordAdminEvent(ctx, request, realm, 'CREATE', role.clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE', `roles-by-id/${role.id}/composites`, request.body);
    return reply.code(204).send();
  });
  app.delete('/realms/:realm/roles-by-id/:id/composites', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, role } = await byId(request);
    requireRole(callerOf(request), realm, permissionFor(role, true));
    await ctx.storage.roles.removeComposites(role.id, await compositeChange(ctx, request, role));
    await recordAdminEvent(ctx, request, realm, 'DELETE', role.clientRole ? 'CLIENT_ROLE' : 'REALM_ROLE', `roles-by-id/${role.id}/composites`, request.body);
    return reply.code(204).send();
  });
}
