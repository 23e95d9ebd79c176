/**
 * Keycloak's FederatedIdentityRepresentation (a user's link to an account at an identity provider: the provider's
 * alias, the account's id and username there), read the same way by the admin API (`POST …/federated-identity/{alias}`)
 * and by realm import (`users[i].federatedIdentities`). Links are kept as data: nobody signs in through them.
 */
import { asArray, parseRepresentation, type Spec } from '../../representations/fields.js';
import { badRequest, conflict } from '../../model/errors.js';
import type { FederatedIdentity, Realm } from '../../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../../storage/index.js';

/** A link of a realm file, with its JSON path (for errors found when it is written). */
export type ImportedFederatedIdentity = FederatedIdentity & { path: string };

// 255 characters each, as Keycloak's FEDERATED_IDENTITY columns.
const federatedIdentitySpec: Spec = {
  identityProvider: { type: 'string', min: 1 },
  userId: { type: 'string', min: 1 },
  userName: { type: 'string' },
};

/**
 * One link. `identityProvider` is required unless `alias` (the admin API's path) gives it, and then must match it
 * when given; `userId` is required. Unknown fields are refused (or, with `onUnknown`, reported and skipped).
 */
export function parseFederatedIdentity(body: unknown, path: string, alias?: string, onUnknown?: (path: string) => void): FederatedIdentity {
  const rep = parseRepresentation(body, federatedIdentitySpec, [], path, onUnknown) as Partial<FederatedIdentity>;
  if (alias !== undefined && rep.identityProvider !== undefined && rep.identityProvider !== alias) {
    throw badRequest(`${path}.identityProvider: does not match the identity provider in the path`, 'identityProvider');
  }
  const identityProvider = alias ?? rep.identityProvider;
  if (identityProvider === undefined) throw badRequest(`${path}.identityProvider: is required`, 'identityProvider');
  if (rep.userId === undefined) throw badRequest(`${path}.userId: is required`, 'userId');
  return { identityProvider, userId: rep.userId, userName: rep.userName ?? null };
}

/** A user's `federatedIdentities` in a realm file: at most one link per identity provider. */
export function parseFederatedIdentities(value: unknown, path: string, onUnknown?: (path: string) => void): ImportedFederatedIdentity[] {
  const seen = new Set<string>();
  return asArray(value, path).map((entry, i) => {
    const at = `${path}[${i}]`;
    const link = parseFederatedIdentity(entry, at, undefined, onUnknown);
    if (seen.has(link.identityProvider)) throw badRequest(`${at}.identityProvider: the user is linked to "${link.identityProvider}" twice`, 'identityProvider');
    seen.add(link.identityProvider);
    return { ...link, path: at };
  });
}

/**
 * Stores users' links (a realm file's, or a new user's), each naming an identity provider of the realm by alias. A
 * link to an alias the realm does not have is refused, naming its path: Keycloak would keep it and never show it
 * (it lists only links whose provider exists); here it would be data nobody sees.
 */
export async function saveFederatedIdentities(storage: Storage, realm: Realm, links: { userId: string; link: ImportedFederatedIdentity }[], db: Db): Promise<void> {
  if (!links.length) return;
  const internalIds = new Map((await storage.federation.providers(realm.id, undefined, db)).map((p) => [p.alias, p.internalId]));
  for (const { userId, link } of links) {
    const internalId = internalIds.get(link.identityProvider);
    if (!internalId) throw badRequest(`${link.path}.identityProvider: identity provider "${link.identityProvider}" does not exist`, 'identityProvider');
    try {
      await storage.federation.addLink(realm.id, userId, internalId, link, db);
    } catch (error) {
      // The same user listed twice (a client's service account): its second link to one provider.
      if (isUniqueViolation(error)) throw conflict(`${link.path}.identityProvider: the user is linked to "${link.identityProvider}" twice`, 'identityProvider');
      throw error;
    }
  }
}
