import { sql, type Selectable } from 'kysely';
import type { Group, User } from '../model/types.js';
import type { Db } from './db.js';
import type { GroupTable } from './schema.js';
import { fromJson, toJson } from './codec.js';
import { toUser } from './users.js';

const TOP = '';

function toGroup(row: Selectable<GroupTable>): Group {
  return {
    id: row.id,
    realmId: row.realm_id,
    // An organization's top-level group has the organization's id as parent (migration 0035).
    parentId: row.parent_id === TOP || row.parent_id === row.organization_id ? null : row.parent_id,
    name: row.name,
    description: row.description,
    attributes: fromJson(row.attributes, {}),
    ...(row.organization_id ? { organizationId: row.organization_id } : {}),
  };
}

/** parent_id as stored: a top-level group's is '' in the realm, the organization's id in an organization. */
const storedParent = (group: Group): string => group.parentId ?? group.organizationId ?? TOP;

/**
 * Groups, their role mappings, members and the realm's default groups. The tree of a realm is read whole
 * (`tree`): paths, searches and cycle checks are walks over it in memory (services/groups.ts).
 */
export class GroupRepository {
  constructor(
    private readonly db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
  ) {}

  /**
   * Serialises changes of a realm's tree inside `trx` (two concurrent moves could otherwise each pass the cycle
   * check and make one together): PostgreSQL locks the realm's row; SQLite's one connection already runs one
   * transaction at a time.
   */
  async lockTree(realmId: string, trx: Db): Promise<void> {
    if (this.dialect === 'postgres') await trx.selectFrom('realm').select('id').where('id', '=', realmId).forUpdate().execute();
  }

  /** The realm's groups: without the organizations' groups, as Keycloak's realm group listings. */
  async tree(realmId: string, db: Db = this.db): Promise<Group[]> {
    return (await db.selectFrom('realm_group').selectAll().where('realm_id', '=', realmId).where('organization_id', 'is', null).orderBy('name').execute()).map(toGroup);
  }

  /** One organization's groups. */
  async organizationTree(realmId: string, organizationId: string, db: Db = this.db): Promise<Group[]> {
    return (await db.selectFrom('realm_group').selectAll().where('realm_id', '=', realmId).where('organization_id', '=', organizationId).orderBy('name').execute()).map(toGroup);
  }

  /** A group of the realm (not an organization's). */
  async byId(realmId: string, id: string, db: Db = this.db): Promise<Group | null> {
    const row = await db.selectFrom('realm_group').selectAll().where('realm_id', '=', realmId).where('id', '=', id).where('organization_id', 'is', null).executeTakeFirst();
    return row ? toGroup(row) : null;
  }

  /** A group of the realm or of one of its organizations (`organizationId` says which). */
  async anyById(realmId: string, id: string, db: Db = this.db): Promise<Group | null> {
    const row = await db.selectFrom('realm_group').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
    return row ? toGroup(row) : null;
  }

  async insert(group: Group, db: Db = this.db): Promise<void> {
    await db
      .insertInto('realm_group')
      .values({
        id: group.id,
        realm_id: group.realmId,
        parent_id: storedParent(group),
        name: group.name,
        description: group.description,
        attributes: toJson(group.attributes),
        organization_id: group.organizationId ?? null,
      })
      .execute();
  }

  /** Name, description, attributes and parent. */
  async update(group: Group, db: Db = this.db): Promise<void> {
    await db
      .updateTable('realm_group')
      .set({ parent_id: storedParent(group), name: group.name, description: group.description, attributes: toJson(group.attributes) })
      .where('id', '=', group.id)
      .execute();
  }

  /** Deletes the groups (a group and its subgroups); memberships, role mappings and default entries go with them. */
  async deleteMany(ids: string[], db: Db = this.db): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) await db.deleteFrom('realm_group').where('id', 'in', ids.slice(i, i + 500)).execute();
  }

  // Role mappings ---------------------------------------------------------------------------------------

  async roleIds(groupIds: string[], db: Db = this.db): Promise<string[]> {
    const ids = new Set<string>();
    for (let i = 0; i < groupIds.length; i += 500) {
      for (const row of await db.selectFrom('group_role').select('role_id').where('group_id', 'in', groupIds.slice(i, i + 500)).execute()) ids.add(row.role_id);
    }
    return [...ids];
  }

  /** The roles mapped to each of the groups, with what their representations show. */
  async mappedRoles(groupIds: string[]): Promise<{ group_id: string; name: string; client_role: number; container_id: string }[]> {
    const rows: { group_id: string; name: string; client_role: number; container_id: string }[] = [];
    for (let i = 0; i < groupIds.length; i += 500) {
      rows.push(
        ...(await this.db
          .selectFrom('group_role')
          .innerJoin('role', 'role.id', 'group_role.role_id')
          .select(['group_role.group_id', 'role.name', 'role.client_role', 'role.container_id'])
          .where('group_role.group_id', 'in', groupIds.slice(i, i + 500))
          .execute()),
      );
    }
    return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async grant(groupId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(roleIds)];
    if (fresh.length === 0) return;
    await db
      .insertInto('group_role')
      .values(fresh.map((role_id) => ({ group_id: groupId, role_id })))
      .onConflict((oc) => oc.columns(['group_id', 'role_id']).doNothing())
      .execute();
  }

  async revoke(groupId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    if (roleIds.length === 0) return;
    await db.deleteFrom('group_role').where('group_id', '=', groupId).where('role_id', 'in', roleIds).execute();
  }

  /** The groups a role is mapped to directly. */
  async withRole(realmId: string, roleId: string, first: number, max: number): Promise<Group[]> {
    const rows = await this.db
      .selectFrom('realm_group')
      .innerJoin('group_role', 'group_role.group_id', 'realm_group.id')
      .selectAll('realm_group')
      .where('realm_group.realm_id', '=', realmId)
      .where('realm_group.organization_id', 'is', null)
      .where('group_role.role_id', '=', roleId)
      .orderBy('realm_group.name')
      .limit(max)
      .offset(first)
      .execute();
    return rows.map(toGroup);
  }

  /**
   * The role ids a user holds before composites are expanded: mapped to the user, or to a group the user is a
   * member of or to any ancestor of such a group. One query (a recursive walk up the tree, the same SQL on
   * SQLite and PostgreSQL; UNION stops on a repeated row, so even a corrupted cyclic tree ends). `cross join`
   * keeps SQLite's loop over the user's few groups, each looked up in group_role's primary key: the SQLite of
   * Node 24 (node:sqlite) otherwise chose to scan group_role whole.
   */
  async userRoleIdsWithGroups(userId: string, db: Db = this.db): Promise<string[]> {
    const { rows } = await this.userRoleIdsQuery(userId).execute(db);
    return rows.map((r) => r.role_id);
  }

  /** The query of userRoleIdsWithGroups (its plan is checked by test/groups-storage.test.ts). */
  userRoleIdsQuery(userId: string) {
    return sql<{ role_id: string }>`
      with recursive member_of(id) as (
        select ug.group_id from user_group ug join realm_group rg on rg.id = ug.group_id where ug.user_id = ${userId} and rg.organization_id is null
        union
        select g.parent_id from realm_group g join member_of m on g.id = m.id where g.parent_id <> ''
      )
      select role_id from user_role where user_id = ${userId}
      union
      select gr.role_id from member_of m cross join group_role gr where gr.group_id = m.id
    `;
  }

  // Members -----------------------------------------------------------------------------------------------

  /** The group's direct members, by username, one page. */
  async members(groupId: string, first: number, max: number): Promise<User[]> {
    const rows = await this.db
      .selectFrom('user_group')
      .innerJoin('user_entity', 'user_entity.id', 'user_group.user_id')
      .selectAll('user_entity')
      .where('user_group.group_id', '=', groupId)
      .orderBy('user_entity.username')
      .limit(max)
      .offset(first)
      .execute();
    return rows.map(toUser);
  }

  /** Whether any of the groups has a member (every id is checked, in batches: the admin-role rule relies on it). */
  async hasMembers(groupIds: string[], db: Db = this.db): Promise<boolean> {
    for (let i = 0; i < groupIds.length; i += 500) {
      if (await db.selectFrom('user_group').select('user_id').where('group_id', 'in', groupIds.slice(i, i + 500)).limit(1).executeTakeFirst()) return true;
    }
    return false;
  }

  /**
   * The realm groups a user is a direct member of. Organization groups are left out, as Keycloak's
   * user.getGroupsStream() keeps only realm groups: not in a user's groups, token claims nor roles.
   */
  async userGroupIds(userId: string, db: Db = this.db): Promise<string[]> {
    return (await this.memberships(userId, db).where('realm_group.organization_id', 'is', null).execute()).map((r) => r.group_id);
  }

  /** The groups of one organization a user is a direct member of. */
  async organizationGroupIds(userId: string, organizationId: string, db: Db = this.db): Promise<string[]> {
    return (await this.memberships(userId, db).where('realm_group.organization_id', '=', organizationId).execute()).map((r) => r.group_id);
  }

  private memberships(userId: string, db: Db) {
    return db.selectFrom('user_group').innerJoin('realm_group', 'realm_group.id', 'user_group.group_id').select('user_group.group_id').where('user_group.user_id', '=', userId);
  }

  /** Takes a user out of every group of an organization (a member who leaves it, as Keycloak's removeMember). */
  async leaveOrganization(userId: string, organizationId: string, db: Db = this.db): Promise<void> {
    const ids = await this.organizationGroupIds(userId, organizationId, db);
    if (ids.length > 0) await db.deleteFrom('user_group').where('user_id', '=', userId).where('group_id', 'in', ids).execute();
  }

  async join(userId: string, groupIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(groupIds)];
    if (fresh.length === 0) return;
    await db
      .insertInto('user_group')
      .values(fresh.map((group_id) => ({ user_id: userId, group_id })))
      .onConflict((oc) => oc.columns(['user_id', 'group_id']).doNothing())
      .execute();
  }

  async leave(userId: string, groupId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_group').where('user_id', '=', userId).where('group_id', '=', groupId).execute();
  }

  // Default groups ----------------------------------------------------------------------------------------

  async defaultGroupIds(realmId: string, db: Db = this.db): Promise<string[]> {
    return (await db.selectFrom('default_group').select('group_id').where('realm_id', '=', realmId).execute()).map((r) => r.group_id);
  }

  async addDefault(realmId: string, groupId: string, db: Db = this.db): Promise<void> {
    await db
      .insertInto('default_group')
      .values({ realm_id: realmId, group_id: groupId })
      .onConflict((oc) => oc.columns(['realm_id', 'group_id']).doNothing())
      .execute();
  }

  async removeDefault(realmId: string, groupId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('default_group').where('realm_id', '=', realmId).where('group_id', '=', groupId).execute();
  }
}
