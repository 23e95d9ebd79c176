import { badRequest } from '../model/errors.js';
import type { Group } from '../model/types.js';
import { asArray, parseRepresentation, stringList, type Spec } from './fields.js';

const groupSpec: Spec = {
  name: { type: 'string' },
  description: { type: 'string' },
  attributes: { type: 'multiMap', max: 2048 },
};
// Read-only or derived fields a client sends back as it got them (the admin client does).
const groupIgnored = ['id', 'path', 'parentId', 'subGroupCount', 'subGroups', 'realmRoles', 'clientRoles', 'access'];

export interface GroupBody {
  id?: string;
  name?: string;
  description?: string;
  attributes?: Record<string, string[]>;
}

/** A GroupRepresentation from the admin API: `id` is kept (POST with an existing group's id moves it). */
export function parseGroup(body: unknown, path = 'group', onUnknown?: (path: string) => void): GroupBody {
  const rep = parseRepresentation(body, groupSpec, groupIgnored, path, onUnknown) as GroupBody;
  const id = (body as { id?: unknown }).id;
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string') throw badRequest(`${path}.id: must be a string`, 'id');
    rep.id = id;
  }
  return rep;
}

export interface GroupRepOptions {
  path: string;
  /** Left out where Keycloak leaves it out (a user's groups, default groups). */
  subGroupCount?: number;
  /** Full representation: attributes and the roles mapped to the group. */
  roles?: { realmRoles: string[]; clientRoles: Record<string, string[]> };
  subGroups?: unknown[];
  /** Without `access`, as Keycloak's lists of a user's groups and of default groups. */
  plain?: boolean;
}

const ACCESS = { view: true, viewMembers: true, manageMembers: true, manage: true, manageMembership: true };

/** Keycloak's GroupRepresentation: brief (no attributes, no roles) unless `roles` are given. */
export function groupRep(group: Group, options: GroupRepOptions) {
  return {
    id: group.id,
    name: group.name,
    ...(group.description !== null ? { description: group.description } : {}),
    path: options.path,
    ...(group.parentId !== null ? { parentId: group.parentId } : {}),
    ...(options.subGroupCount !== undefined ? { subGroupCount: options.subGroupCount } : {}),
    subGroups: options.subGroups ?? [],
    ...(options.roles ? { attributes: group.attributes, realmRoles: options.roles.realmRoles, clientRoles: options.roles.clientRoles } : {}),
    ...(options.plain ? {} : { access: ACCESS }),
  };
}

/** A group of a realm file's `groups`, with its subgroups and the roles mapped to it by name. */
export interface ImportedGroup {
  /** The file's id: only read for an organization's groups, whose members name them by it (the group gets a new one). */
  id?: string;
  name: string;
  description?: string;
  attributes?: Record<string, string[]>;
  realmRoles: string[];
  clientRoles: Record<string, string[]>;
  subGroups: ImportedGroup[];
  path: string;
}

export function parseImportedGroup(value: unknown, path: string, onUnknown?: (path: string) => void, depth = 0): ImportedGroup {
  if (depth > 100) throw badRequest(`${path}: groups nest at most 100 deep`);
  const rep = parseRepresentation(value, groupSpec, groupIgnored, path, onUnknown) as GroupBody;
  if (!rep.name || rep.name.trim() === '') throw badRequest(`${path}.name: is required`);
  const raw = value as { id?: unknown; realmRoles?: unknown; clientRoles?: unknown; subGroups?: unknown };
  if (raw.id !== undefined && raw.id !== null && typeof raw.id !== 'string') throw badRequest(`${path}.id: must be a string`, 'id');
  const clientRoles: Record<string, string[]> = {};
  if (raw.clientRoles !== undefined && raw.clientRoles !== null) {
    if (typeof raw.clientRoles !== 'object' || Array.isArray(raw.clientRoles)) throw badRequest(`${path}.clientRoles: must be an object`);
    for (const [clientId, names] of Object.entries(raw.clientRoles)) clientRoles[clientId] = stringList(names, `${path}.clientRoles.${clientId}`);
  }
  return {
    ...(typeof raw.id === 'string' ? { id: raw.id } : {}),
    name: rep.name,
    description: rep.description,
    attributes: rep.attributes,
    realmRoles: stringList(raw.realmRoles, `${path}.realmRoles`),
    clientRoles,
    subGroups: asArray(raw.subGroups, `${path}.subGroups`).map((g, i) => parseImportedGroup(g, `${path}.subGroups[${i}]`, onUnknown, depth + 1)),
    path,
  };
}
