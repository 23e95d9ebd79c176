import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const IDP_LINK = 'idp_link';

/**
 * Keycloak 26's "Linking Identity Provider": an application asks, with `kc_action=idp_link:{alias}`, that the
 * signed-in user link an account of that identity provider (an application-initiated action only: with no provider
 * named, as a user's pending action, it is passed over, as Keycloak ignores it). The user confirms, signs in
 * upstream, and the account is linked; the application gets `kc_action_status`.
 */
export const idpLink: RequiredActionProvider = {
  alias: IDP_LINK,
  name: 'Linking Identity Provider',
  defaults: { priority: 120, enabled: true },
  config: [maxAuthAge],
};
