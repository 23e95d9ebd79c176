import { describe, expect, it } from 'vitest';
import {
  decodeChallenge,
  encodeChallenge,
  leadingZeroBits,
  solutionHash,
  solve,
  VerificationPool,
} from '../src/index.js';
import type { Submission } from '../src/index.js';
import { harness, smallSettings } from './helpers.js';

const settings = smallSettings();
const who = { realm: 'demo', flow: 'login', ip: '192.0.2.1' } as const;

/** A scripted client: loads the page, solves from the wire format, submits after the minimum solve time. */
async function solvedSubmission(h: ReturnType<typeof harness>, s = settings): Promise<Submission> {
  const challenge = await h.pow.issueChallenge(who, s);
  const { nonce } = await solve(challenge);
  h.clock.now += s.min_solve_time_ms + 100;
  return { ...who, challenge, nonce, honeypot: '' };
}

describe('verifySolution', () => {
  it('accepts a solved challenge, in argon2id and in sha256 mode', async () => {
    for (const algorithm of ['argon2', 'sha256']) {
      const h = harness();
      const s = smallSettings({ hash_algorithm: algorithm });
      const verdict = await h.pow.verifySolution(await solvedSubmission(h, s), s);
      expect(verdict).toMatchObject({ ok: true });
      expect(h.pow.hashVerifications).toBe(1);
      expect(h.metrics.value('realmgate_pow_hash_verifications_total')).toBe(1);
    }
  });

  // Each case: a submission rejected before step 5, the reason, and proof that no hash was computed.
  const early: [string, (h: ReturnType<typeof harness>, good: Submission) => Promise<Submission> | Submission][] = [
    ['honeypot', (_h, good) => ({ ...good, honeypot: 'http://spam.example' })],
    ['missing', (_h, good) => ({ ...good, challenge: undefined })],
    ['missing', (_h, good) => ({ ...good, challenge: '' })],
    ['malformed', (_h, good) => ({ ...good, challenge: 'not-a-challenge' })],
    ['malformed', (_h, good) => ({ ...good, challenge: `${good.challenge}.extra` })],
    [
      'bad_signature',
      (_h, good) => {
        const tampered = { ...decodeChallenge(good.challenge!), d: 0 };
        const payload = Buffer.from(JSON.stringify(tampered)).toString('base64url');
        return { ...good, challenge: `${payload}.${good.challenge!.split('.')[1]}` };
      },
    ],
    [
      'bad_signature',
      (_h, good) => ({ ...good, challenge: encodeChallenge(decodeChallenge(good.challenge!), Buffer.alloc(32, 7)) }),
    ],
    ['wrong_realm', (_h, good) => ({ ...good, realm: 'other' })],
    ['wrong_flow', (_h, good) => ({ ...good, flow: 'registration' })],
    [
      'expired',
      (h, good) => {
        h.clock.now += settings.challenge_ttl_seconds * 1000;
        return good;
      },
    ],
    [
      'too_fast',
      (h, good) => {
        h.clock.now = decodeChallenge(good.challenge!).iat + settings.min_solve_time_ms - 1;
        return good;
      },
    ],
    [
      'replayed',
      async (h, good) => {
        expect(await h.pow.verifySolution(good, settings)).toMatchObject({ ok: true });
        return good;
      },
    ],
  ];

  for (const [reason, mutate] of early) {
    it(`rejects ${reason} without computing a hash`, async () => {
      const h = harness();
      const submission = await mutate(h, await solvedSubmission(h));
      const before = h.pow.hashVerifications;
      const verdict = await h.pow.verifySolution(submission, settings);
      expect(verdict).toEqual({ ok: false, reason });
      expect(h.pow.hashVerifications).toBe(before);
      expect(h.metrics.value('realmgate_pow_hash_verifications_total')).toBe(before);
      expect(h.metrics.value('realmgate_pow_rejections_total', { reason })).toBe(1);
    });
  }

  it('accepts a submission exactly at the minimum solve time and exactly at the TTL', async () => {
    for (const age of [settings.min_solve_time_ms, settings.challenge_ttl_seconds * 1000]) {
      const h = harness();
      const good = await solvedSubmission(h);
      h.clock.now = decodeChallenge(good.challenge!).iat + age;
      expect(await h.pow.verifySolution(good, settings)).toMatchObject({ ok: true });
    }
  });

  it('rejects a wrong nonce after exactly one hash', async () => {
    const h = harness();
    const good = await solvedSubmission(h);
    const challenge = decodeChallenge(good.challenge!);
    // A nonce that misses the difficulty, found from the client's side.
    let bad = 0;
    while (leadingZeroBits(await solutionHash(challenge, String(bad))) >= challenge.d) bad++;
    const verdict = await h.pow.verifySolution({ ...good, nonce: String(bad) }, settings);
    expect(verdict).toEqual({ ok: false, reason: 'wrong_nonce' });
    expect(h.pow.hashVerifications).toBe(1);
    expect(h.metrics.value('realmgate_pow_rejections_total', { reason: 'wrong_nonce' })).toBe(1);
  });

  it('rejects a missing or non-decimal nonce without hashing', async () => {
    const cases: [string | undefined, string][] = [
      [undefined, 'missing_nonce'],
      ['', 'missing_nonce'],
      ['12a', 'wrong_nonce'],
      ['-1', 'wrong_nonce'],
      ['1'.repeat(17), 'wrong_nonce'],
    ];
    for (const [nonce, reason] of cases) {
      const h = harness();
      const good = await solvedSubmission(h);
      expect(await h.pow.verifySolution({ ...good, nonce }, settings)).toEqual({ ok: false, reason });
      expect(h.pow.hashVerifications).toBe(0);
    }
  });

  it('lets exactly one of two concurrent submissions of one solution through', async () => {
    const h = harness();
    const good = await solvedSubmission(h);
    const verdicts = await Promise.all([h.pow.verifySolution(good, settings), h.pow.verifySolution(good, settings)]);
    expect(verdicts.filter((v) => v.ok)).toHaveLength(1);
    expect(verdicts.filter((v) => !v.ok)).toEqual([{ ok: false, reason: 'replayed' }]);
    expect(h.pow.hashVerifications).toBe(1);
  });

  it('honours the difficulty signed into the challenge, not the current one', async () => {
    const h = harness();
    const good = await solvedSubmission(h, smallSettings({ argon2_base_difficulty: '0' }));
    expect(decodeChallenge(good.challenge!).d).toBe(0);
    // The operator raises the difficulty meanwhile: the issued challenge stays valid as issued.
    const verdict = await h.pow.verifySolution(good, smallSettings({ argon2_base_difficulty: '4' }));
    expect(verdict).toMatchObject({ ok: true });
  });

  it('answers 503 with Retry-After beyond the pool queue, leaving the challenge usable', async () => {
    const h = harness({ pool: new VerificationPool({ concurrency: 1, queueLimit: 0 }) });
    const first = await solvedSubmission(h);
    const second = await solvedSubmission(h);
    const running = h.pow.verifySolution(first, settings);
    const refused = await h.pow.verifySolution(second, settings);
    expect(refused).toMatchObject({ ok: false, reason: 'overloaded', status: 503 });
    expect(refused.ok === false && refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(await running).toMatchObject({ ok: true });
    expect(h.pow.hashVerifications).toBe(1);
    // Not spent: the retry after the pause goes through.
    expect(await h.pow.verifySolution(second, settings)).toMatchObject({ ok: true });
  });

  it('raises the difficulty of new challenges with submissions, not with page loads', async () => {
    const h = harness();
    const s = smallSettings({ argon2_base_difficulty: '1', argon2_max_difficulty: '3', argon2_rate_threshold: '2' });
    const difficulty = async () => decodeChallenge(await h.pow.issueChallenge(who, s)).d;
    for (let i = 0; i < 10; i++) expect(await difficulty()).toBe(1);
    const junk = { ...who, challenge: 'x' };
    const seen: number[] = [];
    for (let i = 0; i < 7; i++) {
      await h.pow.verifySolution(junk, s);
      seen.push(await difficulty());
    }
    // attempts 1..7 with threshold 2: base until 2, then +ceil((a-2)/2), capped at 3.
    expect(seen).toEqual([1, 1, 2, 2, 3, 3, 3]);
    // Another realm or IP is not affected; the window slides.
    expect(decodeChallenge(await h.pow.issueChallenge({ ...who, ip: '192.0.2.2' }, s)).d).toBe(1);
    expect(decodeChallenge(await h.pow.issueChallenge({ ...who, realm: 'other' }, s)).d).toBe(1);
    h.clock.now += 60_001;
    expect(await difficulty()).toBe(1);
  });

  it('fails open, logged and counted, when the store is down', async () => {
    const h = harness();
    const good = await solvedSubmission(h);
    const broken = new Error('connection refused');
    h.store.setIfAbsent = () => Promise.reject(broken);
    h.store.recordHit = () => Promise.reject(broken);
    expect(await h.pow.verifySolution(good, settings)).toMatchObject({ ok: true });
    expect(h.metrics.value('realmgate_pow_store_errors_total', { op: 'spend' })).toBe(1);
    expect(h.metrics.value('realmgate_pow_store_errors_total', { op: 'record_hit' })).toBe(1);
  });
});
