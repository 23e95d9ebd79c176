import type { Selectable } from 'kysely';
import type { Component, FederatedIdentity, IdentityProvider, IdentityProviderMapper } from '../model/types.js';
import type { ConfigCache } from './config-cache.js';
import type { Db } from './db.js';
import type { ComponentTable, IdentityProviderTable } from './schema.js';
import { bool, escapeLike, flag, fromJson, toJson } from './codec.js';
import { sql, type SqlBool } from 'kysely';

function toProvider(row: Selectable<IdentityProviderTable>): IdentityProvider {
  const { config, ...rest } = fromJson<Record<string, unknown>>(row.representation, {});
  return {
    internalId: row.internal_id,
    realmId: row.realm_id,
    alias: row.alias,
    providerId: row.provider_id,
    enabled: bool(row.enabled),
    displayName: row.display_name,
    config: (config ?? {}) as Record<string, string>,
    rest,
  };
}

function toComponent(row: Selectable<ComponentTable>): Component {
  return {
    id: row.id,
    realmId: row.realm_id,
    parentId: row.parent_id,
    name: row.name,
    providerId: row.provider_id,
    providerType: row.provider_type,
    subType: row.sub_type,
    config: fromJson(row.config, {}),
  };
}

const providerRow = (p: IdentityProvider) => ({
  alias: p.alias,
  provider_id: p.providerId,
  enabled: flag(p.enabled),
  display_name: p.displayName,
  representation: toJson({ ...p.rest, config: p.config }),
});

export interface IdentityProviderQuery {
  /** Keycloak's `search`: a substring of the alias (case-insensitive), `"x"` exactly, `x*` a prefix. */
  search?: string;
  realmOnly?: boolean;
  first: number;
  max: number;
}

/**
 * Identity providers with their mappers, users' links to them (federated identities), and components, of a realm:
 * kept as data (issue 16: what this server does not act on is stored and exported back, never dropped). Listed by
 * alias / name.
 */
export class FederationRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
  ) {}

  // Identity providers ---------------------------------------------------------------------------------------

  async providers(realmId: string, query: IdentityProviderQuery = { first: 0, max: Number.MAX_SAFE_INTEGER }, db: Db = this.db): Promise<IdentityProvider[]> {
    let q = db.selectFrom('identity_provider').selectAll().where('realm_id', '=', realmId);
    const search = query.search?.trim();
    if (search) {
      const exact = /^".*"$/.test(search);
      const pattern = exact ? search.slice(1, -1) : search.endsWith('*') ? `${escapeLike(search.slice(0, -1).toLowerCase())}%` : `%${escapeLike(search.toLowerCase())}%`;
      q = exact ? q.where('alias', '=', pattern) : q.where(sql<SqlBool>`lower(alias) like ${pattern} escape '\\'`);
    }
    const rows = await q.orderBy('alias').execute();
    const all = rows.map(toProvider).filter((p) => !query.realmOnly || p.rest.organizationId === undefined || p.rest.organizationId === null);
    return all.slice(query.first, query.first + query.max);
  }

  /** Every provider of the realm through the configuration cache (frozen): for the login page and the redirector. */
  cachedProviders(realmId: string): Promise<readonly IdentityProvider[]> {
    return this.cache.get(`identity-providers\0${realmId}`, ['identity_provider'], () => this.providers(realmId)).then((list) => list ?? []);
  }

  async providerByAlias(realmId: string, alias: string, db: Db = this.db): Promise<IdentityProvider | null> {
    const row = await db.selectFrom('identity_provider').selectAll().where('realm_id', '=', realmId).where('alias', '=', alias).executeTakeFirst();
    return row ? toProvider(row) : null;
  }

  /** A duplicate alias is a unique violation. */
  async insertProvider(provider: IdentityProvider, db: Db = this.db): Promise<void> {
    await db.insertInto('identity_provider').values({ internal_id: provider.internalId, realm_id: provider.realmId, ...providerRow(provider) }).execute();
  }

  async updateProvider(provider: IdentityProvider, db: Db = this.db): Promise<void> {
    await db.updateTable('identity_provider').set(providerRow(provider)).where('internal_id', '=', provider.internalId).execute();
  }

  /** Deletes the provider, its mappers and the users' links to it (as Keycloak does). */
  async deleteProvider(internalId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('identity_provider').where('internal_id', '=', internalId).execute();
  }

  /** The realm's identity-provider mappers (of one provider when `internalId` is given), by provider alias then name. */
  async mappers(realmId: string, internalId?: string, db: Db = this.db): Promise<IdentityProviderMapper[]> {
    let q = db
      .selectFrom('identity_provider_mapper as m')
      .innerJoin('identity_provider as p', 'p.internal_id', 'm.identity_provider_id')
      .select(['m.id', 'm.name', 'm.mapper_type', 'm.config', 'p.alias'])
      .where('m.realm_id', '=', realmId);
    if (internalId !== undefined) q = q.where('m.identity_provider_id', '=', internalId);
    const rows = await q.orderBy('p.alias').orderBy('m.name').execute();
    return rows.map((r) => ({ id: r.id, name: r.name, identityProviderAlias: r.alias, identityProviderMapper: r.mapper_type, config: fromJson(r.config, {}) }));
  }

  /** One provider's mappers through the configuration cache (frozen): read at every brokered sign-in. */
  cachedMappers(realmId: string, internalId: string): Promise<readonly IdentityProviderMapper[]> {
    return this.cache.get(`identity-provider-mappers\0${realmId}\0${internalId}`, ['identity_provider_mapper', 'identity_provider'], () => this.mappers(realmId, internalId)).then((list) => list ?? []);
  }

  /** A duplicate name under one provider is a unique violation. */
  async insertMapper(realmId: string, internalId: string, mapper: IdentityProviderMapper, db: Db = this.db): Promise<void> {
    await db
      .insertInto('identity_provider_mapper')
      .values({ id: mapper.id, realm_id: realmId, identity_provider_id: internalId, name: mapper.name, mapper_type: mapper.identityProviderMapper, config: toJson(mapper.config) })
      .execute();
  }

  async updateMapper(internalId: string, mapper: IdentityProviderMapper, db: Db = this.db): Promise<void> {
    await db
      .updateTable('identity_provider_mapper')
      .set({ name: mapper.name, mapper_type: mapper.identityProviderMapper, config: toJson(mapper.config) })
      .where('identity_provider_id', '=', internalId)
      .where('id', '=', mapper.id)
      .execute();
  }

  async deleteMapper(internalId: string, id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('identity_provider_mapper').where('identity_provider_id', '=', internalId).where('id', '=', id).execute();
  }

  // Federated identities (users' links to identity providers) --------------------------------------------------

  /** The user's links, by provider alias. A link always names an existing provider (it goes with its provider). */
  async links(userId: string, db: Db = this.db): Promise<FederatedIdentity[]> {
    return (await this.linksOf([userId], db)).get(userId) ?? [];
  }

  /** The links of these users (of one realm), each user's by provider alias; users without links are absent. */
  async linksOf(userIds: readonly string[], db: Db = this.db): Promise<Map<string, FederatedIdentity[]>> {
    const byUser = new Map<string, FederatedIdentity[]>();
    for (let i = 0; i < userIds.length; i += 500) {
      const rows = await db
        .selectFrom('federated_identity as f')
        .innerJoin('identity_provider as p', 'p.internal_id', 'f.identity_provider_id')
        .select(['f.user_id', 'p.alias', 'f.federated_user_id', 'f.federated_username'])
        .where('f.user_id', 'in', userIds.slice(i, i + 500))
        .orderBy('f.user_id')
        .orderBy('p.alias')
        .execute();
      for (const r of rows) {
        const list = byUser.get(r.user_id) ?? [];
        list.push({ identityProvider: r.alias, userId: r.federated_user_id, userName: r.federated_username });
        byUser.set(r.user_id, list);
      }
    }
    return byUser;
  }

  /** Links the user to the provider (by internal id). A second link of one user to one provider is a unique violation. */
  async addLink(realmId: string, userId: string, providerInternalId: string, link: Omit<FederatedIdentity, 'identityProvider'>, db: Db = this.db): Promise<void> {
    await db
      .insertInto('federated_identity')
      .values({ user_id: userId, identity_provider_id: providerInternalId, realm_id: realmId, federated_user_id: link.userId, federated_username: link.userName, token: null })
      .execute();
  }

  /** The user linked to this account at the provider (by internal id), or null: a brokered sign-in's lookup. */
  async userIdByLink(providerInternalId: string, federatedUserId: string, db: Db = this.db): Promise<string | null> {
    const row = await db
      .selectFrom('federated_identity')
      .select('user_id')
      .where('identity_provider_id', '=', providerInternalId)
      .where('federated_user_id', '=', federatedUserId)
      .executeTakeFirst();
    return row?.user_id ?? null;
  }

  /** The link of this account at the provider (by internal id): its user and the upstream username stored, or null. */
  async linkByUpstream(providerInternalId: string, federatedUserId: string, db: Db = this.db): Promise<{ userId: string; userName: string | null } | null> {
    const row = await db
      .selectFrom('federated_identity')
      .select(['user_id', 'federated_username'])
      .where('identity_provider_id', '=', providerInternalId)
      .where('federated_user_id', '=', federatedUserId)
      .executeTakeFirst();
    return row ? { userId: row.user_id, userName: row.federated_username } : null;
  }

  /** The stored upstream token of the user's link (storeToken), or null. */
  async linkToken(userId: string, providerInternalId: string, db: Db = this.db): Promise<string | null> {
    const row = await db.selectFrom('federated_identity').select('token').where('user_id', '=', userId).where('identity_provider_id', '=', providerInternalId).executeTakeFirst();
    return row?.token ?? null;
  }

  /** Replaces the stored token and the upstream username of the user's link. */
  async updateLink(userId: string, providerInternalId: string, fields: { token?: string | null; userName?: string | null }, db: Db = this.db): Promise<void> {
    const set: { token?: string | null; federated_username?: string | null } = {};
    if (fields.token !== undefined) set.token = fields.token;
    if (fields.userName !== undefined) set.federated_username = fields.userName;
    if (Object.keys(set).length === 0) return;
    await db.updateTable('federated_identity').set(set).where('user_id', '=', userId).where('identity_provider_id', '=', providerInternalId).execute();
  }

  /** Removes the user's link to the provider of this alias; false when there was none. */
  async removeLink(realmId: string, userId: string, alias: string, db: Db = this.db): Promise<boolean> {
    const provider = await this.providerByAlias(realmId, alias, db);
    if (!provider) return false;
    const result = await db.deleteFrom('federated_identity').where('user_id', '=', userId).where('identity_provider_id', '=', provider.internalId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** The links to a provider (by internal id): user id, federated user id and username. */
  async linksTo(providerInternalId: string, db: Db = this.db): Promise<{ userId: string; link: Omit<FederatedIdentity, 'identityProvider'> }[]> {
    const rows = await db.selectFrom('federated_identity').select(['user_id', 'federated_user_id', 'federated_username']).where('identity_provider_id', '=', providerInternalId).execute();
    return rows.map((r) => ({ userId: r.user_id, link: { userId: r.federated_user_id, userName: r.federated_username } }));
  }

  // Components ----------------------------------------------------------------------------------------------

  /** Keycloak's component query: by parent, by type (under `parent`), or every component of the realm. */
  async components(realmId: string, filter: { parentId?: string; providerType?: string; name?: string } = {}, db: Db = this.db): Promise<Component[]> {
    let q = db.selectFrom('component').selectAll().where('realm_id', '=', realmId);
    if (filter.parentId !== undefined) q = q.where('parent_id', '=', filter.parentId);
    if (filter.providerType !== undefined) q = q.where('provider_type', '=', filter.providerType);
    if (filter.name !== undefined) q = q.where('name', '=', filter.name);
    return (await q.orderBy('name').orderBy('id').execute()).map(toComponent);
  }

  async component(realmId: string, id: string, db: Db = this.db): Promise<Component | null> {
    const row = await db.selectFrom('component').selectAll().where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
    return row ? toComponent(row) : null;
  }

  async insertComponent(component: Component, db: Db = this.db): Promise<void> {
    await db
      .insertInto('component')
      .values({
        id: component.id,
        realm_id: component.realmId,
        parent_id: component.parentId,
        name: component.name,
        provider_id: component.providerId,
        provider_type: component.providerType,
        sub_type: component.subType,
        config: toJson(component.config),
      })
      .execute();
  }

  async updateComponent(component: Component, db: Db = this.db): Promise<void> {
    await db
      .updateTable('component')
      .set({ parent_id: component.parentId, name: component.name, provider_id: component.providerId, provider_type: component.providerType, sub_type: component.subType, config: toJson(component.config) })
      .where('id', '=', component.id)
      .execute();
  }

  /** The component's id and those of every component under it, at any depth. */
  async subtree(realmId: string, id: string, db: Db = this.db): Promise<string[]> {
    const ids = [id];
    const seen = new Set(ids);
    for (let i = 0; i < ids.length; i++) {
      for (const row of await db.selectFrom('component').select('id').where('realm_id', '=', realmId).where('parent_id', '=', ids[i]).execute()) {
        if (!seen.has(row.id)) ids.push(row.id);
        seen.add(row.id);
      }
    }
    return ids;
  }

  /** Deletes the component and, as Keycloak does, the components under it (at any depth). */
  async deleteComponent(realmId: string, id: string, db: Db = this.db): Promise<void> {
    const ids = await this.subtree(realmId, id, db);
    for (let i = 0; i < ids.length; i += 500) await db.deleteFrom('component').where('realm_id', '=', realmId).where('id', 'in', ids.slice(i, i + 500)).execute();
  }
}
