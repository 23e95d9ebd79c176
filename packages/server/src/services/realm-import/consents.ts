/**
 * Keycloak's UserConsentRepresentation in a realm file (`users[i].clientConsents`): a user's consent to a client, by
 * clientId, with the client scopes it granted by name and its dates. Kept and shown by the admin API; there is no
 * consent screen here, so nobody is asked for one.
 */
import { asArray, parseRepresentation, stringList, type Spec } from '../../representations/fields.js';
import { badRequest } from '../../model/errors.js';
import type { Realm } from '../../model/types.js';
import type { Db, Storage } from '../../storage/index.js';

/** A consent of a realm file, with its JSON path (for errors found when it is written). */
export interface ImportedConsent {
  path: string;
  /** The client's clientId. */
  clientId: string;
  grantedClientScopes: string[];
  createdDate: number | null;
  lastUpdatedDate: number | null;
}

const consentSpec: Spec = {
  clientId: { type: 'string', min: 1 },
  grantedClientScopes: { type: 'stringArray' },
  createdDate: { type: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
  lastUpdatedDate: { type: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
};
// Keycloak 3's per-role consents, gone since client scopes; an export of today writes none.
const consentIgnored = ['grantedRealmRoles', 'grantedClientRoles'];

/** A user's `clientConsents`: at most one per client. Wrong types are 400 naming the path; unknown fields as `onUnknown` says. */
export function parseConsents(value: unknown, path: string, notImported: string[], onUnknown?: (path: string) => void): ImportedConsent[] {
  const seen = new Set<string>();
  return asArray(value, path).map((entry, i) => {
    const at = `${path}[${i}]`;
    const rep = parseRepresentation(entry, consentSpec, consentIgnored, at, onUnknown);
    if (typeof rep.clientId !== 'string') throw badRequest(`${at}.clientId: is required`, 'clientId');
    if (seen.has(rep.clientId)) throw badRequest(`${at}.clientId: the user consents to "${rep.clientId}" twice`, 'clientId');
    seen.add(rep.clientId);
    for (const field of consentIgnored) {
      const roles = (entry as Record<string, unknown>)[field];
      if (roles && typeof roles === 'object' && Object.keys(roles).length) notImported.push(`${at}.${field} (role consents of Keycloak before client scopes)`);
    }
    return {
      path: at,
      clientId: rep.clientId,
      grantedClientScopes: stringList(rep.grantedClientScopes, `${at}.grantedClientScopes`),
      createdDate: (rep.createdDate as number | undefined) ?? null,
      lastUpdatedDate: (rep.lastUpdatedDate as number | undefined) ?? null,
    };
  });
}

/**
 * Stores users' consents once the realm's clients and client scopes exist. A client or client scope the realm does
 * not have refuses the file, naming the path, as Keycloak's import refuses it.
 */
export async function saveConsents(storage: Storage, realm: Realm, consents: { userId: string; consent: ImportedConsent }[], clientUuid: (clientId: string, path: string) => string, db: Db): Promise<void> {
  if (!consents.length) return;
  const scopes = new Set((await storage.clientScopes.list(realm.id, db)).map((sc) => sc.name));
  for (const { userId, consent } of consents) {
    const clientId = clientUuid(consent.clientId, `${consent.path}.clientId`);
    for (const [j, scope] of consent.grantedClientScopes.entries()) {
      if (!scopes.has(scope)) throw badRequest(`${consent.path}.grantedClientScopes[${j}]: client scope "${scope}" does not exist`);
    }
    await storage.consents.insert(realm.id, { userId, clientId, grantedClientScopes: [...new Set(consent.grantedClientScopes)], createdDate: consent.createdDate, lastUpdatedDate: consent.lastUpdatedDate }, db);
  }
}
