import type { Storage } from '../storage/index.js';

export interface EffectiveRoles {
  realmRoles: string[];
  /** clientId → role names */
  clientRoles: Record<string, string[]>;
}

/** The user's roles with composites expanded, grouped as Keycloak's token claims group them. */
export async function effectiveRoles(storage: Storage, realmId: string, userId: string): Promise<EffectiveRoles> {
  const ids = await storage.roles.expand(await storage.roles.userRoleIds(userId));
  const roles = await storage.roles.byIds([...ids]);
  const realmRoles: string[] = [];
  const byClientUuid = new Map<string, string[]>();
  for (const role of roles) {
    if (!role.clientRole) realmRoles.push(role.name);
    else byClientUuid.set(role.containerId, [...(byClientUuid.get(role.containerId) ?? []), role.name]);
  }
  const clientRoles: Record<string, string[]> = {};
  for (const [uuid, names] of byClientUuid) {
    const client = await storage.clients.byId(realmId, uuid);
    if (client) clientRoles[client.clientId] = names.sort();
  }
  return { realmRoles: realmRoles.sort(), clientRoles };
}
