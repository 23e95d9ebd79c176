import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const CONFIGURE_TOTP = 'CONFIGURE_TOTP';

/** The user sets up an authenticator app: its code proves the app holds the secret shown. */
export const configureTotp: RequiredActionProvider = {
  alias: CONFIGURE_TOTP,
  name: 'Configure OTP',
  defaults: { priority: 54, enabled: true },
  config: [
    maxAuthAge,
    {
      name: 'add-recovery-codes',
      label: 'Add Recovery Codes',
      helpText: 'Ask for recovery codes after the OTP set-up. Recovery codes are not offered by this server: the setting is kept, with no effect.',
      type: 'boolean',
      defaultValue: false,
      value: 'boolean',
    },
  ],
};
