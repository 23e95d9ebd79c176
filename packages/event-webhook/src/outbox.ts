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
const PURGE_BATCH = 1000;
const DAY_MS = 86_400_000;
const ERROR_LOG_INTERVAL_MS = 10_000;

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
  private readonly inFlight = new Map<string, AbortController>();
  private readonly running = new Set<Promise<void>>();
  private wakeUp: (() => void) | null = null;
  private woken = false;
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

  /** Writes deliveries; resolves once committed. Wakes this node's worker. */
  async enqueue(items: OutboxItemInput[]): Promise<void> {
    if (items.length === 0) return;
    await this.options.store.enqueue(items);
    this.wake();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
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
    while (!this.closing) {
      this.woken = false;
      const free = concurrency - this.inFlight.size;
      let claimed = 0;
      // Claims in batches (half the slots at least, or whatever is free when idle): a claim is two queries, and
      // one per finished attempt would double the database work of a busy worker.
      if (free > 0 && (free >= Math.ceil(concurrency / 2) || this.inFlight.size === 0)) {
        try {
          const items = await this.options.store.claimDue(free, leaseMs);
          claimed = items.length;
          // An item this node is still sending (its lease ran out meanwhile, or the clock jumped) is not sent twice
          // from here: the attempt under way records it; the claim has only renewed the lease.
          for (const item of items) if (!this.closing && !this.inFlight.has(item.id)) this.start1(item);
        } catch (error) {
          this.logError('webhook outbox claim failed', error);
        }
      }
      if (this.closing) break;
      // Claim again at once when the batch was full and a slot is free; else wait for a slot, a wake-up or the poll.
      const canClaim = () => concurrency - this.inFlight.size >= Math.ceil(concurrency / 2) || this.inFlight.size === 0;
      if (claimed > 0 && claimed === free && canClaim()) continue;
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

  private start1(item: OutboxItem): void {
    const controller = new AbortController();
    this.inFlight.set(item.id, controller);
    const job = this.deliver(item, controller)
      .catch((error: unknown) => this.logError('webhook outbox delivery failed to record', error))
      .finally(() => {
        this.inFlight.delete(item.id);
        this.running.delete(job);
        this.wake();
      });
    this.running.add(job);
  }

  private async deliver(item: OutboxItem, controller: AbortController): Promise<void> {
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
    const { recorded, endpoint } = await this.options.store.finishAttempt(item, attempt, next, { pauseAfterFailures: settings.pauseAfterFailures, holdUntil });
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
    if (endpoint?.paused && endpoint.pausedAt !== null && endpoint.pausedAt >= startedAt) {
      logger.warn(
        `webhook endpoint of client ${item.endpointLabel ?? item.endpoint} paused after ${endpoint.consecutiveFailures} consecutive failed attempts; its deliveries wait until an administrator resumes it`,
        { clientId: item.endpointLabel, consecutiveFailures: endpoint.consecutiveFailures },
      );
    }
  }

  private logError(message: string, error: unknown): void {
    const now = Date.now();
    if (now - this.lastErrorLogAt < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLogAt = now;
    this.options.logger.warn(message, { error: error instanceof Error ? error.message : String(error) });
  }
}
