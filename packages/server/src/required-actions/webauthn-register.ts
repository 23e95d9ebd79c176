import { maxAuthAge, type RequiredActionProvider } from './provider.js';

export const WEBAUTHN_REGISTER = 'webauthn-register';
export const WEBAUTHN_REGISTER_PASSWORDLESS = 'webauthn-register-passwordless';

/** The user registers a security key or passkey as a second factor (the realm's webAuthnPolicy*). */
export const webauthnRegister: RequiredActionProvider = {
  alias: WEBAUTHN_REGISTER,
  name: 'Webauthn Register',
  defaults: { priority: 80, enabled: true },
  config: [maxAuthAge],
};

/** The user registers a passkey to sign in without a password (the realm's webAuthnPolicyPasswordless*). */
export const webauthnRegisterPasswordless: RequiredActionProvider = {
  alias: WEBAUTHN_REGISTER_PASSWORDLESS,
  name: 'Webauthn Register Passwordless',
  defaults: { priority: 90, enabled: true },
  config: [maxAuthAge],
};
