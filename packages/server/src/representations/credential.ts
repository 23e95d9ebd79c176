import { createHash } from 'node:crypto';
import { exportedPasswordCredential } from '../credentials/keycloak-hash.js';
import type { User } from '../model/types.js';
import type { StoredCredential } from '../storage/index.js';

/**
 * The user's password credential id: the stored one, kept across resets as Keycloak's; for a password set before it
 * was stored (migration 0032), one derived from the password's creation time.
 */
export function passwordCredentialId(user: User): string {
  if (user.passwordCredentialId) return user.passwordCredentialId;
  const hex = createHash('sha256').update(`password:${user.id}:${user.passwordCreated ?? 0}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Keycloak's CredentialRepresentation of the password (its hash lives on the user here); null without one. With
 * `withData` (the admin API), `credentialData` names the hash's algorithm and parameters as Keycloak 26.7's admin
 * API does (the console's "Show data"); the hash and salt (Keycloak's `secretData`) are never part of it.
 */
export function passwordCredentialRep(user: User, { withData = false } = {}) {
  if (user.passwordHash === null) return null;
  const credentialData = withData ? exportedPasswordCredential(user.passwordHash, null)?.credentialData : undefined;
  return {
    id: passwordCredentialId(user),
    type: 'password',
    ...(user.passwordLabel ? { userLabel: user.passwordLabel } : {}),
    createdDate: user.passwordCreated ?? user.createdTimestamp,
    ...(credentialData !== undefined ? { credentialData } : {}),
  };
}

/** Keycloak's CredentialRepresentation of a stored credential; the secret is never part of it. */
export function credentialRep(credential: StoredCredential) {
  return {
    id: credential.id,
    type: credential.type,
    ...(credential.userLabel !== null ? { userLabel: credential.userLabel } : {}),
    createdDate: credential.createdDate,
    credentialData: JSON.stringify(credential.credentialData),
  };
}
