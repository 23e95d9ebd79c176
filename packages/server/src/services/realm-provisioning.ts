import { newId, newSecret } from '../credentials/index.js';
import type { Flows } from '../flows/index.js';
import type { RealmKeys } from '../keys/index.js';
import { ACCOUNT, ADMIN_CLI, REALM_MANAGEMENT, SECURITY_ADMIN_CONSOLE, accountRoles, adminClientId, accountConsoleScope, defaultAccountRoles, impliedAccountRoles, defaultClient, defaultRealm, impliedManagementRoles, realmManagementRoles } from '../model/defaults.js';
import { conflict } from '../model/errors.js';
import type { Client, Realm, Role } from '../model/types.js';
import type { Db, Storage } from '../storage/index.js';
import { attachClientScopes, provisionClientScopes } from './client-scopes.js';
import { CLIENT_REGISTRATION_POLICY_TYPE, defaultRegistrationPolicies } from '../model/client-registration.js';

/**
 * Keycloak's default client registration policies (model/client-registration.ts), added to a realm that has none of
 * its own: at creation, and after an import whose file names none.
 */
export async function addDefaultRegistrationPolicies(storage: Storage, realmId: string, db: Db): Promise<void> {
  if ((await storage.federation.components(realmId, { parentId: realmId, providerType: CLIENT_REGISTRATION_POLICY_TYPE }, db)).length > 0) return;
  for (const policy of defaultRegistrationPolicies()) {
    await storage.federation.insertComponent({ id: newId(), realmId, parentId: realmId, providerType: CLIENT_REGISTRATION_POLICY_TYPE, ...policy }, db);
  }
}

const MASTER = 'master';

export const defaultRolesName = (realmName: string) => `default-roles-${realmName.toLowerCase()}`;

/**
 * Creates a realm with what Keycloak gives every realm: signing key, default roles, the
 * realm-management, admin-cli, account, account-console and security-admin-console clients, and the built-in
 * authentication flows.
 */
export async function provisionRealm(
  storage: Storage,
  keys: RealmKeys,
  flows: Pick<Flows, 'provisionBuiltInFlows'>,
  name: string,
  customize: (realm: Realm) => void = () => {},
  trx?: Db,
  /** How the realm gets its first keys: a generated one, or (an import) the realm file's. */
  firstKeys: (realm: Realm, db: Db) => Promise<unknown> = (r, db) => keys.generate(r.id, db),
): Promise<Realm> {
  const realm = defaultRealm(newId(), name, Date.now());
  customize(realm);
  const work = async (db: Db) => {
    await storage.realms.insert(realm, db);
    await firstKeys(realm, db);
    await flows.provisionBuiltInFlows(realm.id, db);
    const role = (containerId: string, roleName: string, clientRole: boolean, description: string | null = null): Role => ({
      id: newId(),
      realmId: realm.id,
      containerId,
      clientRole,
      name: roleName,
      description,
    });
    const offline = role(realm.id, 'offline_access', false, '${role_offline-access}');
    const uma = role(realm.id, 'uma_authorization', false, '${role_uma_authorization}');
    const defaults = role(realm.id, defaultRolesName(name), false, '${role_default-roles}');
    for (const r of [offline, uma, defaults]) await storage.roles.insert(r, db);
    await provisionClientScopes(storage, realm.id, db, offline.id);

    const adminCli: Client = { ...defaultClient(newId(), realm.id, ADMIN_CLI), publicClient: true, standardFlowEnabled: false, directAccessGrantsEnabled: true, name: '${client_admin-cli}' };
    const account: Client = {
      ...defaultClient(newId(), realm.id, ACCOUNT),
      secret: newSecret(),
      name: '${client_account}',
      baseUrl: `/realms/${name}/account/`,
      redirectUris: [`/realms/${name}/account/*`],
      publicClient: true,
    };
    const accountConsole: Client = {
      ...defaultClient(newId(), realm.id, 'account-console'),
      publicClient: true,
      name: '${client_account-console}',
      baseUrl: `/realms/${name}/account/`,
      redirectUris: [`/realms/${name}/account/*`],
      attributes: { 'pkce.code.challenge.method': 'S256', 'post.logout.redirect.uris': '+' },
      // As Keycloak's: its tokens carry only the account roles its scope names (below), never the user's others.
      fullScopeAllowed: false,
    };
    for (const c of [adminCli, account, accountConsole, securityAdminConsole(realm.id, name)]) {
      await storage.clients.insert(c, db);
      await attachClientScopes(storage, c, {}, db);
    }
    // Master is administered through its own master-realm client (below); every other realm through its
    // realm-management client and, from master, through master's {realm}-realm client.
    if (name !== MASTER) await insertManagementClient(storage, realm.id, REALM_MANAGEMENT, true, db);

    const accountRoleIds = await ensureAccountRoles(storage, realm.id, account.id, db);
    await storage.roles.addComposites(defaults.id, [offline.id, uma.id, ...defaultAccountRoles.map((n) => accountRoleIds.get(n)!)], db);
    await storage.roles.addScopeMappings(accountConsole.id, accountConsoleScope.map((n) => accountRoleIds.get(n)!), db);

    if (name === MASTER) {
      const createRealm = role(realm.id, 'create-realm', false, '${role_create-realm}');
      const admin = role(realm.id, 'admin', false, '${role_admin}');
      await storage.roles.insert(createRealm, db);
      await storage.roles.insert(admin, db);
      await storage.roles.addComposites(admin.id, [createRealm.id], db);
    }
    await addAdminClient(storage, name, db);
    await addDefaultRegistrationPolicies(storage, realm.id, db);
  };
  if (trx) await work(trx);
  else await storage.transaction(work);
  return realm;
}

/**
 * The admin console's client, as Keycloak's: public, PKCE S256, signing in only to the realm's console page, CORS
 * for this server's own origin (`+`: the origins of its redirect URIs).
 */
function securityAdminConsole(realmId: string, realmName: string): Client {
  const page = `/admin/${encodeURIComponent(realmName)}/console/`;
  return {
    ...defaultClient(newId(), realmId, SECURITY_ADMIN_CONSOLE),
    publicClient: true,
    name: '${client_security-admin-console}',
    baseUrl: page,
    redirectUris: [`${page}*`],
    webOrigins: ['+'],
    attributes: { 'pkce.code.challenge.method': 'S256', 'post.logout.redirect.uris': '+' },
  };
}

/** Gives every realm made before the admin console its `security-admin-console` client. Idempotent; returns the realms changed. */
export async function upgradeAdminConsoleClient(storage: Storage, db: Db): Promise<string[]> {
  const done: string[] = [];
  const have = new Set((await db.selectFrom('client').select('realm_id').where('client_id', '=', SECURITY_ADMIN_CONSOLE).execute()).map((c) => c.realm_id));
  for (const realm of await db.selectFrom('realm').select(['id', 'name']).execute()) {
    if (have.has(realm.id)) continue;
    const client = securityAdminConsole(realm.id, realm.name);
    await storage.clients.insert(client, db);
    // The realm's scope lists, when it has them already (a realm without stored scopes gets them, this client
    // included, from upgradeClientScopes, which runs after this).
    await attachClientScopes(storage, client, {}, db);
    done.push(realm.name);
  }
  return done;
}

/**
 * The `account` client's roles and their composites, those missing created (a realm from before one of them
 * was added gets it at start-up). Returns every account role's id by name.
 */
async function ensureAccountRoles(storage: Storage, realmId: string, accountUuid: string, db: Db): Promise<Map<string, string>> {
  const existing = new Map((await db.selectFrom('role').select(['id', 'name']).where('container_id', '=', accountUuid).execute()).map((r) => [r.name, r.id]));
  const ids = new Map<string, string>();
  const created: string[] = [];
  for (const roleName of accountRoles) {
    let id = existing.get(roleName);
    if (!id) {
      id = newId();
      await storage.roles.insert({ id, realmId, containerId: accountUuid, clientRole: true, name: roleName, description: `\${role_${roleName}}` }, db);
      created.push(roleName);
    }
    ids.set(roleName, id);
  }
  // Composites only where the implied role is new: a composite an administrator took apart stays apart.
  for (const [holder, implied] of Object.entries(impliedAccountRoles)) {
    const fresh = implied.filter((n) => created.includes(n) || created.includes(holder));
    if (fresh.length) await storage.roles.addComposites(ids.get(holder)!, fresh.map((n) => ids.get(n)!), db);
  }
  return ids;
}

/**
 * Gives every realm the `account` client roles Keycloak 26 has (view-applications, view-groups, the consent and
 * account-link roles were added after the first databases were made). Idempotent; returns the realms changed.
 */
export async function upgradeAccountRoles(storage: Storage, db: Db): Promise<string[]> {
  const done: string[] = [];
  const clients = await db.selectFrom('client').innerJoin('realm', 'realm.id', 'client.realm_id').select(['client.id', 'client.realm_id', 'realm.name']).where('client.client_id', '=', ACCOUNT).execute();
  for (const client of clients) {
    const before = await db.selectFrom('role').select('name').where('container_id', '=', client.id).execute();
    if (accountRoles.every((n) => before.some((r) => r.name === n))) continue;
    await ensureAccountRoles(storage, client.realm_id, client.id, db);
    done.push(client.name);
  }
  return done;
}

/**
 * A bearer-only client holding Keycloak's management roles, `manage-X` composites of what they imply and, for
 * realm-management, `realm-admin` over all of them. Returns the roles by name.
 */
async function insertManagementClient(storage: Storage, realmId: string, clientId: string, withRealmAdmin: boolean, db: Db): Promise<Map<string, Role>> {
  const client: Client = { ...defaultClient(newId(), realmId, clientId), bearerOnly: true, standardFlowEnabled: false, name: clientId === REALM_MANAGEMENT ? '${client_realm-management}' : `${clientId.slice(0, -6)} Realm` };
  await storage.clients.insert(client, db);
  await attachClientScopes(storage, client, {}, db);
  const roles = new Map<string, Role>();
  for (const roleName of withRealmAdmin ? [...realmManagementRoles, 'realm-admin'] : realmManagementRoles) {
    const r: Role = { id: newId(), realmId, containerId: client.id, clientRole: true, name: roleName, description: `\${role_${roleName}}` };
    roles.set(roleName, r);
    await storage.roles.insert(r, db);
  }
  for (const [holder, implied] of Object.entries(impliedManagementRoles)) {
    await storage.roles.addComposites(roles.get(holder)!.id, implied.map((n) => roles.get(n)!.id), db);
  }
  if (withRealmAdmin) await storage.roles.addComposites(roles.get('realm-admin')!.id, realmManagementRoles.map((n) => roles.get(n)!.id), db);
  return roles;
}

// Through `db`, never the repositories' own handle: inside a SQLite transaction that would wait forever.
const masterOf = (db: Db) => db.selectFrom('realm').select('id').where('name', '=', MASTER).executeTakeFirst();

const masterAdminRole = (db: Db, masterId: string) =>
  db.selectFrom('role').select('id').where('container_id', '=', masterId).where('name', '=', 'admin').executeTakeFirst();

/**
 * Master's `{realm}-realm` client for a new realm, its roles added to master's `admin` composite (so the master
 * administrator holds them). A realm of that name must not find the client id taken: its creation fails instead.
 */
async function addAdminClient(storage: Storage, realmName: string, db: Db): Promise<void> {
  const master = await masterOf(db);
  if (!master) throw new Error('the master realm must exist before any other realm');
  const taken = await db.selectFrom('client').select('id').where('realm_id', '=', master.id).where('client_id', '=', adminClientId(realmName)).executeTakeFirst();
  if (taken) throw conflict(`The master realm has a client named ${adminClientId(realmName)}, which administers realm ${realmName}: rename that client first`, 'realm');
  const roles = await insertManagementClient(storage, master.id, adminClientId(realmName), false, db);
  const admin = await masterAdminRole(db, master.id);
  if (admin) await storage.roles.addComposites(admin.id, [...roles.values()].map((r) => r.id), db);
}

/** Gives a master user every role of master's client for `realmName`: what Keycloak gives a realm's creator. */
export async function grantAdminClientRoles(userId: string, realmName: string, db: Db): Promise<void> {
  const roles = await db
    .selectFrom('role')
    .innerJoin('client', 'client.id', 'role.container_id')
    .innerJoin('realm', 'realm.id', 'client.realm_id')
    .select('role.id')
    .where('realm.name', '=', MASTER)
    .where('client.client_id', '=', adminClientId(realmName))
    .execute();
  if (roles.length) await db.insertInto('user_role').values(roles.map((r) => ({ user_id: userId, role_id: r.id }))).onConflict((oc) => oc.columns(['user_id', 'role_id']).doNothing()).execute();
}

/** Renames master's client for a realm with the realm, as Keycloak does. */
export async function renameAdminClient(oldName: string, newName: string, db: Db): Promise<void> {
  const master = await masterOf(db);
  if (!master) return;
  await db.updateTable('client').set({ client_id: adminClientId(newName), name: `${newName} Realm` }).where('realm_id', '=', master.id).where('client_id', '=', adminClientId(oldName)).execute();
}

/**
 * Points a renamed realm's security-admin-console client at the console's new page, as Keycloak does on a rename:
 * its base URL and redirect URIs name the realm (`/admin/{realm}/console/`), and an old one would leave the console
 * unable to sign in. Other URIs an administrator added are kept as they are.
 */
export async function renameAdminConsolePaths(realmId: string, oldName: string, newName: string, db: Db): Promise<void> {
  const client = await db.selectFrom('client').select(['id', 'base_url', 'redirect_uris']).where('realm_id', '=', realmId).where('client_id', '=', SECURITY_ADMIN_CONSOLE).executeTakeFirst();
  if (!client) return;
  const from = `/admin/${encodeURIComponent(oldName)}/`;
  const to = `/admin/${encodeURIComponent(newName)}/`;
  const moved = (uri: string) => uri.split(from).join(to);
  const redirectUris = (JSON.parse(client.redirect_uris) as string[]).map(moved);
  await db
    .updateTable('client')
    .set({ base_url: client.base_url === null ? null : moved(client.base_url), redirect_uris: JSON.stringify(redirectUris) })
    .where('id', '=', client.id)
    .execute();
}

/** Removes master's client for a deleted realm, with its roles (their mappings and composites go with them). */
export async function removeAdminClient(realmName: string, db: Db): Promise<void> {
  const master = await masterOf(db);
  if (!master) return;
  const client = await db.selectFrom('client').select('id').where('realm_id', '=', master.id).where('client_id', '=', adminClientId(realmName)).executeTakeFirst();
  if (!client) return;
  await db.deleteFrom('role').where('container_id', '=', client.id).execute();
  await db.deleteFrom('client').where('id', '=', client.id).execute();
}

/**
 * Brings a database made before the master admin model to it, once: master's realm-management becomes
 * master-realm (its realm-admin role goes; whoever held it directly gets every master-realm role instead), and
 * every other realm gets its {realm}-realm client in master. Idempotent; runs at start-up in one transaction.
 */
export async function upgradeAdminModel(storage: Storage, db: Db): Promise<string[]> {
  const master = await masterOf(db);
  if (!master) return [];
  const done: string[] = [];
  const legacy = await db.selectFrom('client').select('id').where('realm_id', '=', master.id).where('client_id', '=', REALM_MANAGEMENT).executeTakeFirst();
  if (legacy) {
    await db.updateTable('client').set({ client_id: adminClientId(MASTER), name: `${MASTER} Realm` }).where('id', '=', legacy.id).execute();
    const realmAdmin = await db.selectFrom('role').select('id').where('container_id', '=', legacy.id).where('name', '=', 'realm-admin').executeTakeFirst();
    if (realmAdmin) {
      const holders = await db.selectFrom('user_role').select('user_id').where('role_id', '=', realmAdmin.id).execute();
      const managementRoleIds = (await db.selectFrom('role').select('id').where('container_id', '=', legacy.id).where('id', '!=', realmAdmin.id).execute()).map((r) => r.id);
      for (const { user_id } of holders) await storage.roles.grant(user_id, managementRoleIds, db);
      const admin = await masterAdminRole(db, master.id);
      if (admin) await storage.roles.addComposites(admin.id, managementRoleIds, db);
      await db.deleteFrom('role').where('id', '=', realmAdmin.id).execute();
    }
    done.push(MASTER);
  }
  const clientIds = new Set((await db.selectFrom('client').select('client_id').where('realm_id', '=', master.id).execute()).map((c) => c.client_id));
  for (const realm of await db.selectFrom('realm').select('name').where('name', '!=', MASTER).execute()) {
    if (clientIds.has(adminClientId(realm.name))) continue;
    await addAdminClient(storage, realm.name, db);
    done.push(realm.name);
  }
  return done;
}
