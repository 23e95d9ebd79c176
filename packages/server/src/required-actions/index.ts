import { badRequest } from '../model/errors.js';
import { CONFIGURE_RECOVERY_AUTHN_CODES, configureRecoveryCodes } from './configure-recovery-codes.js';
import { CONFIGURE_TOTP, configureTotp } from './configure-totp.js';
import { DELETE_ACCOUNT, DELETE_ACCOUNT_ROLE, deleteAccount } from './delete-account.js';
import { IDP_LINK, idpLink } from './idp-link.js';
import type { RequiredActionProvider } from './provider.js';
import { TERMS_AND_CONDITIONS, termsAndConditions } from './terms-and-conditions.js';
import { UPDATE_EMAIL, updateEmail } from './update-email.js';
import { UPDATE_PASSWORD, updatePassword } from './update-password.js';
import { UPDATE_PROFILE, updateProfile } from './update-profile.js';
import { UPDATE_USER_LOCALE, updateUserLocale } from './update-user-locale.js';
import { VERIFY_EMAIL, verifyEmail } from './verify-email.js';
import { WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS, webauthnRegister, webauthnRegisterPasswordless } from './webauthn-register.js';

export { CONFIGURE_RECOVERY_AUTHN_CODES, CONFIGURE_TOTP, DELETE_ACCOUNT, DELETE_ACCOUNT_ROLE, IDP_LINK, TERMS_AND_CONDITIONS, UPDATE_EMAIL, UPDATE_PASSWORD, UPDATE_PROFILE, UPDATE_USER_LOCALE, VERIFY_EMAIL, WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS };
export { DELETE_CREDENTIAL, deleteCredentialTarget } from './delete-credential.js';
export { TERMS_ACCEPTED_ATTRIBUTE } from './terms-and-conditions.js';
export { EMAIL_PENDING_ATTRIBUTE } from './update-email.js';
export { DEFAULT_MAX_AUTH_AGE_SECONDS, MAX_AUTH_AGE, type RequiredActionConfigProperty, type RequiredActionProvider } from './provider.js';

/**
 * The required-action providers this server has, each registered in every new realm with Keycloak 26.7.3's
 * settings (`GET …/authentication/required-actions` of a new realm there). Keycloak registers more (VERIFY_PROFILE, delete_credential): those come only from realm files, kept as data
 * (delete_credential:{id} is carried out as an application's `kc_action` only: delete-credential.ts).
 */
export const REQUIRED_ACTION_PROVIDERS: readonly RequiredActionProvider[] = [
  termsAndConditions,
  updateProfile,
  verifyEmail,
  configureTotp,
  updatePassword,
  deleteAccount,
  updateEmail,
  webauthnRegister,
  webauthnRegisterPasswordless,
  configureRecoveryCodes,
  idpLink,
  updateUserLocale,
];

const byAlias = new Map(REQUIRED_ACTION_PROVIDERS.map((p) => [p.alias, p]));

export const requiredActionProvider = (alias: string): RequiredActionProvider | undefined => byAlias.get(alias);

/** The aliases this server carries out: the only ones a user may be given (admin API, realm files). */
export const CARRIED_OUT_ACTIONS: readonly string[] = REQUIRED_ACTION_PROVIDERS.map((p) => p.alias);

export const carriedOut = (alias: string): boolean => byAlias.has(alias);

/**
 * A required action's settings as a PUT gives them: every key must be one of the provider's, every value of its
 * kind (a whole number of seconds at least 0, or true/false). Stricter than Keycloak 26.7.3, which drops an unknown
 * key silently (and so clears the stored settings) and stores any text in a boolean: here each is a 400 naming it.
 */
export function checkRequiredActionConfig(provider: RequiredActionProvider, config: Readonly<Record<string, string>>): void {
  for (const [key, value] of Object.entries(config)) {
    const property = provider.config.find((p) => p.name === key);
    if (!property) throw badRequest(`config.${key.slice(0, 64)}: "${provider.alias}" has no such setting (${provider.config.map((p) => p.name).join(', ')})`, key.slice(0, 64));
    if (property.value === 'seconds' && !/^\d{1,9}$/.test(value)) throw badRequest(`config.${key}: must be a whole number of seconds, at least 0`, key);
    if (property.value === 'boolean' && value !== 'true' && value !== 'false') throw badRequest(`config.${key}: must be true or false`, key);
  }
}
