/** A place in the pool, taken before any state changes so that an overloaded answer leaves none behind. */
export interface Lease {
  /** Runs the task once a slot is free. */
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Gives the place back; safe to call more than once. */
  release(): void;
}

export interface PoolOptions {
  /** Tasks running at once. */
  concurrency: number;
  /** Leases allowed to wait beyond those running. */
  queueLimit: number;
}

/**
 * Bounds Argon2id verifications: at most `concurrency` run, at most `queueLimit` more wait, and anyone
 * beyond is refused at once instead of stalling every other request behind a growing queue.
 */
export class VerificationPool {
  readonly concurrency: number;
  readonly queueLimit: number;
  private leases = 0;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** Moving average of task duration, for Retry-After. */
  private averageMs = 50;

  constructor(options: PoolOptions) {
    this.concurrency = options.concurrency;
    this.queueLimit = options.queueLimit;
  }

  /** Leases held (running or waiting). */
  get size(): number {
    return this.leases;
  }

  /** A lease, or null when the queue is full. */
  reserve(): Lease | null {
    if (this.leases >= this.concurrency + this.queueLimit) return null;
    this.leases++;
    let held = true;
    return {
      run: (task) => this.run(task),
      release: () => {
        if (!held) return;
        held = false;
        this.leases--;
      },
    };
  }

  /** Seconds until the current backlog has likely drained; at least 1. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(((this.leases / this.concurrency) * this.averageMs) / 1000));
  }

  private async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.concurrency) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    const started = performance.now();
    try {
      return await task();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (performance.now() - started);
      // Hand the slot straight to the next waiter so that no newcomer can overtake it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
