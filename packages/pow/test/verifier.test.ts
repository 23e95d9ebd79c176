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
import { rateKey } from '../src/index.js';

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

  it('keeps serving when the store is down, counted, and refuses a replay to the same process', async () => {
    const h = harness();
    const good = await solvedSubmission(h);
    const broken = new Error('connection refused');
    h.store.setIfAbsent = () => Promise.reject(broken);
    h.store.recordHit = () => Promise.reject(broken);
    expect(await h.pow.verifySolution(good, settings)).toMatchObject({ ok: true });
    expect(h.metrics.value('realmgate_pow_store_errors_total', { op: 'spend' })).toBe(1);
    expect(h.metrics.value('realmgate_pow_store_errors_total', { op: 'record_hit' })).toBe(1);
    // The same solution again while the store is still down: this process remembers it.
    expect(await h.pow.verifySolution(good, settings)).toMatchObject({ ok: false, reason: 'replayed' });
    expect(h.metrics.value('realmgate_pow_store_errors_total', { op: 'spend' })).toBe(2);
  });

  it('logs a store outage once, not once a request, and says when spends are recorded again', async () => {
    const lines: { level: string; message: string }[] = [];
    const logger = { debug() {}, info: (message: string) => lines.push({ level: 'info', message }), warn: (message: string) => lines.push({ level: 'warn', message }), error: (message: string) => lines.push({ level: 'error', message }) };
    const h = harness({ logger });
    const working = h.store.setIfAbsent.bind(h.store);
    h.store.setIfAbsent = () => Promise.reject(new Error('connection refused'));
    for (let i = 0; i < 5; i++) await h.pow.verifySolution(await solvedSubmission(h), settings);
    expect(lines.map((l) => l.level)).toEqual(['warn']);
    h.store.setIfAbsent = working;
    expect(await h.pow.verifySolution(await solvedSubmission(h), settings)).toMatchObject({ ok: true });
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
  });
});

// Issue 11: a challenge is checked against the difficulty in force when it is posted, not when it was issued.
describe('stale challenges', () => {
  // base 2, max 4, threshold 3 (SMALL): up to 3 attempts d = 2, 4-6 → 3, 7-9 → 4.
  const junk = { ...who, challenge: 'x' };
  const submitJunk = async (h: ReturnType<typeof harness>, times: number) => {
    for (let i = 0; i < times; i++) expect(await h.pow.verifySolution(junk, settings)).toMatchObject({ ok: false });
  };

  it('refuses an easy challenge fetched while the rate was low, without a hash and without spending it', async () => {
    const h = harness();
    // The attacker loads the page while its rate is low (page loads do not count)...
    const easy = await h.pow.issueChallenge(who, settings);
    expect(decodeChallenge(easy).d).toBe(2);
    const { nonce } = await solve(easy);
    // ... then floods the form: its rate rises.
    await submitJunk(h, 4);
    h.clock.now += settings.min_solve_time_ms + 100;
    const verdict = await h.pow.verifySolution({ ...who, challenge: easy, nonce, honeypot: '' }, settings);
    expect(verdict).toEqual({ ok: false, reason: 'stale_difficulty' });
    expect(h.pow.hashVerifications).toBe(0);
    expect(h.metrics.value('realmgate_pow_rejections_total', { reason: 'stale_difficulty' })).toBe(1);
    // Checked before the spent-set: nothing was written for it.
    expect(await h.store.get(`spent:${decodeChallenge(easy).id}`)).toBeNull();
    // The page shown next carries the difficulty in force, and solving that one passes.
    const fresh = await h.pow.issueChallenge(who, settings);
    expect(decodeChallenge(fresh).d).toBe(3);
    const answer = await solve(fresh);
    h.clock.now += settings.min_solve_time_ms + 100;
    expect(await h.pow.verifySolution({ ...who, challenge: fresh, nonce: answer.nonce, honeypot: '' }, settings)).toMatchObject({
      ok: true,
    });
    expect(h.pow.hashVerifications).toBe(1);
  });

  it("does not count the submission itself: a page loaded at the threshold is not stale on its own post", async () => {
    for (const [before, expected] of [
      [3, true],
      [4, false],
    ] as const) {
      const h = harness();
      await submitJunk(h, before === 3 ? 3 : 0);
      const challenge = await h.pow.issueChallenge(who, settings);
      expect(decodeChallenge(challenge).d).toBe(2);
      const { nonce } = await solve(challenge);
      if (before === 4) await submitJunk(h, 4);
      h.clock.now += settings.min_solve_time_ms + 100;
      const verdict = await h.pow.verifySolution({ ...who, challenge, nonce, honeypot: '' }, settings);
      expect(verdict.ok, `${before} attempts before`).toBe(expected);
    }
  });

  it('lets at most a threshold of harvested easy challenges through when they are posted all at once', async () => {
    const h = harness();
    // Harvest ten base-difficulty challenges while idle, solve them all offline, then post them in parallel.
    const harvested = await Promise.all([...Array(10)].map(() => h.pow.issueChallenge(who, settings)));
    const posts = await Promise.all(
      harvested.map(async (challenge) => ({ ...who, challenge, nonce: (await solve(challenge)).nonce, honeypot: '' })),
    );
    h.clock.now += settings.min_solve_time_ms + 100;
    const verdicts = await Promise.all(posts.map((post) => h.pow.verifySolution(post, settings)));
    const accepted = verdicts.filter((v) => v.ok).length;
    // Attempts before each post: 0..9; only those at or below the threshold (3) still get the base difficulty.
    expect(accepted).toBe(settings.argon2_rate_threshold + 1);
    expect(verdicts.filter((v) => !v.ok)).toEqual(
      Array(10 - accepted).fill({ ok: false, reason: 'stale_difficulty' }),
    );
    expect(h.pow.hashVerifications).toBe(accepted);
    expect(await h.store.countHits(rateKey(who.realm, who.ip), 60_000)).toBe(10);
  });

  it('refuses a challenge issued before the operator raised the difficulty, and accepts a harder one', async () => {
    const h = harness();
    const easy = await solvedSubmission(h, smallSettings({ argon2_base_difficulty: '0' }));
    expect(decodeChallenge(easy.challenge!).d).toBe(0);
    expect(await h.pow.verifySolution(easy, smallSettings({ argon2_base_difficulty: '4' }))).toEqual({
      ok: false,
      reason: 'stale_difficulty',
    });
    // Harder than required (the rate fell, or the difficulty was lowered): still good.
    const hard = await solvedSubmission(h, smallSettings({ argon2_base_difficulty: '4' }));
    expect(await h.pow.verifySolution(hard, smallSettings({ argon2_base_difficulty: '0' }))).toMatchObject({ ok: true });
    expect(h.pow.hashVerifications).toBe(1);
  });

  it('accepts a raised challenge after the rate fell back', async () => {
    const h = harness();
    const s = smallSettings({ challenge_ttl_seconds: '120' });
    await submitJunk(h, 9);
    const hard = await solvedSubmission(h, s);
    expect(decodeChallenge(hard.challenge!).d).toBe(4);
    h.clock.now += 60_001;
    expect(await h.pow.verifySolution(hard, s)).toMatchObject({ ok: true });
  });

  it('refuses, before hashing, a challenge whose algorithm or Argon2id parameters are no longer the flow’s', async () => {
    const cases: [string, Record<string, string>, Record<string, string>][] = [
      // A cheap SHA-256 challenge against a flow now on Argon2id: its 8 bits would beat Argon2id's 2.
      ['sha256 → argon2', { hash_algorithm: 'sha256' }, {}],
      ['argon2 → sha256', {}, { hash_algorithm: 'sha256', sha256_base_difficulty: '0' }],
      ['memory raised', {}, { argon2_memory_kb: '2048' }],
      ['iterations raised', {}, { argon2_iterations: '2' }],
      // Costlier than the server now allows (the limit was lowered, so the flow's memory was too).
      ['memory lowered', { argon2_memory_kb: '2048' }, {}],
    ];
    for (const [name, issuedWith, checkedWith] of cases) {
      const h = harness();
      const submission = await solvedSubmission(h, smallSettings(issuedWith));
      const verdict = await h.pow.verifySolution(submission, smallSettings(checkedWith));
      expect(verdict, name).toEqual({ ok: false, reason: 'stale_parameters' });
      expect(h.pow.hashVerifications, name).toBe(0);
    }
  });

  it('is a cheap check: a stale post is refused as such even when the pool is full', async () => {
    const pool = new VerificationPool({ concurrency: 1, queueLimit: 0 });
    const h = harness({ pool });
    const easy = await h.pow.issueChallenge(who, settings);
    const { nonce } = await solve(easy);
    const busy = await solvedSubmission(h);
    await submitJunk(h, 4);
    const running = h.pow.verifySolution(busy, smallSettings({ argon2_base_difficulty: '0' }));
    while (pool.size === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(await h.pow.verifySolution({ ...who, challenge: easy, nonce, honeypot: '' }, settings)).toEqual({
      ok: false,
      reason: 'stale_difficulty',
    });
    await running;
  });
});
