import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

/**
 * Keycloak's recovery authentication codes (RecoveryAuthnCodesCredentialModel): type `recovery-authn-codes`, 12
 * codes of 12 characters (upper-case letters and digits without O and 0), stored only as the Base64 of their SHA-512
 * (secretData `{codes: [{number, encodedHashedValue}]}`), credentialData `{hashIterations, algorithm, totalCodes,
 * remainingCodes}`. As Keycloak, the codes are used in order: the sign-in asks for the next one, which is then gone.
 */
export const RECOVERY_CODES_TYPE = 'recovery-authn-codes';
export const RECOVERY_CODES_COUNT = 12;
const CODE_LENGTH = 12;
const ALPHABET = 'ABCDEFGHIJKLMNPQRSTUVWXYZ123456789';

export interface StoredRecoveryCode {
  number: number;
  encodedHashedValue: string;
}

export const newRecoveryCodes = (): string[] =>
  Array.from({ length: RECOVERY_CODES_COUNT }, () => Array.from({ length: CODE_LENGTH }, () => ALPHABET[randomInt(ALPHABET.length)]).join(''));

export const hashRecoveryCode = (code: string) => createHash('sha512').update(code, 'utf8').digest('base64');

/** What a code typed on the page is compared as: no spaces or dashes, upper case. */
export const normalizedRecoveryCode = (input: string) => input.replace(/[\s-]/g, '').toUpperCase().slice(0, 64);

export function recoveryCodesCredential(hashes: readonly string[]): { secretData: Record<string, unknown>; credentialData: Record<string, unknown> } {
  return {
    secretData: { codes: hashes.map((encodedHashedValue, i) => ({ number: i + 1, encodedHashedValue })) },
    credentialData: { hashIterations: 1, algorithm: 'SHA-512', totalCodes: hashes.length, remainingCodes: hashes.length },
  };
}

/** The stored codes still unused, in order; [] when the data is not Keycloak's. */
export function remainingRecoveryCodes(secretData: Record<string, unknown>): StoredRecoveryCode[] {
  const codes = secretData.codes;
  if (!Array.isArray(codes)) return [];
  return codes.filter((c): c is StoredRecoveryCode => typeof c === 'object' && c !== null && typeof c.number === 'number' && typeof c.encodedHashedValue === 'string');
}

/** Whether `input` is the code whose hash is `stored` (constant time over the hashes). */
export function recoveryCodeMatches(input: string, stored: StoredRecoveryCode): boolean {
  const given = Buffer.from(hashRecoveryCode(normalizedRecoveryCode(input)), 'base64');
  const saved = Buffer.from(stored.encodedHashedValue, 'base64');
  return given.length === saved.length && timingSafeEqual(given, saved);
}

/** A Keycloak export's recovery codes (secretData and credentialData as JSON strings), read; an error names what is wrong. */
export function importedRecoveryCodes(secretData: string, credentialData: string): { secretData: Record<string, unknown>; credentialData: Record<string, unknown> } | { error: string } {
  let secret: unknown;
  let data: unknown;
  try {
    secret = JSON.parse(secretData);
    data = JSON.parse(credentialData);
  } catch {
    return { error: 'secretData and credentialData must be JSON' };
  }
  if (typeof secret !== 'object' || secret === null || typeof data !== 'object' || data === null || Array.isArray(data)) return { error: 'secretData and credentialData must be JSON objects' };
  const codes = remainingRecoveryCodes(secret as Record<string, unknown>);
  const given = (secret as { codes?: unknown }).codes;
  if (!Array.isArray(given) || codes.length !== given.length || codes.length > 100 || codes.some((c) => Buffer.from(c.encodedHashedValue, 'base64').length !== 64)) {
    return { error: 'secretData.codes must list {number, encodedHashedValue} with Base64 SHA-512 hashes' };
  }
  return { secretData: { codes }, credentialData: { ...(data as Record<string, unknown>), remainingCodes: codes.length } };
}

/** Keycloak's CredentialRepresentation of stored recovery codes, for the realm export (hashes only, as Keycloak's). */
export function exportedRecoveryCodes(stored: { id: string; type: string; secretData: Record<string, unknown>; credentialData: Record<string, unknown>; userLabel: string | null; createdDate: number; priority: number }): Record<string, unknown> {
  return {
    id: stored.id,
    type: stored.type,
    ...(stored.userLabel !== null ? { userLabel: stored.userLabel } : {}),
    createdDate: stored.createdDate,
    secretData: JSON.stringify({ codes: remainingRecoveryCodes(stored.secretData) }),
    credentialData: JSON.stringify(stored.credentialData),
    priority: stored.priority,
  };
}
