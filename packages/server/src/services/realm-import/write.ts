import type { ServiceContext } from '../context.js';
import { newId } from '../../credentials/index.js';
import { badRequest, conflict, PasswordPolicyError } from '../../model/errors.js';
import type { Group, Realm } from '../../model/types.js';
import { isUniqueViolation, type Db } from '../../storage/index.js';
import type { ImportedGroup } from '../../representations/group.js';
import type { ImportedRole } from '../../representations/role.js';
import type { Storage } from '../../storage/index.js';
import type { ImportedOverrides } from '../../flows/index.js';
import { insertClient, type ClientExtras } from '../clients.js';
import { addScopesOlderExportsLack, attachClientScopes } from '../client-scopes.js';
import { REALM_DEFAULT_CLIENT_SCOPES, REALM_OPTIONAL_CLIENT_SCOPES } from '../../model/builtin-client-scopes.js';
import { REALM_MANAGEMENT, adminClientRealmName } from '../../model/defaults.js';
import { CLIENT_REGISTRATION_POLICY_TYPE } from '../../model/client-registration.js';
import { saveOrganization } from '../organizations.js';
import { createGroup, GroupTree } from '../groups.js';
import { insertUser } from '../users.js';
import { toUser } from '../../storage/users.js';
import { saveConsents, type ImportedConsent } from './consents.js';
import { saveFederatedIdentities, type ImportedFederatedIdentity } from './federated-identities.js';
import type { RealmImport } from './parse.js';

/** Creates what a realm import holds, inside the realm's creating transaction (all or nothing). */
export async function importRealmContents(ctx: Pick<ServiceContext, 'storage' | 'config' | 'flows' | 'logger'>, realm: Realm, data: RealmImport, trx: Db): Promise<void> {
  const { storage } = ctx;
  const clientUuid = new Map<string, string>();
  for (const row of await trx.selectFrom('client').select(['id', 'client_id']).where('realm_id', '=', realm.id).execute()) {
    clientUuid.set(row.client_id, row.id);
  }
  await importClientScopes(storage, realm, data, trx);
  // An export lists the built-in clients (admin-cli, account, …) the realm already has: those are kept, with the
  // scopes and mappers the export gives them. A clientId the import itself lists twice is a conflict, as in Keycloak.
  const builtIn = new Set(clientUuid.keys());
  const listed = new Set<string>();
  // Flow overrides name the file's flows, which do not exist yet: taken once they do (below).
  const overrides: ImportedOverrides[] = [];
  for (const [i, { scopes, authenticationFlowBindingOverrides, ...input }] of data.clients.entries()) {
    listed.add(input.clientId ?? '');
    if (builtIn.has(input.clientId ?? '')) {
      await relinkBuiltInClient(storage, realm, clientUuid.get(input.clientId!)!, scopes, trx, `realm.clients[${i}]`, input.authorizationSettings);
    } else {
      const client = await insertClient(storage, realm, input, trx, `realm.clients[${i}]`, scopes);
      clientUuid.set(client.clientId, client.id);
    }
    if (authenticationFlowBindingOverrides) overrides.push({ clientUuid: clientUuid.get(input.clientId!)!, path: `realm.clients[${i}]`, overrides: authenticationFlowBindingOverrides });
  }
  // The export's scopes replaced the built-in ones: the built-in clients it does not list get the realm's defaults.
  if (data.clientScopes !== null) {
    for (const clientId of builtIn) if (!listed.has(clientId)) await relinkBuiltInClient(storage, realm, clientUuid.get(clientId)!, {}, trx, 'realm.clients');
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
  // Role scope mappings of clients and of client scopes, as Keycloak's import takes them: an unknown client or client
  // scope refuses the file (naming its path); a role its container lacks is made there, as Keycloak makes it —
  // but never in an administration client, whose roles are fixed.
  const scopeIds = new Map((await storage.clientScopes.list(realm.id, trx)).map((sc) => [sc.name, sc.id]));
  const fixedRoles = (clientId: string) => clientId === REALM_MANAGEMENT || (realm.name === 'master' && adminClientRealmName(clientId) !== null);
  for (const mapping of data.scopeMappings) {
    const holder = mapping.clientScope !== null ? scopeIds.get(mapping.clientScope) : clientUuid.get(mapping.client!);
    if (!holder) throw badRequest(`${mapping.path}: ${mapping.clientScope !== null ? `client scope "${mapping.clientScope}"` : `client "${mapping.client}"`} does not exist`);
    const container = mapping.roleContainer === null ? realm.id : clientContainer(mapping.roleContainer, mapping.path);
    const ids: string[] = [];
    for (const name of mapping.roles) {
      const row = await trx.selectFrom('role').select('id').where('container_id', '=', container).where('name', '=', name).executeTakeFirst();
      if (row) {
        ids.push(row.id);
        continue;
      }
      if (mapping.roleContainer !== null && fixedRoles(mapping.roleContainer)) throw badRequest(`${mapping.path}.roles: role "${name}" does not exist (the roles of ${mapping.roleContainer} are fixed)`);
      const id = newId();
      await storage.roles.insert({ id, realmId: realm.id, containerId: container, clientRole: mapping.roleContainer !== null, name, description: null }, trx);
      ids.push(id);
    }
    if (mapping.clientScope !== null) await storage.clientScopes.addRoles(holder, ids, trx);
    else await storage.roles.addScopeMappings(holder, ids, trx);
  }
  // The flows, then the bindings (settings of the realm, read before its flows existed): one to a flow that cannot
  // run keeps the built-in flow. What is not taken or not run goes into the import's report.
  const flowReport = await ctx.flows.importFlows(realm, data.authentication, trx);
  data.notImported.push(...flowReport.notImported);
  data.keptAsData.push(...flowReport.keptAsData);
  const { flows, builtIns = [] } = data.authentication;
  data.notImported.push(...(await ctx.flows.importOverrides(realm, overrides, [...flows, ...builtIns], trx)));
  // The export lists each client's service-account user; the client's creation above made it already. The file's
  // attributes of it are its own, as in Keycloak (Catena-X's service accounts carry the bpn their mappers put in tokens).
  const serviceAccountUser = async (clientId: string, path: string, attributes: Record<string, string[]> | undefined, createdTimestamp: number | undefined) => {
    const row = await trx
      .selectFrom('user_entity')
      .selectAll()
      .where('realm_id', '=', realm.id)
      .where('service_account_client_id', '=', clientContainer(clientId, `${path}.serviceAccountClientId`))
      .executeTakeFirst();
    if (!row) throw badRequest(`${path}.serviceAccountClientId: client "${clientId}" has no service account (serviceAccountsEnabled is false)`);
    const user = toUser(row);
    const changes = { ...(attributes && Object.keys(attributes).length ? { attributes: { ...user.attributes, ...attributes } } : {}), ...(createdTimestamp !== undefined ? { createdTimestamp } : {}) };
    if (Object.keys(changes).length) await storage.users.update({ ...user, ...changes }, trx);
    return user;
  };
  const groups = await importGroups(storage, realm, data, trx, roleId, clientContainer);
  const userIds = new Map<string, string>();
  const links: { userId: string; link: ImportedFederatedIdentity }[] = [];
  const consents: { userId: string; consent: ImportedConsent }[] = [];
  for (const [i, input] of data.users.entries()) {
    const path = input.path ?? `realm.users[${i}]`;
    const user = input.serviceAccountOf ? await serviceAccountUser(input.serviceAccountOf, path, input.attributes, input.createdTimestamp) : await insertUser(ctx, realm, input, trx, path).catch((error: unknown) => {
      // The realm's policy refuses the file's plain password: say which user's (the rule's key stays Keycloak's).
      throw error instanceof PasswordPolicyError ? new PasswordPolicyError(error.key, error.params, `${path}.credentials: ${error.message}`) : error;
    });
    userIds.set(user.username, user.id);
    for (const link of input.federatedIdentities ?? []) links.push({ userId: user.id, link });
    for (const consent of input.clientConsents ?? []) consents.push({ userId: user.id, consent });
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
    // The organization's groups (Keycloak 26.7's export): members name them by the file's ids, never another's group.
    const groupOf = await createGroupTree(storage, realm, org.id, input.groups ?? [], trx, roleId, clientContainer);
    for (const [j, member] of (input.members ?? []).entries()) {
      const userId = userIds.get(member.username.toLowerCase());
      if (!userId) throw badRequest(`${path}.members[${j}]: user "${member.username}" is not in this import`);
      await storage.organizations.addMember(org.id, userId, trx);
      const joined = new Set<string>();
      for (const [k, fileId] of member.groups.entries()) {
        const groupId = groupOf.get(fileId);
        if (!groupId) throw badRequest(`${path}.members[${j}].groups[${k}]: "${fileId}" is not a group of this organization`, 'groups');
        joined.add(groupId);
      }
      await storage.groups.join(userId, [...joined], trx);
    }
  }
  await importFederation(storage, realm, data, trx);
  // After the providers: a link names one by alias, of the file or, in a partial import, of the realm.
  await saveFederatedIdentities(storage, realm, links, trx);
  if (data.clientScopes !== null) {
    const added = await addScopesOlderExportsLack(storage, realm.id, trx);
    if (added.length) ctx.logger.info({ realm: realm.name, added }, 'realm import: client scopes of later Keycloak versions added, as Keycloak migrates an older realm');
  }
  // After the clients and every client scope (those just added too): a consent names both.
  await saveConsents(storage, realm, consents, clientContainer, trx);
  // After the users: an imported user has the required actions its entry lists, not the realm's default ones.
  await storage.credentials.saveRealmRequiredActions(realm.id, data.requiredActions, trx);
  for (const [locale, texts] of Object.entries(data.localizationTexts)) await storage.localization.save(realm.id, locale, texts, trx);
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
  await createGroupTree(storage, realm, null, data.groups, trx, roleId, clientContainer);
  // The realm's groups, so users may join one a partial import did not bring (a whole realm has only the file's).
  return GroupTree.load(storage, realm.id, trx);
}

/**
 * Creates a file's group tree, of the realm or of an organization, with the roles mapped to each group by name.
 * Answers the new group of each id the file gave (an organization's members name its groups by those ids).
 */
async function createGroupTree(
  storage: Storage,
  realm: Realm,
  organizationId: string | null,
  inputs: ImportedGroup[],
  trx: Db,
  roleId: (containerId: string, name: string, path: string) => Promise<string>,
  clientContainer: (clientId: string, path: string) => string,
): Promise<Map<string, string>> {
  const created: Group[] = [];
  const byFileId = new Map<string, string>();
  const create = async (input: ImportedGroup, parentId: string | null) => {
    const group = await createGroup(storage, realm, new GroupTree(created, organizationId), parentId, input, trx);
    created.push(group);
    if (input.id !== undefined) {
      if (byFileId.has(input.id)) throw badRequest(`${input.path}.id: "${input.id}" is given to two groups`, 'id');
      byFileId.set(input.id, group.id);
    }
    const roles: string[] = [];
    for (const name of input.realmRoles) roles.push(await roleId(realm.id, name, `${input.path}.realmRoles`));
    for (const [clientId, names] of Object.entries(input.clientRoles)) {
      for (const name of names) roles.push(await roleId(clientContainer(clientId, `${input.path}.clientRoles`), name, `${input.path}.clientRoles.${clientId}`));
    }
    await storage.groups.grant(group.id, roles, trx);
    for (const sub of input.subGroups) await create(sub, group.id);
  };
  for (const input of inputs) await create(input, null);
  return byFileId;
}

/**
 * The realm file's client scopes and the realm's default and optional lists. Scopes in the file replace the
 * built-in ones the realm was provisioned with (as Keycloak's import uses the file's); without them the built-ins
 * stay. The lists name scopes (a name the realm has no scope for is skipped, as Keycloak skips it); a file with
 * scopes and without lists gets Keycloak's default names among its scopes.
 */
async function importClientScopes(storage: Storage, realm: Realm, data: RealmImport, trx: Db): Promise<void> {
  if (data.clientScopes !== null) {
    await trx.deleteFrom('client_scope').where('realm_id', '=', realm.id).execute();
    for (const [i, input] of data.clientScopes.entries()) {
      try {
        await storage.clientScopes.insert({ ...input, id: newId(), realmId: realm.id, protocolMappers: (input.protocolMappers ?? []).map((m) => ({ ...m, id: newId() })) }, trx);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`realm.clientScopes[${i}]: a mapper name is taken twice`, 'protocolMappers');
        throw error;
      }
    }
  }
  const given = data.defaultDefaultClientScopes !== undefined || data.defaultOptionalClientScopes !== undefined;
  if (!given && data.clientScopes === null) return;
  const defaults = given ? (data.defaultDefaultClientScopes ?? []) : [...REALM_DEFAULT_CLIENT_SCOPES];
  const optionals = given ? (data.defaultOptionalClientScopes ?? []) : [...REALM_OPTIONAL_CLIENT_SCOPES];
  await trx.deleteFrom('realm_client_scope').where('realm_id', '=', realm.id).execute();
  const byName = new Map((await storage.clientScopes.list(realm.id, trx)).map((sc) => [sc.name, sc.id]));
  for (const [names, isDefault] of [[defaults, true], [optionals, false]] as const) {
    for (const name of names) {
      const id = byName.get(name);
      if (id) await storage.clientScopes.linkToRealm(realm.id, id, isDefault, trx);
    }
  }
}

/**
 * A built-in client (admin-cli, account, …) the file lists or whose scopes the file replaced: linked to the scopes
 * the file names for it (else the realm's defaults), with the mappers and authorization settings (kept as data) the
 * file gives it.
 */
async function relinkBuiltInClient(storage: Storage, realm: Realm, clientUuid: string, scopes: ClientExtras, trx: Db, path: string, authorizationSettings?: Record<string, unknown> | null): Promise<void> {
  const client = await storage.clients.byId(realm.id, clientUuid, trx);
  if (!client) return;
  if (authorizationSettings) await storage.clients.update({ ...client, authorizationSettings }, trx);
  await trx.deleteFrom('client_client_scope').where('client_id', '=', client.id).execute();
  await attachClientScopes(storage, client, scopes, trx);
  if (scopes.protocolMappers?.length) {
    await trx.deleteFrom('protocol_mapper').where('client_id', '=', client.id).execute();
    try {
      await storage.clientScopes.insertMappers(realm.id, { clientId: client.id }, scopes.protocolMappers.map((m) => ({ ...m, id: newId() })), trx);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`${path}.protocolMappers: two mappers are named alike`, 'protocolMappers');
      throw error;
    }
  }
}


/**
 * The file's identity providers, their mappers and components, kept as data (new ids; a mapper finds its provider
 * by alias, a sub-component its parent by nesting). An alias the realm has already is a conflict naming the path.
 */
async function importFederation(storage: Storage, realm: Realm, data: RealmImport, trx: Db): Promise<void> {
  const internalIds = new Map<string, string>();
  for (const [i, input] of data.identityProviders.entries()) {
    const internalId = newId();
    try {
      await storage.federation.insertProvider({ ...input, internalId, realmId: realm.id }, trx);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`realm.identityProviders[${i}].alias: Identity Provider ${input.alias} already exists`, 'alias');
      throw error;
    }
    internalIds.set(input.alias, internalId);
  }
  for (const { path, ...mapper } of data.identityProviderMappers) {
    const internalId = internalIds.get(mapper.identityProviderAlias) ?? (await storage.federation.providerByAlias(realm.id, mapper.identityProviderAlias, trx))?.internalId;
    if (!internalId) throw badRequest(`${path}.identityProviderAlias: no identity provider "${mapper.identityProviderAlias}"`, 'identityProviderAlias');
    try {
      await storage.federation.insertMapper(realm.id, internalId, { ...mapper, id: newId() }, trx);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`${path}.name: "${mapper.name}" is named twice for identity provider ${mapper.identityProviderAlias}`, 'name');
      throw error;
    }
  }
  const insert = async (components: RealmImport['components'], parentId: string) => {
    for (const { subComponents, path: _path, ...component } of components) {
      const id = newId();
      await storage.federation.insertComponent({ ...component, id, realmId: realm.id, parentId }, trx);
      await insert(subComponents, id);
    }
  };
  // A file with client registration policies of its own has those instead of the defaults the realm was made with
  // (Keycloak adds its defaults only to a realm that has none).
  if (data.components.some((c) => c.providerType === CLIENT_REGISTRATION_POLICY_TYPE)) {
    for (const c of await storage.federation.components(realm.id, { parentId: realm.id, providerType: CLIENT_REGISTRATION_POLICY_TYPE }, trx)) await storage.federation.deleteComponent(realm.id, c.id, trx);
  }
  await insert(data.components, realm.id);
}
