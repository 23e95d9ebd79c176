import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, conflict, notFound } from '../model/errors.js';
import type { Group, Organization, Realm } from '../model/types.js';
import { createGroup, deleteGroup, groupRoleNames, GroupTree, moveGroup, updateGroup } from '../services/index.js';
import { groupRep, parseGroup } from '../representations/group.js';
import { userRep } from '../representations/user.js';
import { attributeQuery, nameMatches, page } from './groups.js';
import { loadOrganization } from './organizations.js';
import { queryBool, queryInt, queryString } from './query.js';
import { requireMayMapRoles } from './permissions.js';
import { roleMappingRoutes } from './role-mappings.js';
import { locationOf, pathId, recordAdminEvent, type AdminRequest } from './routing.js';

type OrgParams = { realm: string; id: string };
type OrgGroupParams = OrgParams & { orgGroupId: string };

/**
 * Keycloak 26.7's organization groups (OrganizationGroupsResource, OrganizationGroupResource): groups of the realm's
 * group storage marked with their organization (migration 0035), a tree of their own per organization, left out of
 * the realm's `/groups`, of a user's groups and of tokens (Keycloak's user.getGroupsStream() keeps realm groups only).
 * Only the organization's members may join them. Statuses and messages are Keycloak's.
 */
export function organizationGroupRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { storage } = ctx;
  const base = '/realms/:realm/organizations/:id/groups';

  /** The representations of `groups` of `tree`: brief, or full (attributes and roles); subGroupCount when asked. */
  const reps = async (realm: Realm, tree: GroupTree, groups: Group[], full: boolean, counts: boolean) => {
    const roles = full ? await groupRoleNames(storage, realm.id, groups.map((g) => g.id)) : null;
    // Keycloak names a top-level organization group's parent (the organization's own group, which no API shows);
    // here its parent is the organization, whose id is given.
    return groups.map((g) =>
      groupRep(g.parentId === null && g.organizationId ? { ...g, parentId: g.organizationId } : g, { path: tree.path(g.id), subGroupCount: counts ? tree.childrenOf(g.id).length : undefined, roles: roles?.get(g.id) ?? (full ? { realmRoles: [], clientRoles: {} } : undefined) }),
    );
  };

  const load = async (request: AdminRequest<OrgParams>) => {
    const { realm, org } = await loadOrganization(ctx, request);
    return { realm, org, tree: await GroupTree.loadOrganization(storage, realm.id, org.id) };
  };

  /** The organization's group of the path: 404 when there is no such group, 400 when it is not this organization's. */
  const loadGroup = async (request: AdminRequest<OrgGroupParams>) => {
    const loaded = await load(request);
    const group = await groupOf(loaded.realm, loaded.org, request.params.orgGroupId, 'Group does not exist', 'Group does not belong to the organization');
    return { ...loaded, group: loaded.tree.get(group.id)! };
  };

  /** A group by id that must be one of `org`'s (a move names it in the body). */
  const groupOf = async (realm: Realm, org: Organization, raw: string, missing: string, foreign: string): Promise<Group> => {
    const id = typeof raw === 'string' && raw.length <= 64 && !raw.includes('\u0000') ? raw.toLowerCase() : '';
    const group = id ? await storage.groups.anyById(realm.id, id) : null;
    if (!group) throw notFound(missing);
    if (group.organizationId !== org.id) throw badRequest(foreign);
    return group;
  };

  const requireName = (name: string | undefined): void => {
    if (name === undefined || name.trim() === '') throw badRequest('Group name is missing');
  };

  /** A duplicate sibling is Keycloak's 409 with its own message here. */
  const duplicateAs = async <T>(message: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if ((error as { status?: number }).status === 409) throw conflict(message);
      throw error;
    }
  };

  const eventPath = (request: AdminRequest) => request.url.split('?')[0].replace(/^.*?\/realms\/[^/]+\//, '');

  /** POST …/groups and POST …/groups/{id}/children: a new group (201), or a move of one of the organization's (204). */
  const createOrMove = async (request: AdminRequest<OrgGroupParams>, reply: FastifyReply, parent: Group | null, duplicate: string) => {
    const { realm, org, tree } = await load(request);
    const body = parseGroup(request.body);
    requireName(body.name);
    if (body.id !== undefined) {
      const missing = parent ? 'Could not find child by id' : 'Could not find group by id';
      const child = await groupOf(realm, org, body.id, missing, 'Group does not belong to this organization');
      await duplicateAs(duplicate, () =>
        storage.transaction(async (trx) => {
          await storage.groups.lockTree(realm.id, trx);
          const current = await GroupTree.loadOrganization(storage, realm.id, org.id, trx);
          if (parent && !current.get(parent.id)) throw notFound('Group does not exist');
          await moveGroup(storage, current, current.get(child.id)!, parent?.id ?? null, trx);
        }),
      );
      await recordAdminEvent(ctx, request, realm, 'UPDATE', 'ORGANIZATION_GROUP', eventPath(request), request.body);
      return reply.code(204).send();
    }
    const group = await duplicateAs(duplicate, () =>
      storage.transaction(async (trx) => {
        await storage.groups.lockTree(realm.id, trx);
        const current = await GroupTree.loadOrganization(storage, realm.id, org.id, trx);
        if (parent && !current.get(parent.id)) throw notFound('Group does not exist');
        return createGroup(storage, realm, current, parent?.id ?? null, body, trx);
      }),
    );
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'ORGANIZATION_GROUP', eventPath(request), { ...(request.body as object), id: group.id });
    const grown = new GroupTree([...tree.byId.values(), group], org.id);
    return reply
      .code(201)
      .header('location', locationOf(ctx, request, group.id))
      .send((await reps(realm, grown, [group], parent !== null, false))[0]);
  };

  app.post(base, (request: AdminRequest<OrgGroupParams>, reply) => createOrMove(request, reply, null, 'Group with the given name already exists.'));

  app.get(base, async (request: AdminRequest<OrgParams>) => {
    const { realm, tree } = await load(request);
    const q = request.query;
    const search = queryString(q, 'search');
    const attributes = queryString(q, 'q', 2048);
    const exact = queryBool(q, 'exact');
    const brief = queryBool(q, 'briefRepresentation') ?? true;
    const populate = queryBool(q, 'populateHierarchy') ?? false;
    const counts = queryBool(q, 'subGroupsCount') ?? false;
    const first = queryInt(q, 'first', undefined);
    const max = queryInt(q, 'max', undefined);
    let groups: Group[];
    if (attributes !== undefined) groups = tree.sortByPath([...tree.byId.values()]).filter(attributeQuery(attributes));
    else if (search !== undefined) groups = tree.sortByPath([...tree.byId.values()]).filter(nameMatches(search.trim(), exact));
    else groups = tree.childrenOf(null);
    groups = page(groups, first, max);
    if (!populate) return reps(realm, tree, groups, !brief, counts);
    // The matches with their ancestors up to the organization's top level, nested (the console's tree).
    const nodes = new Map<string, Group>();
    for (const g of groups) for (const n of [...tree.ancestors(g.id), g]) nodes.set(n.id, n);
    const all = await reps(realm, tree, [...nodes.values()], !brief, counts);
    const byId = new Map(all.map((r) => [r.id, r]));
    const roots: typeof all = [];
    for (const rep of all) {
      const parentId = nodes.get(rep.id)!.parentId;
      if (parentId === null) roots.push(rep);
      else byId.get(parentId)?.subGroups.push(rep);
    }
    return roots;
  });

  app.get(`${base}/group-by-path/:path`, async (request: AdminRequest<OrgParams & { path: string }>) => {
    const counts = queryBool(request.query, 'subGroupsCount') ?? false;
    const { realm, tree } = await load(request);
    const path = request.params.path;
    const group = tree.byPath(path.startsWith('/') ? path : `/${path}`);
    if (!group) throw notFound('Group path does not exist');
    return (await reps(realm, tree, [group], false, counts))[0];
  });

  app.get(`${base}/:orgGroupId`, async (request: AdminRequest<OrgGroupParams>) => {
    const { realm, tree, group } = await loadGroup(request);
    return (await reps(realm, tree, [group], true, queryBool(request.query, 'subGroupsCount') ?? false))[0];
  });

  app.put(`${base}/:orgGroupId`, async (request: AdminRequest<OrgGroupParams>, reply) => {
    const { realm, tree, group } = await loadGroup(request);
    const body = parseGroup(request.body);
    requireName(body.name);
    if (body.id !== undefined && body.id.toLowerCase() !== group.id) throw badRequest('Invalid group id');
    await duplicateAs('Sibling group with the given name already exists.', () => updateGroup(storage, tree, group, body));
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'ORGANIZATION_GROUP', eventPath(request), request.body);
    return reply.code(204).send();
  });

  app.delete(`${base}/:orgGroupId`, async (request: AdminRequest<OrgGroupParams>, reply) => {
    const { realm, group } = await loadGroup(request);
    await deleteGroup(storage, group);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION_GROUP', eventPath(request));
    return reply.code(204).send();
  });

  app.get(`${base}/:orgGroupId/children`, async (request: AdminRequest<OrgGroupParams>) => {
    const { realm, tree, group } = await loadGroup(request);
    const search = queryString(request.query, 'search');
    const exact = queryBool(request.query, 'exact');
    let children = tree.childrenOf(group.id);
    if (search !== undefined) children = children.filter(nameMatches(search, exact));
    const paged = page(children, queryInt(request.query, 'first', 0), queryInt(request.query, 'max', 10));
    return reps(realm, tree, paged, false, queryBool(request.query, 'subGroupsCount') ?? false);
  });

  app.post(`${base}/:orgGroupId/children`, async (request: AdminRequest<OrgGroupParams>, reply) => {
    const { group } = await loadGroup(request);
    return createOrMove(request, reply, group, 'Sibling group with the given name already exists');
  });

  // Members: only the organization's members join its groups ---------------------------------------------------

  app.get(`${base}/:orgGroupId/members`, async (request: AdminRequest<OrgGroupParams>) => {
    const { group } = await loadGroup(request);
    const users = await storage.groups.members(group.id, queryInt(request.query, 'first', 0)!, queryInt(request.query, 'max', 100)!);
    const brief = queryBool(request.query, 'briefRepresentation') ?? false;
    return users.map((u) => {
      const rep = userRep(u);
      if (!brief) return { ...rep, membershipType: 'UNMANAGED' };
      const { id, username, firstName, lastName, email, emailVerified, createdTimestamp, enabled, access } = rep;
      return { id, username, firstName, lastName, email, emailVerified, createdTimestamp, enabled, access, membershipType: 'UNMANAGED' };
    });
  });

  const memberOf = async (request: AdminRequest<OrgGroupParams & { userId: string }>) => {
    const loaded = await loadGroup(request);
    const raw = request.params.userId;
    const user = /^[0-9a-f-]{36}$/i.test(raw) ? await storage.users.byId(loaded.realm.id, raw.toLowerCase()) : null;
    if (!user) throw notFound('User does not exist');
    const member = (await storage.groups.organizationGroupIds(user.id, loaded.org.id)).includes(loaded.group.id);
    return { ...loaded, user, member };
  };

  app.put(`${base}/:orgGroupId/members/:userId`, async (request: AdminRequest<OrgGroupParams & { userId: string }>, reply) => {
    const { realm, org, tree, group, user, member } = await memberOf(request);
    if (!(await storage.organizations.isMember(org.id, user.id))) throw badRequest('User is not member of the organization');
    if (member) throw conflict('User is already a member of the group');
    await storage.groups.join(user.id, [group.id]);
    const rep = (await reps(realm, tree, [group], false, false))[0];
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'ORGANIZATION_GROUP_MEMBERSHIP', eventPath(request), rep);
    return reply.code(204).send();
  });

  app.delete(`${base}/:orgGroupId/members/:userId`, async (request: AdminRequest<OrgGroupParams & { userId: string }>, reply) => {
    const { realm, tree, group, user, member } = await memberOf(request);
    if (member) {
      await storage.groups.leave(user.id, group.id);
      const rep = (await reps(realm, tree, [group], false, false))[0];
      await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION_GROUP_MEMBERSHIP', eventPath(request), rep);
    }
    return reply.code(204).send();
  });

  // A member's groups in the organization (OrganizationMemberResource's `{member-id}/groups`).
  app.get('/realms/:realm/organizations/:id/members/:userId/groups', async (request: AdminRequest<OrgParams & { userId: string }>) => {
    const { realm, org, tree } = await load(request);
    const userId = pathId(request.params.userId, 'User');
    if (!(await storage.organizations.isMember(org.id, userId))) throw notFound('User is not a member of the organization');
    let groups = (await storage.groups.organizationGroupIds(userId, org.id)).map((id) => tree.get(id)).filter((g) => g !== undefined);
    const search = queryString(request.query, 'search');
    if (search !== undefined) groups = groups.filter(nameMatches(search, false));
    const paged = page(tree.sortByPath(groups), queryInt(request.query, 'first', 0), queryInt(request.query, 'max', 100));
    return reps(realm, tree, paged, !(queryBool(request.query, 'briefRepresentation') ?? true), false);
  });

  // Role mappings of an organization group: stored and listed as Keycloak's; like Keycloak, they do not reach the
  // members' tokens (only realm groups count for a user's roles).
  roleMappingRoutes(app, ctx, {
    prefix: `${base}/:orgGroupId/role-mappings`,
    segment: 'role-mappings',
    holder: async (request) => {
      const { realm, group } = await loadGroup(request as AdminRequest<OrgGroupParams>);
      return { realm, id: group.id, eventPath: eventPath(request).replace(/\/role-mappings.*$/, '') };
    },
    resourceTypes: { realm: 'REALM_ROLE_MAPPING', client: 'CLIENT_ROLE_MAPPING' },
    mayMap: (caller, roles) => requireMayMapRoles(ctx, caller, roles),
    mappedIds: (groupId) => storage.groups.roleIds([groupId]),
    add: (groupId, roleIds) => storage.groups.grant(groupId, roleIds),
    remove: (groupId, roleIds) => storage.groups.revoke(groupId, roleIds),
  });
}
