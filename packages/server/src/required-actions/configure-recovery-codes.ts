import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const CONFIGURE_RECOVERY_AUTHN_CODES = 'CONFIGURE_RECOVERY_AUTHN_CODES';

/** The user saves a set of 12 single-use recovery codes, a second factor for when the usual one is lost. */
export const configureRecoveryCodes: RequiredActionProvider = {
  alias: CONFIGURE_RECOVERY_AUTHN_CODES,
  name: 'Recovery Authentication Codes',
  defaults: { priority: 130, enabled: true },
  config: [maxAuthAge],
};
