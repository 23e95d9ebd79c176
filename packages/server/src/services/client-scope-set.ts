import { BUILTIN_CLIENT_SCOPES, REALM_DEFAULT_CLIENT_SCOPES, REALM_OPTIONAL_CLIENT_SCOPES, SERVICE_ACCOUNT_SCOPE } from '../model/builtin-client-scopes.js';
import type { Client, ClientScope, ClientScopeSet } from '../model/types.js';
import type { Storage } from '../storage/index.js';

/**
 * The client scopes and mappers a client's tokens are made from.
 *
 * PLACEHOLDER (contract for the token pipeline): built from the built-in definitions until client scopes are
 * stored; the storage-backed version (cached, invalidated with the client-scope tables) replaces this body.
 */
export async function clientScopeSet(_storage: Storage, client: Client): Promise<ClientScopeSet> {
  const byName = (name: string): ClientScope => {
    const builtin = BUILTIN_CLIENT_SCOPES.find((s) => s.name === name)!;
    return { ...builtin, id: `builtin:${name}`, realmId: client.realmId, protocolMappers: builtin.protocolMappers.map((m) => ({ ...m, id: `builtin:${name}:${m.name}` })) };
  };
  const defaults: string[] = [...REALM_DEFAULT_CLIENT_SCOPES, ...(client.serviceAccountsEnabled ? [SERVICE_ACCOUNT_SCOPE] : [])];
  return { defaultScopes: defaults.map(byName), optionalScopes: REALM_OPTIONAL_CLIENT_SCOPES.map(byName), clientMappers: [] };
}
