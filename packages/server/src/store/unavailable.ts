import type { Logger } from '@realmgate/spi';

/**
 * A dependency (the database, the shared store) cannot answer now: its connection is lost, it does not answer in
 * time, or it refuses connections. Not the request's fault and not a bug: the HTTP error mapping (http/errors.ts)
 * answers 503 with `Retry-After`, and nothing logs a stack for it (the dependency logs one line per outage).
 *
 * It lives here, in the lowest layer that throws it, so that storage/ (above) and http/ (above) share one class.
 */
export type Dependency = 'database' | 'shared-store';

export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: Dependency,
    message: string,
    /** What the client is told to wait before it tries again. */
    readonly retryAfterSeconds = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DependencyUnavailableError';
  }
}

/**
 * Up or down, as the last operation found it: an outage is logged once when it starts and once when it ends
 * (with its length), never per request. Read by /health/ready and the metrics.
 */
export class DependencyState {
  private down: { since: number; failures: number; reason: string } | null = null;
  /** When the latest outage began (performance.now(); -Infinity before the first), current or over. */
  private latestOutageAt = Number.NEGATIVE_INFINITY;
  /** Outages seen since start. */
  outages = 0;
  /** Operations that ran out of time while the dependency was up (a locked table, a statement timeout). */
  timeouts = 0;
  /** Connections found broken (PostgreSQL: a pooled client's connection dropped, idle or in use). */
  connectionsLost = 0;

  constructor(
    readonly name: Dependency,
    private readonly logger: Logger,
  ) {}

  get up(): boolean {
    return this.down === null;
  }

  /** Why it is down (the first failure of the outage); undefined while up. */
  get reason(): string | undefined {
    return this.down?.reason;
  }

  /** Whether `time` (performance.now()) is before the latest outage began: a connection opened or checked out then may be broken by it. */
  predatesOutage(time: number): boolean {
    return time < this.latestOutageAt;
  }

  failed(reason: string): void {
    if (this.down) {
      this.down.failures++;
      return;
    }
    this.latestOutageAt = performance.now();
    this.down = { since: Date.now(), failures: 1, reason };
    this.outages++;
    this.logger.error(`${this.name} unavailable: requests that need it answer 503 until it is back`, { dependency: this.name, error: reason });
  }

  /**
   * A connection the latest outage broke, found broken only now (see predatesOutage): one held through the outage
   * fails its next statement, even after the dependency is back. That outage's doing, not a new one: counted with it
   * while it lasts, never logged as another.
   */
  failedLate(): void {
    if (this.down) this.down.failures++;
  }

  succeeded(): void {
    if (!this.down) return;
    const { since, failures } = this.down;
    this.down = null;
    this.logger.info(`${this.name} available again`, { dependency: this.name, outageMs: Date.now() - since, failedOperations: failures });
  }
}
