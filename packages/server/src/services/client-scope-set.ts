import type { Client, ClientScopeSet } from '../model/types.js';
import type { Storage } from '../storage/index.js';

/** What a client's scope set is read from: a write to any of them (or to a table the cache does not know) clears it. */
const SCOPE_SET_TABLES = ['client', 'client_scope', 'protocol_mapper', 'client_client_scope'];

/**
 * The client scopes and mappers a client's tokens are made from: its default and optional client scopes (each
 * with its mappers, by name) and the client's own mappers. Cached per client (frozen), invalidated on every node
 * by any write to the client-scope tables.
 */
export async function clientScopeSet(storage: Storage, client: Client): Promise<ClientScopeSet> {
  const set = await storage.cache.get(`client-scope-set\0${client.realmId}\0${client.id}`, SCOPE_SET_TABLES, async (): Promise<ClientScopeSet> => {
    const links = await storage.clientScopes.clientLinks(client.id);
    const scopes = await storage.clientScopes.byIds(client.realmId, links.map((l) => l.scopeId));
    const isDefault = new Map(links.map((l) => [l.scopeId, l.defaultScope]));
    return {
      defaultScopes: scopes.filter((s) => isDefault.get(s.id) === true),
      optionalScopes: scopes.filter((s) => isDefault.get(s.id) === false),
      clientMappers: await storage.clientScopes.mappers(client.id),
    };
  });
  return set!;
}
