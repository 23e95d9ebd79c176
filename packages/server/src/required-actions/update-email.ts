import { emailResendCooldown, maxAuthAge, type RequiredActionProvider } from './provider.js';

export const UPDATE_EMAIL = 'UPDATE_EMAIL';

/**
 * Keycloak's separate e-mail change (with verification of the new address). Registered off in a new realm, as
 * Keycloak 26.7.3 has it; not carried out here (the e-mail is changed on the profile page), so it cannot be enabled.
 */
export const updateEmail: RequiredActionProvider = {
  alias: UPDATE_EMAIL,
  name: 'Update Email',
  defaults: { priority: 70, enabled: false },
  carriedOut: false,
  config: [
    maxAuthAge,
    {
      name: 'verifyEmail',
      label: 'Force Email Verification',
      helpText: 'Always ask the user to verify the new address, whatever the realm says about e-mail verification.',
      type: 'boolean',
      defaultValue: false,
      value: 'boolean',
    },
    emailResendCooldown,
  ],
};
