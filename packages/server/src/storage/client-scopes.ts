import { sql, type Selectable } from 'kysely';
import type { ClientScope, ProtocolMapper } from '../model/types.js';
import type { Db } from './db.js';
import type { ClientScopeTable, ProtocolMapperTable } from './schema.js';
import { bool, flag, fromJson, toJson } from './codec.js';

function toMapper(row: Selectable<ProtocolMapperTable>): ProtocolMapper {
  return { id: row.id, name: row.name, protocol: row.protocol, protocolMapper: row.mapper_type, config: fromJson(row.config, {}) };
}

function toScope(row: Selectable<ClientScopeTable>, protocolMappers: ProtocolMapper[]): ClientScope {
  return {
    id: row.id,
    realmId: row.realm_id,
    name: row.name,
    description: row.description,
    protocol: row.protocol,
    attributes: fromJson(row.attributes, {}),
    protocolMappers,
  };
}

/** What a protocol mapper belongs to: a client scope or a client. */
export type MapperOwner = { clientScopeId: string } | { clientId: string };
const ownerId = (owner: MapperOwner) => ('clientScopeId' in owner ? owner.clientScopeId : owner.clientId);

/** A client scope linked to a realm's default lists or to a client: default (always applied) or optional. */
export interface ScopeLink {
  scopeId: string;
  defaultScope: boolean;
}

/**
 * Client scopes, their protocol mappers (and clients' own), the realm's default and optional scopes, each
 * client's, and the scopes' role scope mappings. Mappers are listed in the order they were added.
 */
export class ClientScopeRepository {
  constructor(private readonly db: Db) {}

  async list(realmId: string, db: Db = this.db): Promise<ClientScope[]> {
    const rows = await db.selectFrom('client_scope').selectAll().where('realm_id', '=', realmId).orderBy('name').execute();
    const mappers = await this.mappersByOwner(rows.map((r) => r.id), db);
    return rows.map((r) => toScope(r, mappers.get(r.id) ?? []));
  }

  async byIds(realmId: string, ids: string[], db: Db = this.db): Promise<ClientScope[]> {
    if (ids.length === 0) return [];
    const rows: Selectable<ClientScopeTable>[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      rows.push(...(await db.selectFrom('client_scope').selectAll().where('realm_id', '=', realmId).where('id', 'in', ids.slice(i, i + 500)).execute()));
    }
    const mappers = await this.mappersByOwner(rows.map((r) => r.id), db);
    return rows.map((r) => toScope(r, mappers.get(r.id) ?? [])).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async byId(realmId: string, id: string, db: Db = this.db): Promise<ClientScope | null> {
    return (await this.byIds(realmId, [id], db))[0] ?? null;
  }

  async byName(realmId: string, name: string, db: Db = this.db): Promise<ClientScope | null> {
    const row = await db.selectFrom('client_scope').select('id').where('realm_id', '=', realmId).where('name', '=', name).executeTakeFirst();
    return row ? this.byId(realmId, row.id, db) : null;
  }

  /** Inserts the scope and its mappers (their ids as given). */
  async insert(scope: ClientScope, db: Db = this.db): Promise<void> {
    await db
      .insertInto('client_scope')
      .values({ id: scope.id, realm_id: scope.realmId, name: scope.name, description: scope.description, protocol: scope.protocol, attributes: toJson(scope.attributes) })
      .execute();
    await this.insertMappers(scope.realmId, { clientScopeId: scope.id }, scope.protocolMappers, db);
  }

  /** Name, description, protocol and attributes (mappers have their own calls). */
  async update(scope: ClientScope, db: Db = this.db): Promise<void> {
    await db
      .updateTable('client_scope')
      .set({ name: scope.name, description: scope.description, protocol: scope.protocol, attributes: toJson(scope.attributes) })
      .where('id', '=', scope.id)
      .execute();
  }

  /** Deletes the scope; its mappers, role scope mappings and links to the realm and clients go with it. */
  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('client_scope').where('id', '=', id).execute();
  }

  // Protocol mappers ---------------------------------------------------------------------------------------

  /** Each owner's mappers (client scopes' or clients'), in the order they were added. */
  async mappersByOwner(ownerIds: string[], db: Db = this.db): Promise<Map<string, ProtocolMapper[]>> {
    const result = new Map<string, ProtocolMapper[]>();
    for (let i = 0; i < ownerIds.length; i += 500) {
      const rows = await db.selectFrom('protocol_mapper').selectAll().where('owner_id', 'in', ownerIds.slice(i, i + 500)).orderBy('position').orderBy('name').execute();
      for (const row of rows) result.set(row.owner_id, [...(result.get(row.owner_id) ?? []), toMapper(row)]);
    }
    return result;
  }

  async mappers(ownerIdValue: string, db: Db = this.db): Promise<ProtocolMapper[]> {
    return (await this.mappersByOwner([ownerIdValue], db)).get(ownerIdValue) ?? [];
  }

  async mapper(ownerIdValue: string, id: string, db: Db = this.db): Promise<ProtocolMapper | null> {
    const row = await db.selectFrom('protocol_mapper').selectAll().where('owner_id', '=', ownerIdValue).where('id', '=', id).executeTakeFirst();
    return row ? toMapper(row) : null;
  }

  /** Adds mappers after the owner's others (a duplicate name is a unique violation). */
  async insertMappers(realmId: string, owner: MapperOwner, mappers: ProtocolMapper[], db: Db = this.db): Promise<void> {
    if (mappers.length === 0) return;
    const owned = ownerId(owner);
    const last = await db
      .selectFrom('protocol_mapper')
      .select(sql<number | null>`max(position)`.as('position'))
      .where('owner_id', '=', owned)
      .executeTakeFirst();
    const start = Number(last?.position ?? -1) + 1;
    await db
      .insertInto('protocol_mapper')
      .values(
        mappers.map((m, i) => ({
          id: m.id,
          realm_id: realmId,
          owner_id: owned,
          client_scope_id: 'clientScopeId' in owner ? owner.clientScopeId : null,
          client_id: 'clientId' in owner ? owner.clientId : null,
          name: m.name,
          protocol: m.protocol,
          mapper_type: m.protocolMapper,
          config: toJson(m.config),
          position: start + i,
        })),
      )
      .execute();
  }

  async updateMapper(ownerIdValue: string, mapper: ProtocolMapper, db: Db = this.db): Promise<void> {
    await db
      .updateTable('protocol_mapper')
      .set({ name: mapper.name, protocol: mapper.protocol, mapper_type: mapper.protocolMapper, config: toJson(mapper.config) })
      .where('owner_id', '=', ownerIdValue)
      .where('id', '=', mapper.id)
      .execute();
  }

  async deleteMapper(ownerIdValue: string, id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('protocol_mapper').where('owner_id', '=', ownerIdValue).where('id', '=', id).execute();
  }

  // Realm default and optional scopes ------------------------------------------------------------------------

  async realmLinks(realmId: string, db: Db = this.db): Promise<ScopeLink[]> {
    const rows = await db.selectFrom('realm_client_scope').select(['scope_id', 'default_scope']).where('realm_id', '=', realmId).execute();
    return rows.map((r) => ({ scopeId: r.scope_id, defaultScope: bool(r.default_scope) }));
  }

  /** Links the scope as a realm default or optional scope (moving it, if it was linked as the other). */
  async linkToRealm(realmId: string, scopeId: string, defaultScope: boolean, db: Db = this.db): Promise<void> {
    await db
      .insertInto('realm_client_scope')
      .values({ realm_id: realmId, scope_id: scopeId, default_scope: flag(defaultScope) })
      .onConflict((oc) => oc.columns(['realm_id', 'scope_id']).doUpdateSet({ default_scope: flag(defaultScope) }))
      .execute();
  }

  async unlinkFromRealm(realmId: string, scopeId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('realm_client_scope').where('realm_id', '=', realmId).where('scope_id', '=', scopeId).execute();
  }

  // Client default and optional scopes ------------------------------------------------------------------------

  async clientLinks(clientId: string, db: Db = this.db): Promise<ScopeLink[]> {
    return (await this.clientLinksMany([clientId], db)).get(clientId) ?? [];
  }

  /** Each client's links, for many clients at once (the client list). */
  async clientLinksMany(clientIds: string[], db: Db = this.db): Promise<Map<string, ScopeLink[]>> {
    const result = new Map<string, ScopeLink[]>();
    for (let i = 0; i < clientIds.length; i += 500) {
      const rows = await db.selectFrom('client_client_scope').select(['client_id', 'scope_id', 'default_scope']).where('client_id', 'in', clientIds.slice(i, i + 500)).execute();
      for (const r of rows) result.set(r.client_id, [...(result.get(r.client_id) ?? []), { scopeId: r.scope_id, defaultScope: bool(r.default_scope) }]);
    }
    return result;
  }

  /** The realm's scope names by id (without their mappers). */
  async names(realmId: string, db: Db = this.db): Promise<Map<string, string>> {
    return new Map((await db.selectFrom('client_scope').select(['id', 'name']).where('realm_id', '=', realmId).execute()).map((r) => [r.id, r.name]));
  }

  /** Links each scope to the client as default or optional (moving it, if it was linked as the other). */
  async linkToClient(clientId: string, links: ScopeLink[], db: Db = this.db): Promise<void> {
    for (const link of links) {
      await db
        .insertInto('client_client_scope')
        .values({ client_id: clientId, scope_id: link.scopeId, default_scope: flag(link.defaultScope) })
        .onConflict((oc) => oc.columns(['client_id', 'scope_id']).doUpdateSet({ default_scope: flag(link.defaultScope) }))
        .execute();
    }
  }

  async unlinkFromClient(clientId: string, scopeId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('client_client_scope').where('client_id', '=', clientId).where('scope_id', '=', scopeId).execute();
  }

  // Role scope mappings -------------------------------------------------------------------------------------

  async roleIds(scopeIds: readonly string[], db: Db = this.db): Promise<string[]> {
    const ids = new Set<string>();
    for (let i = 0; i < scopeIds.length; i += 500) {
      for (const row of await db.selectFrom('client_scope_role').select('role_id').where('scope_id', 'in', scopeIds.slice(i, i + 500)).execute()) ids.add(row.role_id);
    }
    return [...ids];
  }

  async addRoles(scopeId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    const fresh = [...new Set(roleIds)];
    if (fresh.length === 0) return;
    await db
      .insertInto('client_scope_role')
      .values(fresh.map((role_id) => ({ scope_id: scopeId, role_id })))
      .onConflict((oc) => oc.columns(['scope_id', 'role_id']).doNothing())
      .execute();
  }

  async removeRoles(scopeId: string, roleIds: string[], db: Db = this.db): Promise<void> {
    if (roleIds.length === 0) return;
    await db.deleteFrom('client_scope_role').where('scope_id', '=', scopeId).where('role_id', 'in', roleIds).execute();
  }
}
