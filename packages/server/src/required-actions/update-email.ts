import { emailResendCooldown, maxAuthAge, type RequiredActionProvider } from './provider.js';

export const UPDATE_EMAIL = 'UPDATE_EMAIL';

/** Keycloak's user attribute holding an address waiting for its confirmation link (UserModel.EMAIL_PENDING). */
export const EMAIL_PENDING_ATTRIBUTE = 'kc.email.pending';

/**
 * Keycloak's separate e-mail change: the user enters a new address; it is set at once, or, when the realm verifies
 * e-mail (or the action's `verifyEmail` forces it), a link goes to the new address and the address changes when it
 * is opened (until then the address waits in `kc.email.pending`, and the action is asked again at each sign-in).
 * Registered off in a new realm, as Keycloak 26.7.3 has it.
 */
export const updateEmail: RequiredActionProvider = {
  alias: UPDATE_EMAIL,
  name: 'Update Email',
  defaults: { priority: 70, enabled: false },
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
