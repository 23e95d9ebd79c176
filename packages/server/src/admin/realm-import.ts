import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import type { FlowImport } from '../flows/index.js';
import { badRequest } from '../model/errors.js';
import type { Client, Realm } from '../model/types.js';
import type { Db } from '../storage/index.js';
import { insertClient } from './clients.js';
import { saveOrganization } from './organizations.js';
import { insertUser } from './users.js';
import { parseAuthentication } from './representations/authentication.js';
import { parseClient } from './representations/client.js';
import { asArray, parseRepresentation, stringList } from './representations/fields.js';
import { parseOrganization, type OrganizationInput } from './representations/organization.js';
import { realmIgnored, realmSpec } from './representations/realm.js';
import { parseImportedRole, type ImportedRole } from './representations/role.js';
import { parseUser, type UserInput } from './representations/user.js';

export interface RealmImport {
  settings: Record<string, unknown>;
  realmRoles: ImportedRole[];
  clientRoles: Record<string, ImportedRole[]>;
  clients: Partial<Client>[];
  users: (UserInput & { realmRoles?: string[]; clientRoles?: Record<string, string[]> })[];
  organizations: (OrganizationInput & { members?: string[] })[];
  authentication: FlowImport;
  /** Keycloak's `scopeMappings` (realm roles) and `clientScopeMappings` (roles of the client named by the key). */
  scopeMappings: ImportedScopeMapping[];
}

interface ImportedScopeMapping {
  /** The client whose scope this is. */
  client: string;
  /** The client whose roles are named, or null for realm roles. */
  roleContainer: string | null;
  roles: string[];
  path: string;
}

/**
 * Scope mappings of clients. Entries for client scopes (`clientScope`) belong to a model this server does not
 * have yet: reported through `onUnknown` and skipped, as is a role the realm lacks (Keycloak's exports name
 * roles of built-in clients that differ between versions).
 */
function parseScopeMappings(rep: Record<string, unknown>, onUnknown?: (path: string) => void): ImportedScopeMapping[] {
  const result: ImportedScopeMapping[] = [];
  const read = (list: unknown, path: string, roleContainer: string | null) => {
    for (const [i, entry] of asArray(list, path).entries()) {
      const at = `${path}[${i}]`;
      if (typeof entry !== 'object' || entry === null) throw badRequest(`${at}: must be an object`);
      const { client, clientScope, roles } = entry as { client?: unknown; clientScope?: unknown; roles?: unknown };
      if (clientScope !== undefined) {
        onUnknown?.(`${at}.clientScope`);
        continue;
      }
      if (typeof client !== 'string') throw badRequest(`${at}.client: is required`);
      result.push({ client, roleContainer, roles: stringList(roles, `${at}.roles`), path: at });
    }
  };
  read(rep.scopeMappings, 'realm.scopeMappings', null);
  const byContainer = rep.clientScopeMappings;
  if (byContainer !== undefined && byContainer !== null) {
    if (typeof byContainer !== 'object' || Array.isArray(byContainer)) throw badRequest('realm.clientScopeMappings: must be an object');
    for (const [container, list] of Object.entries(byContainer)) read(list, `realm.clientScopeMappings.${container}`, container);
  }
  return result;
}

/**
 * Reads a Keycloak realm export (the subset this server keeps). With `onUnknown` (start-up import) unknown
 * fields are reported and skipped; without it (the admin API) they are refused. Every error names its JSON path.
 */
export function parseRealmImport(body: unknown, isListener: (id: string) => boolean, onUnknown?: (path: string) => void): RealmImport {
  const settings = parseRepresentation(body, realmSpec, realmIgnored, 'realm', onUnknown);
  if (typeof settings.realm !== 'string') throw badRequest('realm.realm: is required', 'realm');
  const rep = body as Record<string, unknown>;
  if (onUnknown && Array.isArray(settings.eventsListeners)) {
    settings.eventsListeners = (settings.eventsListeners as string[]).filter((id, i) => {
      if (isListener(id)) return true;
      onUnknown(`realm.eventsListeners[${i}] ("${id}" is not installed)`);
      return false;
    });
  }
  const roles = (rep.roles ?? {}) as { realm?: unknown; client?: unknown };
  if (typeof roles !== 'object') throw badRequest('realm.roles: must be an object');
  const realmRoles = asArray(roles.realm, 'realm.roles.realm').map((r, i) => parseImportedRole(r, `realm.roles.realm[${i}]`, onUnknown));
  const clientRoles: Record<string, ImportedRole[]> = {};
  if (roles.client !== undefined && roles.client !== null) {
    if (typeof roles.client !== 'object') throw badRequest('realm.roles.client: must be an object');
    for (const [clientId, list] of Object.entries(roles.client)) {
      clientRoles[clientId] = asArray(list, `realm.roles.client.${clientId}`).map((r, i) => parseImportedRole(r, `realm.roles.client.${clientId}[${i}]`, onUnknown));
    }
  }
  const clients = asArray(rep.clients, 'realm.clients').map((c, i) => parseClient(c, `realm.clients[${i}]`, onUnknown));
  const users = asArray(rep.users, 'realm.users').map((u, i) => {
    const path = `realm.users[${i}]`;
    const raw = u as { realmRoles?: unknown; clientRoles?: unknown };
    const clientRoleMap: Record<string, string[]> = {};
    if (raw?.clientRoles !== undefined && raw.clientRoles !== null) {
      if (typeof raw.clientRoles !== 'object') throw badRequest(`${path}.clientRoles: must be an object`);
      for (const [clientId, names] of Object.entries(raw.clientRoles)) clientRoleMap[clientId] = stringList(names, `${path}.clientRoles.${clientId}`);
    }
    return { ...parseUser(u, path, onUnknown), realmRoles: stringList(raw?.realmRoles, `${path}.realmRoles`), clientRoles: clientRoleMap };
  });
  const organizations = asArray(rep.organizations, 'realm.organizations').map((o, i) => {
    const path = `realm.organizations[${i}]`;
    const members = asArray((o as { members?: unknown })?.members, `${path}.members`).map((m, j) => {
      const username = (m as { username?: unknown })?.username;
      if (typeof username !== 'string') throw badRequest(`${path}.members[${j}].username: is required`);
      return username;
    });
    return { ...parseOrganization(o, path, onUnknown), members };
  });
  return { settings, realmRoles, clientRoles, clients, users, organizations, authentication: parseAuthentication(rep, onUnknown), scopeMappings: parseScopeMappings(rep, onUnknown) };
}

/** Creates what a realm import holds, inside the realm's creating transaction (all or nothing). */
export async function importRealmContents(ctx: ServerContext, realm: Realm, data: RealmImport, trx: Db): Promise<void> {
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
    const client = await insertClient(ctx, realm, input, trx, `realm.clients[${i}]`);
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
  const userIds = new Map<string, string>();
  for (const [i, input] of data.users.entries()) {
    const path = `realm.users[${i}]`;
    const user = await insertUser(ctx, realm, input, trx, path);
    userIds.set(user.username, user.id);
    const grants: string[] = [];
    for (const name of input.realmRoles ?? []) grants.push(await roleId(realm.id, name, `${path}.realmRoles`));
    for (const [clientId, names] of Object.entries(input.clientRoles ?? {})) {
      for (const name of names) grants.push(await roleId(clientContainer(clientId, `${path}.clientRoles`), name, `${path}.clientRoles.${clientId}`));
    }
    await storage.roles.grant(user.id, grants, trx);
  }
  for (const [i, input] of data.organizations.entries()) {
    const path = `realm.organizations[${i}]`;
    const org = await saveOrganization(ctx, realm, input, null, trx, path);
    for (const [j, username] of (input.members ?? []).entries()) {
      const userId = userIds.get(username.toLowerCase());
      if (!userId) throw badRequest(`${path}.members[${j}]: user "${username}" is not in this import`);
      await storage.organizations.addMember(org.id, userId, trx);
    }
  }
}
