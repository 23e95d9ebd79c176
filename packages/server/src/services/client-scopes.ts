import { newId } from '../credentials/index.js';
import { BUILTIN_CLIENT_SCOPES, REALM_DEFAULT_CLIENT_SCOPES, REALM_OPTIONAL_CLIENT_SCOPES, SERVICE_ACCOUNT_SCOPE } from '../model/builtin-client-scopes.js';
import type { Client, ClientScope, ProtocolMapper } from '../model/types.js';
import type { Db, ScopeLink, Storage } from '../storage/index.js';

/**
 * Keycloak 26's built-in client scopes for a new realm (fresh ids), its default and optional lists, and the
 * `offline_access` scope's role scope mapping to the realm role of that name (once the role exists: `offlineRoleId`).
 */
export async function provisionClientScopes(storage: Storage, realmId: string, db: Db, offlineRoleId?: string): Promise<void> {
  const ids = new Map<string, string>();
  for (const builtin of BUILTIN_CLIENT_SCOPES) {
    const scope: ClientScope = { ...builtin, id: newId(), realmId, attributes: { ...builtin.attributes }, protocolMappers: builtin.protocolMappers.map((m) => ({ ...m, id: newId(), config: { ...m.config } })) };
    await storage.clientScopes.insert(scope, db);
    ids.set(scope.name, scope.id);
  }
  for (const name of REALM_DEFAULT_CLIENT_SCOPES) await storage.clientScopes.linkToRealm(realmId, ids.get(name)!, true, db);
  for (const name of REALM_OPTIONAL_CLIENT_SCOPES) await storage.clientScopes.linkToRealm(realmId, ids.get(name)!, false, db);
  if (offlineRoleId) await storage.clientScopes.addRoles(ids.get(OFFLINE_ACCESS)!, [offlineRoleId], db);
}

const OFFLINE_ACCESS = 'offline_access';

/**
 * Built-in scopes that exports from older Keycloak versions lack although every token of theirs carried what the
 * scopes' mappers now write: `acr` (added in Keycloak 18) and `basic` (`sub`, `auth_time`; Keycloak 25). Keycloak's
 * migration gives them to every realm and OpenID Connect client; without them an imported realm's access tokens
 * would have no `sub`.
 */
const SCOPES_OLDER_EXPORTS_LACK = ['acr', 'basic'] as const;

/**
 * A realm file's own client scopes replaced the built-ins: the scopes it predates are added (with the built-in
 * mappers) as realm defaults and as default scopes of every OpenID Connect client, as Keycloak's migration of an
 * older realm does. Returns the names added, for the import's report.
 */
export async function addScopesOlderExportsLack(storage: Storage, realmId: string, db: Db): Promise<string[]> {
  const present = new Set((await storage.clientScopes.list(realmId, db)).map((s) => s.name));
  const added: string[] = [];
  for (const name of SCOPES_OLDER_EXPORTS_LACK) {
    if (present.has(name)) continue;
    const builtin = BUILTIN_CLIENT_SCOPES.find((s) => s.name === name)!;
    const scope: ClientScope = { ...builtin, id: newId(), realmId, attributes: { ...builtin.attributes }, protocolMappers: builtin.protocolMappers.map((m) => ({ ...m, id: newId(), config: { ...m.config } })) };
    await storage.clientScopes.insert(scope, db);
    await storage.clientScopes.linkToRealm(realmId, scope.id, true, db);
    for (const client of await storage.clients.list(realmId, {}, db)) {
      if (client.protocol === scope.protocol) await storage.clientScopes.linkToClient(client.id, [{ scopeId: scope.id, defaultScope: true }], db);
    }
    added.push(name);
  }
  return added;
}

/** The client scopes a client may be linked to: those of its protocol (Keycloak never links a SAML scope to an OIDC client). */
async function scopesFor(storage: Storage, client: Client, db: Db): Promise<Map<string, ClientScope>> {
  return new Map((await storage.clientScopes.list(client.realmId, db)).filter((s) => s.protocol === client.protocol).map((s) => [s.name, s]));
}

/** Names a new client's scopes may come with (Keycloak's `defaultClientScopes`, `optionalClientScopes`). */
export interface RequestedScopes {
  defaultClientScopes?: string[];
  optionalClientScopes?: string[];
  /** A realm file's client: the lists it gives are all it gets (no `service_account` added to them). */
  fromFile?: boolean;
}

/**
 * Links a new client to its client scopes, as Keycloak: the names its representation lists when it lists either
 * (a name the realm has no scope for is ignored, as Keycloak ignores it), else the realm's default and optional
 * scopes; and `service_account` as a default scope while its service account is enabled (unless a realm file
 * lists the client's scopes: those are kept as the file has them).
 */
export async function attachClientScopes(storage: Storage, client: Client, requested: RequestedScopes, db: Db): Promise<void> {
  const scopes = await scopesFor(storage, client, db);
  const links: ScopeLink[] = [];
  const listed = requested.defaultClientScopes !== undefined || requested.optionalClientScopes !== undefined;
  if (listed) {
    for (const [names, defaultScope] of [[requested.defaultClientScopes ?? [], true], [requested.optionalClientScopes ?? [], false]] as const) {
      for (const name of names) {
        const scope = scopes.get(name);
        if (scope) links.push({ scopeId: scope.id, defaultScope });
      }
    }
  } else {
    const byId = new Set([...scopes.values()].map((s) => s.id));
    links.push(...(await storage.clientScopes.realmLinks(client.realmId, db)).filter((l) => byId.has(l.scopeId)));
  }
  await storage.clientScopes.linkToClient(client.id, links, db);
  if (!(listed && requested.fromFile)) await syncServiceAccountScope(storage, client, db);
}

/**
 * `service_account` is a default scope of a client exactly while its service account is enabled (Keycloak adds
 * it when the service account is enabled and removes it when disabled). Nothing happens if the realm has no such scope.
 */
export async function syncServiceAccountScope(storage: Storage, client: Client, db: Db): Promise<void> {
  const scope = await storage.clientScopes.byName(client.realmId, SERVICE_ACCOUNT_SCOPE, db);
  if (!scope) return;
  const linked = (await storage.clientScopes.clientLinks(client.id, db)).some((l) => l.scopeId === scope.id);
  if (client.serviceAccountsEnabled && !linked) await storage.clientScopes.linkToClient(client.id, [{ scopeId: scope.id, defaultScope: true }], db);
  if (!client.serviceAccountsEnabled && linked) await storage.clientScopes.unlinkFromClient(client.id, scope.id, db);
}

/**
 * Gives a database made before client scopes were stored Keycloak's built-ins: every realm without a client scope
 * gets them with its default and optional lists, and each of its clients the realm's defaults (and
 * `service_account` when its service account is enabled). Idempotent; returns the realms changed.
 */
export async function upgradeClientScopes(storage: Storage, db: Db): Promise<string[]> {
  const done: string[] = [];
  const withScopes = new Set((await db.selectFrom('client_scope').select('realm_id').distinct().execute()).map((r) => r.realm_id));
  for (const realm of await db.selectFrom('realm').select(['id', 'name']).execute()) {
    if (withScopes.has(realm.id)) continue;
    const offline = await db.selectFrom('role').select('id').where('container_id', '=', realm.id).where('name', '=', OFFLINE_ACCESS).executeTakeFirst();
    await provisionClientScopes(storage, realm.id, db, offline?.id);
    for (const client of await storage.clients.list(realm.id, {}, db)) await attachClientScopes(storage, client, {}, db);
    done.push(realm.name);
  }
  return done;
}

/** What clients' representations show of their scopes: default and optional scope names (sorted), own mappers. */
export async function clientScopeViews(
  storage: Storage,
  realmId: string,
  clientIds: string[],
  db?: Db,
): Promise<Map<string, { defaultClientScopes: string[]; optionalClientScopes: string[]; protocolMappers: ProtocolMapper[] }>> {
  // One after the other: inside a SQLite transaction the one connection serves one query at a time.
  const names = await storage.clientScopes.names(realmId, db);
  const links = await storage.clientScopes.clientLinksMany(clientIds, db);
  const mappers = await storage.clientScopes.mappersByOwner(clientIds, db);
  const named = (list: ScopeLink[], defaultScope: boolean) =>
    list.filter((l) => l.defaultScope === defaultScope && names.has(l.scopeId)).map((l) => names.get(l.scopeId)!).sort();
  return new Map(
    clientIds.map((id) => {
      const list = links.get(id) ?? [];
      return [id, { defaultClientScopes: named(list, true), optionalClientScopes: named(list, false), protocolMappers: mappers.get(id) ?? [] }];
    }),
  );
}

/** The realm representation's `defaultDefaultClientScopes` and `defaultOptionalClientScopes`: scope names, sorted. */
export async function realmDefaultScopeNames(storage: Storage, realmId: string): Promise<{ defaultDefaultClientScopes: string[]; defaultOptionalClientScopes: string[] }> {
  const names = await storage.clientScopes.names(realmId);
  const links = await storage.clientScopes.realmLinks(realmId);
  const linked = (defaultScope: boolean) => links.filter((l) => l.defaultScope === defaultScope && names.has(l.scopeId)).map((l) => names.get(l.scopeId)!).sort();
  return { defaultDefaultClientScopes: linked(true), defaultOptionalClientScopes: linked(false) };
}
