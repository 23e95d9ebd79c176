import type { Client, ClientScope, Realm } from '../model/types.js';
import { clientScopeSet } from '../services/index.js';
import type { Storage } from '../storage/index.js';
import type { AuthSession } from './auth-session.js';

/**
 * Keycloak's `consent` detail of a browser LOGIN event (Details.CONSENT_VALUE_*): granted on the page now, stored
 * before, or a client that asks for none.
 */
export type ConsentDetail = 'consent_granted' | 'persistent_consent' | 'no_consent_required';

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
 * The client itself is the first line when it sets `display.on.consent.screen` (Keycloak's clients are consent
 * scopes too, off unless "true"), granted under its clientId as Keycloak's realm files name it.
 * `detail` when nothing needs asking: the LOGIN event's consent detail (none for the device flow, whose own
 * consent page asks instead).
 */
export async function consentToAsk(
  storage: Storage,
  realm: Realm,
  auth: Pick<AuthSession, 'device' | 'clientId' | 'scope'>,
  userId: string,
): Promise<{ client: Client; ask: ConsentScope[]; detail?: undefined } | { detail: ConsentDetail | null }> {
  if (auth.device) return { detail: null };
  const client = await storage.clients.cachedByClientId(realm.id, auth.clientId);
  if (!client) return { detail: null };
  if (!client.consentRequired) return { detail: 'no_consent_required' };
  const set = await clientScopeSet(storage, client);
  const asked = new Set(auth.scope.split(' ').filter(Boolean));
  const shown = [...set.defaultScopes, ...set.optionalScopes.filter((s) => asked.has(s.name))].filter((s) => s.attributes['display.on.consent.screen'] !== 'false');
  const lines = shown.map((s) => ({ name: s.name, text: consentText(s) }));
  if (client.attributes['display.on.consent.screen'] === 'true') lines.unshift({ name: client.clientId, text: clientConsentText(client) });
  const granted = new Set((await storage.consents.of(userId, client.id))?.grantedClientScopes ?? []);
  const ask = lines.filter((line) => !granted.has(line.name));
  // As Keycloak's: nothing left to approve, no page (the LOGIN event says the consent was there already).
  return ask.length === 0 ? { detail: 'persistent_consent' } : { client, ask };
}

/** The client's own line on its consent screen: its `consent.screen.text` unless a message key, else its clientId. */
export function clientConsentText(client: Pick<Client, 'clientId' | 'attributes'>): string {
  return consentText({ name: client.clientId, attributes: client.attributes });
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
