import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Group, Realm } from '../model/types.js';
import { byName, createGroup, deleteGroup, groupEffectiveRoles, groupRoleNames, GroupTree, moveGroup, updateGroup } from '../services/index.js';
import type { AdminAuth } from './authenticate-admin.js';
import { requireMayMapRoles } from './permissions.js';
import { queryBool, queryInt, queryString } from './query.js';
import { groupRep, parseGroup } from '../representations/group.js';
import { userRep } from '../representations/user.js';
import { roleMappingRoutes } from './role-mappings.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type GroupParams = { realm: string; id: string };

export const nameMatches = (search: string, exact: boolean | undefined) => (g: Group) =>
  exact ? g.name === search : g.name.toLowerCase().includes(search.toLowerCase());

/** `q`: space-separated `key:value` pairs, each an exact attribute match. */
export const attributeQuery = (q: string) => {
  const pairs = q.split(' ').filter(Boolean).map((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0) throw badRequest('Query parameter "q" must be key:value pairs separated by spaces', 'q');
    return [pair.slice(0, at), pair.slice(at + 1)] as const;
  });
  return (g: Group) => pairs.every(([key, value]) => (g.attributes[key] ?? []).includes(value));
};

export const page = <T>(items: T[], first: number | undefined, max: number | undefined): T[] => items.slice(first ?? 0, max === undefined ? undefined : (first ?? 0) + max);

/**
 * Keycloak's groups: the tree (`/groups`, `/groups/{id}`, `/children`, `/count`, `/group-by-path`), role mappings
 * of a group, members, a user's groups and the realm's default groups. Membership, group CRUD and a group's role
 * mappings need manage-users, as in Keycloak; changes that give or take the roles of a group to its members
 * (joining, leaving, moving or deleting a group with members, making it a default group) also pass the admin-role
 * rule for every role the group carries, so manage-users cannot reach realm-admin through a group.
 */
export function groupRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { storage } = ctx;

  const groupIn = (tree: GroupTree, raw: string): Group => {
    const group = tree.get(pathId(raw, 'Group'));
    if (!group) throw notFound('Group not found');
    return group;
  };

  /** Representations of `groups`, brief or full (attributes and roles, one query for all), with subGroupCount. */
  const reps = async (realm: Realm, tree: GroupTree, groups: Group[], full: boolean, subGroups?: Map<string, unknown[]>, plain = false) => {
    const roles = full ? await groupRoleNames(storage, realm.id, groups.map((g) => g.id)) : null;
    return groups.map((g) =>
      groupRep(g, { path: tree.path(g.id), subGroupCount: plain ? undefined : tree.childrenOf(g.id).length, roles: roles?.get(g.id), subGroups: subGroups?.get(g.id), plain }),
    );
  };

  /** Matching groups with their ancestors up to the top level, as nested representations (populateHierarchy). */
  const hierarchy = async (realm: Realm, tree: GroupTree, matches: Group[], full: boolean) => {
    const chains = matches.map((g) => [...tree.ancestors(g.id).reverse(), g]);
    const nodes = new Map<string, Group>();
    for (const chain of chains) for (const g of chain) nodes.set(g.id, g);
    const all = await reps(realm, tree, [...nodes.values()], full);
    const byId = new Map(all.map((r) => [r.id, r]));
    const roots: typeof all = [];
    for (const chain of chains) {
      for (const [i, g] of chain.entries()) {
        const rep = byId.get(g.id)!;
        if (i === 0) {
          if (!roots.includes(rep)) roots.push(rep);
        } else {
          const parent = byId.get(chain[i - 1].id)!;
          if (!parent.subGroups.includes(rep)) parent.subGroups.push(rep);
        }
      }
    }
    return roots.sort(byName);
  };

  /** `subGroupsCount=false`: the representations without `subGroupCount`, nested ones too. */
  const withoutCounts = <T extends { subGroupCount?: number; subGroups: unknown[] }>(list: T[], counts: boolean): T[] => {
    if (!counts) {
      for (const rep of list) {
        delete rep.subGroupCount;
        withoutCounts(rep.subGroups as T[], false);
      }
    }
    return list;
  };

  app.get('/realms/:realm/groups', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const q = request.query;
    const search = queryString(q, 'search');
    const attributes = queryString(q, 'q', 2048);
    const exact = queryBool(q, 'exact');
    const brief = queryBool(q, 'briefRepresentation') ?? true;
    const populate = queryBool(q, 'populateHierarchy') ?? true;
    const counts = queryBool(q, 'subGroupsCount') ?? true;
    const first = queryInt(q, 'first', undefined);
    const max = queryInt(q, 'max', undefined);
    const tree = await GroupTree.load(storage, realm.id);
    if (attributes === undefined && search === undefined) return withoutCounts(await reps(realm, tree, page(tree.childrenOf(null), first, max), !brief), counts);
    let matches = tree.sortByPath([...tree.byId.values()]);
    if (attributes !== undefined) matches = matches.filter(attributeQuery(attributes));
    if (search !== undefined) matches = matches.filter(nameMatches(search.trim(), exact));
    matches = page(matches, first, max);
    return withoutCounts(await (populate ? hierarchy(realm, tree, matches, !brief) : reps(realm, tree, matches, !brief)), counts);
  });

  app.get('/realms/:realm/groups/count', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const search = queryString(request.query, 'search');
    const top = queryBool(request.query, 'top');
    const tree = await GroupTree.load(storage, realm.id);
    if (search !== undefined) return { count: [...tree.byId.values()].filter(nameMatches(search.trim(), false)).length };
    return { count: top ? tree.childrenOf(null).length : tree.byId.size };
  });

  /**
   * The admin-role rule for a change of who holds a group's roles: the roles of these groups (ancestors and
   * composites included) pass only when the caller may hand them out. Skipped when nobody is in the groups.
   */
  const requireMayHandOut = async (caller: AdminAuth, tree: GroupTree, groupIds: (string | null)[], members = true) => {
    const ids = groupIds.filter((id): id is string => id !== null);
    if (!members || ids.length === 0) return;
    await requireMayMapRoles(ctx, caller, await groupEffectiveRoles(storage, tree, ids));
  };
  const hasMembers = (tree: GroupTree, group: Group) => storage.groups.hasMembers([group.id, ...tree.descendants(group.id).map((g) => g.id)]);

  /**
   * POST /groups and POST /groups/{id}/children: a new group, or (with the id of an existing one) a move. Each is
   * one statement (an insert, or an update of the parent), so nothing is half-written; the unique index on
   * (realm, parent, name) refuses a duplicate sibling that a concurrent request created meanwhile.
   */
  const createOrMove = async (request: AdminRequest<GroupParams>, reply: FastifyReply, parentRaw: string | null) => {
    const realm = await targetRealm(ctx, request);
    const body = parseGroup(request.body);
    const tree = await GroupTree.load(storage, realm.id);
    const parent = parentRaw === null ? null : groupIn(tree, parentRaw);
    if (body.id !== undefined) {
      const child = groupIn(tree, body.id);
      if (parent && (body.name === undefined || body.name.trim() === '')) throw badRequest('Group name is required', 'name');
      if (child.parentId !== (parent?.id ?? null) && (await hasMembers(tree, child))) {
        // Its members lose the roles of the old ancestors and gain those of the new ones.
        await requireMayHandOut(callerOf(request), tree, [child.parentId, parent?.id ?? null]);
      }
      // The structure is checked again on the tree as it is inside the locked transaction.
      await storage.transaction(async (trx) => {
        await storage.groups.lockTree(realm.id, trx);
        const current = await GroupTree.load(storage, realm.id, trx);
        if (parent) groupIn(current, parent.id);
        await moveGroup(storage, current, groupIn(current, child.id), parent?.id ?? null, trx);
      });
      await recordAdminEvent(ctx, request, realm, 'UPDATE', 'GROUP', parent ? `groups/${parent.id}/children` : 'groups', request.body);
      return reply.code(204).send();
    }
    // Under a parent: in the locked transaction, so a parent deleted meanwhile is a 404, not an orphan.
    const group = parent
      ? await storage.transaction(async (trx) => {
          await storage.groups.lockTree(realm.id, trx);
          const current = await GroupTree.load(storage, realm.id, trx);
          return createGroup(storage, realm, current, groupIn(current, parent.id).id, body, trx);
        })
      : await createGroup(storage, realm, tree, null, body);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'GROUP', `groups/${group.id}`, { ...(request.body as object), id: group.id });
    const location = locationOf(ctx, request, group.id).replace(/\/groups\/[^/]+\/children\//, '/groups/');
    reply.code(201).header('location', location);
    if (!parent) return reply.send();
    return reply.send((await reps(realm, new GroupTree([...tree.byId.values(), group]), [group], true))[0]);
  };

  app.post('/realms/:realm/groups', (request: AdminRequest<GroupParams>, reply) => createOrMove(request, reply, null));
  app.post('/realms/:realm/groups/:id/children', (request: AdminRequest<GroupParams>, reply) => createOrMove(request, reply, request.params.id));

  /** Not in the realm's tree: an organization's group is Keycloak's 400 (with `message`), anything else 404. */
  const realmGroup = async (realm: Realm, tree: GroupTree, raw: string, message: string): Promise<Group> => {
    const id = pathId(raw, 'Group');
    if (!tree.get(id) && (await storage.groups.anyById(realm.id, id))?.organizationId) throw badRequest(message);
    return groupIn(tree, id);
  };

  const load = async (request: AdminRequest<GroupParams>) => {
    const realm = await targetRealm(ctx, request);
    const tree = await GroupTree.load(storage, realm.id);
    return { realm, tree, group: await realmGroup(realm, tree, request.params.id, 'Cannot manage organization related group via non Organization API.') };
  };

  app.get('/realms/:realm/groups/:id', async (request: AdminRequest<GroupParams>) => {
    const { realm, tree, group } = await load(request);
    return (await reps(realm, tree, [group], true))[0];
  });

  app.put('/realms/:realm/groups/:id', async (request: AdminRequest<GroupParams>, reply) => {
    const { realm, tree, group } = await load(request);
    const body = parseGroup(request.body);
    if (body.id !== undefined && body.id.toLowerCase() !== group.id) throw badRequest('group.id: does not match the group of the path', 'id');
    await updateGroup(storage, tree, group, body);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'GROUP', `groups/${group.id}`, request.body);
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/groups/:id', async (request: AdminRequest<GroupParams>, reply) => {
    const { realm, tree, group } = await load(request);
    // Members of the group and its subgroups lose its roles: taking away admin roles follows the admin-role rule too.
    const subtree = [group.id, ...tree.descendants(group.id).map((g) => g.id)];
    await requireMayHandOut(callerOf(request), tree, subtree, await hasMembers(tree, group));
    await deleteGroup(storage, group);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'GROUP', `groups/${group.id}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/groups/:id/children', async (request: AdminRequest<GroupParams>) => {
    const { realm, tree, group } = await load(request);
    const search = queryString(request.query, 'search');
    const exact = queryBool(request.query, 'exact');
    let children = tree.childrenOf(group.id);
    if (search !== undefined) children = children.filter(nameMatches(search, exact));
    const first = queryInt(request.query, 'first', 0);
    const max = queryInt(request.query, 'max', 10);
    return reps(realm, tree, page(children, first, max), !(queryBool(request.query, 'briefRepresentation') ?? false));
  });

  app.get('/realms/:realm/groups/:id/members', async (request: AdminRequest<GroupParams>) => {
    const { group } = await load(request);
    const users = await storage.groups.members(group.id, queryInt(request.query, 'first', 0)!, queryInt(request.query, 'max', 100)!);
    const brief = queryBool(request.query, 'briefRepresentation') ?? false;
    return users.map((u) => {
      const rep = userRep(u);
      if (!brief) return rep;
      const { id, username, firstName, lastName, email, emailVerified, createdTimestamp, enabled, access } = rep;
      return { id, username, firstName, lastName, email, emailVerified, createdTimestamp, enabled, access };
    });
  });

  roleMappingRoutes(app, ctx, {
    prefix: '/realms/:realm/groups/:id/role-mappings',
    consoleType: 'groups',
    segment: 'role-mappings',
    holder: async (request) => {
      const { realm, group } = await load(request as AdminRequest<GroupParams>);
      return { realm, id: group.id, eventPath: `groups/${group.id}` };
    },
    resourceTypes: { realm: 'REALM_ROLE_MAPPING', client: 'CLIENT_ROLE_MAPPING' },
    mayMap: (caller, roles) => requireMayMapRoles(ctx, caller, roles),
    mappedIds: (groupId) => storage.groups.roleIds([groupId]),
    effectiveIds: async (holder) => (await groupEffectiveRoles(storage, await GroupTree.load(storage, holder.realm.id), [holder.id])).map((r) => r.id),
    add: (groupId, roleIds) => storage.groups.grant(groupId, roleIds),
    remove: (groupId, roleIds) => storage.groups.revoke(groupId, roleIds),
  });

  // One path segment: the slashes of the group's path arrive percent-encoded, as the admin client sends them.
  app.get('/realms/:realm/group-by-path/:path', async (request: AdminRequest<{ realm: string; path: string }>) => {
    const realm = await targetRealm(ctx, request);
    const tree = await GroupTree.load(storage, realm.id);
    const path = request.params.path;
    const group = tree.byPath(path.startsWith('/') ? path : `/${path}`);
    if (!group) throw notFound('Group path does not exist');
    return (await reps(realm, tree, [group], true))[0];
  });

  // A user's groups ---------------------------------------------------------------------------------------

  type UserGroupParams = { realm: string; id: string; groupId: string };
  const loadUser = async (realm: Realm, raw: string) => {
    const user = await storage.users.byId(realm.id, pathId(raw, 'User'));
    if (!user) throw notFound('User not found');
    return user;
  };
  const userGroups = async (request: AdminRequest<UserGroupParams>) => {
    const realm = await targetRealm(ctx, request);
    const user = await loadUser(realm, request.params.id);
    const tree = await GroupTree.load(storage, realm.id);
    const search = queryString(request.query, 'search');
    let groups = (await storage.groups.userGroupIds(user.id)).map((id) => tree.get(id)).filter((g) => g !== undefined);
    if (search !== undefined) groups = groups.filter(nameMatches(search, false));
    return { realm, tree, groups: tree.sortByPath(groups) };
  };

  app.get('/realms/:realm/users/:id/groups', async (request: AdminRequest<UserGroupParams>) => {
    const { realm, tree, groups } = await userGroups(request);
    const paged = page(groups, queryInt(request.query, 'first', 0), queryInt(request.query, 'max', 100));
    return reps(realm, tree, paged, !(queryBool(request.query, 'briefRepresentation') ?? true), undefined, true);
  });

  app.get('/realms/:realm/users/:id/groups/count', async (request: AdminRequest<UserGroupParams>) => ({ count: (await userGroups(request)).groups.length }));

  for (const method of ['PUT', 'DELETE'] as const) {
    app.route({
      method,
      url: '/realms/:realm/users/:id/groups/:groupId',
      handler: async (request: AdminRequest<UserGroupParams>, reply) => {
        const realm = await targetRealm(ctx, request);
        const user = await loadUser(realm, request.params.id);
        const tree = await GroupTree.load(storage, realm.id);
        const group = await realmGroup(realm, tree, request.params.groupId, 'Cannot access organization related group via non Organization API.');
        const member = (await storage.groups.userGroupIds(user.id)).includes(group.id);
        if (member === (method === 'PUT')) return reply.code(204).send();
        await requireMayHandOut(callerOf(request), tree, [group.id]);
        if (method === 'PUT') await storage.groups.join(user.id, [group.id]);
        else await storage.groups.leave(user.id, group.id);
        const rep = (await reps(realm, tree, [group], false))[0];
        await recordAdminEvent(ctx, request, realm, method === 'PUT' ? 'CREATE' : 'DELETE', 'GROUP_MEMBERSHIP', `users/${user.id}/groups/${group.id}`, rep);
        return reply.code(204).send();
      },
    });
  }

  // Default groups ----------------------------------------------------------------------------------------

  app.get('/realms/:realm/default-groups', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const tree = await GroupTree.load(storage, realm.id);
    const groups = (await storage.groups.defaultGroupIds(realm.id)).map((id) => tree.get(id)).filter((g) => g !== undefined);
    return reps(realm, tree, tree.sortByPath(groups), false, undefined, true);
  });

  for (const method of ['PUT', 'DELETE'] as const) {
    app.route({
      method,
      url: '/realms/:realm/default-groups/:groupId',
      handler: async (request: AdminRequest<{ realm: string; groupId: string }>, reply) => {
        const realm = await targetRealm(ctx, request);
        const tree = await GroupTree.load(storage, realm.id);
        const group = groupIn(tree, request.params.groupId);
        // Every user created later (self-registered too) would hold the group's roles.
        if (method === 'PUT') {
          await requireMayHandOut(callerOf(request), tree, [group.id]);
          await storage.groups.addDefault(realm.id, group.id);
        } else await storage.groups.removeDefault(realm.id, group.id);
        await recordAdminEvent(ctx, request, realm, method === 'PUT' ? 'CREATE' : 'DELETE', 'GROUP', `default-groups/${group.id}`);
        return reply.code(204).send();
      },
    });
  }

  // Groups of a role ----------------------------------------------------------------------------------------

  const groupsOfRole = async (request: AdminRequest<{ realm: string; id?: string; roleName: string }>) => {
    const realm = await targetRealm(ctx, request);
    let containerId = realm.id;
    if (request.params.id !== undefined) {
      const client = await storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
      if (!client) throw notFound('Client not found');
      containerId = client.id;
    }
    const role = await storage.roles.byName(containerId, request.params.roleName);
    if (!role) throw notFound('Could not find role');
    const groups = await storage.groups.withRole(realm.id, role.id, queryInt(request.query, 'first', 0)!, queryInt(request.query, 'max', 100)!);
    const tree = await GroupTree.load(storage, realm.id);
    return reps(realm, tree, groups, !(queryBool(request.query, 'briefRepresentation') ?? true));
  };
  app.get('/realms/:realm/roles/:roleName/groups', groupsOfRole);
  app.get('/realms/:realm/clients/:id/roles/:roleName/groups', groupsOfRole);
}
