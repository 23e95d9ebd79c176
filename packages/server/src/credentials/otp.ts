import { createHmac, randomBytes } from 'node:crypto';
import type { OtpAlgorithm, OtpPolicy } from '../model/otp-policy.js';

/**
 * One-time passwords: HOTP (RFC 4226) and TOTP (RFC 6238) with HMAC-SHA1/256/512, the shared secret as the
 * authenticator apps read it (base32 in an otpauth:// URI), and the parameters a credential keeps. Pure: no
 * store, no clock of its own (the caller passes the time), so unit tests check it against the RFC vectors.
 */

/** The credential type of authenticator apps, Keycloak's. */
export const OTP_CREDENTIAL_TYPE = 'otp';

/** What an OTP credential keeps besides its secret (Keycloak's OTP credentialData). */
export interface OtpCredentialData {
  subType: 'totp';
  digits: number;
  period: number;
  algorithm: OtpAlgorithm;
  counter: number;
}

const NODE_HASH: Record<OtpAlgorithm, string> = { HmacSHA1: 'sha1', HmacSHA256: 'sha256', HmacSHA512: 'sha512' };
const isOtpAlgorithm = (value: unknown): value is OtpAlgorithm => typeof value === 'string' && Object.hasOwn(NODE_HASH, value);

/** The longest code accepted as input: anything longer is wrong without computing anything. */
export const MAX_OTP_LENGTH = 8;

/** RFC 4226: the `digits`-digit code of `counter` under `key`. */
export function hotp(key: Buffer, counter: number, digits: number, algorithm: OtpAlgorithm = 'HmacSHA1'): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac(NODE_HASH[algorithm], key).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

/** RFC 6238: the time step of `atMs` (Unix epoch, T0 = 0). */
export const timeStep = (atMs: number, periodSeconds: number): number => Math.floor(atMs / 1000 / periodSeconds);

/** RFC 6238: the code at `atMs`. */
export function totp(key: Buffer, atMs: number, data: Pick<OtpCredentialData, 'digits' | 'period' | 'algorithm'>): string {
  return hotp(key, timeStep(atMs, data.period), data.digits, data.algorithm);
}

/**
 * The time step whose code `code` is, within `window` steps before or after the current one, or null. A code
 * of the wrong length or with anything but digits is wrong at once. Every step of the window is computed and
 * compared, so the time taken does not tell which one matched.
 */
export function matchTotp(key: Buffer, code: string, atMs: number, data: Pick<OtpCredentialData, 'digits' | 'period' | 'algorithm'>, window: number): number | null {
  if (code.length !== data.digits || !/^[0-9]+$/.test(code)) return null;
  const now = timeStep(atMs, data.period);
  let matched: number | null = null;
  for (let step = now - window; step <= now + window; step++) {
    const candidate = hotp(key, step, data.digits, data.algorithm);
    if (equalCodes(candidate, code) && matched === null) matched = step;
  }
  return matched;
}

function equalCodes(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding, as authenticator apps take a secret. */
export function base32Encode(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** Base32 back to bytes (case, spaces and padding ignored); null for anything else. */
export function base32Decode(text: string): Buffer | null {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  if (!/^[A-Z2-7]*$/.test(clean)) return null;
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    value = (value << 5) | BASE32.indexOf(char);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommendation), base32. */
export const newOtpSecret = (): string => base32Encode(randomBytes(20));

/** The credential data a new credential keeps: the realm's policy when it is set up. */
export const otpCredentialData = (policy: OtpPolicy): OtpCredentialData => ({
  subType: 'totp',
  digits: policy.otpPolicyDigits,
  period: policy.otpPolicyPeriod,
  algorithm: policy.otpPolicyAlgorithm,
  counter: 0,
});

/** The Key URI apps scan (`otpauth://totp/<issuer>:<account>?secret=…`), with the realm as issuer. */
export function otpauthUri(issuer: string, account: string, secret: string, data: OtpCredentialData): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const query = new URLSearchParams({
    secret,
    digits: String(data.digits),
    algorithm: data.algorithm.replace('Hmac', ''),
    issuer,
    period: String(data.period),
  });
  return `otpauth://totp/${label}?${query}`;
}

/** An OTP credential as a Keycloak export carries it, read into this server's form (secret in base32). */
export interface ImportedOtpCredential {
  secret: string;
  data: OtpCredentialData;
  userLabel: string | null;
  createdDate: number | null;
}

const MAX_IMPORTED_SECRET = 1024;

/**
 * Reads a Keycloak `otp` credential (`secretData` `{"value": …}`, `credentialData` `{"subType","digits","period",
 * "algorithm","counter","secretEncoding"?}`). Keycloak's key is the value's UTF-8 bytes, or the value base32-decoded
 * when `secretEncoding` is BASE32; either way it is kept here in base32, so the user's authenticator app goes on
 * giving valid codes. HOTP is refused (Realmgate checks time-based codes only); an error message names the problem.
 */
export function importedOtpCredential(secretData: string, credentialData: string): Omit<ImportedOtpCredential, 'userLabel' | 'createdDate'> | { error: string } {
  let secret: { value?: unknown };
  let data: { subType?: unknown; digits?: unknown; period?: unknown; algorithm?: unknown; counter?: unknown; secretEncoding?: unknown };
  try {
    secret = JSON.parse(secretData);
    data = JSON.parse(credentialData);
  } catch {
    return { error: 'secretData and credentialData must be JSON strings' };
  }
  const value = secret?.value;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IMPORTED_SECRET) return { error: `secretData.value must be a non-empty string of at most ${MAX_IMPORTED_SECRET} characters` };
  if (data?.subType !== 'totp') return { error: `credentialData.subType "${String(data?.subType).slice(0, 16)}" is not supported (only totp is)` };
  const digits = Number(data.digits ?? 6);
  if (digits !== 6 && digits !== 8) return { error: 'credentialData.digits must be 6 or 8' };
  const period = Number(data.period ?? 30);
  if (!Number.isInteger(period) || period < 1 || period > 600) return { error: 'credentialData.period must be an integer from 1 to 600' };
  const algorithm = String(data.algorithm ?? 'HmacSHA1');
  if (!isOtpAlgorithm(algorithm)) return { error: `credentialData.algorithm "${algorithm.slice(0, 32)}" is not supported (HmacSHA1, HmacSHA256, HmacSHA512 are)` };
  let key: Buffer | null;
  if (data.secretEncoding === undefined || data.secretEncoding === null) key = Buffer.from(value, 'utf8');
  else if (String(data.secretEncoding).toUpperCase() === 'BASE32') key = base32Decode(value);
  else return { error: `credentialData.secretEncoding "${String(data.secretEncoding).slice(0, 16)}" is not supported (BASE32 is)` };
  if (!key || key.length === 0) return { error: 'secretData.value is not valid base32' };
  return { secret: base32Encode(key), data: { subType: 'totp', digits, period, algorithm, counter: 0 } };
}

/** The parameters a stored OTP credential was made with, defaults where a value is missing or unknown. */
export function storedOtpData(stored: Record<string, unknown>): OtpCredentialData {
  const data = stored as Partial<OtpCredentialData>;
  return {
    subType: 'totp',
    digits: data.digits === 8 ? 8 : 6,
    period: typeof data.period === 'number' && data.period > 0 ? data.period : 30,
    algorithm: isOtpAlgorithm(data.algorithm) ? data.algorithm : 'HmacSHA1',
    counter: 0,
  };
}

/** A stored OTP credential as Keycloak exports it; `secretEncoding: BASE32` makes Keycloak read the key as this server does. */
export function exportedOtpCredential(stored: { secretData: Record<string, unknown>; credentialData: Record<string, unknown>; userLabel: string | null; createdDate: number }): Record<string, unknown> {
  const data = storedOtpData(stored.credentialData);
  return {
    type: OTP_CREDENTIAL_TYPE,
    ...(stored.userLabel ? { userLabel: stored.userLabel } : {}),
    createdDate: stored.createdDate,
    secretData: JSON.stringify({ value: String(stored.secretData.value ?? '') }),
    credentialData: JSON.stringify({ subType: 'totp', digits: data.digits, counter: 0, period: data.period, algorithm: data.algorithm, secretEncoding: 'BASE32' }),
  };
}
