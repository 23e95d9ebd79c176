/**
 * Outbox mode: deliveries are rows in the server's database (SPI `OutboxStore`), written before the request
 * that caused the event is answered; each server process runs a worker that claims due rows (leased, so a
 * dead node's rows are taken over), sends them with the same transport and target guard as the in-memory
 * engine, and records every attempt. Nothing but the attempts in flight is held in memory.
 */
import type { OutboxItem, OutboxItemInput, OutboxNext, OutboxStore } from '@realmgate/spi';
import { attemptDelivery } from './delivery.js';
import type { AttemptResult, DeliveryLogger, DeliveryOutcome, Transport } from './delivery.js';
import type { WebhookSettings } from './settings.js';

/** What a stored delivery carries besides the host's columns: the realm (for the client lookup) and the body. */
export interface StoredDelivery {
  realm: string;
  body: string;
}

/** The client's webhook as it is now: where and how to send, or why not any more. */
export type CurrentTarget =
  | { url: string; headers: Record<string, string>; attemptHeaders?: () => Record<string, string> }
  | { problem: string; refused?: boolean };

export interface OutboxMetrics {
  outcome(outcome: DeliveryOutcome, seconds?: number): void;
  attempt(): void;
  depth(depth: number, oldestDueSeconds: number): void;
}

export interface OutboxWorkerOptions {
  store: OutboxStore;
  settings: WebhookSettings;
  transport: Transport;
  logger: DeliveryLogger;
  metrics: OutboxMetrics;
  /** The client's current webhook for a stored delivery (looked up per attempt: a changed key or URL applies). */
  target(item: OutboxItem, stored: StoredDelivery): Promise<CurrentTarget>;
  /** A synchronous check of the URL before each attempt (the target guard's no-DNS rules); null when allowed. */
  checkUrl(url: string): string | null;
  random?: () => number;
}

const STATS_INTERVAL_MS = 5000;
/**
 * Items a node holds at most (claimed and not yet recorded), per attempt slot: it claims ahead of its free slots so
 * that one claim and one record serve many deliveries, while memory and what other nodes cannot take stay bounded.
 */
export const CLAIM_AHEAD = 16;
const PURGE_BATCH = 1000;
const DAY_MS = 86_400_000;
const ERROR_LOG_INTERVAL_MS = 10_000;
/** Endpoint holds remembered at most (forgotten all at once when full: a forgotten hold only costs a claim). */
const MAX_HOLDS = 10_000;
/** The waits between tries of an attempt's record that failed: doubled from the first to the last, which repeats. */
const RECORD_RETRY_FIRST_MS = 50;
const RECORD_RETRY_MAX_MS = 500;

/** An endpoint's identity across realms, for the worker's per-endpoint bookkeeping. */
function endpointKey(item: Pick<OutboxItem, 'realmId' | 'endpoint'>): string {
  return `${item.realmId}\u0000${item.endpoint}`;
}

export function encodeStored(stored: StoredDelivery): string {
  return JSON.stringify(stored);
}

export function decodeStored(payload: string): StoredDelivery {
  const parsed = JSON.parse(payload) as Partial<StoredDelivery>;
  return { realm: String(parsed.realm ?? ''), body: String(parsed.body ?? '') };
}

/** The wait before attempt `attempts + 1`: the backoff entry (the last repeating), moved by up to ± jitter %. */
export function retryDelay(settings: Pick<WebhookSettings, 'backoffMs' | 'backoffJitterPercent'>, attempts: number, random = Math.random): number {
  const { backoffMs, backoffJitterPercent } = settings;
  const base = backoffMs[Math.min(attempts, backoffMs.length) - 1];
  const spread = (base * backoffJitterPercent) / 100;
  return Math.max(0, Math.round(base + (random() * 2 - 1) * spread));
}

export class OutboxWorker {
  /** Attempts under way (HTTP), at most `concurrency`. */
  private readonly inFlight = new Map<string, AbortController>();
  /** Claimed items waiting for a slot, in claim order. */
  private ready: OutboxItem[] = [];
  /** Every item this node holds: ready, being sent, or being recorded (at most concurrency × CLAIM_AHEAD). */
  private readonly owned = new Set<string>();
  /** Per endpoint (endpointKey), failed attempts whose record has not come back yet. */
  private readonly failing = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /**
   * Per endpoint (endpointKey), until when its last recorded failure on this node holds it (Infinity: paused): a new
   * delivery to it is not claimable before then, so its write does not wake the worker for a claim that finds nothing.
   * What another node or an administrator changed meanwhile is seen at the next poll.
   */
  private readonly holds = new Map<string, number>();
  /** A wake-up set for when the earliest delivery written but not yet due becomes claimable. */
  private wakeTimer: ReturnType<typeof setTimeout> | null = null;
  private wakeTimerAt = Number.POSITIVE_INFINITY;
  private closing = false;
  private loopDone: Promise<void> | null = null;
  private statsTimer: ReturnType<typeof setInterval> | null = null;
  private purgeTimer: ReturnType<typeof setInterval> | null = null;
  private lastErrorLogAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: OutboxWorkerOptions) {}

  get store(): OutboxStore {
    return this.options.store;
  }

  start(): void {
    this.loopDone = this.loop();
    this.statsTimer = setInterval(() => void this.updateStats(), STATS_INTERVAL_MS);
    this.statsTimer.unref?.();
    const purgeEvery = Math.min(3_600_000, (this.options.settings.retentionDays * DAY_MS) / 24);
    this.purgeTimer = setInterval(() => void this.purge(), purgeEvery);
    this.purgeTimer.unref?.();
    void this.updateStats();
  }

  /**
   * Writes deliveries; resolves once committed. Wakes this node's worker when one of them can be claimed now, else
   * when the earliest can: a delivery behind a user's earlier one waiting for its retry, or to an endpoint held after
   * failures, is not claimable before then, and with a dead receiver a claim per event found nothing and took a
   * database connection from the requests writing the events.
   */
  async enqueue(items: OutboxItemInput[]): Promise<void> {
    if (items.length === 0) return;
    const dueAt = await this.options.store.enqueue(items);
    // Nothing new (a duplicate, or a write tried again after its answer was lost): nothing known, so a claim.
    if (dueAt == null) return this.wake();
    let heldUntil = Number.POSITIVE_INFINITY;
    for (const item of items) heldUntil = Math.min(heldUntil, this.holds.get(endpointKey(item)) ?? 0);
    this.wakeAt(Math.max(dueAt, heldUntil));
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** An administrator resumed the endpoint: its deliveries are claimable now. */
  resumed(realmId: string, endpoint: string): void {
    this.holds.delete(`${realmId}\u0000${endpoint}`);
    this.wake();
  }

  private wakeAt(time: number): void {
    const wait = time - Date.now();
    if (wait <= 0) return this.wake();
    // The poll claims anyway: a time beyond it needs no timer of its own.
    if (wait >= this.options.settings.pollMs || time >= this.wakeTimerAt) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimerAt = time;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.wakeTimerAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, wait);
    this.wakeTimer.unref?.();
  }

  /** Removes delivered and dead deliveries older than the retention; returns how many. */
  async purge(now = Date.now()): Promise<number> {
    const before = now - this.options.settings.retentionDays * DAY_MS;
    let total = 0;
    try {
      for (;;) {
        const removed = await this.options.store.purgeFinishedBefore(before, PURGE_BATCH);
        total += removed;
        if (removed < PURGE_BATCH || this.closing) break;
      }
    } catch (error) {
      this.logError('webhook outbox purge failed', error);
    }
    if (total > 0) this.options.logger.info(`webhook outbox purged ${total} deliveries older than ${this.options.settings.retentionDays} days`, { purged: total });
    return total;
  }

  async updateStats(): Promise<void> {
    try {
      const now = Date.now();
      const stats = await this.options.store.stats(now);
      this.options.metrics.depth(stats.depth, stats.oldestDueAt === null ? 0 : Math.max(0, (now - stats.oldestDueAt) / 1000));
    } catch (error) {
      this.logError('webhook outbox statistics failed', error);
    }
  }

  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, then abandons the rest without
   * touching their rows: their lease runs out and this or another node sends them again (same webhook-id).
   */
  async close(graceMs: number): Promise<number> {
    this.closing = true;
    this.wake();
    if (this.statsTimer) clearInterval(this.statsTimer);
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    // Claimed but not started: back to the outbox at once, for the other nodes.
    await this.giveBack(() => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([this.loopDone, ...this.running]),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    const abandoned = this.inFlight.size;
    for (const controller of this.inFlight.values()) controller.abort(new Error('webhook outbox closed'));
    await this.options.transport.close?.();
    if (abandoned > 0) {
      this.options.logger.warn(
        `webhook outbox closed after ${graceMs} ms grace: ${abandoned} attempts in flight abandoned; they stay in the outbox and are sent again after their lease (${this.options.settings.leaseMs} ms)`,
        { abandoned },
      );
    } else {
      this.options.logger.info('webhook outbox closed: no attempts in flight', { abandoned: 0 });
    }
    return abandoned;
  }

  private async loop(): Promise<void> {
    const { concurrency, leaseMs, pollMs } = this.options.settings;
    const capacity = concurrency * CLAIM_AHEAD;
    // Claims in batches, when the ready items no longer fill the slots and a slot set's worth fits (or the node holds
    // nothing): a claim is two or three statements, and one per few deliveries would double the database work.
    const canClaim = () => this.ready.length < concurrency && (capacity - this.owned.size >= concurrency || this.owned.size === 0);
    while (!this.closing) {
      this.woken = false;
      this.startReady();
      let claimed = 0;
      let room = 0;
      if (canClaim()) {
        room = capacity - this.owned.size;
        try {
          const items = await this.options.store.claimDue(room, leaseMs);
          claimed = items.length;
          // An item this node still holds (its lease ran out meanwhile, or the clock jumped) is not taken twice: the
          // attempt under way records it; the claim has only renewed the lease.
          for (const item of items) {
            if (this.owned.has(item.id)) continue;
            this.owned.add(item.id);
            this.ready.push(item);
          }
        } catch (error) {
          this.logError('webhook outbox claim failed', error);
        }
        if (this.closing) break;
        this.startReady();
      }
      // Claim again at once when the batch was full and there is room; else wait for a slot, a wake-up or the poll.
      if (claimed > 0 && claimed === room && canClaim()) continue;
      if (this.woken && canClaim()) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, pollMs);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wakeUp = done;
      });
      this.wakeUp = null;
    }
  }

  /**
   * Fills the free slots from the ready items, in order, skipping an endpoint with a failed attempt not yet recorded
   * (the record says whether the endpoint is now held or paused: until then it gets no more attempts, so that
   * claiming ahead does not multiply the probes of a dead receiver). An item whose lease has used up half of what
   * it allows beyond an attempt (settings: leaseMs ≥ responseTimeoutMs + 1000) is given back instead of sent.
   */
  private startReady(): void {
    const { concurrency, responseTimeoutMs, leaseMs } = this.options.settings;
    const minimumLease = responseTimeoutMs + (leaseMs - responseTimeoutMs) / 2;
    const stale: OutboxItem[] = [];
    const waiting: OutboxItem[] = [];
    let next = 0;
    for (; next < this.ready.length && this.inFlight.size < concurrency && !this.closing; next++) {
      const item = this.ready[next];
      if (this.failing.has(endpointKey(item))) waiting.push(item);
      else if (item.dueAt - Date.now() < minimumLease) stale.push(item);
      else this.start1(item);
    }
    if (next > 0) this.ready = [...waiting, ...this.ready.slice(next)];
    if (stale.length > 0) void this.release(stale);
  }

  /** Gives back the ready items that match (an endpoint just held or paused; everything on close). */
  private giveBack(matches: (item: OutboxItem) => boolean): Promise<void> {
    const back = this.ready.filter(matches);
    if (back.length === 0) return Promise.resolve();
    this.ready = this.ready.filter((item) => !matches(item));
    return this.release(back);
  }

  private async release(items: OutboxItem[]): Promise<void> {
    try {
      await this.options.store.release(items);
    } catch (error) {
      // Their lease brings them back all the same.
      this.logError('webhook outbox release failed', error);
    }
    for (const item of items) this.owned.delete(item.id);
    this.wake();
  }

  /**
   * The attempt holds a slot; its record does not (the slot goes to the next item while the record waits for the
   * group commit). The item stays this node's until recorded, and its order key's next item is not claimable before.
   */
  private start1(item: OutboxItem): void {
    const controller = new AbortController();
    this.inFlight.set(item.id, controller);
    const job = this.deliver(item, controller, () => {
      this.inFlight.delete(item.id);
      // The freed slot is for a ready item; claiming waits for the record (the wake below), as one claim per
      // attempt and another per record would double the claims of a quiet node.
      if (this.ready.length > 0) this.wake();
    })
      .catch((error: unknown) => this.logError('webhook outbox delivery failed to record', error))
      .finally(() => {
        this.inFlight.delete(item.id);
        this.owned.delete(item.id);
        this.running.delete(job);
        this.wake();
      });
    this.running.add(job);
  }

  private async deliver(item: OutboxItem, controller: AbortController, attempted: () => void): Promise<void> {
    const { settings, logger, metrics } = this.options;
    const stored = decodeStored(item.payload);
    const who = `event ${item.type} for user ${item.label ?? '-'}`;
    const fields = { deliveryId: item.id, eventType: item.type, userName: item.label, clientId: item.endpointLabel };
    const startedAt = Date.now();
    const started = performance.now();

    let result: AttemptResult;
    const target = await this.options.target(item, stored);
    const refusal = 'url' in target ? this.options.checkUrl(target.url) : null;
    if (!('url' in target)) {
      result = { ok: false, retryable: false, reason: target.problem, ...(target.refused ? { refused: { reason: 'scheme' } } : {}) };
    } else if (refusal) {
      result = { ok: false, retryable: false, reason: refusal, refused: { reason: 'rule' } };
    } else {
      metrics.attempt();
      result = await attemptDelivery(this.options.transport, { ...target, body: stored.body }, settings.responseTimeoutMs, controller);
    }
    if (this.closing && controller.signal.aborted) return; // abandoned by close(): the lease brings it back
    const key = endpointKey(item);
    if (!result.ok) this.failing.set(key, (this.failing.get(key) ?? 0) + 1);
    attempted();

    const attempts = item.attempts + 1;
    const next: OutboxNext = result.ok
      ? { state: 'delivered' }
      : result.retryable && attempts < item.maxAttempts
        ? { state: 'pending', dueAt: Date.now() + retryDelay(settings, attempts, this.options.random) }
        : { state: 'dead' };
    const attempt = {
      startedAt,
      durationMs: performance.now() - started,
      status: result.ok ? result.status : (result.status ?? null),
      error: result.ok ? null : result.reason,
      responseExcerpt: result.excerpt ?? null,
    };
    // A receiver that cannot be reached or is overloaded: its other deliveries wait for this one's retry (the
    // store applies it from the second failure in a row), so a dead endpoint costs one probe per retry, not one
    // attempt per queued delivery.
    const holdUntil = !result.ok && result.retryable ? (next.state === 'pending' ? next.dueAt : Date.now() + retryDelay(settings, 1, this.options.random)) : null;
    let recording: Awaited<ReturnType<OutboxStore['finishAttempt']>>;
    try {
      recording = await this.record(item, attempt, next, { pauseAfterFailures: settings.pauseAfterFailures, holdUntil });
    } finally {
      if (!result.ok) {
        const left = this.failing.get(key)! - 1;
        if (left > 0) this.failing.set(key, left);
        else this.failing.delete(key);
      }
    }
    const { recorded, endpoint } = recording;
    if (result.ok) this.holds.delete(key);
    else if (endpoint) {
      if (this.holds.size >= MAX_HOLDS) this.holds.clear();
      this.holds.set(key, endpoint.paused ? Number.POSITIVE_INFINITY : (endpoint.holdUntil ?? 0));
    }
    if (!recorded) {
      logger.warn(`webhook delivery ${item.id}: the lease ran out during the attempt; another node owns it now`, fields);
      return;
    }
    const seconds = (Date.now() - item.createdAt) / 1000;
    if (result.ok) {
      metrics.outcome('success', seconds);
    } else if (result.refused) {
      logger.warn(`webhook delivery refused, not retried (${result.reason}): ${who}`, fields);
      metrics.outcome('refused');
    } else {
      logger.warn(`webhook delivery failed, attempt ${attempts}/${item.maxAttempts}: ${result.reason}`, { ...fields, attempt: attempts, maxAttempts: item.maxAttempts });
      if (next.state === 'dead') {
        const why = result.retryable ? 'max retries exceeded' : `not retried: ${result.reason}`;
        logger.warn(`webhook delivery dead-lettered after ${attempts} attempt${attempts === 1 ? '' : 's'} (${why}): ${who}`, fields);
        metrics.outcome('failed', seconds);
      }
    }
    // Items of a held or paused endpoint claimed ahead are not sent: the hold's single probe stays single.
    if (endpoint && (endpoint.paused || (endpoint.holdUntil !== null && endpoint.holdUntil > Date.now()))) {
      await this.giveBack((other) => endpointKey(other) === key);
    }
    if (endpoint?.paused && endpoint.pausedAt !== null && endpoint.pausedAt >= startedAt) {
      logger.warn(
        `webhook endpoint of client ${item.endpointLabel ?? item.endpoint} paused after ${endpoint.consecutiveFailures} consecutive failed attempts; its deliveries wait until an administrator resumes it`,
        { clientId: item.endpointLabel, consecutiveFailures: endpoint.consecutiveFailures },
      );
    }
  }

  /**
   * Records a finished attempt, trying again while the store cannot take it (the database restarting, its connections
   * terminated): the attempt has happened, and an item left leased to this node would wait out its whole lease, and
   * every later item of its order key behind it, before any node sent it again. Gives up when the lease has run out
   * (another node may own the item now; the record's guard would refuse it anyway) or the worker is closing: then
   * the lease brings the item back, and its receiver may get it twice (same webhook-id), as at-least-once allows.
   */
  private async record(...args: Parameters<OutboxStore['finishAttempt']>): ReturnType<OutboxStore['finishAttempt']> {
    const leaseEnd = args[0].dueAt;
    for (let wait = RECORD_RETRY_FIRST_MS; ; wait = Math.min(wait * 2, RECORD_RETRY_MAX_MS)) {
      try {
        return await this.options.store.finishAttempt(...args);
      } catch (error) {
        if (this.closing || Date.now() + wait >= leaseEnd) throw error;
        this.logError('webhook outbox could not record an attempt; trying again', error);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private logError(message: string, error: unknown): void {
    const now = Date.now();
    if (now - this.lastErrorLogAt < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLogAt = now;
    this.options.logger.warn(message, { error: error instanceof Error ? error.message : String(error) });
  }
}
