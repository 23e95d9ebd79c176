import type { Authenticator } from '../../flows/index.js';
import type { IdentityProvider } from '../../model/types.js';
import type { BrowserEnv } from '../sign-in.js';
import { SIGN_IN_PROVIDER_IDS } from './social-providers.js';

/** The browser is sent to this identity provider's login (`/realms/{r}/broker/{alias}/login`). */
export interface RedirectChallenge {
  identityProvider: string;
}

/** A provider a browser may sign in through here: enabled, not link-only, of a type this server brokers. */
export const canSignIn = (provider: IdentityProvider) => provider.enabled && provider.rest.linkOnly !== true && SIGN_IN_PROVIDER_IDS.has(provider.providerId);

/** A provider a signed-in user may link an account of: enabled and brokered here (a link-only one included). */
export const canLink = (provider: IdentityProvider) => provider.enabled && SIGN_IN_PROVIDER_IDS.has(provider.providerId);

/**
 * Keycloak's identity-provider-redirector: the application's `kc_idp_hint`, else the step's `defaultProvider`,
 * sends the browser straight to that provider when it is enabled, can sign in (not link-only) and is one this
 * server brokers; otherwise the step is attempted and the login page is shown. As Keycloak's, a hint that names no
 * such provider, or an empty one, does not fall back to the default one (the login page shows). It acts on the authorization request
 * only: a posted login page (the user came back from a cancelled upstream sign-in) goes on to the form.
 */
export const identityProviderRedirector: Authenticator<BrowserEnv, RedirectChallenge, never> = {
  id: 'identity-provider-redirector',
  requiresUser: false,
  async authenticate({ env, config }) {
    if (!env.start) return { status: 'attempted' };
    // A hint given (even empty: Keycloak's "kc_idp_hint query parameter is empty") decides alone; else the default.
    const alias = env.idpHint !== undefined ? env.idpHint : config.defaultProvider;
    if (!alias) return { status: 'attempted' };
    const provider = (await env.ctx.storage.federation.cachedProviders(env.realm.id)).find((p) => p.alias === alias);
    return provider && canSignIn(provider) ? { status: 'challenge', challenge: { identityProvider: provider.alias } } : { status: 'attempted' };
  },
};
