import type { Selectable } from 'kysely';
import type { Role } from '../model/types.js';
import type { Db } from './db.js';
import type { RoleTable } from './schema.js';
import { bool, containsIgnoreCase, flag, storable } from './codec.js';

function toRole(row: Selectable<RoleTable>): Role {
  return {
    id: row.id,
    realmId: row.realm_id,
    containerId: row.container_id,
    clientRole: bool(row.client_role),
    name: row.name,
    description: row.description,
  };
}

export class RoleRepository {
  constructor(private readonly db: Db) {}

  /** Roles of one container: the realm (realm roles) or a client (its roles). */
  async list(containerId: string, options: { search?: string; first?: number; max?: number } = {}): Promise<Role[]> {
    let query = this.db.selectFrom('role').selectAll().where('container_id', '=', containerId);
    if (options.search) query = query.where(containsIgnoreCase('name', options.search));
    query = query.orderBy('name');
    if (options.max !== undefined) query = query.limit(options.max);
    if (options.first) query = query.offset(options.first);
    return (await query.execute()).map(toRole);
  }

  async byName(containerId: string, name: string): Promise<Role | null> {
    if (!storable(name)) return null;
    const row = await this.db
      .selectFrom('role')
      .selectAll()
      .where('container_id', '=', containerId)
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? toRole(row) : null;
  }

  async byId(realmId: string, id: string): Promise<Role | null> {
    const row = await this.db
      .selectFrom('role')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toRole(row) : null;
  }

  async byIds(ids: string[], db: Db = this.db): Promise<Role[]> {
    if (ids.length === 0) return [];
    return (await db.selectFrom('role').selectAll().where('id', 'in', ids).execute()).map(toRole);
  }

  async insert(role: Role, db: Db = this.db): Promise<void> {
    await db
      .insertInto('role')
      .values({
        id: role.id,
        realm_id: role.realmId,
        container_id: role.containerId,
        client_role: flag(role.clientRole),
        name: role.name,
        description: role.description,
      })
      .execute();
  }

  async update(role: Role, db: Db = this.db): Promise<void> {
    await db
      .updateTable('role')
      .set({ name: role.name, description: role.description })
      .where('id', '=', role.id)
      .execute();
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('role').where('id', '=', id).execute();
  }

  async compositeIds(parentIds: string[]): Promise<Set<string>> {
    const ids = new Set<string>();
    if (parentIds.length === 0) return ids;
    const rows = await this.db.selectFrom('role_composite').select('child_id').where('parent_id', 'in', parentIds).execute();
    for (const row of rows) ids.add(row.child_id);
    return ids;
  }

  async composites(parentId: string): Promise<Role[]> {
    return this.byIds([...(await this.compositeIds([parentId]))]);
  }

  async hasComposites(roleIds: string[]): Promise<Set<string>> {
    if (roleIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('role_composite')
      .select('parent_id')
      .distinct()
      .where('parent_id', 'in', roleIds)
      .execute();
    return new Set(rows.map((r) => r.parent_id));
  }

  async addComposites(parentId: string, childIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(childIds)].filter((id) => id !== parentId);
    if (fresh.length) {
      await db
        .insertInto('role_composite')
        .values(fresh.map((child_id) => ({ parent_id: parentId, child_id })))
        .onConflict((oc) => oc.columns(['parent_id', 'child_id']).doNothing())
        .execute();
    }
  }

  async removeComposites(parentId: string, childIds: string[], db: Db = this.db): Promise<void> {
    if (childIds.length === 0) return;
    await db.deleteFrom('role_composite').where('parent_id', '=', parentId).where('child_id', 'in', childIds).execute();
  }

  /** Expands composite roles breadth-first; cycles stop at roles already seen. */
  async expand(roleIds: Iterable<string>): Promise<Set<string>> {
    const seen = new Set(roleIds);
    let frontier = [...seen];
    while (frontier.length) {
      const next: string[] = [];
      for (const id of await this.compositeIds(frontier)) {
        if (!seen.has(id)) {
          seen.add(id);
          next.push(id);
        }
      }
      frontier = next;
    }
    return seen;
  }

  async userRoleIds(userId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('user_role').select('role_id').where('user_id', '=', userId).execute();
    return rows.map((r) => r.role_id);
  }

  async userRoles(userId: string): Promise<Role[]> {
    const rows = await this.db
      .selectFrom('role')
      .innerJoin('user_role', 'user_role.role_id', 'role.id')
      .selectAll('role')
      .where('user_role.user_id', '=', userId)
      .orderBy('role.name')
      .execute();
    return rows.map(toRole);
  }

  async grant(userId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(roleIds)];
    if (fresh.length) {
      await db
        .insertInto('user_role')
        .values(fresh.map((role_id) => ({ user_id: userId, role_id })))
        .onConflict((oc) => oc.columns(['user_id', 'role_id']).doNothing())
        .execute();
    }
  }

  async revoke(userId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    if (roleIds.length === 0) return;
    await db.deleteFrom('user_role').where('user_id', '=', userId).where('role_id', 'in', roleIds).execute();
  }

  async scopeMappedRoleIds(clientId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('scope_mapping').select('role_id').where('client_id', '=', clientId).execute();
    return rows.map((r) => r.role_id);
  }

  async addScopeMappings(clientId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(roleIds)];
    if (fresh.length) {
      await db
        .insertInto('scope_mapping')
        .values(fresh.map((role_id) => ({ client_id: clientId, role_id })))
        .onConflict((oc) => oc.columns(['client_id', 'role_id']).doNothing())
        .execute();
    }
  }

  async removeScopeMappings(clientId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    if (roleIds.length === 0) return;
    await db.deleteFrom('scope_mapping').where('client_id', '=', clientId).where('role_id', 'in', roleIds).execute();
  }
}
