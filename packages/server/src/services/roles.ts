import type { AccessTokenClaims } from '@realmgate/spi';
import type { Client } from '../model/types.js';
import type { Storage } from '../storage/index.js';

export interface EffectiveRoles {
  realmRoles: string[];
  /** clientId → role names */
  clientRoles: Record<string, string[]>;
}

/**
 * The roles a token of `client` may carry, or null for all of them (`fullScopeAllowed`): as Keycloak, the
 * client's own roles, its scope mappings and the role scope mappings of the client scopes applied to the
 * request, composites expanded. Only scopes linked to the client count: an id of another one is ignored.
 */
export async function clientRoleScope(storage: Storage, client: Client, clientScopeIds: readonly string[]): Promise<Set<string> | null> {
  if (client.fullScopeAllowed) return null;
  const own = (await storage.roles.list(client.id)).map((r) => r.id);
  const linked = new Set((await storage.clientScopes.clientLinks(client.id)).map((l) => l.scopeId));
  const viaScopes = await storage.clientScopes.roleIds(clientScopeIds.filter((id) => linked.has(id)));
  return storage.roles.expand([...own, ...(await storage.roles.scopeMappedRoleIds(client.id)), ...viaScopes]);
}

/**
 * Every role a user holds, the one resolution tokens, the role-mapping composite views and admin permission
 * checks share: mapped to the user or to a group the user is in (or an ancestor of it), composites expanded.
 */
export async function heldRoleIds(storage: Storage, userId: string): Promise<Set<string>> {
  return storage.roles.expand(await storage.groups.userRoleIdsWithGroups(userId));
}

/**
 * The user's roles with composites expanded, grouped as Keycloak's token claims group them; with `client`,
 * only those in the client's scope. `clientScopeIds`: the client scopes applied to the request, whose role scope
 * mappings widen a `fullScopeAllowed: false` client's scope (as Keycloak's).
 */
export async function effectiveRoles(storage: Storage, realmId: string, userId: string, client?: Client, clientScopeIds: readonly string[] = []): Promise<EffectiveRoles> {
  // Cached per user and client (frozen). Any write to a role or group table, a client, or a table the cache does
  // not know invalidates them all: role changes are rare, and coarse invalidation cannot miss one.
  const scopeKey = client && !client.fullScopeAllowed ? [...new Set(clientScopeIds)].sort().join(',') : '';
  const roles = await storage.cache.get(`roles\0${realmId}\0${userId}\0${client?.id ?? ''}\0${scopeKey}`, ROLE_TABLES, () =>
    loadEffectiveRoles(storage, realmId, userId, client, clientScopeIds),
  );
  return roles!;
}

/** What effective roles are read from. A write to any of them (or to a table the cache does not know) clears them. */
const ROLE_TABLES = ['role', 'role_composite', 'user_role', 'scope_mapping', 'client', 'realm_group', 'user_group', 'group_role', 'client_scope_role', 'client_client_scope'];

async function loadEffectiveRoles(storage: Storage, realmId: string, userId: string, client: Client | undefined, clientScopeIds: readonly string[]): Promise<EffectiveRoles> {
  const scope = client ? await clientRoleScope(storage, client, clientScopeIds) : null;
  const ids = [...(await heldRoleIds(storage, userId))].filter((id) => scope === null || scope.has(id));
  const roles = await storage.roles.byIds(ids);
  const realmRoles: string[] = [];
  const byClientUuid = new Map<string, string[]>();
  for (const role of roles) {
    if (!role.clientRole) realmRoles.push(role.name);
    else byClientUuid.set(role.containerId, [...(byClientUuid.get(role.containerId) ?? []), role.name]);
  }
  const clientRoles: Record<string, string[]> = {};
  for (const [uuid, names] of byClientUuid) {
    const owner = await storage.clients.cachedById(realmId, uuid);
    if (owner) clientRoles[owner.clientId] = names.sort();
  }
  return { realmRoles: realmRoles.sort(), clientRoles };
}

/**
 * The token's roles that the user still holds: a role counts only when the token carries it (its client's scope
 * allowed it) and it has not been taken away since the token was issued (revocation is immediate, as in Keycloak).
 */
export async function rolesStillHeld(storage: Storage, realmId: string, claims: AccessTokenClaims): Promise<AccessTokenClaims> {
  const current = await effectiveRoles(storage, realmId, claims.sub);
  const keep = (carried: string[] | undefined, held: string[] | undefined) => (carried ?? []).filter((r) => (held ?? []).includes(r));
  const resourceAccess: Record<string, { roles: string[] }> = {};
  for (const [clientId, access] of Object.entries(claims.resource_access ?? {})) {
    resourceAccess[clientId] = { roles: keep(access.roles, current.clientRoles[clientId]) };
  }
  return { ...claims, realm_access: { roles: keep(claims.realm_access?.roles, current.realmRoles) }, resource_access: resourceAccess };
}
