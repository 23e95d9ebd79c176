import type { Selectable } from 'kysely';
import type { Client, ClientAuthenticatorType } from '../model/types.js';
import type { Db } from './db.js';
import type { ConfigCache } from './config-cache.js';
import type { ClientTable } from './schema.js';
import { bool, containsIgnoreCase, flag, fromJson, storable, toJson } from './codec.js';

function toClient(row: Selectable<ClientTable>): Client {
  return {
    id: row.id,
    realmId: row.realm_id,
    clientId: row.client_id,
    name: row.name,
    description: row.description,
    secret: row.secret,
    publicClient: bool(row.public_client),
    bearerOnly: bool(row.bearer_only),
    enabled: bool(row.enabled),
    protocol: row.protocol,
    rootUrl: row.root_url,
    baseUrl: row.base_url,
    redirectUris: fromJson(row.redirect_uris, []),
    webOrigins: fromJson(row.web_origins, []),
    serviceAccountsEnabled: bool(row.service_accounts_enabled),
    standardFlowEnabled: bool(row.standard_flow_enabled),
    directAccessGrantsEnabled: bool(row.direct_access_grants_enabled),
    implicitFlowEnabled: bool(row.implicit_flow_enabled),
    fullScopeAllowed: bool(row.full_scope_allowed),
    attributes: fromJson(row.attributes, {}),
    authenticationFlowBindingOverrides: fromJson(row.flow_binding_overrides, {}),
    authorizationSettings: fromJson(row.authorization_settings, null),
    clientAuthenticatorType: (row.authenticator_type ?? 'client-secret') as ClientAuthenticatorType,
    frontchannelLogout: row.frontchannel_logout === null ? true : bool(row.frontchannel_logout),
    adminUrl: row.admin_url,
    notBefore: row.not_before ?? 0,
    consentRequired: row.consent_required === null ? false : bool(row.consent_required),
  };
}

function toRow(client: Client): Omit<Selectable<ClientTable>, 'created_at' | 'registered_nodes'> {
  return {
    id: client.id,
    realm_id: client.realmId,
    client_id: client.clientId,
    name: client.name,
    description: client.description,
    secret: client.secret,
    public_client: flag(client.publicClient),
    bearer_only: flag(client.bearerOnly),
    enabled: flag(client.enabled),
    protocol: client.protocol,
    root_url: client.rootUrl,
    base_url: client.baseUrl,
    redirect_uris: toJson(client.redirectUris),
    web_origins: toJson(client.webOrigins),
    service_accounts_enabled: flag(client.serviceAccountsEnabled),
    standard_flow_enabled: flag(client.standardFlowEnabled),
    direct_access_grants_enabled: flag(client.directAccessGrantsEnabled),
    implicit_flow_enabled: flag(client.implicitFlowEnabled),
    full_scope_allowed: flag(client.fullScopeAllowed),
    attributes: toJson(client.attributes),
    flow_binding_overrides: Object.keys(client.authenticationFlowBindingOverrides).length ? toJson(client.authenticationFlowBindingOverrides) : null,
    authorization_settings: client.authorizationSettings === null ? null : toJson(client.authorizationSettings),
    authenticator_type: client.clientAuthenticatorType === 'client-secret' ? null : client.clientAuthenticatorType,
    frontchannel_logout: client.frontchannelLogout === false ? flag(false) : null,
    admin_url: client.adminUrl,
    not_before: client.notBefore || null,
    consent_required: client.consentRequired ? flag(true) : null,
  };
}

export class ClientRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
  ) {}

  /** byClientId through the configuration cache (frozen; copy before changing). For the hot paths. */
  cachedByClientId(realmId: string, clientId: string): Promise<Client | null> {
    return this.cache.get(`client\0${realmId}\0${clientId}`, ['client'], () => this.byClientId(realmId, clientId));
  }

  /** byId through the configuration cache (frozen; copy before changing). */
  cachedById(realmId: string, id: string): Promise<Client | null> {
    return this.cache.get(`client-id\0${realmId}\0${id}`, ['client'], () => this.byId(realmId, id));
  }

  async list(realmId: string, options: { clientId?: string; search?: boolean; first?: number; max?: number } = {}, db: Db = this.db): Promise<Client[]> {
    let query = db.selectFrom('client').selectAll().where('realm_id', '=', realmId);
    if (options.clientId !== undefined) {
      query = options.search
        ? query.where(containsIgnoreCase('client_id', options.clientId))
        : query.where('client_id', '=', options.clientId);
    }
    query = query.orderBy('client_id');
    if (options.max !== undefined) query = query.limit(options.max);
    if (options.first) query = query.offset(options.first);
    return (await query.execute()).map(toClient);
  }

  async byId(realmId: string, id: string, db: Db = this.db): Promise<Client | null> {
    const row = await db
      .selectFrom('client')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? toClient(row) : null;
  }

  async byClientId(realmId: string, clientId: string): Promise<Client | null> {
    if (!storable(clientId)) return null;
    const row = await this.db
      .selectFrom('client')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return row ? toClient(row) : null;
  }

  async insert(client: Client, db: Db = this.db): Promise<void> {
    await db.insertInto('client').values({ ...toRow(client), created_at: Date.now() }).execute();
  }

  async update(client: Client, db: Db = this.db): Promise<void> {
    const { id, ...row } = toRow(client);
    await db.updateTable('client').set(row).where('id', '=', id).execute();
  }

  /** A realm import's overrides, set once the realm's flows exist (the file names them by the file's flow ids). */
  async setFlowBindingOverrides(id: string, overrides: Record<string, string>, db: Db = this.db): Promise<void> {
    await db.updateTable('client').set({ flow_binding_overrides: Object.keys(overrides).length ? toJson(overrides) : null }).where('id', '=', id).execute();
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('client').where('id', '=', id).execute();
  }

  /** Keycloak's registered cluster nodes of the client: host → epoch seconds of its (last) registration. */
  async registeredNodes(id: string, db: Db = this.db): Promise<Record<string, number>> {
    const row = await db.selectFrom('client').select('registered_nodes').where('id', '=', id).executeTakeFirst();
    return fromJson<Record<string, number>>(row?.registered_nodes, {});
  }

  async setRegisteredNodes(id: string, nodes: Record<string, number>, db: Db = this.db): Promise<void> {
    await db.updateTable('client').set({ registered_nodes: Object.keys(nodes).length ? toJson(nodes) : null }).where('id', '=', id).execute();
  }
}
