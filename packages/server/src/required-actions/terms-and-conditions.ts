import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const TERMS_AND_CONDITIONS = 'TERMS_AND_CONDITIONS';

/** Keycloak's user attribute recording when the terms were accepted (seconds since the epoch). */
export const TERMS_ACCEPTED_ATTRIBUTE = 'terms_and_conditions';

/**
 * The user accepts the realm's terms (accepting records the time on the user; declining ends the sign-in and the
 * application gets access_denied). Off in a new realm, as in Keycloak.
 */
export const termsAndConditions: RequiredActionProvider = {
  alias: TERMS_AND_CONDITIONS,
  name: 'Terms and Conditions',
  defaults: { priority: 20, enabled: false },
  config: [maxAuthAge],
};
