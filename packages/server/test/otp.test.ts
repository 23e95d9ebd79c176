import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchTotp, newOtpSecret, otpauthUri, timeStep, totp } from '../src/credentials/otp.js';
import type { OtpAlgorithm } from '../src/model/otp-policy.js';
import { qrSvg } from '../src/pages/step-pages.js';
import { fromBase32, hotpCode, totpCode, type TotpAlgorithm } from './support/totp.js';

/** Issue 17, point 3: the codes themselves, against RFC 4226 and RFC 6238, for the server and for the tests' own TOTP. */

const seeds: Record<OtpAlgorithm, Buffer> = {
  HmacSHA1: Buffer.from('12345678901234567890'),
  HmacSHA256: Buffer.from('12345678901234567890123456789012'),
  HmacSHA512: Buffer.from('1234567890123456789012345678901234567890123456789012345678901234'),
};
const nodeName: Record<OtpAlgorithm, TotpAlgorithm> = { HmacSHA1: 'sha1', HmacSHA256: 'sha256', HmacSHA512: 'sha512' };

// RFC 6238 appendix B: Unix time in seconds, then the 8-digit codes for SHA1, SHA256, SHA512.
const rfc6238: [number, string, string, string][] = [
  [59, '94287082', '46119246', '90693936'],
  [1111111109, '07081804', '68084774', '25091201'],
  [1111111111, '14050471', '67062674', '99943326'],
  [1234567890, '89005924', '91819424', '93441116'],
  [2000000000, '69279037', '90698825', '38618901'],
  [20000000000, '65353130', '77737706', '47863826'],
];

// RFC 4226 appendix D: counters 0 to 9, 6 digits, HMAC-SHA1.
const rfc4226 = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];

describe('RFC 6238 and RFC 4226 test vectors', () => {
  it('the server computes every TOTP vector for SHA1, SHA256 and SHA512, and every HOTP vector', () => {
    for (const [seconds, ...codes] of rfc6238) {
      (['HmacSHA1', 'HmacSHA256', 'HmacSHA512'] as const).forEach((algorithm, i) => {
        expect(totp(seeds[algorithm], seconds * 1000, { digits: 8, period: 30, algorithm }), `${algorithm} at ${seconds}`).toBe(codes[i]);
      });
    }
    rfc4226.forEach((code, counter) => expect(hotp(seeds.HmacSHA1, counter, 6)).toBe(code));
  });

  it("the tests' own TOTP computes them too", () => {
    for (const [seconds, ...codes] of rfc6238) {
      (['HmacSHA1', 'HmacSHA256', 'HmacSHA512'] as const).forEach((algorithm, i) => {
        expect(totpCode(seeds[algorithm], seconds * 1000, { digits: 8, algorithm: nodeName[algorithm] })).toBe(codes[i]);
      });
    }
    rfc4226.forEach((code, counter) => expect(hotpCode(seeds.HmacSHA1, counter)).toBe(code));
  });
});

describe('checking a code', () => {
  const key = seeds.HmacSHA1;
  const data = { digits: 6, period: 30, algorithm: 'HmacSHA1' as const };
  const at = 1_700_000_000_000;

  it('matches the current step and, within the look-ahead window, the steps beside it', () => {
    const step = timeStep(at, 30);
    expect(matchTotp(key, hotp(key, step, 6), at, data, 0)).toBe(step);
    expect(matchTotp(key, hotp(key, step + 1, 6), at, data, 1)).toBe(step + 1);
    expect(matchTotp(key, hotp(key, step - 1, 6), at, data, 1)).toBe(step - 1);
    expect(matchTotp(key, hotp(key, step + 1, 6), at, data, 0)).toBeNull();
    expect(matchTotp(key, hotp(key, step + 2, 6), at, data, 1)).toBeNull();
  });

  it('refuses codes of the wrong length, with anything but digits, or huge, without throwing', () => {
    const good = totp(key, at, data);
    for (const bad of ['', good.slice(1), `${good}0`, 'abcdef', `${good.slice(0, 5)}x`, ' '.repeat(6), '１２３４５６', '12345\u0000', '9'.repeat(10_000)]) {
      expect(matchTotp(key, bad, at, data, 1), JSON.stringify(bad.slice(0, 12))).toBeNull();
    }
  });
});

describe('secrets', () => {
  it('are 160 random bits in base32, which decode back, and the otpauth URI carries the parameters', () => {
    const secret = newOtpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(newOtpSecret()).not.toBe(secret);
    expect(base32Decode(secret)!.length).toBe(20);
    expect(base32Encode(base32Decode(secret)!)).toBe(secret);
    expect(fromBase32(secret).equals(base32Decode(secret)!)).toBe(true);
    // RFC 4648 section 10.
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Decode('mzxw 6ytb oi')!.toString()).toBe('foobar');
    expect(base32Decode('not base32!')).toBeNull();
    const uri = new URL(otpauthUri('My Shop', 'alice', secret, { subType: 'totp', digits: 8, period: 60, algorithm: 'HmacSHA256', counter: 0 }));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toBe('/My Shop:alice');
    expect(Object.fromEntries(uri.searchParams)).toEqual({ secret, digits: '8', algorithm: 'SHA256', issuer: 'My Shop', period: '60' });
  });
});

describe('the QR code', () => {
  it('is an inline SVG of one path, grows with the text, and is left out (no throw) for a text no QR code holds', () => {
    const small = qrSvg('otpauth://totp/Shop:alice?secret=ABC');
    expect(small).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" viewBox="0 0 (\d+) \1"/);
    expect(small.match(/<path /g)).toHaveLength(1);
    const side = (svg: string) => Number(/viewBox="0 0 (\d+)/.exec(svg)![1]);
    expect(side(qrSvg('x'.repeat(300)))).toBeGreaterThan(side(small));
    expect(qrSvg('x'.repeat(5000))).toBe('');
  });
});
