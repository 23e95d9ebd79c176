import { createHmac } from 'node:crypto';

/**
 * The tests' own RFC 6238 TOTP (RFC 4226 HOTP over the time step), written apart from the server's so a test that
 * signs in with it checks the server against an independent implementation; test/otp.test.ts checks both against
 * the RFC's vectors.
 */

export type TotpAlgorithm = 'sha1' | 'sha256' | 'sha512';

export interface TotpOptions {
  digits?: number;
  period?: number;
  algorithm?: TotpAlgorithm;
}

/** RFC 4648 base32 (spaces, padding and case ignored) to bytes. */
export function fromBase32(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const char of text.replace(/[\s=]/g, '').toUpperCase()) {
    const value = alphabet.indexOf(char);
    if (value < 0) throw new Error(`not base32: ${char}`);
    bits += value.toString(2).padStart(5, '0');
  }
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

export function hotpCode(key: Buffer, counter: number, digits = 6, algorithm: TotpAlgorithm = 'sha1'): string {
  const message = Buffer.alloc(8);
  message.writeUInt32BE(Math.floor(counter / 2 ** 32), 0);
  message.writeUInt32BE(counter % 2 ** 32, 4);
  const mac = createHmac(algorithm, key).update(message).digest();
  const offset = mac[mac.length - 1] & 0xf;
  const value = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) | mac[offset + 3];
  return (value % 10 ** digits).toString().padStart(digits, '0');
}

/** The code of `key` at `atMs` (epoch milliseconds). */
export function totpCode(key: Buffer, atMs: number, { digits = 6, period = 30, algorithm = 'sha1' }: TotpOptions = {}): string {
  return hotpCode(key, Math.floor(atMs / 1000 / period), digits, algorithm);
}

/**
 * Hands out codes of one secret, each of a time step not handed out before, within `window` steps of now: a server
 * that accepts each code once (otpPolicyCodeReusable off) accepts every code this gives.
 */
export class CodeSource {
  private readonly used = new Set<number>();

  constructor(
    private readonly key: Buffer,
    private readonly options: TotpOptions & { window: number },
  ) {}

  /** Marks the step of `code` used (a code the server already accepted elsewhere). */
  markUsed(step: number): void {
    this.used.add(step);
  }

  next(): string {
    const period = this.options.period ?? 30;
    const now = Math.floor(Date.now() / 1000 / period);
    for (let step = now - this.options.window + 1; step <= now + this.options.window; step++) {
      if (this.used.has(step)) continue;
      this.used.add(step);
      return hotpCode(this.key, step, this.options.digits ?? 6, this.options.algorithm ?? 'sha1');
    }
    throw new Error('no unused time step left in the window');
  }
}
