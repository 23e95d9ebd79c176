/**
 * WebAuthn credentials in Keycloak's format (WebAuthnCredentialModel), so a Keycloak export imports and keeps
 * working and the export writes them back: type `webauthn` (second factor) or `webauthn-passwordless` (passkey),
 * secretData `{}`, credentialData `{aaguid, credentialId, credentialPublicKey, counter, attestationStatementFormat,
 * transports}` with the credential id in standard Base64 (Keycloak's Base64.encodeBytes) and the public key as its
 * COSE bytes in Base64url (Keycloak's CredentialPublicKeyConverter). Stored here as that object, unchanged.
 */
export const WEBAUTHN_CREDENTIAL_TYPE = 'webauthn';
export const WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE = 'webauthn-passwordless';
export const WEBAUTHN_TYPES: readonly string[] = [WEBAUTHN_CREDENTIAL_TYPE, WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE];

export interface WebAuthnCredentialData {
  aaguid: string;
  /** Standard Base64 of the credential id's bytes. */
  credentialId: string;
  /** Base64url of the COSE public key. */
  credentialPublicKey: string;
  counter: number;
  attestationStatementFormat: string;
  transports: string[];
}

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** The bytes of Base64 in either alphabet, padded or not (Keycloak writes both kinds); null when it is not Base64. */
export function base64Bytes(text: unknown): Buffer | null {
  if (typeof text !== 'string' || text.length === 0 || text.length > 4096 || !BASE64.test(text)) return null;
  const bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length > 0 ? bytes : null;
}

/** A stored credential's data, read; null when it is not a usable WebAuthn credential. */
export function readWebAuthnData(data: Record<string, unknown>): (WebAuthnCredentialData & { id: string; publicKey: Uint8Array<ArrayBuffer> }) | null {
  const id = base64Bytes(data.credentialId);
  const publicKey = base64Bytes(data.credentialPublicKey);
  const counter = data.counter;
  if (!id || !publicKey || typeof counter !== 'number' || !Number.isSafeInteger(counter) || counter < 0) return null;
  const transports = Array.isArray(data.transports) ? data.transports.filter((t): t is string => typeof t === 'string') : [];
  return {
    aaguid: typeof data.aaguid === 'string' ? data.aaguid : '00000000-0000-0000-0000-000000000000',
    credentialId: id.toString('base64'),
    credentialPublicKey: publicKey.toString('base64url'),
    counter,
    attestationStatementFormat: typeof data.attestationStatementFormat === 'string' ? data.attestationStatementFormat : 'none',
    transports,
    id: id.toString('base64url'),
    publicKey: new Uint8Array(publicKey),
  };
}

/** Keycloak's credentialData of a new credential. */
export function webAuthnCredentialData(input: { aaguid: string; id: Uint8Array | string; publicKey: Uint8Array; counter: number; fmt: string; transports: string[] }): WebAuthnCredentialData {
  const id = typeof input.id === 'string' ? Buffer.from(input.id, 'base64url') : Buffer.from(input.id);
  return {
    aaguid: input.aaguid,
    credentialId: id.toString('base64'),
    credentialPublicKey: Buffer.from(input.publicKey).toString('base64url'),
    counter: input.counter,
    attestationStatementFormat: input.fmt,
    transports: input.transports,
  };
}

/**
 * The authenticator data's backup flags of a credential (WebAuthn Level 3: BE, backup eligible, fixed for the
 * credential's life; BS, backed up, which may change). Keycloak's WebAuthnCredentialData has no field for them, and
 * Keycloak reads credentialData with Jackson's default of failing on an unknown property, so they are not put there:
 * they are kept in the credential's secretData beside the imported user handle (server-internal, never shown, and
 * exported as Keycloak's `{}`). Null: not known yet (a credential from a realm file), learnt at its next sign-in.
 */
export interface BackupFlags {
  backupEligible: boolean;
  backupState: boolean;
}

export function storedBackupFlags(secretData: Record<string, unknown>): BackupFlags | null {
  const { backupEligible, backupState } = secretData;
  return typeof backupEligible === 'boolean' && typeof backupState === 'boolean' ? { backupEligible, backupState } : null;
}

/** The flags as @simplewebauthn/server reports them (credentialDeviceType follows BE, credentialBackedUp is BS). */
export const backupFlagsOf = (info: { credentialDeviceType: string; credentialBackedUp: boolean }): BackupFlags => ({
  backupEligible: info.credentialDeviceType === 'multiDevice',
  backupState: info.credentialBackedUp,
});

export interface ImportedWebAuthnCredential {
  type: string;
  credentialData: WebAuthnCredentialData;
  userLabel: string | null;
  createdDate: number | null;
}

/** A Keycloak export's credentialData (a JSON string) of a WebAuthn credential, read; an error names what is wrong. */
export function importedWebAuthnCredential(type: string, credentialData: string): Pick<ImportedWebAuthnCredential, 'type' | 'credentialData'> | { error: string } {
  let data: unknown;
  try {
    data = JSON.parse(credentialData);
  } catch {
    return { error: 'credentialData is not JSON' };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return { error: 'credentialData must be a JSON object' };
  const read = readWebAuthnData(data as Record<string, unknown>);
  if (!read) return { error: 'credentialData needs credentialId and credentialPublicKey (Base64) and a counter of at least 0' };
  const { id: _id, publicKey: _key, ...kept } = read;
  return { type, credentialData: kept };
}

/** Keycloak's CredentialRepresentation of a stored WebAuthn credential, for the realm export. */
export function exportedWebAuthnCredential(stored: { id: string; type: string; credentialData: Record<string, unknown>; userLabel: string | null; createdDate: number; priority: number }): Record<string, unknown> {
  return {
    id: stored.id,
    type: stored.type,
    ...(stored.userLabel !== null ? { userLabel: stored.userLabel } : {}),
    createdDate: stored.createdDate,
    secretData: '{}',
    credentialData: JSON.stringify(stored.credentialData),
    priority: stored.priority,
  };
}
