import { randomBytes } from 'node:crypto';
import type { AuthenticationContext } from '../context.js';
import type { IdentityProvider, UserSession } from '../../model/types.js';
import { SOCIAL_PROVIDERS } from './social-providers.js';
import { OIDC_PROVIDER_IDS } from './upstream-oidc.js';

/**
 * Logging the upstream out through the browser (Keycloak's OIDCIdentityProvider.keycloakInitiatedBrowserLogout with
 * `backchannelSupported` off): when a brokered session ends at this server's browser logout, the browser is sent to
 * the provider's `logoutUrl` (the upstream's end_session endpoint) with `state`, `id_token_hint` (the upstream's ID
 * token of that sign-in, when kept and `sendIdTokenOnLogout` is not "false"), `client_id` (`sendClientIdOnLogout`)
 * and `post_logout_redirect_uri` = `/realms/{r}/broker/{alias}/endpoint/logout_response`, where the logout finishes.
 *
 * Unlike Keycloak (whose `state` is the user session's id, the session kept "logging out" until the browser comes
 * back), the session here has ended before the browser leaves: an upstream that never sends it back leaves nobody
 * signed in here. The `state` is random and names, in the shared store, only what the logout has left to do (the
 * front-channel frames of the clients and the application's post-logout redirect), taken once.
 */

type LogoutStore = Pick<AuthenticationContext, 'hostStore'>;

const LIFETIME_MS = 30 * 60 * 1000;
const stateKey = (state: string) => `broker-logout:${state}`;

/** Keycloak's OIDCIdentityProvider and its subclasses (the OpenID Connect social providers); OAuth 2 ones never redirect. */
const isOidcKind = (provider: IdentityProvider) => OIDC_PROVIDER_IDS.has(provider.providerId) || SOCIAL_PROVIDERS[provider.providerId]?.kind === 'oidc';

/** The provider's `logoutUrl` when it is an http(s) URL, else null. */
function logoutUrlOf(provider: IdentityProvider): URL | null {
  const configured = provider.config.logoutUrl?.trim();
  if (!configured) return null;
  try {
    const url = new URL(configured);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/** The browser is sent to the upstream's logout at this server's browser logout (Keycloak's front-channel case). */
export const logsOutThroughBrowser = (provider: IdentityProvider) => isOidcKind(provider) && provider.config.backchannelSupported !== 'true' && logoutUrlOf(provider) !== null;

/**
 * Whether a brokered session keeps the upstream's ID token (Keycloak's FEDERATED_ID_TOKEN note): only where a logout
 * sends it, by back-channel (`backchannelSupported`), or through the browser as `id_token_hint`.
 */
export const keepsUpstreamIdToken = (provider: IdentityProvider) =>
  provider.config.backchannelSupported === 'true' || (logsOutThroughBrowser(provider) && provider.config.sendIdTokenOnLogout !== 'false');

/** The identity provider a brokered session came through: the longest alias its `{alias}.{upstream sub}` starts with. */
export function sessionProvider(providers: readonly IdentityProvider[], session: UserSession): IdentityProvider | null {
  const recorded = session.brokerUserId;
  if (!recorded) return null;
  return providers.filter((p) => recorded.startsWith(`${p.alias}.`)).sort((a, b) => b.alias.length - a.alias.length)[0] ?? null;
}

/** What the logout has left to do when the browser comes back from the upstream. */
export interface PendingBrokerLogout {
  realmId: string;
  alias: string;
  /** The application's post-logout redirect (its `state` added), or null for the "signed out" page. */
  next: string | null;
  /** The front-channel logout frames of the session's clients. */
  frames: { clientId: string; name: string; url: string }[];
}

/**
 * Sends the ended session's browser to the upstream's logout: keeps what is left to do under a new `state` and
 * answers the URL to redirect to, or null when the session's provider does not log out this way.
 */
export async function upstreamBrowserLogout(ctx: LogoutStore, provider: IdentityProvider, session: UserSession, returnUrl: string, pending: PendingBrokerLogout): Promise<string | null> {
  const base = logsOutThroughBrowser(provider) ? logoutUrlOf(provider) : null;
  if (!base) return null;
  const state = randomBytes(24).toString('base64url');
  await ctx.hostStore.set(stateKey(state), JSON.stringify(pending), LIFETIME_MS);
  base.searchParams.set('state', state);
  if (provider.config.sendIdTokenOnLogout !== 'false' && session.brokerIdToken) base.searchParams.set('id_token_hint', session.brokerIdToken);
  if (provider.config.sendClientIdOnLogout === 'true' && provider.config.clientId) base.searchParams.set('client_id', provider.config.clientId);
  base.searchParams.set('post_logout_redirect_uri', returnUrl);
  return base.href;
}

/** The upstream's answer: what its `state` left to do, taken once; null for an unknown, used or another realm's or provider's state. */
export async function takeBrokerLogout(ctx: LogoutStore, state: string | undefined, realmId: string, alias: string): Promise<PendingBrokerLogout | null> {
  if (!state || !/^[A-Za-z0-9_-]{32}$/.test(state)) return null;
  const key = stateKey(state);
  const stored = await ctx.hostStore.get(key);
  if (!stored || stored === 'used') return null;
  // Atomic: of two answers with one state, one takes it.
  if (!(await ctx.hostStore.compareAndSet(key, stored, 'used', LIFETIME_MS))) return null;
  const pending = JSON.parse(stored) as PendingBrokerLogout;
  return pending.realmId === realmId && pending.alias === alias ? pending : null;
}
