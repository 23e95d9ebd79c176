import type { RequiredActionProvider } from './provider.js';

export const DELETE_ACCOUNT = 'delete_account';

/** The `account` client's role a user needs to delete their own account (Keycloak's AccountRoles.DELETE_ACCOUNT). */
export const DELETE_ACCOUNT_ROLE = 'delete-account';

/**
 * Keycloak's self-service account deletion: the user confirms, and the account is gone. Registered off in every
 * realm as in Keycloak; only a user holding the account client's delete-account role may carry it out (others see
 * an error page, as Keycloak's). Not configurable, and as an application-initiated action it always asks the user
 * to sign in again (Keycloak's max auth age of 0 for it).
 */
export const deleteAccount: RequiredActionProvider = {
  alias: DELETE_ACCOUNT,
  name: 'Delete Account',
  defaults: { priority: 60, enabled: false },
  config: [],
  maxAuthAgeSeconds: 0,
};
