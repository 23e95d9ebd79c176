import type { AuthSession } from '../authentication/index.js';
import { canSignIn, providerDisplayName } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import type { IdentityProvider, Realm } from '../model/types.js';

/** Where a browser goes to sign in through an identity provider, and which providers the login page offers. */

export const brokerPath = (realm: Realm, alias: string, end: 'login' | 'endpoint') => `/realms/${encodeURIComponent(realm.name)}/broker/${encodeURIComponent(alias)}/${end}`;

/** The URL a login page button (or the redirector) sends the browser to; it carries the auth session's CSRF token. */
export const brokerLoginUrl = (realm: Realm, auth: AuthSession, alias: string) => `${brokerPath(realm, alias, 'login')}?session_code=${encodeURIComponent(auth.csrf)}`;

export const providerName = (provider: IdentityProvider) => providerDisplayName(provider);

/** The login page's buttons (Keycloak's `social.providers`): by guiOrder, then name; hidden and organization ones left out. */
export async function loginButtons(ctx: Pick<PagesContext, 'storage'>, realm: Realm, auth: AuthSession) {
  const providers = (await ctx.storage.federation.cachedProviders(realm.id)).filter((p) => canSignIn(p) && p.rest.hideOnLogin !== true && p.config.hideOnLogin !== 'true' && !p.rest.organizationId);
  const order = (p: IdentityProvider) => {
    const n = Number.parseInt(p.config.guiOrder ?? '', 10);
    return Number.isFinite(n) ? n : Number.MAX_SAFE_INTEGER;
  };
  providers.sort((a, b) => order(a) - order(b) || providerName(a).localeCompare(providerName(b)));
  return providers.map((p) => ({ alias: p.alias, displayName: providerName(p), href: brokerLoginUrl(realm, auth, p.alias) }));
}
