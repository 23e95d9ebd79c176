import type { RequiredActionProvider } from './provider.js';

export const DELETE_ACCOUNT = 'delete_account';

/**
 * Keycloak's self-service account deletion. Registered (off) in every realm as in Keycloak, and not carried out
 * here: it cannot be enabled, so nobody is asked for it. Not configurable (Keycloak's neither).
 */
export const deleteAccount: RequiredActionProvider = {
  alias: DELETE_ACCOUNT,
  name: 'Delete Account',
  defaults: { priority: 60, enabled: false },
  carriedOut: false,
  config: [],
};
