import { sql } from 'kysely';
import type { Client, Organization, Realm, User } from '../../../model/types.js';
import { effectiveRoles } from '../../../services/roles.js';
import type { Storage } from '../../../storage/index.js';
import { fromJson } from '../../../storage/codec.js';
import { GroupTree } from '../../../services/groups.js';
import type { MapperData, MapperNeeds, OrganizationGroups, UserGroupAttributes } from './types.js';
import { userAttributeValues } from './user-attribute.js';

const NO_ROLES = Object.freeze({ realmRoles: [], clientRoles: {} });

/** The user's groups as paths of names (cached; any write to the group tables clears it). */
async function groupPaths(storage: Storage, realmId: string, userId: string): Promise<string[][]> {
  const paths = await storage.cache.get(`mapper-groups\0${realmId}\0${userId}`, ['realm_group', 'user_group'], async () => {
    const ids = await storage.groups.userGroupIds(userId);
    if (ids.length === 0) return [];
    const byId = new Map((await storage.groups.tree(realmId)).map((g) => [g.id, g]));
    return ids
      .map((id) => {
        const path: string[] = [];
        for (let g = byId.get(id); g && path.length <= byId.size; g = g.parentId ? byId.get(g.parentId) : undefined) path.unshift(g.name);
        return path;
      })
      .filter((p) => p.length > 0)
      .sort((a, b) => a.join('/').localeCompare(b.join('/')));
  });
  return paths ?? [];
}

/**
 * The user's groups and all their ancestors with their attributes, for the attribute mappers that read through
 * groups: one query (a recursive walk up the tree, the same SQL on SQLite and PostgreSQL, as the role walk in
 * storage/groups.ts; UNION stops on a repeated row, so a corrupted cyclic tree ends), cached per user and
 * invalidated by any write to the group tables.
 */
async function groupAttributesOf(storage: Storage, realmId: string, userId: string): Promise<UserGroupAttributes> {
  const loaded = await storage.cache.get(`mapper-group-attributes\0${realmId}\0${userId}`, ['realm_group', 'user_group'], async () => {
    const { rows } = await sql<{ id: string; parent_id: string; name: string; attributes: string; member: number | string }>`
      with recursive up(id) as (
        select group_id from user_group where user_id = ${userId}
        union
        select g.parent_id from realm_group g join up u on g.id = u.id where g.parent_id <> ''
      )
      select g.id, g.parent_id, g.name, g.attributes, case when m.user_id is null then 0 else 1 end as member
      from up u join realm_group g on g.id = u.id
      left join user_group m on m.group_id = g.id and m.user_id = ${userId}
      where g.realm_id = ${realmId} and g.organization_id is null
    `.execute(storage.db);
    const groups: Record<string, UserGroupAttributes['groups'][string]> = Object.create(null);
    for (const row of rows) groups[row.id] = { parentId: row.parent_id === '' ? null : row.parent_id, attributes: fromJson(row.attributes, {}) };
    // Keycloak's user.getGroupsStream() order: by name (code-unit order, as the admin API lists groups).
    const memberOf = rows
      .filter((row) => Number(row.member) === 1)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1))
      .map((row) => row.id);
    return { memberOf, groups };
  });
  return loaded ?? NO_GROUP_ATTRIBUTES;
}

const NO_GROUP_ATTRIBUTES: UserGroupAttributes = Object.freeze({ memberOf: [], groups: {} });

/**
 * The attribute names any group of the realm has a value for: one query per realm, cached and invalidated by any
 * write to the group table. Most realms' groups carry no attributes: then no user's groups are read at all, though
 * the built-in scopes' attribute mappers (website, locale, phone_number…) ask for attributes most users lack.
 */
async function groupAttributeNames(storage: Storage, realmId: string): Promise<readonly string[]> {
  const names = await storage.cache.get(`mapper-group-attribute-names\0${realmId}`, ['realm_group'], async () => {
    const rows = await storage.db.selectFrom('realm_group').select('attributes').where('realm_id', '=', realmId).where('organization_id', 'is', null).where('attributes', '<>', '{}').execute();
    const found = new Set<string>();
    for (const row of rows) {
      for (const [name, values] of Object.entries(fromJson<Record<string, unknown>>(row.attributes, {}))) if (Array.isArray(values) && values.length > 0) found.add(name);
    }
    return [...found];
  });
  return names ?? [];
}

/**
 * The user's groups' attributes when an attribute mapper of the request reads through them: for an attribute the
 * user lacks (or one it aggregates) that some group of the realm has. Otherwise nothing is read.
 */
async function groupAttributesFor(storage: Storage, needs: MapperNeeds, realmId: string, user: User): Promise<UserGroupAttributes> {
  const wanted = (needs.groupAttributes ?? []).filter(({ name, aggregate }) => aggregate || !userAttributeValues(user, name)?.length);
  if (wanted.length === 0) return NO_GROUP_ATTRIBUTES;
  const onGroups = await groupAttributeNames(storage, realmId);
  if (!wanted.some(({ name }) => onGroups.includes(name))) return NO_GROUP_ATTRIBUTES;
  return groupAttributesOf(storage, realmId, user.id);
}

async function organizationsOf(storage: Storage, userId: string): Promise<Organization[]> {
  return (await storage.cache.get(`mapper-orgs\0${userId}`, ['organization', 'organization_member', 'organization_domain'], () => storage.organizations.ofUser(userId))) ?? [];
}

/**
 * The user's groups in each of their enabled organizations (Keycloak's getOrganizationGroupsByMember: direct
 * memberships), as paths from the organization's top; with `roles`, the roles mapped to those groups themselves
 * (not their parents', as Keycloak's mapper reads each group's role mappings), composites expanded, by name.
 */
async function organizationGroupsOf(storage: Storage, realmId: string, userId: string, organizations: Organization[], withRoles: boolean): Promise<Record<string, OrganizationGroups>> {
  const result: Record<string, OrganizationGroups> = {};
  for (const org of organizations.filter((o) => o.enabled)) {
    const ids = await storage.groups.organizationGroupIds(userId, org.id);
    const entry: OrganizationGroups = { paths: [], realmRoles: [], clientRoles: {} };
    result[org.id] = entry;
    if (ids.length === 0) continue;
    const tree = await GroupTree.loadOrganization(storage, realmId, org.id);
    entry.paths = ids.filter((id) => tree.get(id)).map((id) => tree.path(id)).sort();
    if (!withRoles) continue;
    const roles = await storage.roles.byIds([...(await storage.roles.expand(await storage.groups.roleIds(ids)))]);
    for (const role of roles) {
      if (!role.clientRole) entry.realmRoles.push(role.name);
      else {
        const client = await storage.clients.cachedById(realmId, role.containerId);
        if (client) (entry.clientRoles[client.clientId] ??= []).push(role.name);
      }
    }
    entry.realmRoles.sort();
    for (const names of Object.values(entry.clientRoles)) names.sort();
  }
  return result;
}

/** Loads what the mappers of a request read, only the parts `needs` names (no group query without a group mapper). */
export async function loadMapperData(
  storage: Storage,
  needs: MapperNeeds,
  input: { realm: Realm; client: Client; user: User; scopeIds: readonly string[]; notes: Record<string, string>; base: string },
): Promise<MapperData> {
  const { realm, client, user } = input;
  const [roles, groups, organizations, groupAttributes] = await Promise.all([
    needs.roles ? effectiveRoles(storage, realm.id, user.id, client, input.scopeIds) : NO_ROLES,
    needs.groups ? groupPaths(storage, realm.id, user.id) : [],
    needs.organizations && realm.organizationsEnabled ? organizationsOf(storage, user.id) : [],
    needs.groupAttributes ? groupAttributesFor(storage, needs, realm.id, user) : NO_GROUP_ATTRIBUTES,
  ]);
  const organizationGroups = needs.organizationGroups && organizations.length ? await organizationGroupsOf(storage, realm.id, user.id, organizations, needs.organizationGroups === 'roles') : undefined;
  return { realm, client, user, roles, groups, organizations, ...(organizationGroups ? { organizationGroups } : {}), groupAttributes, notes: input.notes, base: input.base };
}
