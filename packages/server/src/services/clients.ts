import { newId, newSecret } from '../credentials/index.js';
import { BUILTIN_ROOT_URLS, defaultClient } from '../model/defaults.js';
import { badRequest, conflict } from '../model/errors.js';
import type { Client, ProtocolMapper, Realm } from '../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../storage/index.js';
import { ensureServiceAccount } from './users.js';
import { attachClientScopes, type RequestedScopes } from './client-scopes.js';

/** What a client representation carries besides the client: its scopes by name and its own protocol mappers (validated). */
export interface ClientExtras extends RequestedScopes {
  protocolMappers?: Omit<ProtocolMapper, 'id'>[];
}

/** What a PUT or POST body makes of a client: absent fields take their defaults (the body replaces it all). */
export function clientFrom(input: Partial<Client>, base: Client): Client {
  const fresh = defaultClient(base.id, base.realmId, input.clientId ?? base.clientId);
  const client: Client = { ...fresh, ...input, id: base.id, realmId: base.realmId, clientId: input.clientId ?? base.clientId };
  // The secret is a credential, not configuration: kept unless the body sets one, as Keycloak keeps it.
  client.secret = client.publicClient || client.bearerOnly ? base.secret : (input.secret ?? base.secret ?? newSecret());
  // Kept as data from a realm file; the admin API neither shows nor takes it (Keycloak's client PUT leaves it too).
  client.authorizationSettings = input.authorizationSettings ?? base.authorizationSettings;
  // As Keycloak's client update: a body without them leaves the management URL and the not-before time.
  client.adminUrl = input.adminUrl ?? base.adminUrl;
  client.notBefore = input.notBefore ?? base.notBefore;
  // A built-in client's representation answers its default rootUrl (BUILTIN_ROOT_URLS); given back, nothing changed.
  if (base.rootUrl === null && client.rootUrl === BUILTIN_ROOT_URLS[client.clientId]) client.rootUrl = null;
  return client;
}

/**
 * Creates a client (and its service-account user when enabled), linked to its client scopes, with its own
 * protocol mappers; used by the clients API and by realm import.
 */
export async function insertClient(storage: Storage, realm: Realm, input: Partial<Client>, db: Db, path = 'client', extras: ClientExtras = {}): Promise<Client> {
  if (!input.clientId) throw badRequest(`${path}.clientId: is required`, 'clientId');
  // Keycloak's default at creation: a client with a root URL and no admin URL is managed at its root URL.
  const client = clientFrom({ ...input, adminUrl: input.adminUrl ?? input.rootUrl ?? null }, defaultClient(newId(), realm.id, input.clientId));
  try {
    await storage.clients.insert(client, db);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`Client ${client.clientId} already exists`, 'clientId');
    throw error;
  }
  if (client.serviceAccountsEnabled) await serviceAccountNamed(client.clientId, () => ensureServiceAccount(storage, realm, client, db));
  await attachClientScopes(storage, client, extras, db);
  try {
    await storage.clientScopes.insertMappers(realm.id, { clientId: client.id }, (extras.protocolMappers ?? []).map((m) => ({ ...m, id: newId() })), db);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`${path}.protocolMappers: two mappers are named alike`, 'protocolMappers');
    throw error;
  }
  return client;
}

/** The service-account user's name is taken by another user: a conflict on the client, not a 500. */
export async function serviceAccountNamed(clientId: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A user named service-account-${clientId.toLowerCase()} already exists`, 'clientId');
    throw error;
  }
}


/**
 * A client PUT's `protocolMappers`, as Keycloak's update applies them: matched by protocol and name, an existing
 * mapper is updated (it keeps its id), a new one added, and the client's mappers the list leaves out are deleted.
 */
export async function replaceClientMappers(storage: Storage, client: Client, mappers: Omit<ProtocolMapper, 'id'>[], db: Db): Promise<void> {
  const key = (m: { protocol: string; name: string }) => `${m.protocol}%${m.name}`;
  const existing = new Map((await storage.clientScopes.mappers(client.id, db)).map((m) => [key(m), m]));
  const added: ProtocolMapper[] = [];
  for (const mapper of mappers) {
    const found = existing.get(key(mapper));
    existing.delete(key(mapper));
    if (found) await storage.clientScopes.updateMapper(client.id, { ...mapper, id: found.id }, db);
    else added.push({ ...mapper, id: newId() });
  }
  for (const gone of existing.values()) await storage.clientScopes.deleteMapper(client.id, gone.id, db);
  await storage.clientScopes.insertMappers(client.realmId, { clientId: client.id }, added, db);
}
