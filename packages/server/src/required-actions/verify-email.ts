import { emailResendCooldown, maxAuthAge, type RequiredActionProvider } from './provider.js';

export const VERIFY_EMAIL = 'VERIFY_EMAIL';

/** The user opens a link sent to their address; the sign-in waits for it. */
export const verifyEmail: RequiredActionProvider = {
  alias: VERIFY_EMAIL,
  name: 'Verify Email',
  defaults: { priority: 50, enabled: true },
  config: [maxAuthAge, emailResendCooldown],
};
