import type { Client, ClientScope, Realm } from '../model/types.js';
import { clientScopeSet } from '../services/index.js';
import type { Storage } from '../storage/index.js';
import type { AuthSession } from './auth-session.js';

/** Keycloak's `consent` detail of a LOGIN event of a consentRequired client (Details.CONSENT_VALUE_*). */
export type ConsentDetail = 'consent_granted' | 'persistent_consent';

/** One line of the consent screen: the scope's name (what is stored) and what the user reads. */
export interface ConsentScope {
  name: string;
  text: string;
}

/**
 * What a browser sign-in must ask the user before its code is issued (Keycloak's consent screen,
 * `login-oauth-grant`): for a client with `consentRequired`, the client scopes this request puts in the token (the
 * client's default scopes and the optional ones the request names) that are shown on the consent screen
 * (`display.on.consent.screen`, true unless "false") and that the user's stored consent does not hold yet. Null when
 * nothing needs asking: the client does not require consent, or the device flow's own consent page asks instead.
 * `persisted` says the client requires consent and the stored consent covers it (LOGIN's `persistent_consent`).
 */
export async function consentToAsk(
  storage: Storage,
  realm: Realm,
  auth: Pick<AuthSession, 'device' | 'clientId' | 'scope'>,
  userId: string,
): Promise<{ client: Client; ask: ConsentScope[]; persisted?: undefined } | { persisted: boolean }> {
  if (auth.device) return { persisted: false };
  const client = await storage.clients.cachedByClientId(realm.id, auth.clientId);
  if (!client || !client.consentRequired) return { persisted: false };
  const set = await clientScopeSet(storage, client);
  const asked = new Set(auth.scope.split(' ').filter(Boolean));
  const shown = [...set.defaultScopes, ...set.optionalScopes.filter((s) => asked.has(s.name))].filter((s) => s.attributes['display.on.consent.screen'] !== 'false');
  const granted = new Set((await storage.consents.of(userId, client.id))?.grantedClientScopes ?? []);
  const ask = shown.filter((s) => !granted.has(s.name)).map((s) => ({ name: s.name, text: consentText(s) }));
  // As Keycloak's: nothing left to approve, no page (the LOGIN event says the consent was there already).
  return ask.length === 0 ? { persisted: true } : { client, ask };
}

/** A scope's line on the consent screen: its `consent.screen.text` unless that is a message key (`${…}`), else its name. */
export function consentText(scope: Pick<ClientScope, 'name' | 'attributes'>): string {
  const text = scope.attributes['consent.screen.text'];
  return text && !text.startsWith('${') ? text : scope.name;
}

/** Stores the user's grant of these scopes to the client, merged with what was granted before. */
export async function grantConsent(storage: Storage, realm: Realm, client: Client, userId: string, scopes: readonly string[]): Promise<void> {
  await storage.consents.grant(realm.id, userId, client.id, scopes, Date.now());
}
