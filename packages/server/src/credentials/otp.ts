import { createHmac, randomBytes } from 'node:crypto';
import type { OtpAlgorithm, OtpPolicy } from '../model/otp-policy.js';

/**
 * One-time passwords: HOTP (RFC 4226) and TOTP (RFC 6238) with HMAC-SHA1/256/512, the shared secret as the
 * authenticator apps read it (base32 in an otpauth:// URI), and the parameters a credential keeps. Pure: no
 * store, no clock of its own (the caller passes the time), so unit tests check it against the RFC vectors.
 */

/** What an OTP credential keeps besides its secret (Keycloak's OTP credentialData). */
export interface OtpCredentialData {
  subType: 'totp';
  digits: number;
  period: number;
  algorithm: OtpAlgorithm;
  counter: number;
}

const NODE_HASH: Record<OtpAlgorithm, string> = { HmacSHA1: 'sha1', HmacSHA256: 'sha256', HmacSHA512: 'sha512' };

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
