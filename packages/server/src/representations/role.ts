import { badRequest, notFound } from '../model/errors.js';
import type { Realm, Role } from '../model/types.js';
import type { Storage } from '../storage/index.js';
import { parseRepresentation, stringList, uuidPattern, type Spec } from './fields.js';

const roleSpec: Spec = {
  name: { type: 'string', min: 1, pattern: /^[^/\\]+$/, patternHint: 'a name without slashes' },
  description: { type: 'string' },
};
const roleIgnored = ['id', 'composite', 'composites', 'clientRole', 'containerId', 'attributes', 'scopeParamRequired'];

export function roleRep(role: Role, composite: boolean) {
  return {
    id: role.id,
    name: role.name,
    description: role.description ?? undefined,
    composite,
    clientRole: role.clientRole,
    containerId: role.containerId,
    attributes: {},
  };
}

/** Role representations, each marked composite when it has children (one query for all). */
export async function roleReps(storage: Storage, roles: Role[]) {
  const composites = await storage.roles.hasComposites(roles.map((r) => r.id));
  return roles.map((r) => roleRep(r, composites.has(r.id)));
}

export function parseRole(body: unknown, path = 'role', onUnknown?: (path: string) => void): { name?: string; description?: string } {
  return parseRepresentation(body, roleSpec, roleIgnored, path, onUnknown) as { name?: string; description?: string };
}

/** The most roles one call may name: Keycloak sets no limit, a bound keeps one request's work small. */
const MAX_ROLES_PER_CALL = 1000;

/**
 * A body that lists roles (`[{id}]` or `[{name}]`, as the admin client sends them): every one must exist
 * in this realm (in `containerId` when given), or nothing changes. Duplicates count once.
 */
export async function rolesFromBody(storage: Storage, realm: Realm, body: unknown, containerId?: string): Promise<Role[]> {
  if (!Array.isArray(body) || body.length > MAX_ROLES_PER_CALL) throw badRequest(`Request body must be an array of roles (at most ${MAX_ROLES_PER_CALL})`);
  const roles = new Map<string, Role>();
  for (const [i, item] of body.entries()) {
    if (typeof item !== 'object' || item === null) throw badRequest(`[${i}]: must be a role object`);
    const { id, name } = item as { id?: unknown; name?: unknown };
    let role: Role | null = null;
    if (typeof id === 'string') {
      // Not a UUID: names no role, and never reaches a query (PostgreSQL fails on NUL rather than not matching).
      role = uuidPattern.test(id) ? await storage.roles.byId(realm.id, id.toLowerCase()) : null;
    } else if (typeof name === 'string') {
      role = await storage.roles.byName(containerId ?? realm.id, name);
    } else {
      throw badRequest(`[${i}]: a role needs an "id" or a "name"`);
    }
    if (!role || (containerId !== undefined && role.containerId !== containerId)) throw notFound(`Role ${String(id ?? name)} not found`);
    roles.set(role.id, role);
  }
  return [...roles.values()];
}

export interface ImportedRole {
  name: string;
  description?: string;
  composites?: { realm?: string[]; client?: Record<string, string[]> };
}

/** A role of a realm file's `roles`: the role representation with its composites by name. */
export function parseImportedRole(value: unknown, path: string, onUnknown?: (path: string) => void): ImportedRole {
  const role = parseRole(value, path, onUnknown);
  if (!role.name) throw badRequest(`${path}.name: is required`);
  const composites = (value as { composites?: unknown }).composites;
  if (composites === undefined || composites === null) return { name: role.name, description: role.description };
  if (typeof composites !== 'object') throw badRequest(`${path}.composites: must be an object`);
  const { realm, client } = composites as { realm?: unknown; client?: unknown };
  const clientComposites: Record<string, string[]> = {};
  if (client !== undefined && client !== null) {
    if (typeof client !== 'object') throw badRequest(`${path}.composites.client: must be an object`);
    for (const [clientId, names] of Object.entries(client)) clientComposites[clientId] = stringList(names, `${path}.composites.client.${clientId}`);
  }
  return { name: role.name, description: role.description, composites: { realm: stringList(realm, `${path}.composites.realm`), client: clientComposites } };
}
