import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const UPDATE_USER_LOCALE = 'update_user_locale';

/**
 * Keycloak stores the language chosen on the login pages as the user's locale. This server's pages have one
 * language, so there is never a choice to store: the action completes at once, without a page, and is removed.
 */
export const updateUserLocale: RequiredActionProvider = {
  alias: UPDATE_USER_LOCALE,
  name: 'Update User Locale',
  defaults: { priority: 1000, enabled: true },
  config: [maxAuthAge],
};
