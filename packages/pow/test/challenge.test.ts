import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeChallenge, encodeChallenge, loadKey, newChallengeId, verifyChallenge } from '../src/index.js';
import type { Challenge } from '../src/index.js';
import { MemoryStore } from './memory-store.js';

const key = randomBytes(32);
const sample: Challenge = {
  v: 1,
  id: newChallengeId(),
  realm: 'demo',
  flow: 'registration',
  alg: 'argon2id',
  d: 3,
  m: 16384,
  t: 1,
  p: 1,
  iat: 1_700_000_000_123,
};

function b64(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

describe('wire format', () => {
  it('is base64url JSON with the fields in order, a dot, and the base64url HMAC-SHA256 of the payload', () => {
    const token = encodeChallenge(sample, key);
    const [payload, sig] = token.split('.');
    expect(Buffer.from(payload, 'base64url').toString()).toBe(
      `{"v":1,"id":"${sample.id}","realm":"demo","flow":"registration","alg":"argon2id","d":3,"m":16384,"t":1,"p":1,"iat":1700000000123}`,
    );
    expect(sig).toBe(createHmac('sha256', key).update(payload).digest('base64url'));
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  });

  it('round-trips, and the id is 16 random bytes in base64url', () => {
    expect(verifyChallenge(encodeChallenge(sample, key), key)).toEqual({ ok: true, challenge: sample });
    expect(Buffer.from(sample.id, 'base64url')).toHaveLength(16);
    expect(newChallengeId()).not.toBe(newChallengeId());
    expect(decodeChallenge(encodeChallenge(sample, key))).toEqual(sample);
  });

  it('detects a tampered payload', () => {
    const [, sig] = encodeChallenge(sample, key).split('.');
    for (const change of [{ d: 0 }, { realm: 'other' }, { iat: Date.now() }, { flow: 'login' }]) {
      expect(verifyChallenge(`${b64({ ...sample, ...change })}.${sig}`, key)).toEqual({
        ok: false,
        reason: 'bad_signature',
      });
    }
  });

  it('detects a tampered signature and a wrong key', () => {
    const token = encodeChallenge(sample, key);
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    expect(verifyChallenge(flipped, key)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyChallenge(token, randomBytes(32))).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('accepts only the canonical spelling of the signature (the last character has 2 unused bits)', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const token = encodeChallenge(sample, key);
    const last = alphabet.indexOf(token.at(-1)!);
    for (const other of [last ^ 1, last ^ 2, last ^ 3]) {
      const twin = token.slice(0, -1) + alphabet[other];
      // Same bytes once decoded, different text.
      expect(Buffer.from(twin.split('.')[1], 'base64url')).toEqual(Buffer.from(token.split('.')[1], 'base64url'));
      expect(verifyChallenge(twin, key)).toEqual({ ok: false, reason: 'bad_signature' });
    }
  });

  it('rejects malformed tokens before checking a signature', () => {
    const token = encodeChallenge(sample, key);
    const [payload, sig] = token.split('.');
    const bad = [
      '',
      '.',
      'abc',
      `${payload}.`,
      `.${sig}`,
      `${payload}.${sig}x`,
      `${payload}!.${sig}`,
      `${token}.x`,
      `${'a'.repeat(3000)}.${sig}`,
    ];
    for (const token of bad) expect(verifyChallenge(token, key)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('rejects a correctly signed payload of the wrong shape', () => {
    const sign = (value: unknown) => {
      const payload = b64(value);
      return `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
    };
    const shapes: unknown[] = [
      'not json',
      [],
      null,
      { ...sample, v: 2 },
      { ...sample, id: 'short' },
      { ...sample, flow: 'account' },
      { ...sample, alg: 'md5' },
      { ...sample, d: 1.5 },
      { ...sample, p: 2 },
      { ...sample, m: 4 },
      { ...sample, alg: 'sha256' },
      { ...sample, realm: '' },
    ];
    for (const shape of shapes) expect(verifyChallenge(sign(shape), key)).toEqual({ ok: false, reason: 'malformed' });
    expect(verifyChallenge(sign({ ...sample, alg: 'sha256', m: 0, t: 0 }), key)).toMatchObject({ ok: true });
  });

  it('decodeChallenge refuses what is not a challenge', () => {
    expect(() => decodeChallenge('nope')).toThrow('not a proof-of-work challenge');
  });
});

describe('loadKey', () => {
  it('gives every process sharing a store the same key, and a new store a new one', async () => {
    const store = new MemoryStore();
    const [a, b] = await Promise.all([loadKey(store, null), loadKey(store, null)]);
    expect(a.equals(b)).toBe(true);
    expect(a).toHaveLength(32);
    expect((await loadKey(new MemoryStore(), null)).equals(a)).toBe(false);
  });

  it('uses an explicit secret as it is', async () => {
    const secret = 's'.repeat(40);
    expect((await loadKey(new MemoryStore(), secret)).toString()).toBe(secret);
  });
});
