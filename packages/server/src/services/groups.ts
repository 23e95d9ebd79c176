import { newId } from '../credentials/index.js';
import { badRequest, conflict } from '../model/errors.js';
import type { Group, Realm, Role } from '../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../storage/index.js';

/** What a group representation may set: the admin API's body, a realm file's group. */
export interface GroupInput {
  name?: string;
  description?: string;
  attributes?: Record<string, string[]>;
}

/** Ordinal (code unit) order, as Keycloak lists groups: `A` before `a`, the same on every database and locale. */
export const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * A realm's groups as a tree, read in one query: paths, subgroups, ancestors and searches are walks in memory.
 * An organization's groups are a tree of their own (`organizationId`), top level under the organization.
 */
export class GroupTree {
  readonly byId = new Map<string, Group>();
  private readonly children = new Map<string | null, Group[]>();

  constructor(
    groups: Group[],
    readonly organizationId: string | null = null,
  ) {
    for (const group of groups) this.byId.set(group.id, group);
    for (const group of [...groups].sort(byName)) {
      const parent = group.parentId !== null && this.byId.has(group.parentId) ? group.parentId : null;
      this.children.set(parent, [...(this.children.get(parent) ?? []), group]);
    }
  }

  static async load(storage: Storage, realmId: string, db?: Db): Promise<GroupTree> {
    return new GroupTree(await storage.groups.tree(realmId, db));
  }

  static async loadOrganization(storage: Storage, realmId: string, organizationId: string, db?: Db): Promise<GroupTree> {
    return new GroupTree(await storage.groups.organizationTree(realmId, organizationId, db), organizationId);
  }

  /** The tree `group` is in, read again (inside a transaction: as it is there). */
  static of(storage: Storage, group: Group, db?: Db): Promise<GroupTree> {
    return group.organizationId ? GroupTree.loadOrganization(storage, group.realmId, group.organizationId, db) : GroupTree.load(storage, group.realmId, db);
  }

  get(id: string): Group | undefined {
    return this.byId.get(id);
  }

  /** Top-level groups (parent null), or the subgroups of `parentId`, by name. */
  childrenOf(parentId: string | null): Group[] {
    return this.children.get(parentId) ?? [];
  }

  /** The parent first, the top-level group last. Stops at a repeated group, so a corrupted cycle cannot loop. */
  ancestors(id: string): Group[] {
    const result: Group[] = [];
    const seen = new Set([id]);
    let parentId = this.byId.get(id)?.parentId ?? null;
    while (parentId !== null && !seen.has(parentId)) {
      const parent = this.byId.get(parentId);
      if (!parent) break;
      result.push(parent);
      seen.add(parentId);
      parentId = parent.parentId;
    }
    return result;
  }

  /** Every group below `id`, depth first. */
  descendants(id: string): Group[] {
    const result: Group[] = [];
    const seen = new Set([id]);
    const walk = (parentId: string) => {
      for (const child of this.childrenOf(parentId)) {
        if (seen.has(child.id)) continue;
        seen.add(child.id);
        result.push(child);
        walk(child.id);
      }
    };
    walk(id);
    return result;
  }

  /** The groups in path order (ordinal). */
  sortByPath(groups: Group[]): Group[] {
    const paths = new Map(groups.map((g) => [g.id, this.path(g.id)]));
    return groups.sort((a, b) => byName({ name: paths.get(a.id)! }, { name: paths.get(b.id)! }));
  }

  /** `/top/sub/group`. A name may hold a `/`: Keycloak 26 writes it as it is, and so does this. */
  path(id: string): string {
    const group = this.byId.get(id);
    if (!group) return '';
    return [group, ...this.ancestors(id)].reverse().map((g) => `/${g.name}`).join('');
  }

  /** The group at `path`; a name with a `/` in it is found too (the tree is walked by name prefixes). */
  byPath(path: string): Group | null {
    if (!path.startsWith('/')) return null;
    const walk = (parentId: string | null, rest: string): Group | null => {
      for (const child of this.childrenOf(parentId)) {
        if (rest === child.name) return child;
        if (rest.startsWith(`${child.name}/`)) {
          const found = walk(child.id, rest.slice(child.name.length + 1));
          if (found) return found;
        }
      }
      return null;
    };
    return walk(null, path.slice(1));
  }
}

const MAX_NAME = 255;

function requireName(name: string | undefined): string {
  if (name === undefined || name.trim() === '') throw badRequest('Group name is required', 'name');
  if (name.length > MAX_NAME) throw badRequest(`Group name must have at most ${MAX_NAME} characters`, 'name');
  return name;
}

const duplicate = (name: string, parentId: string | null) =>
  conflict(parentId === null ? `A top-level group named '${name}' already exists` : `A sibling group named '${name}' already exists`, 'name');

/** Refuses a second group of the same name under one parent (the database's unique index stands behind this). */
function requireFreeName(tree: GroupTree, name: string, parentId: string | null, self?: string): void {
  if (tree.childrenOf(parentId).some((g) => g.name === name && g.id !== self)) throw duplicate(name, parentId);
}

async function writing<T>(name: string, parentId: string | null, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicate(name, parentId);
    throw error;
  }
}

/** Creates a group, top-level (`parentId` null) or under a group of `tree`. */
export async function createGroup(storage: Storage, realm: Realm, tree: GroupTree, parentId: string | null, input: GroupInput, db?: Db): Promise<Group> {
  const name = requireName(input.name);
  requireFreeName(tree, name, parentId);
  const group: Group = {
    id: newId(),
    realmId: realm.id,
    parentId,
    name,
    description: input.description ?? null,
    attributes: input.attributes ?? {},
    ...(tree.organizationId ? { organizationId: tree.organizationId } : {}),
  };
  await writing(name, parentId, () => storage.groups.insert(group, db));
  return group;
}

/**
 * Applies a representation to a group as Keycloak's PUT does: a new name (free among its siblings), the
 * description as given, and the attributes when given (replacing them all).
 */
export async function updateGroup(storage: Storage, tree: GroupTree, group: Group, input: GroupInput, db?: Db): Promise<Group> {
  const name = requireName(input.name);
  requireFreeName(tree, name, group.parentId, group.id);
  const updated: Group = { ...group, name, description: input.description ?? null, attributes: input.attributes ?? group.attributes };
  await writing(name, group.parentId, () => storage.groups.update(updated, db));
  return updated;
}

/**
 * Moves a group under `parentId` (null: to the top level). A group cannot go under itself or one of its own
 * subgroups, and its name must be free among its new siblings.
 */
export async function moveGroup(storage: Storage, tree: GroupTree, group: Group, parentId: string | null, db?: Db): Promise<Group> {
  if (group.parentId === parentId) return group;
  if (parentId !== null) {
    if (parentId === group.id) throw badRequest(`Group '${group.name}' cannot be moved under itself`);
    const inside = tree.descendants(group.id).find((g) => g.id === parentId);
    if (inside) throw badRequest(`Group '${group.name}' cannot be moved under its own subgroup '${inside.name}' (${tree.path(inside.id)})`);
  }
  requireFreeName(tree, group.name, parentId, group.id);
  const moved = { ...group, parentId };
  await writing(group.name, parentId, () => storage.groups.update(moved, db));
  return moved;
}

/** Deletes a group and every group below it (as the tree is inside the transaction, so none is left orphaned). */
export async function deleteGroup(storage: Storage, group: Group): Promise<void> {
  await storage.transaction(async (trx) => {
    await storage.groups.lockTree(group.realmId, trx);
    const tree = await GroupTree.of(storage, group, trx);
    await storage.groups.deleteMany([group.id, ...tree.descendants(group.id).map((g) => g.id)], trx);
  });
}

/**
 * The roles the members of these groups hold through them: mapped to a group or to one of its ancestors,
 * composites expanded. For the composite views and the admin-role rule on membership changes.
 */
export async function groupEffectiveRoles(storage: Storage, tree: GroupTree, groupIds: string[]): Promise<Role[]> {
  const ids = new Set<string>();
  for (const id of groupIds) {
    ids.add(id);
    for (const ancestor of tree.ancestors(id)) ids.add(ancestor.id);
  }
  const direct = await storage.groups.roleIds([...ids]);
  // The roles mapped to the groups first, those they contain after: a refusal names the role an administrator mapped.
  const order = [...(await storage.roles.expand(direct))];
  const rank = new Map(order.map((id, i) => [id, i]));
  return (await storage.roles.byIds(order)).sort((a, b) => rank.get(a.id)! - rank.get(b.id)!);
}

/** The roles mapped directly to each group, by name: `realmRoles` and `clientRoles` (clientId → names). */
export async function groupRoleNames(storage: Storage, realmId: string, groupIds: string[]): Promise<Map<string, { realmRoles: string[]; clientRoles: Record<string, string[]> }>> {
  const result = new Map(groupIds.map((id) => [id, { realmRoles: [] as string[], clientRoles: {} as Record<string, string[]> }]));
  if (groupIds.length === 0) return result;
  const rows = await storage.groups.mappedRoles(groupIds);
  const clientIds = new Map<string, string | null>();
  for (const row of rows) {
    const entry = result.get(row.group_id)!;
    if (!row.client_role) {
      entry.realmRoles.push(row.name);
      continue;
    }
    if (!clientIds.has(row.container_id)) clientIds.set(row.container_id, (await storage.clients.byId(realmId, row.container_id))?.clientId ?? null);
    const clientId = clientIds.get(row.container_id);
    if (clientId) (entry.clientRoles[clientId] ??= []).push(row.name);
  }
  return result;
}

/** A new user joins the realm's default groups, as in Keycloak (admin-created, registered, service accounts). */
export async function joinDefaultGroups(storage: Storage, realmId: string, userId: string, db: Db): Promise<void> {
  await storage.groups.join(userId, await storage.groups.defaultGroupIds(realmId, db), db);
}
