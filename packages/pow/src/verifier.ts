import { availableParallelism } from 'node:os';
import type { Counter, Gauge, Logger, Metrics, ProtectedForm, SharedStore } from '@realmgate/spi';
import { encodeChallenge, newChallengeId, verifyChallenge } from './challenge.js';
import type { Challenge } from './challenge.js';
import { currentAttempts, difficultyFor, difficultyRange, recordAttempt } from './difficulty.js';
import { leadingZeroBits, solutionHash } from './hash.js';
import { LocalSpentSet } from './local-spent-set.js';
import { VerificationPool } from './pool.js';
import type { Lease } from './pool.js';
import type { PowSettings } from './settings.js';

export type RejectReason =
  | 'honeypot'
  | 'missing'
  | 'malformed'
  | 'bad_signature'
  | 'wrong_realm'
  | 'wrong_flow'
  | 'expired'
  | 'too_fast'
  | 'stale_parameters'
  | 'stale_difficulty'
  | 'overloaded'
  | 'replayed'
  | 'missing_nonce'
  | 'wrong_nonce';

export type Verdict =
  | { ok: true; challenge: Challenge }
  | { ok: false; reason: RejectReason; status?: 503; retryAfterSeconds?: number };

export interface ChallengeRequest {
  /** Realm name. */
  realm: string;
  flow: ProtectedForm;
  /** Client IP, after the server's trusted-proxy rule. */
  ip: string;
}

export interface Submission extends ChallengeRequest {
  /** The `pow_challenge` field. */
  challenge?: string;
  /** The `pow_nonce` field. */
  nonce?: string;
  /** The `website` honeypot field. */
  honeypot?: string;
}

export interface ProofOfWorkOptions {
  store: SharedStore;
  /** HMAC key, see `loadKey`. */
  key: Uint8Array;
  /** Defaults to one slot per CPU and a queue of 64. */
  pool?: VerificationPool;
  metrics?: Metrics;
  logger?: Logger;
  /** Clock in epoch ms; by default Date.now, read at each call so that a test's fake Date moves it. */
  now?: () => number;
}

/** Decimal, and short enough that the hash input stays small whatever a client sends. */
const NONCE = /^[0-9]{1,16}$/;

const spentKey = (id: string): string => `spent:${id}`;
/** Spends one process keeps while the store is down: about 10 MB at most, far above a node's rate of solved forms. */
const LOCAL_SPENT_LIMIT = 100_000;

const noop = { inc() {}, set() {}, dec() {} } satisfies Counter & Gauge;

/** Issues challenges and verifies solutions: the server side of SPEC 6, usable without the host. */
export class ProofOfWork {
  private readonly store: SharedStore;
  private readonly key: Uint8Array;
  private readonly pool: VerificationPool;
  private readonly logger: Logger | undefined;
  private readonly now: () => number;
  private readonly issued: Counter;
  private readonly hashed: Counter;
  private readonly rejected: Counter;
  private readonly storeErrors: Counter;
  private readonly queue: Gauge;
  private readonly locallySpent: LocalSpentSet;
  /** Whether the last spend the store was asked for failed: the outage is logged once, at its start and end. */
  private storeDown = false;
  private hashes = 0;

  constructor(options: ProofOfWorkOptions) {
    this.store = options.store;
    this.key = options.key;
    this.pool = options.pool ?? new VerificationPool({ concurrency: availableParallelism(), queueLimit: 64 });
    this.logger = options.logger;
    this.now = options.now ?? (() => Date.now());
    this.locallySpent = new LocalSpentSet(LOCAL_SPENT_LIMIT, this.now);
    const m = options.metrics;
    this.issued =
      m?.counter('realmgate_pow_challenges_issued_total', 'Proof-of-work challenges issued', ['alg']) ?? noop;
    this.hashed =
      m?.counter('realmgate_pow_hash_verifications_total', 'Solution hashes computed by the server') ?? noop;
    this.rejected =
      m?.counter('realmgate_pow_rejections_total', 'Proof-of-work submissions rejected, by reason', ['reason']) ?? noop;
    this.storeErrors =
      m?.counter('realmgate_pow_store_errors_total', 'Shared-store failures, by operation', ['op']) ?? noop;
    this.queue = m?.gauge('realmgate_pow_verify_pool_leases', 'Argon2id verifications running or queued') ?? noop;
  }

  /** Solution hashes this instance has computed. */
  get hashVerifications(): number {
    return this.hashes;
  }

  /** A signed challenge whose difficulty follows the client's current rate (page loads do not count). */
  async issueChallenge(request: ChallengeRequest, settings: PowSettings): Promise<string> {
    const { base, max, threshold } = difficultyRange(settings);
    let attempts = 0;
    try {
      attempts = await currentAttempts(this.store, request.realm, request.ip);
    } catch (error) {
      this.storeFailed('count_hits', error);
    }
    const argon2 = settings.hash_algorithm === 'argon2';
    const challenge: Challenge = {
      v: 1,
      id: newChallengeId(),
      realm: request.realm,
      flow: request.flow,
      alg: argon2 ? 'argon2id' : 'sha256',
      d: difficultyFor(attempts, base, max, threshold),
      m: argon2 ? settings.argon2_memory_kb : 0,
      t: argon2 ? settings.argon2_iterations : 0,
      p: 1,
      iat: this.now(),
    };
    this.issued.inc({ alg: challenge.alg });
    return encodeChallenge(challenge, this.key);
  }

  /**
   * SPEC 6's checks, cheapest first; only the last computes a hash. The submission also counts towards the
   * client's rate, whatever the outcome. `settings` are the flow's settings now, which may differ from those
   * the challenge was issued under: a challenge easier than what is in force now is refused as stale.
   */
  async verifySolution(submission: Submission, settings: PowSettings): Promise<Verdict> {
    // Started at once and awaited only by the difficulty check, so it costs no extra round trip.
    const recorded = recordAttempt(this.store, submission.realm, submission.ip).catch((error: unknown) => {
      this.storeFailed('record_hit', error);
      return null;
    });
    try {
      const verdict = await this.check(submission, settings, recorded);
      if (!verdict.ok) this.rejected.inc({ reason: verdict.reason });
      return verdict;
    } finally {
      await recorded;
    }
  }

  private async check(
    submission: Submission,
    settings: PowSettings,
    recorded: Promise<number | null>,
  ): Promise<Verdict> {
    // 1. Honeypot: a person never sees the field.
    if (submission.honeypot) return { ok: false, reason: 'honeypot' };

    // 2. Signed, for this realm and form, not expired.
    if (!submission.challenge) return { ok: false, reason: 'missing' };
    const parsed = verifyChallenge(submission.challenge, this.key);
    if (!parsed.ok) return { ok: false, reason: parsed.reason };
    const challenge = parsed.challenge;
    if (challenge.realm !== submission.realm) return { ok: false, reason: 'wrong_realm' };
    if (challenge.flow !== submission.flow) return { ok: false, reason: 'wrong_flow' };
    const ttlMs = settings.challenge_ttl_seconds * 1000;
    const age = this.now() - challenge.iat;
    if (age > ttlMs) return { ok: false, reason: 'expired' };

    // 3. Faster than a browser can have solved it: solved offline.
    if (age < settings.min_solve_time_ms) return { ok: false, reason: 'too_fast' };

    // 3b. Still what the server would ask for now (issue 11). The parameters are the flow's current ones:
    // an easier challenge from before a settings change, or one costlier than the server's limits now
    // allow, is not hashed.
    const argon2 = settings.hash_algorithm === 'argon2';
    if (
      challenge.alg !== (argon2 ? 'argon2id' : 'sha256') ||
      (argon2 && (challenge.m !== settings.argon2_memory_kb || challenge.t !== settings.argon2_iterations))
    )
      return { ok: false, reason: 'stale_parameters' };
    // The difficulty a challenge issued just before this submission would carry: the rate may have risen
    // since the page was loaded. `recordHit` counts this submission too, hence the - 1. Unknown when the
    // store failed: fail open, as everywhere else.
    const attempts = await recorded;
    if (attempts !== null) {
      const { base, max, threshold } = difficultyRange(settings);
      if (challenge.d < difficultyFor(Math.max(0, attempts - 1), base, max, threshold))
        return { ok: false, reason: 'stale_difficulty' };
    }

    // A place in the pool before the challenge is spent, so a 503 leaves it usable for the retry.
    let lease: Lease | null = null;
    if (challenge.alg === 'argon2id') {
      lease = this.pool.reserve();
      if (!lease)
        return { ok: false, reason: 'overloaded', status: 503, retryAfterSeconds: this.pool.retryAfterSeconds() };
      this.queue.set(undefined, this.pool.size);
    }
    try {
      // 4. Spent before hashing, so that concurrent replays lose the race here rather than after the hash.
      if (!(await this.markSpent(challenge.id, ttlMs))) return { ok: false, reason: 'replayed' };

      // 5. One hash.
      if (!submission.nonce) return { ok: false, reason: 'missing_nonce' };
      if (!NONCE.test(submission.nonce)) return { ok: false, reason: 'wrong_nonce' };
      const nonce = submission.nonce;
      this.hashes++;
      this.hashed.inc();
      const hash = await (lease ? lease.run(() => solutionHash(challenge, nonce)) : solutionHash(challenge, nonce));
      return leadingZeroBits(hash) >= challenge.d ? { ok: true, challenge } : { ok: false, reason: 'wrong_nonce' };
    } finally {
      if (lease) {
        lease.release();
        this.queue.set(undefined, this.pool.size);
      }
    }
  }

  /**
   * SPEC 7: a store outage must not fail the user's request, so while the store cannot record a spend, this
   * process's own spent-set does (a replay to the same process is still refused), rather than locking every
   * user out with a 503 (README, "Store failures").
   */
  private async markSpent(id: string, ttlMs: number): Promise<boolean> {
    try {
      const fresh = await this.store.setIfAbsent(spentKey(id), '1', ttlMs);
      if (this.storeDown) {
        this.storeDown = false;
        this.logger?.info('proof-of-work shared store records spends again');
      }
      return fresh;
    } catch (error) {
      this.storeFailed('spend', error);
      return this.locallySpent.spend(id, ttlMs);
    }
  }

  /** Counted every time; logged once an outage (until a spend is recorded again), not once a request. */
  private storeFailed(op: string, error: unknown): void {
    this.storeErrors.inc({ op });
    if (this.storeDown) return;
    this.storeDown = true;
    this.logger?.warn('proof-of-work shared store failed: challenges are marked spent on this process only until it answers', { op, error: String(error) });
  }
}
