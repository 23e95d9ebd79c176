import { newId, newSecret } from '../credentials/index.js';
import type { Flows } from '../flows/index.js';
import type { RealmKeys } from '../keys/index.js';
import { ACCOUNT, ADMIN_CLI, REALM_MANAGEMENT, accountRoles, defaultClient, defaultRealm, impliedManagementRoles, realmManagementRoles } from '../model/defaults.js';
import type { Client, Realm, Role } from '../model/types.js';
import type { Db, Storage } from '../storage/index.js';

export const defaultRolesName = (realmName: string) => `default-roles-${realmName.toLowerCase()}`;

/**
 * Creates a realm with what Keycloak gives every realm: signing key, default roles, the
 * realm-management, admin-cli, account and account-console clients, and the built-in authentication flows.
 */
export async function provisionRealm(
  storage: Storage,
  keys: RealmKeys,
  flows: Pick<Flows, 'provisionBuiltInFlows'>,
  name: string,
  customize: (realm: Realm) => void = () => {},
  trx?: Db,
): Promise<Realm> {
  const realm = defaultRealm(newId(), name, Date.now());
  customize(realm);
  const work = async (db: Db) => {
    await storage.realms.insert(realm, db);
    await keys.generate(realm.id, db);
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

    const management: Client = { ...defaultClient(newId(), realm.id, REALM_MANAGEMENT), bearerOnly: true, standardFlowEnabled: false, name: '${client_realm-management}' };
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
    };
    for (const c of [management, adminCli, account, accountConsole]) await storage.clients.insert(c, db);

    const managementRoles = new Map<string, Role>();
    for (const roleName of [...realmManagementRoles, 'realm-admin']) {
      const r = role(management.id, roleName, true, `\${role_${roleName}}`);
      managementRoles.set(roleName, r);
      await storage.roles.insert(r, db);
    }
    for (const [holder, implied] of Object.entries(impliedManagementRoles)) {
      await storage.roles.addComposites(managementRoles.get(holder)!.id, implied.map((n) => managementRoles.get(n)!.id), db);
    }
    await storage.roles.addComposites(
      managementRoles.get('realm-admin')!.id,
      realmManagementRoles.map((n) => managementRoles.get(n)!.id),
      db,
    );

    const accountRoleIds = new Map<string, string>();
    for (const roleName of accountRoles) {
      const r = role(account.id, roleName, true, `\${role_${roleName}}`);
      accountRoleIds.set(roleName, r.id);
      await storage.roles.insert(r, db);
    }
    await storage.roles.addComposites(defaults.id, [offline.id, uma.id, accountRoleIds.get('view-profile')!, accountRoleIds.get('manage-account')!], db);

    if (name === 'master') {
      const createRealm = role(realm.id, 'create-realm', false, '${role_create-realm}');
      const admin = role(realm.id, 'admin', false, '${role_admin}');
      await storage.roles.insert(createRealm, db);
      await storage.roles.insert(admin, db);
      await storage.roles.addComposites(admin.id, [createRealm.id, managementRoles.get('realm-admin')!.id], db);
    }
  };
  if (trx) await work(trx);
  else await storage.transaction(work);
  return realm;
}
