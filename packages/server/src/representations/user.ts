import { importedPasswordHash } from '../credentials/keycloak-hash.js';
import { importedOtpCredential, type ImportedOtpCredential } from '../credentials/otp.js';
import { importedRecoveryCodes, RECOVERY_CODES_TYPE } from '../credentials/recovery-codes.js';
import { importedWebAuthnCredential, WEBAUTHN_TYPES, type ImportedWebAuthnCredential } from '../credentials/webauthn.js';
import { badRequest, badRequestError, invalidAttribute } from '../model/errors.js';
import type { User } from '../model/types.js';
import { emailPattern, personNamePattern, usernamePattern } from '../model/user-profile.js';
import { parseRepresentation, type Spec } from './fields.js';
import { CARRIED_OUT_ACTIONS } from '../required-actions/index.js';

const userSpec: Spec = {
  username: { type: 'string', min: 1, pattern: usernamePattern, patternHint: 'a username without spaces or special characters' },
  // "" means no address, as Keycloak's user profile reads it (forms and scripts send it for an empty field).
  // Its form is checked by parseUser, which answers as Keycloak's user profile does.
  email: { type: 'string', max: 254 },
  firstName: { type: 'string', pattern: personNamePattern, patternHint: 'a name without special characters' },
  lastName: { type: 'string', pattern: personNamePattern, patternHint: 'a name without special characters' },
  enabled: { type: 'boolean' },
  emailVerified: { type: 'boolean' },
  attributes: { type: 'multiMap', max: 2048 },
  credentials: { type: 'array' },
  requiredActions: { type: 'stringArray' },
};
const userIgnored = [
  'id', 'createdTimestamp', 'totp', 'disableableCredentialTypes', 'notBefore', 'access', 'clientConsents', 'clientRoles',
  'federatedIdentities', 'federationLink', 'groups', 'realmRoles', 'self', 'serviceAccountClientId', 'userProfileMetadata', 'origin',
];

export interface UserInput {
  username?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  enabled?: boolean;
  emailVerified?: boolean;
  attributes?: Record<string, string[]>;
  password?: string;
  /**
   * A password credential marked `temporary: true` (Keycloak's CredentialRepresentation): the admin API adds the
   * UPDATE_PASSWORD required action, as Keycloak's updateUserFromRep. Never set for a realm import (Keycloak's
   * import ignores it too).
   */
  temporaryPassword?: boolean;
  /** A password hash from a Keycloak export (credentials/keycloak-hash.ts), stored without a policy check. */
  passwordHash?: string;
  /** From a realm file only (Keycloak's import keeps them): when the user and its password were made, the password's label. */
  createdTimestamp?: number;
  passwordCreated?: number;
  passwordLabel?: string;
  /**
   * Each credential's place in the file's `credentials` list (10, 20, …): Keycloak imports them in that order, so
   * the first one is what a sign-in offers first; the export writes them back in that order.
   */
  passwordPriority?: number;
  requiredActions?: string[];
  /** Authenticator apps from a Keycloak export (credentials of type `otp`). */
  otpCredentials?: (ImportedOtpCredential & { priority: number })[];
  /** Security keys and passkeys from a Keycloak export (`webauthn`, `webauthn-passwordless`), with the file's user id as their user handle. */
  webAuthnCredentials?: (ImportedWebAuthnCredential & { userHandle: string | null; priority: number })[];
  /** Recovery codes (their hashes) from a Keycloak export (`recovery-authn-codes`). */
  recoveryCodes?: { secretData: Record<string, unknown>; credentialData: Record<string, unknown>; createdDate: number | null; priority: number };
}

/**
 * The required actions an administrator (or a realm import) may set on a user: those this server carries out
 * (required-actions/), each asked at the next browser login (and refused by the password grant until then). Keycloak's
 * others (delete_account, webauthn-register, delete_credential …) are refused by name.
 */
export const SUPPORTED_REQUIRED_ACTIONS = CARRIED_OUT_ACTIONS;

const isTimestamp = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

export function parseUser(body: unknown, path = 'user', onUnknown?: (path: string) => void): UserInput {
  const rep = parseRepresentation(body, userSpec, userIgnored, path, onUnknown) as UserInput & { credentials?: unknown };
  const { credentials, ...input } = rep;
  if (input.email && !emailPattern.test(input.email)) {
    // The admin API answers as Keycloak's user profile validation (its message key and params); a realm file's user
    // is named by its path.
    throw path === 'user' ? invalidAttribute('email', 'error-invalid-email', ['email', input.email]) : badRequest(`${path}.email: must be a valid e-mail address`, 'email');
  }
  if (credentials !== undefined) {
    if (!Array.isArray(credentials)) throw badRequest(`${path}.credentials: must be an array`, 'credentials');
    for (const [i, credential] of credentials.entries()) {
      const at = `${path}.credentials[${i}]`;
      const priority = (i + 1) * 10;
      const c = credential as { type?: unknown; value?: unknown; secretData?: unknown; credentialData?: unknown; temporary?: unknown };
      // Keycloak's `temporary` is a Boolean: null or absent is false. Read by the admin API only (a realm import
      // passes it over, as Keycloak's import does).
      if (c?.type === 'password' && !onUnknown && c.temporary !== undefined && c.temporary !== null) {
        if (typeof c.temporary !== 'boolean') throw badRequest(`${at}.temporary: must be true or false`, 'temporary');
        if (c.temporary) input.temporaryPassword = true;
      }
      if (c?.type === 'password' && typeof c.value === 'string' && c.value.length > 0 && c.value.length <= 1024) {
        input.password = c.value;
      } else if (c?.type === 'password' && typeof c.secretData === 'string' && typeof c.credentialData === 'string') {
        // A Keycloak export's hashed password: kept as it is, so the user signs in with the same password.
        const imported = importedPasswordHash(c.secretData, c.credentialData);
        if ('error' in imported) throw badRequest(`${at}: ${imported.error}`, 'credentials');
        input.passwordHash = imported.hash;
        input.passwordPriority = priority;
        if (onUnknown) {
          const { createdDate, userLabel } = credential as { createdDate?: unknown; userLabel?: unknown };
          if (isTimestamp(createdDate)) input.passwordCreated = createdDate;
          if (typeof userLabel === 'string' && userLabel.trim()) input.passwordLabel = userLabel.trim().slice(0, 255);
        }
      } else if (c?.type === 'otp' && typeof c.secretData === 'string' && typeof c.credentialData === 'string') {
        // A Keycloak export's authenticator app: the user's app goes on giving valid codes.
        const imported = importedOtpCredential(c.secretData, c.credentialData);
        // A realm file imports without it and names it (a HOTP token, say); the admin API refuses it.
        if ('error' in imported && onUnknown) {
          onUnknown(`${at} (${imported.error})`);
          continue;
        }
        if ('error' in imported) throw badRequest(`${at}: ${imported.error}`, 'credentials');
        const { userLabel, createdDate } = credential as { userLabel?: unknown; createdDate?: unknown };
        (input.otpCredentials ??= []).push({
          ...imported,
          userLabel: typeof userLabel === 'string' ? userLabel.slice(0, 255) : null,
          createdDate: typeof createdDate === 'number' && Number.isFinite(createdDate) ? createdDate : null,
          priority,
        });
      } else if (typeof c?.type === 'string' && WEBAUTHN_TYPES.includes(c.type) && typeof c.credentialData === 'string') {
        // A Keycloak export's security key or passkey: it keeps signing in (credentials/webauthn.ts).
        const imported = importedWebAuthnCredential(c.type, c.credentialData);
        if ('error' in imported && onUnknown) {
          onUnknown(`${at} (${imported.error})`);
          continue;
        }
        if ('error' in imported) throw badRequest(`${at}: ${imported.error}`, 'credentials');
        const { userLabel, createdDate } = credential as { userLabel?: unknown; createdDate?: unknown };
        const fileId = (body as { id?: unknown }).id;
        (input.webAuthnCredentials ??= []).push({
          ...imported,
          userLabel: typeof userLabel === 'string' ? userLabel.slice(0, 255) : null,
          createdDate: isTimestamp(createdDate) ? createdDate : null,
          userHandle: typeof fileId === 'string' && fileId.length > 0 && fileId.length <= 64 ? fileId : null,
          priority,
        });
      } else if (c?.type === RECOVERY_CODES_TYPE && typeof c.secretData === 'string' && typeof c.credentialData === 'string') {
        // A Keycloak export's recovery codes: hashes, kept as they are, so the user's saved codes go on working.
        const imported = importedRecoveryCodes(c.secretData, c.credentialData);
        if ('error' in imported && onUnknown) {
          onUnknown(`${at} (${imported.error})`);
          continue;
        }
        if ('error' in imported) throw badRequest(`${at}: ${imported.error}`, 'credentials');
        const { createdDate } = credential as { createdDate?: unknown };
        input.recoveryCodes = { ...imported, createdDate: isTimestamp(createdDate) ? createdDate : null, priority };
      } else if (onUnknown && typeof c?.type === 'string' && c.type !== 'password') {
        onUnknown(`${at} (type "${c.type}")`);
      } else {
        throw badRequest(`${at}: only password credentials ({"type":"password","value":"…"} or Keycloak's hashed secretData/credentialData) and Keycloak's otp, webauthn, webauthn-passwordless and recovery-authn-codes credentials (secretData/credentialData) are supported`, 'credentials');
      }
    }
  }
  // A realm file keeps when its users were made, as Keycloak's import keeps it (the admin API stamps its own time).
  const created = (body as { createdTimestamp?: unknown }).createdTimestamp;
  if (onUnknown && isTimestamp(created)) input.createdTimestamp = created;
  const supported = (action: string) => SUPPORTED_REQUIRED_ACTIONS.includes(action);
  for (const [i, action] of (input.requiredActions ?? []).entries()) {
    if (supported(action)) continue;
    const problem = `${path}.requiredActions[${i}]: "${action.slice(0, 64)}" is not supported (${SUPPORTED_REQUIRED_ACTIONS.join(', ')})`;
    // A realm file is imported without it and says so (issue 16); the admin API refuses it.
    if (!onUnknown) throw badRequest(problem, 'requiredActions');
    onUnknown(`${path}.requiredActions[${i}] ("${action.slice(0, 64)}" is not supported)`);
  }
  if (onUnknown && input.requiredActions) input.requiredActions = input.requiredActions.filter(supported);
  return input;
}

/** What userRep shows besides the user row: its required actions and whether it has an OTP credential. */
export interface UserExtras {
  requiredActions: string[];
  totp: boolean;
}

export function userRep(user: User, extras: UserExtras = { requiredActions: [], totp: false }) {
  return {
    id: user.id,
    username: user.username,
    firstName: user.firstName ?? undefined,
    lastName: user.lastName ?? undefined,
    email: user.email ?? undefined,
    emailVerified: user.emailVerified,
    attributes: Object.keys(user.attributes).length ? user.attributes : undefined,
    createdTimestamp: user.createdTimestamp,
    enabled: user.enabled,
    totp: extras.totp,
    ...(user.serviceAccountClientId ? { serviceAccountClientId: user.serviceAccountClientId } : {}),
    disableableCredentialTypes: extras.totp ? ['otp'] : [],
    requiredActions: extras.requiredActions,
    notBefore: 0,
    access: { manageGroupMembership: true, view: true, mapRoles: true, impersonate: false, manage: true },
  };
}

/** The body of `PUT …/users/{id}/reset-password`, parsed. */
export interface PasswordCredentialInput {
  value: string;
  /** Keycloak's `temporary` (a Boolean; null or absent is false): true adds UPDATE_PASSWORD, false removes it. */
  temporary: boolean;
}

/** The body of `PUT …/users/{id}/reset-password`: Keycloak's CredentialRepresentation, a password only. */
export function parsePasswordCredential(body: unknown): PasswordCredentialInput {
  const credential = parseRepresentation(body, { type: { type: 'string' }, value: { type: 'string', max: 1024 }, temporary: { type: 'boolean' } }, ['userLabel', 'id', 'createdDate', 'priority', 'secretData', 'credentialData'], 'credential');
  if (credential.type !== undefined && credential.type !== 'password') throw badRequest('credential.type: must be "password"', 'type');
  if (typeof credential.value !== 'string' || credential.value.length === 0) throw badRequestError('credential.value: is required');
  return { value: credential.value, temporary: credential.temporary === true };
}
