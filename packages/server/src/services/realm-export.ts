/**
 * Realm export in Keycloak's format: what `POST /admin/realms/{realm}/partial-export` answers, and what the
 * realm import (services/realm-import) reads back, so an export imported into an empty server exports the same
 * document again (ids aside: the new realm gets its own, as Keycloak regenerates them).
 */
import { configRep, flowRep } from '../admin/representations/authentication.js';
import { clientRep } from '../admin/representations/client.js';
import { realmRep } from '../admin/representations/realm.js';
import type { ServerContext } from '../context.js';
import type { Client, Realm, Role } from '../model/types.js';

/** What Keycloak's partial export puts where a secret was (its import stores it as given). */
export const EXPORT_SECRET_MASK = '**********';

export interface ExportOptions {
  clients: boolean;
  groupsAndRoles: boolean;
}

/** Role names by container: `realm` for realm roles, else the clientId. */
type RoleNames = { realm?: string[]; client?: Record<string, string[]> };

export async function exportRealm(ctx: Pick<ServerContext, 'storage' | 'flows'>, realm: Realm, options: ExportOptions): Promise<Record<string, unknown>> {
  const { storage } = ctx;
  const clients = await storage.clients.list(realm.id);
  const clientById = new Map(clients.map((c) => [c.id, c]));
  const realmRoles = await storage.roles.list(realm.id);
  const clientRoles = new Map<Client, Role[]>();
  for (const client of clients) clientRoles.set(client, await storage.roles.list(client.id));
  const allRoles = [...realmRoles, ...[...clientRoles.values()].flat()];
  const roleById = new Map(allRoles.map((r) => [r.id, r]));

  /** Keycloak's `{realm: [...], client: {clientId: [...]}}` for a set of role ids, names sorted. */
  const byContainer = (ids: Iterable<string>): RoleNames => {
    const names: RoleNames = {};
    for (const id of ids) {
      const role = roleById.get(id);
      if (!role) continue;
      if (!role.clientRole) (names.realm ??= []).push(role.name);
      else {
        const clientId = clientById.get(role.containerId)?.clientId;
        if (clientId) ((names.client ??= {})[clientId] ??= []).push(role.name);
      }
    }
    names.realm?.sort();
    for (const list of Object.values(names.client ?? {})) list.sort();
    return names;
  };
  const roleExport = async (role: Role) => {
    const children = await storage.roles.composites(role.id);
    return {
      name: role.name,
      ...(role.description !== null ? { description: role.description } : {}),
      composite: children.length > 0,
      ...(children.length ? { composites: byContainer(children.map((c) => c.id)) } : {}),
      clientRole: role.clientRole,
      attributes: {},
    };
  };
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

  const { id: _id, ...settings } = realmRep(realm);
  const out: Record<string, unknown> = { ...settings };
  if (options.groupsAndRoles) {
    const client: Record<string, unknown[]> = {};
    for (const [c, roles] of clientRoles) if (roles.length) client[c.clientId] = await Promise.all([...roles].sort(byName).map(roleExport));
    out.roles = { realm: await Promise.all([...realmRoles].sort(byName).map(roleExport)), client };
  }
  if (options.clients) {
    out.clients = clients
      .map((c) => {
        const { id: _clientId, access: _access, ...rep } = clientRep(c);
        return 'secret' in rep ? { ...rep, secret: EXPORT_SECRET_MASK } : rep;
      })
      .sort((a, b) => (a.clientId < b.clientId ? -1 : 1));
    // Keycloak's scopeMappings (realm roles a client's tokens may carry) and clientScopeMappings (by role container).
    const scopeMappings: { client: string; roles: string[] }[] = [];
    const clientScopeMappings: Record<string, { client: string; roles: string[] }[]> = {};
    for (const c of [...clients].sort((a, b) => (a.clientId < b.clientId ? -1 : 1))) {
      const mapped = byContainer(await storage.roles.scopeMappedRoleIds(c.id));
      if (mapped.realm) scopeMappings.push({ client: c.clientId, roles: mapped.realm });
      for (const [container, roles] of Object.entries(mapped.client ?? {})) (clientScopeMappings[container] ??= []).push({ client: c.clientId, roles });
    }
    if (scopeMappings.length) out.scopeMappings = scopeMappings;
    if (Object.keys(clientScopeMappings).length) out.clientScopeMappings = clientScopeMappings;
  }
  const flows = await ctx.flows.editor.load(realm.id);
  out.authenticationFlows = flows.allFlows().map((f) => {
    const { id: _flowId, ...rep } = flowRep(flows, f);
    return rep;
  });
  out.authenticatorConfig = flows.allConfigs().map((c) => {
    const { id: _configId, ...rep } = configRep(c);
    return rep;
  });
  return out;
}
