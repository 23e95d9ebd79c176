import type { Counter, Gauge, Histogram, Metrics, SharedStore } from '@realmgate/spi';

/**
 * The SPI SharedStore in memory, for tests. Every operation yields to the event loop first, as a network
 * store would, so that concurrent callers really interleave.
 */
export class MemoryStore implements SharedStore {
  private readonly values = new Map<string, { value: string; expiresAt: number }>();
  private readonly hits = new Map<string, number[]>();
  private readonly channels = new Map<string, Set<(message: string) => void>>();

  constructor(private readonly now: () => number = Date.now) {}

  private async tick(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  private live(key: string): string | null {
    const entry = this.values.get(key);
    if (!entry) return null;
    if (entry.expiresAt <= this.now()) {
      this.values.delete(key);
      return null;
    }
    return entry.value;
  }

  async get(key: string): Promise<string | null> {
    await this.tick();
    return this.live(key);
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    await this.tick();
    this.values.set(key, { value, expiresAt: ttlMs === undefined ? Number.POSITIVE_INFINITY : this.now() + ttlMs });
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    await this.tick();
    if (this.live(key) !== null) return false;
    this.values.set(key, { value, expiresAt: this.now() + ttlMs });
    return true;
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    await this.tick();
    const next = Number(this.live(key) ?? 0) + 1;
    const expiresAt = this.values.get(key)?.expiresAt ?? this.now() + ttlMs;
    this.values.set(key, { value: String(next), expiresAt });
    return next;
  }

  async delete(key: string): Promise<void> {
    await this.tick();
    this.values.delete(key);
  }

  private window(key: string, windowMs: number): number[] {
    const since = this.now() - windowMs;
    const kept = (this.hits.get(key) ?? []).filter((time) => time > since);
    this.hits.set(key, kept);
    return kept;
  }

  async recordHit(key: string, windowMs: number): Promise<number> {
    await this.tick();
    const hits = this.window(key, windowMs);
    hits.push(this.now());
    return hits.length;
  }

  async countHits(key: string, windowMs: number): Promise<number> {
    await this.tick();
    return this.window(key, windowMs).length;
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.tick();
    for (const listener of this.channels.get(channel) ?? []) listener(message);
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    await this.tick();
    const listeners = this.channels.get(channel) ?? new Set();
    listeners.add(onMessage);
    this.channels.set(channel, listeners);
    return async () => {
      listeners.delete(onMessage);
    };
  }
}

/** Metrics that remember every value, keyed by name and sorted labels. */
export class RecordingMetrics implements Metrics {
  readonly values = new Map<string, number>();

  private key(name: string, labels?: Record<string, string>): string {
    const parts = Object.entries(labels ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}="${v}"`);
    return parts.length > 0 ? `${name}{${parts.join(',')}}` : name;
  }

  value(name: string, labels?: Record<string, string>): number {
    return this.values.get(this.key(name, labels)) ?? 0;
  }

  counter(name: string): Counter {
    return {
      inc: (labels, value = 1) => {
        const key = this.key(name, labels);
        this.values.set(key, (this.values.get(key) ?? 0) + value);
      },
    };
  }

  gauge(name: string): Gauge {
    return {
      set: (labels, value) => {
        this.values.set(this.key(name, labels), value);
      },
      inc: (labels, value = 1) => {
        const key = this.key(name, labels);
        this.values.set(key, (this.values.get(key) ?? 0) + value);
      },
      dec: (labels, value = 1) => {
        const key = this.key(name, labels);
        this.values.set(key, (this.values.get(key) ?? 0) - value);
      },
    };
  }

  histogram(name: string): Histogram {
    return {
      observe: (labels, value) => {
        this.values.set(this.key(name, labels), value);
      },
    };
  }
}
