import type { Client, Organization, Realm, User } from '../../../model/types.js';
import { effectiveRoles } from '../../../services/index.js';
import type { Storage } from '../../../storage/index.js';
import type { MapperData, MapperNeeds } from './types.js';

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

async function organizationsOf(storage: Storage, userId: string): Promise<Organization[]> {
  return (await storage.cache.get(`mapper-orgs\0${userId}`, ['organization', 'organization_member', 'organization_domain'], () => storage.organizations.ofUser(userId))) ?? [];
}

/** Loads what the mappers of a request read, only the parts `needs` names (no group query without a group mapper). */
export async function loadMapperData(
  storage: Storage,
  needs: MapperNeeds,
  input: { realm: Realm; client: Client; user: User; scopeIds: readonly string[]; notes: Record<string, string>; base: string },
): Promise<MapperData> {
  const { realm, client, user } = input;
  const [roles, groups, organizations] = await Promise.all([
    needs.roles ? effectiveRoles(storage, realm.id, user.id, client, input.scopeIds) : NO_ROLES,
    needs.groups ? groupPaths(storage, realm.id, user.id) : [],
    needs.organizations && realm.organizationsEnabled ? organizationsOf(storage, user.id) : [],
  ]);
  return { realm, client, user, roles, groups, organizations, notes: input.notes, base: input.base };
}
