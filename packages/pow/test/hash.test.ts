import { argon2id } from 'hash-wasm';
import { describe, expect, it } from 'vitest';
import { argon2idHash, leadingZeroBits, sha256Hash } from '../src/index.js';

describe('leadingZeroBits', () => {
  it('counts from the most significant bit of the first byte', () => {
    const cases: [number[], number][] = [
      [[0x80], 0],
      [[0x40], 1],
      [[0x01], 7],
      [[0x00, 0xff], 8],
      [[0x00, 0x00, 0x10], 19],
      [[0x00, 0x00], 16],
      [[], 0],
      [[0x7f, 0x00], 1],
    ];
    for (const [bytes, bits] of cases) expect(leadingZeroBits(Uint8Array.from(bytes))).toBe(bits);
  });
});

describe('hashes', () => {
  it('Argon2id on the server equals the browser solver (hash-wasm) for the same inputs', async () => {
    const id = 'AAECAwQFBgcICQoLDA0ODw';
    for (const nonce of ['0', '7', '123456789']) {
      const server = await argon2idHash({ id, m: 64, t: 2 }, nonce);
      const browser = await argon2id({
        password: nonce,
        salt: id,
        iterations: 2,
        parallelism: 1,
        memorySize: 64,
        hashLength: 32,
        outputType: 'binary',
      });
      expect(server.toString('hex')).toBe(Buffer.from(browser).toString('hex'));
    }
  });

  it('SHA-256 hashes id + ":" + nonce', () => {
    // Expected values from coreutils: printf 'abc:1' | sha256sum
    expect(sha256Hash('abc', '1').toString('hex')).toBe('bfcf0b9cbe9d8208b2cddd9a01c31a9a60698a106a0e4fc1664233a15f16acec');
    expect(sha256Hash('AAECAwQFBgcICQoLDA0ODw', '42').toString('hex')).toBe(
      'c0283a84c88b6d0659422b35800e76c624bcc7656fae359d74de26bc93468171',
    );
  });
});
