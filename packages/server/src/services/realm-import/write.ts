import type { ServerContext } from '../../context.js';
import { newId } from '../../credentials/index.js';
import { badRequest } from '../../model/errors.js';
import type { Group, Realm } from '../../model/types.js';
import type { Db } from '../../storage/index.js';
import type { ImportedGroup } from '../../admin/representations/group.js';
import type { ImportedRole } from '../../admin/representations/role.js';
import type { Storage } from '../../storage/index.js';
import { insertClient } from '../clients.js';
import { saveOrganization } from '../organizations.js';
import { createGroup, GroupTree } from '../groups.js';
import { insertUser } from '../users.js';
import type { RealmImport } from './parse.js';

/** Creates what a realm import holds, inside the realm's creating transaction (all or nothing). */
export async function importRealmContents(ctx: Pick<ServerContext, 'storage' | 'flows' | 'logger'>, realm: Realm, data: RealmImport, trx: Db): Promise<void> {
  const { storage } = ctx;
  const clientUuid = new Map<string, string>();
  for (const row of await trx.selectFrom('client').select(['id', 'client_id']).where('realm_id', '=', realm.id).execute()) {
    clientUuid.set(row.client_id, row.id);
  }
  // An export lists the built-in clients (admin-cli, account, …) the realm already has: those are kept. A
  // clientId the import itself lists twice is a conflict, as in Keycloak.
  const builtIn = new Set(clientUuid.keys());
  for (const [i, input] of data.clients.entries()) {
    if (builtIn.has(input.clientId ?? '')) continue;
    const client = await insertClient(storage, realm, input, trx, `realm.clients[${i}]`);
    clientUuid.set(client.clientId, client.id);
  }
  const roleId = async (containerId: string, name: string, path: string) => {
    const row = await trx.selectFrom('role').select('id').where('container_id', '=', containerId).where('name', '=', name).executeTakeFirst();
    if (!row) throw badRequest(`${path}: role "${name}" does not exist`);
    return row.id;
  };
  const clientContainer = (clientId: string, path: string) => {
    const id = clientUuid.get(clientId);
    if (!id) throw badRequest(`${path}: client "${clientId}" does not exist`);
    return id;
  };
  const ensureRole = async (containerId: string, clientRole: boolean, role: ImportedRole) => {
    const existing = await trx.selectFrom('role').select('id').where('container_id', '=', containerId).where('name', '=', role.name).executeTakeFirst();
    if (!existing) await storage.roles.insert({ id: newId(), realmId: realm.id, containerId, clientRole, name: role.name, description: role.description ?? null }, trx);
  };
  for (const role of data.realmRoles) await ensureRole(realm.id, false, role);
  for (const [clientId, roles] of Object.entries(data.clientRoles)) {
    for (const role of roles) await ensureRole(clientContainer(clientId, `realm.roles.client.${clientId}`), true, role);
  }
  const linkComposites = async (containerId: string, role: ImportedRole, path: string) => {
    const children: string[] = [];
    for (const name of role.composites?.realm ?? []) children.push(await roleId(realm.id, name, `${path}.composites.realm`));
    for (const [clientId, names] of Object.entries(role.composites?.client ?? {})) {
      for (const name of names) children.push(await roleId(clientContainer(clientId, `${path}.composites.client`), name, `${path}.composites.client.${clientId}`));
    }
    if (children.length) await storage.roles.addComposites(await roleId(containerId, role.name, path), children, trx);
  };
  for (const [i, role] of data.realmRoles.entries()) await linkComposites(realm.id, role, `realm.roles.realm[${i}]`);
  for (const [clientId, roles] of Object.entries(data.clientRoles)) {
    for (const [i, role] of roles.entries()) await linkComposites(clientContainer(clientId, ''), role, `realm.roles.client.${clientId}[${i}]`);
  }
  for (const mapping of data.scopeMappings) {
    const holder = clientUuid.get(mapping.client);
    const container = mapping.roleContainer === null ? realm.id : clientUuid.get(mapping.roleContainer);
    if (!holder || !container) {
      ctx.logger.warn({ realm: realm.name, path: mapping.path }, 'realm import: scope mapping of an unknown client, skipped');
      continue;
    }
    const ids: string[] = [];
    for (const name of mapping.roles) {
      const row = await trx.selectFrom('role').select('id').where('container_id', '=', container).where('name', '=', name).executeTakeFirst();
      if (row) ids.push(row.id);
      else ctx.logger.warn({ realm: realm.name, path: mapping.path, role: name }, 'realm import: scope mapping of an unknown role, skipped');
    }
    await storage.roles.addScopeMappings(holder, ids, trx);
  }
  await ctx.flows.importFlows(realm.id, data.authentication, trx);
  // The bindings are settings of the realm, read before its flows existed: checked once they do.
  const binding = await ctx.flows.validateBindings(realm, trx);
  if (binding) throw badRequest(binding.message, binding.field);
  // The export lists each client's service-account user; the client's creation above made it already.
  const serviceAccountUser = async (clientId: string, path: string) => {
    const row = await trx
      .selectFrom('user_entity')
      .select(['id', 'username'])
      .where('realm_id', '=', realm.id)
      .where('service_account_client_id', '=', clientContainer(clientId, `${path}.serviceAccountClientId`))
      .executeTakeFirst();
    if (!row) throw badRequest(`${path}.serviceAccountClientId: client "${clientId}" has no service account (serviceAccountsEnabled is false)`);
    return row;
  };
  const groups = await importGroups(storage, realm, data, trx, roleId, clientContainer);
  const userIds = new Map<string, string>();
  for (const [i, input] of data.users.entries()) {
    const path = `realm.users[${i}]`;
    const user = input.serviceAccountOf ? await serviceAccountUser(input.serviceAccountOf, path) : await insertUser(storage, realm, input, trx, path);
    userIds.set(user.username, user.id);
    const grants: string[] = [];
    for (const name of input.realmRoles ?? []) grants.push(await roleId(realm.id, name, `${path}.realmRoles`));
    for (const [clientId, names] of Object.entries(input.clientRoles ?? {})) {
      for (const name of names) grants.push(await roleId(clientContainer(clientId, `${path}.clientRoles`), name, `${path}.clientRoles.${clientId}`));
    }
    await storage.roles.grant(user.id, grants, trx);
    const memberOf: string[] = [];
    for (const [j, groupPath] of (input.groups ?? []).entries()) {
      const group = groups.byPath(groupPath.startsWith('/') ? groupPath : `/${groupPath}`);
      if (!group) throw badRequest(`${path}.groups[${j}]: group "${groupPath}" does not exist`);
      memberOf.push(group.id);
    }
    await storage.groups.join(user.id, memberOf, trx);
  }
  // After the users: as in Keycloak, an imported user is in the groups the file lists, not the default ones.
  for (const [i, path] of data.defaultGroups.entries()) {
    const group = groups.byPath(path.startsWith('/') ? path : `/${path}`);
    if (!group) throw badRequest(`realm.defaultGroups[${i}]: group "${path}" does not exist`);
    await storage.groups.addDefault(realm.id, group.id, trx);
  }
  for (const [i, input] of data.organizations.entries()) {
    const path = `realm.organizations[${i}]`;
    const org = await saveOrganization(storage, realm, input, null, trx, path);
    for (const [j, username] of (input.members ?? []).entries()) {
      const userId = userIds.get(username.toLowerCase());
      if (!userId) throw badRequest(`${path}.members[${j}]: user "${username}" is not in this import`);
      await storage.organizations.addMember(org.id, userId, trx);
    }
  }
}

/** The realm file's groups, subgroups and the roles mapped to them; the tree they make, for users' and default groups' paths. */
async function importGroups(
  storage: Storage,
  realm: Realm,
  data: RealmImport,
  trx: Db,
  roleId: (containerId: string, name: string, path: string) => Promise<string>,
  clientContainer: (clientId: string, path: string) => string,
): Promise<GroupTree> {
  const created: Group[] = [];
  const create = async (input: ImportedGroup, parentId: string | null) => {
    const group = await createGroup(storage, realm, new GroupTree(created), parentId, input, trx);
    created.push(group);
    const roles: string[] = [];
    for (const name of input.realmRoles) roles.push(await roleId(realm.id, name, `${input.path}.realmRoles`));
    for (const [clientId, names] of Object.entries(input.clientRoles)) {
      for (const name of names) roles.push(await roleId(clientContainer(clientId, `${input.path}.clientRoles`), name, `${input.path}.clientRoles.${clientId}`));
    }
    await storage.groups.grant(group.id, roles, trx);
    for (const sub of input.subGroups) await create(sub, group.id);
  };
  for (const input of data.groups) await create(input, null);
  return new GroupTree(created);
}
