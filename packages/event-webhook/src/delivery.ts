/**
 * Webhook delivery engine: a bounded in-memory queue drained by a bounded number of concurrent HTTP
 * attempts, with retries on a fixed backoff list. Independent of the server: usable as a library.
 */
import { STATUS_CODES } from 'node:http';
import { Agent, buildConnector, request } from 'undici';
import type { OutboundGuard } from '@realmgate/spi';
import { isTargetRefusal } from './target-refusal.js';

export interface WebhookDelivery {
  /** Names the delivery in logs; the provider uses the Standard Webhooks `webhook-id` here. */
  id?: string;
  url: string;
  headers: Readonly<Record<string, string>>;
  body: string;
  /** Headers computed afresh for every attempt (a signature over that attempt's timestamp). */
  attemptHeaders?: () => Record<string, string>;
  /** For log lines only. */
  eventType: string;
  /** For log lines only. */
  userName?: string | null;
}

export type DeliveryOutcome = 'success' | 'failed' | 'refused' | 'dropped_queue_full' | 'dropped_shutdown';

/** The subset of a logger the engine needs; the SPI `Logger` and `console` both fit. */
export interface DeliveryLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Hooks for counters and gauges; the provider maps them onto Prometheus metrics. */
export interface DeliveryMetrics {
  /** One per delivery, when its fate is known. `seconds` (enqueue to outcome) only for success and failed. */
  outcome(outcome: DeliveryOutcome, seconds?: number): void;
  /** One per HTTP attempt. */
  attempt(): void;
  /** Deliveries waiting: queued plus waiting for a retry (not the ones being sent). */
  queueDepth(depth: number): void;
}

export interface TransportRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
}

/**
 * Sends one POST and resolves with the status once the response has been read, with the start of the
 * response body when the transport keeps it (the outbox's delivery log shows it).
 */
export interface Transport {
  send(request: TransportRequest): Promise<{ status: number; excerpt?: string }>;
  close?(): Promise<void>;
}

export interface DispatcherSettings {
  maxAttempts: number;
  /** Wait before attempt k+1 is entry k-1; the last entry repeats. */
  backoffMs: readonly number[];
  concurrency: number;
  queueSize: number;
  connectTimeoutMs: number;
  /** Whole attempt, from sending to the end of the response body. */
  responseTimeoutMs: number;
}

export interface DispatcherOptions extends Partial<DispatcherSettings> {
  logger?: DeliveryLogger;
  metrics?: DeliveryMetrics;
  /** Defaults to undici with the connect and response timeouts (and `guard`, when given). */
  transport?: Transport;
  /** Checks the address of every new connection of the default transport; without it, any address is used. */
  guard?: OutboundGuard;
}

export const DEFAULT_SETTINGS: Readonly<DispatcherSettings> = Object.freeze({
  maxAttempts: 3,
  backoffMs: Object.freeze([1000, 2000, 3000]),
  concurrency: 8,
  queueSize: 10_000,
  connectTimeoutMs: 5000,
  responseTimeoutMs: 10_000,
});

/** Inclusive integer bounds of each numeric setting; `backoffMs` bounds apply to every entry. */
export const SETTING_LIMITS: Readonly<Record<keyof DispatcherSettings, { min: number; max: number }>> = {
  maxAttempts: { min: 1, max: 100 },
  backoffMs: { min: 0, max: 3_600_000 },
  concurrency: { min: 1, max: 1024 },
  queueSize: { min: 1, max: 10_000_000 },
  connectTimeoutMs: { min: 1, max: 600_000 },
  responseTimeoutMs: { min: 1, max: 600_000 },
};

/** Returns a message naming the problem, or null when `value` is acceptable for `setting`. */
export function settingProblem(setting: keyof DispatcherSettings, value: unknown): string | null {
  const { min, max } = SETTING_LIMITS[setting];
  const inRange = (n: unknown) => Number.isInteger(n) && (n as number) >= min && (n as number) <= max;
  if (setting === 'backoffMs') {
    return Array.isArray(value) && value.length > 0 && value.every(inRange)
      ? null
      : `must be a non-empty list of integers from ${min} to ${max} (milliseconds)`;
  }
  return inRange(value) ? null : `must be an integer from ${min} to ${max}`;
}

/** Always retried: timeouts and overload; every other 4xx (and 1xx, 3xx) is final. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Opens one connection: undici's connector, or a test's. */
export type Connector = buildConnector.connector;

export interface UndiciTransportOptions {
  /** Resolves each new connection's host, refuses what it must, and pins the address connected to. */
  guard?: OutboundGuard;
  /** Replaces undici's connector (called with the pinned address as `hostname`); for tests. */
  connector?: Connector;
}

/**
 * A connector that connects to the address the guard checked, never to a name resolved again later (so DNS
 * rebinding between the check and the connection is not possible). TLS still verifies the URL's host name:
 * it stays the SNI `servername` and the name the certificate must match.
 */
export function guardedConnector(guard: OutboundGuard, connect: Connector): Connector {
  return (options, callback) => {
    guard.pin(options.hostname).then(
      (address) => connect({ ...options, hostname: address }, callback),
      (error: Error) => callback(error, null),
    );
  };
}

/** How much of a response body a delivery log keeps. */
export const EXCERPT_BYTES = 1024;

/** The undici transport: one keep-alive Agent, connect timeout, header and body timeouts. */
export function undiciTransport(
  settings: Pick<DispatcherSettings, 'connectTimeoutMs' | 'responseTimeoutMs'>,
  options: UndiciTransportOptions = {},
): Transport {
  const connector = options.connector ?? buildConnector({ timeout: settings.connectTimeoutMs });
  const agent = new Agent({
    connect: options.guard ? guardedConnector(options.guard, connector) : connector,
    headersTimeout: settings.responseTimeoutMs,
    bodyTimeout: settings.responseTimeoutMs,
  });
  return {
    async send({ url, headers, body, signal }) {
      const response = await request(url, { method: 'POST', headers, body, signal, dispatcher: agent });
      // Reading (a bounded amount of) the body frees the connection for keep-alive; `signal` covers it too.
      // The first EXCERPT_BYTES are kept for the outbox's delivery log; past 64 KiB the connection is dropped.
      const kept: Buffer[] = [];
      let read = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        if (read < EXCERPT_BYTES) kept.push(chunk.subarray(0, EXCERPT_BYTES - read));
        read += chunk.length;
        if (read > 64 * 1024) break;
      }
      return { status: response.statusCode, excerpt: Buffer.concat(kept).toString('utf8') };
    },
    // Every attempt has ended or been aborted by then; nothing is worth waiting for.
    close: () => agent.destroy(),
  };
}

interface Job {
  delivery: WebhookDelivery;
  attempts: number;
  enqueuedAt: number;
  done: boolean;
  controller: AbortController | null;
}

export type AttemptResult =
  | { ok: true; status: number; excerpt?: string }
  | { ok: false; retryable: boolean; reason: string; status?: number; excerpt?: string; refused?: { reason: string } };

/**
 * One HTTP attempt of a delivery, bounded by `responseTimeoutMs` with a timer of its own (fake-timer friendly,
 * and not trusting the transport to honour the signal); `controller` aborts it from outside (shutdown).
 */
export function attemptDelivery(
  transport: Transport,
  delivery: Pick<WebhookDelivery, 'url' | 'headers' | 'body' | 'attemptHeaders'>,
  responseTimeoutMs: number,
  controller: AbortController,
): Promise<AttemptResult> {
  return new Promise<AttemptResult>((resolve) => {
    const settle = (result: AttemptResult) => {
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => {
      const reason = `timeout after ${responseTimeoutMs} ms`;
      controller.abort(new Error(reason));
      settle({ ok: false, retryable: true, reason });
    }, responseTimeoutMs);
    let sent: Promise<{ status: number; excerpt?: string }>;
    try {
      const headers = { ...delivery.headers, ...delivery.attemptHeaders?.() };
      sent = transport.send({ url: delivery.url, headers, body: delivery.body, signal: controller.signal });
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      ({ status, excerpt }) =>
        settle(
          status >= 200 && status < 300
            ? { ok: true, status, excerpt }
            : { ok: false, retryable: isRetryableStatus(status), reason: describeStatus(status), status, excerpt },
        ),
      (error: unknown) =>
        settle(
          isTargetRefusal(error)
            ? { ok: false, retryable: false, reason: error.message, refused: { reason: error.reason } }
            : { ok: false, retryable: true, reason: describeError(error) },
        ),
    );
  });
}

/** FIFO with O(1) push and shift (Array#shift copies). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  takeAll(): T[] {
    const rest = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return rest;
  }
}

/** Logs at most once per interval; drops in between are counted into the next line. */
const DROP_WARNING_INTERVAL_MS = 1000;

export class WebhookDispatcher {
  readonly settings: Readonly<DispatcherSettings>;
  private readonly logger: DeliveryLogger;
  private readonly metrics: DeliveryMetrics | undefined;
  private readonly transport: Transport;
  private readonly queue = new Fifo<Job>();
  private readonly sending = new Set<Job>();
  private readonly retrying = new Map<Job, ReturnType<typeof setTimeout>>();
  private idleWaiters: (() => void)[] = [];
  private pumpScheduled = false;
  private closing = false;
  private closed: Promise<number> | null = null;
  private lastDropWarningAt = Number.NEGATIVE_INFINITY;
  private unreportedDrops = 0;

  constructor(options: DispatcherOptions = {}) {
    const settings: DispatcherSettings = {
      maxAttempts: options.maxAttempts ?? DEFAULT_SETTINGS.maxAttempts,
      backoffMs: options.backoffMs ?? DEFAULT_SETTINGS.backoffMs,
      concurrency: options.concurrency ?? DEFAULT_SETTINGS.concurrency,
      queueSize: options.queueSize ?? DEFAULT_SETTINGS.queueSize,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_SETTINGS.connectTimeoutMs,
      responseTimeoutMs: options.responseTimeoutMs ?? DEFAULT_SETTINGS.responseTimeoutMs,
    };
    for (const key of Object.keys(settings) as (keyof DispatcherSettings)[]) {
      const problem = settingProblem(key, settings[key]);
      if (problem) throw new RangeError(`webhook dispatcher option ${key} ${problem}, got ${JSON.stringify(settings[key])}`);
    }
    this.settings = Object.freeze({ ...settings, backoffMs: Object.freeze([...settings.backoffMs]) });
    this.logger = options.logger ?? console;
    this.metrics = options.metrics;
    this.transport = options.transport ?? undiciTransport(settings, { guard: options.guard });
  }

  /** Deliveries held: queued or waiting for a retry. Bounded by `queueSize`. */
  get queueDepth(): number {
    return this.queue.length + this.retrying.size;
  }

  /** Attempts under way. Bounded by `concurrency`. */
  get inFlight(): number {
    return this.sending.size;
  }

  /**
   * Accepts a delivery without doing any I/O; false when it was dropped (queue full or closing).
   * Sending starts from a microtask, so the caller's synchronous path stays O(1).
   */
  enqueue(delivery: WebhookDelivery): boolean {
    if (this.closing) {
      this.drop(delivery, 'dropped_shutdown', 'the webhook dispatcher is shutting down');
      return false;
    }
    if (this.queueDepth >= this.settings.queueSize) {
      this.drop(delivery, 'dropped_queue_full', `the webhook queue is full (${this.settings.queueSize})`);
      return false;
    }
    this.queue.push({ delivery, attempts: 0, enqueuedAt: performance.now(), done: false, controller: null });
    this.metrics?.queueDepth(this.queueDepth);
    this.schedulePump();
    return true;
  }

  /** Resolves once nothing is queued, waiting for a retry or being sent. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops accepting, lets queued deliveries and retries run for up to `graceMs`, then aborts what is
   * left. Resolves with the number of deliveries dropped that way (also logged and counted).
   */
  close(graceMs = 5000): Promise<number> {
    this.closed ??= this.shutDown(graceMs);
    return this.closed;
  }

  private async shutDown(graceMs: number): Promise<number> {
    this.closing = true;
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.idle(), new Promise<void>((resolve) => (graceTimer = setTimeout(resolve, graceMs)))]);
    clearTimeout(graceTimer);

    const left = [...this.queue.takeAll(), ...this.retrying.keys(), ...this.sending];
    for (const timer of this.retrying.values()) clearTimeout(timer);
    this.retrying.clear();
    this.sending.clear();
    const byEventType: Record<string, number> = {};
    for (const job of left) {
      job.done = true;
      job.controller?.abort(new Error('webhook dispatcher closed'));
      byEventType[job.delivery.eventType] = (byEventType[job.delivery.eventType] ?? 0) + 1;
      this.metrics?.outcome('dropped_shutdown');
    }
    this.metrics?.queueDepth(0);
    this.settleIdle();
    await this.transport.close?.();

    if (left.length > 0) {
      this.logger.warn(`webhook dispatcher closed after ${graceMs} ms grace: ${left.length} deliveries dropped`, {
        dropped: left.length,
        byEventType,
      });
    } else {
      this.logger.info('webhook dispatcher closed: no deliveries dropped', { dropped: 0 });
    }
    return left.length;
  }

  private drop(delivery: WebhookDelivery, outcome: DeliveryOutcome, why: string): void {
    this.metrics?.outcome(outcome);
    this.unreportedDrops++;
    const now = Date.now();
    if (now - this.lastDropWarningAt < DROP_WARNING_INTERVAL_MS) return;
    const others = this.unreportedDrops - 1;
    this.logger.warn(
      `webhook delivery dropped, ${why}: event ${delivery.eventType} for user ${delivery.userName ?? '-'}` +
        (others > 0 ? ` (and ${others} more dropped since the last warning)` : ''),
      { ...this.logFields(delivery), outcome, droppedSinceLastWarning: this.unreportedDrops },
    );
    this.lastDropWarningAt = now;
    this.unreportedDrops = 0;
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.sending.size < this.settings.concurrency) {
      const job = this.queue.shift();
      if (!job) break;
      this.sending.add(job);
      void this.run(job);
    }
    this.metrics?.queueDepth(this.queueDepth);
  }

  private async run(job: Job): Promise<void> {
    job.attempts++;
    this.metrics?.attempt();
    const result = await this.attempt(job);
    if (job.done) return; // dropped by close() while the attempt was under way
    this.sending.delete(job);

    const { maxAttempts } = this.settings;
    const { delivery } = job;
    if (result.ok) {
      this.finish(job, 'success');
    } else if (result.refused) {
      // No connection was opened; the same target would be refused again, so there is no retry.
      this.logger.warn(
        `webhook delivery refused, not retried (${result.reason}): event ${delivery.eventType} for user ${delivery.userName ?? '-'}`,
        { ...this.logFields(delivery), reason: result.refused.reason },
      );
      this.finish(job, 'refused');
    } else {
      this.logger.warn(`webhook delivery failed, attempt ${job.attempts}/${maxAttempts}: ${result.reason}`, {
        ...this.logFields(delivery),
        attempt: job.attempts,
        maxAttempts,
      });
      const who = `event ${delivery.eventType} for user ${delivery.userName ?? '-'}`;
      if (!result.retryable) {
        this.logger.warn(`webhook delivery dropped after attempt ${job.attempts} (not retried: ${result.reason}): ${who}`, {
          ...this.logFields(delivery),
        });
        this.finish(job, 'failed');
      } else if (job.attempts >= maxAttempts) {
        const attempts = `${job.attempts} attempt${job.attempts === 1 ? '' : 's'}`;
        this.logger.warn(`webhook delivery dropped after ${attempts} (max retries exceeded): ${who}`, {
          ...this.logFields(delivery),
        });
        this.finish(job, 'failed');
      } else {
        this.scheduleRetry(job);
      }
    }
    this.pump();
    this.settleIdle();
  }

  private attempt(job: Job): Promise<AttemptResult> {
    const { delivery } = job;
    const controller = new AbortController();
    job.controller = controller;
    return attemptDelivery(this.transport, delivery, this.settings.responseTimeoutMs, controller).finally(() => {
      if (job.controller === controller) job.controller = null;
    });
  }

  private scheduleRetry(job: Job): void {
    const { backoffMs } = this.settings;
    const wait = backoffMs[Math.min(job.attempts, backoffMs.length) - 1];
    // The worker slot is free while waiting: the job re-enters the queue when the timer fires.
    const timer = setTimeout(() => {
      this.retrying.delete(job);
      this.queue.push(job);
      this.pump();
    }, wait);
    this.retrying.set(job, timer);
  }

  private finish(job: Job, outcome: 'success' | 'failed' | 'refused'): void {
    job.done = true;
    if (outcome === 'refused') this.metrics?.outcome(outcome);
    else this.metrics?.outcome(outcome, (performance.now() - job.enqueuedAt) / 1000);
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && this.retrying.size === 0 && this.sending.size === 0;
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Only the origin of the URL: paths and queries often carry tokens (Slack-style hook URLs). */
  private logFields(delivery: WebhookDelivery): Record<string, unknown> {
    return {
      deliveryId: delivery.id,
      eventType: delivery.eventType,
      userName: delivery.userName ?? null,
      target: originOf(delivery.url),
    };
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

function describeStatus(status: number): string {
  const text = STATUS_CODES[status];
  return text ? `${status} ${text}` : `HTTP ${status}`;
}

function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(describeError).join('; ');
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return error.message || (typeof code === 'string' ? code : error.name);
  }
  return String(error);
}
