import type { ServiceContext } from '../context.js';
import { newId } from '../../credentials/index.js';
import { ACCOUNT, ADMIN_CLI, REALM_MANAGEMENT, SECURITY_ADMIN_CONSOLE, adminClientId } from '../../model/defaults.js';
import { AppError, badRequest, conflict, forbidden } from '../../model/errors.js';
import type { Client, Realm, Role } from '../../model/types.js';
import { groupEffectiveRoles, GroupTree } from '../groups.js';
import { parseRealmImport, type RealmImport } from './parse.js';
import { importRealmContents } from './write.js';

export type IfResourceExists = 'FAIL' | 'SKIP' | 'OVERWRITE';
type ResourceType = 'USER' | 'CLIENT' | 'REALM_ROLE' | 'CLIENT_ROLE' | 'IDP' | 'GROUP';

export interface PartialImportResult {
  action: 'ADDED' | 'SKIPPED' | 'OVERWRITTEN';
  resourceType: ResourceType;
  resourceName: string;
  id?: string;
}

/** Keycloak's PartialImportResults, and what the file holds that this server does not import. */
export interface PartialImportResults {
  overwritten: number;
  added: number;
  skipped: number;
  results: PartialImportResult[];
  notImported: string[];
  /** What is imported as data and not acted on (identity providers): see RealmImport.keptAsData. */
  keptAsData: string[];
}

/**
 * The caller's permission checks (the admin API's rules, which live above this layer), made on the plan before
 * anything is written: roles the import creates are plain roles, so the checks that matter are on existing ones.
 */
export interface PartialImportGuard {
  /** A role is to be added to this container (realm id or client uuid). */
  addRole(containerId: string): Promise<void>;
  /** An existing role is to be replaced (its description and composites). */
  change(role: Role): Promise<void>;
  /** These existing roles are to become composites of `parent` (a new role is described, not stored). */
  compose(parent: Role, children: Role[]): Promise<void>;
  /** These existing roles are to be granted to (or, with a group replaced, taken from) users. */
  grant(roles: Role[]): Promise<void>;
  /** This existing user's account is to be replaced (OVERWRITE) or changed (a service account's attributes, roles). */
  changeAccount(userId: string): Promise<void>;
}

/**
 * The clients every realm is given, and `broker` (Keycloak's, from realm files): an import never replaces them (their
 * roles hold the realm's administration; they sign administrators in, which only a realm administrator may change).
 */
const PROVISIONED_CLIENTS = new Set([ADMIN_CLI, ACCOUNT, 'account-console', 'broker', SECURITY_ADMIN_CONSOLE, REALM_MANAGEMENT]);

const PARTIAL_IMPORT_FIELDS = new Set(['ifResourceExists', 'policy', 'users', 'clients', 'roles', 'groups', 'identityProviders', 'identityProviderMappers']);

/** Reads `POST …/partialImport`'s body: Keycloak's PartialImportRepresentation. */
export function parsePartialImport(body: unknown, realm: Realm): { policy: IfResourceExists; data: RealmImport } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('partialImport: must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!PARTIAL_IMPORT_FIELDS.has(key)) throw badRequest(`partialImport.${key}: unrecognized field`, key);
  }
  const { ifResourceExists = 'FAIL', users, clients, roles, groups, identityProviders, identityProviderMappers } = body as Record<string, unknown>;
  if (ifResourceExists !== 'FAIL' && ifResourceExists !== 'SKIP' && ifResourceExists !== 'OVERWRITE') {
    throw badRequest('partialImport.ifResourceExists: must be FAIL, SKIP or OVERWRITE', 'ifResourceExists');
  }
  // The resources Keycloak's partial import takes, read by the realm-file parser under the realm's own name.
  const data = parseRealmImport({ realm: realm.name, users, clients, roles, groups, identityProviders, identityProviderMappers }, () => true, () => {});
  return { policy: ifResourceExists, data };
}

/**
 * Keycloak's partial import into an existing realm: realm and client roles, clients, groups (top-level, with their
 * subgroups), users (with their groups) and identity providers, each added or, when
 * it exists, refused (`FAIL`: 409 naming it, nothing written), left as it is (`SKIP`) or replaced (`OVERWRITE`: a
 * user or client is removed and added again, a role keeps its id and takes the file's description and
 * composites). The realm's provisioned clients and their roles are never replaced. Everything is decided and
 * checked first, then written in one transaction: all or nothing.
 */
export async function partialImport(
  ctx: Pick<ServiceContext, 'storage' | 'config' | 'flows' | 'logger'>,
  realm: Realm,
  input: { policy: IfResourceExists; data: RealmImport },
  guard: PartialImportGuard,
): Promise<PartialImportResults> {
  const { storage } = ctx;
  const { policy, data } = input;
  const results: PartialImportResult[] = [];
  const masterClients = realm.name === 'master' ? new Set((await storage.realms.list()).map((r) => adminClientId(r.name))) : new Set<string>();
  // Master's {realm}-realm clients hold each realm's administration, as realm-management does inside it.
  const provisioned = (clientId: string) => PROVISIONED_CLIENTS.has(clientId) || masterClients.has(clientId);
  /** Whether to write the resource: true for a new one and one to overwrite; FAIL throws. */
  const decide = (type: ResourceType, name: string, existingId: string | null, keep = false): boolean => {
    if (existingId === null) return true;
    if (policy === 'FAIL') throw conflict(`${{ USER: 'User', CLIENT: 'Client', IDP: 'Identity Provider', GROUP: 'Group' }[type as string] ?? 'Role'} '${name}' already exists`);
    const overwrite = policy === 'OVERWRITE' && !keep;
    results.push({ action: overwrite ? 'OVERWRITTEN' : 'SKIPPED', resourceType: type, resourceName: name, id: existingId });
    return overwrite;
  };

  // The plan: what to remove or replace, what the import writes.
  const existingClients = new Map<string, Client>();
  for (const client of await storage.clients.list(realm.id)) existingClients.set(client.clientId, client);
  const clientsToRemove: Client[] = [];
  const clients = data.clients.filter((client) => {
    const existing = existingClients.get(client.clientId ?? '');
    if (!decide('CLIENT', client.clientId ?? '', existing?.id ?? null, provisioned(client.clientId ?? ''))) return false;
    if (existing) clientsToRemove.push(existing);
    return true;
  });
  const rolesToReplace: { role: Role; description: string | null }[] = [];
  const realmRoles: RealmImport['realmRoles'] = [];
  for (const role of data.realmRoles) {
    const existing = await storage.roles.byName(realm.id, role.name);
    if (!decide('REALM_ROLE', role.name, existing?.id ?? null)) continue;
    if (existing) rolesToReplace.push({ role: existing, description: role.description ?? null });
    realmRoles.push(role);
  }
  const clientRoles: RealmImport['clientRoles'] = {};
  for (const [clientId, roles] of Object.entries(data.clientRoles)) {
    const client = existingClients.get(clientId);
    for (const role of roles) {
      const name = `${clientId}/${role.name}`;
      const existing = client ? await storage.roles.byName(client.id, role.name) : null;
      // The roles of the provisioned clients are the server's (realm-management's are fixed): left as they are.
      if (client && provisioned(clientId)) {
        results.push({ action: 'SKIPPED', resourceType: 'CLIENT_ROLE', resourceName: name, ...(existing ? { id: existing.id } : {}) });
        continue;
      }
      if (!decide('CLIENT_ROLE', name, existing?.id ?? null)) continue;
      if (existing) rolesToReplace.push({ role: existing, description: role.description ?? null });
      else if (client && !clientsToRemove.includes(client)) await guard.addRole(client.id);
      (clientRoles[clientId] ??= []).push(role);
    }
  }
  const usersToRemove: string[] = [];
  const users: RealmImport['users'] = [];
  /** Existing accounts the import changes, by the entry that changes them: each passes the single-user endpoints' rule. */
  const accountsChanged: { entry: string; userId: string }[] = [];
  for (const user of data.users) {
    const username = (user.username ?? '').toLowerCase();
    if (!user.serviceAccountOf) {
      const existing = await storage.users.byUsername(realm.id, username);
      if (!decide('USER', username, existing?.id ?? null)) continue;
      if (existing) {
        usersToRemove.push(existing.id);
        accountsChanged.push({ entry: `${user.path} ("${username}")`, userId: existing.id });
      }
    } else {
      // The service account of a client the realm keeps: the import changes its attributes and roles.
      const client = existingClients.get(user.serviceAccountOf);
      const account = client && !clientsToRemove.includes(client) ? await storage.users.serviceAccountOf(client.id) : null;
      if (account) accountsChanged.push({ entry: `${user.path} ("${account.username}")`, userId: account.id });
    }
    users.push(user);
  }

  // Top-level groups by name, each with its subgroups (as Keycloak's partial import takes them): an overwritten
  // group is removed with its subgroups and memberships and made again from the file.
  const tree = await GroupTree.load(storage, realm.id);
  const groupsToRemove: string[] = [];
  const groupsReplaced: { entry: string; ids: string[] }[] = [];
  const groups: RealmImport['groups'] = [];
  for (const group of data.groups) {
    const existing = tree.childrenOf(null).find((g) => g.name === group.name);
    if (!decide('GROUP', group.name, existing?.id ?? null)) continue;
    if (existing) {
      const ids = [existing.id, ...tree.descendants(existing.id).map((g) => g.id)];
      groupsToRemove.push(...ids);
      groupsReplaced.push({ entry: `${group.path} ("${group.name}")`, ids });
    }
    groups.push(group);
  }

  // Identity providers (kept as data); one overwritten goes with its mappers, the file's mappers come with it. The
  // users' links to it stay (Keycloak drops them): the provider that replaces it has the same alias.
  const providersToRemove: { internalId: string; alias: string }[] = [];
  const identityProviders: RealmImport['identityProviders'] = [];
  for (const provider of data.identityProviders) {
    const existing = await storage.federation.providerByAlias(realm.id, provider.alias);
    if (!decide('IDP', provider.alias, existing?.internalId ?? null)) continue;
    if (existing) providersToRemove.push({ internalId: existing.internalId, alias: existing.alias });
    identityProviders.push(provider);
  }
  const identityProviderMappers = data.identityProviderMappers.filter((m) => identityProviders.some((p) => p.alias === m.identityProviderAlias));

  // The caller's checks, on every existing role the plan writes or hands out.
  const existingRole = async (containerClientId: string | null, name: string): Promise<Role | null> => {
    const containerId = containerClientId === null ? realm.id : existingClients.get(containerClientId)?.id;
    return containerId ? storage.roles.byName(containerId, name) : null;
  };
  const existingRoles = async (names: { realm?: string[]; client?: Record<string, string[]> }) => {
    const found: Role[] = [];
    for (const name of names.realm ?? []) found.push(...[await existingRole(null, name)].filter((r): r is Role => r !== null));
    for (const [clientId, list] of Object.entries(names.client ?? {})) {
      for (const name of list) found.push(...[await existingRole(clientId, name)].filter((r): r is Role => r !== null));
    }
    return found;
  };
  /** A refusal names the entry of the file it is for; nothing is written (the checks run before the transaction). */
  const forEntry = async (entry: string, check: Promise<void>) => {
    try {
      await check;
    } catch (error) {
      if (error instanceof AppError && error.code === 'forbidden') throw forbidden(`${entry}: ${error.message}`);
      throw error;
    }
  };
  for (const { entry, userId } of accountsChanged) await forEntry(entry, guard.changeAccount(userId));
  for (const { role } of rolesToReplace) await forEntry(`role "${role.name}"`, guard.change(role));
  const composed = [...realmRoles.map((r) => ({ r, clientId: null as string | null })), ...Object.entries(clientRoles).flatMap(([clientId, list]) => list.map((r) => ({ r, clientId })))];
  for (const { r, clientId } of composed) {
    const children = await existingRoles(r.composites ?? {});
    if (!children.length) continue;
    const containerId = clientId === null ? realm.id : (existingClients.get(clientId)?.id ?? `new:${clientId}`);
    const parent = (await existingRole(clientId, r.name)) ?? { id: `new:${newId()}`, realmId: realm.id, containerId, clientRole: clientId !== null, name: r.name, description: null };
    await forEntry(`role "${clientId === null ? '' : `${clientId}/`}${r.name}"`, guard.compose(parent, children));
  }
  const removed = new Set(groupsToRemove);
  for (const user of users) {
    const entry = `${user.path} ("${user.serviceAccountOf ? `service-account-${user.serviceAccountOf}` : (user.username ?? '').toLowerCase()}")`;
    await forEntry(entry, guard.grant(await existingRoles({ realm: user.realmRoles, client: user.clientRoles })));
    // The realm's groups it joins, with what their ancestors give (the file's own groups are checked below).
    const joined = (user.groups ?? []).map((path) => tree.byPath(path.startsWith('/') ? path : `/${path}`)).filter((g) => g !== null && !removed.has(g.id));
    if (joined.length) await forEntry(entry, guard.grant(await groupEffectiveRoles(storage, tree, [...new Set(joined.map((g) => g!.id))])));
  }
  // What the file's groups grant their members (subgroups included).
  const groupRoles = (group: RealmImport['groups'][number]): { realm: string[]; client: Record<string, string[]> }[] => [
    { realm: group.realmRoles, client: group.clientRoles },
    ...group.subGroups.flatMap(groupRoles),
  ];
  for (const group of groups) for (const names of groupRoles(group)) await forEntry(`${group.path} ("${group.name}")`, guard.grant(await existingRoles(names)));
  // An overwritten group takes from its members what it gave them: the admin API's rule for deleting such a group.
  for (const { entry, ids } of groupsReplaced) await forEntry(entry, guard.grant(await groupEffectiveRoles(storage, tree, ids)));

  await storage.transaction(async (trx) => {
    for (const client of clientsToRemove) {
      await trx.deleteFrom('role').where('container_id', '=', client.id).execute();
      await storage.clients.delete(client.id, trx);
    }
    for (const { role, description } of rolesToReplace) {
      await storage.roles.update({ ...role, description }, trx);
      await trx.deleteFrom('role_composite').where('parent_id', '=', role.id).execute();
    }
    for (const id of usersToRemove) await storage.users.delete(id, trx);
    await storage.groups.deleteMany(groupsToRemove, trx);
    // After the users it replaces (whose links go with them): the links of the other users, made again below.
    const keptLinks: { alias: string; userId: string; link: { userId: string; userName: string | null } }[] = [];
    for (const { internalId, alias } of providersToRemove) {
      for (const kept of await storage.federation.linksTo(internalId, trx)) keptLinks.push({ alias, ...kept });
      await storage.federation.deleteProvider(internalId, trx);
    }
    const writes = {
      ...data, clients, realmRoles, clientRoles, users, groups, defaultGroups: [], authentication: { flows: [], configs: [] }, organizations: [], scopeMappings: [],
      identityProviders, identityProviderMappers, components: [],
    };
    await importRealmContents(ctx, realm, writes, trx);
    for (const { alias, userId, link } of keptLinks) {
      const provider = await storage.federation.providerByAlias(realm.id, alias, trx);
      if (provider) await storage.federation.addLink(realm.id, userId, provider.internalId, link, trx);
    }
  });

  const added = (type: ResourceType, name: string) => {
    if (!results.some((r) => r.resourceType === type && r.resourceName === name)) results.push({ action: 'ADDED', resourceType: type, resourceName: name });
  };
  for (const client of clients) added('CLIENT', client.clientId ?? '');
  for (const role of realmRoles) added('REALM_ROLE', role.name);
  for (const [clientId, roles] of Object.entries(clientRoles)) for (const role of roles) added('CLIENT_ROLE', `${clientId}/${role.name}`);
  for (const user of users) if (!user.serviceAccountOf) added('USER', (user.username ?? '').toLowerCase());
  for (const provider of identityProviders) added('IDP', provider.alias);
  for (const group of groups) added('GROUP', group.name);
  const count = (action: PartialImportResult['action']) => results.filter((r) => r.action === action).length;
  return { overwritten: count('OVERWRITTEN'), added: count('ADDED'), skipped: count('SKIPPED'), results, notImported: data.notImported, keptAsData: data.keptAsData };
}
