import type { Logger } from '@realmgate/spi';
import type { HostStore } from './index.js';
import { errorText, wholeMs } from './internal.js';

export interface MemoryStoreOptions {
  logger: Logger;
  /**
   * Keys held at most, claims aside; beyond it the least recently written is evicted. Claims (keys written
   * by setIfAbsent: used e-mail links, spent proof-of-work challenges, redeemed codes, shared secrets) are never
   * evicted, since a claim that vanished early could be made twice.
   */
  maxKeys?: number;
  /** Claims held at most; beyond it setIfAbsent fails (refuses to claim) rather than forget an older claim. */
  maxClaims?: number;
  /** Hits kept per sliding-window key; counts stop rising there. */
  maxHitsPerKey?: number;
  sweepIntervalMs?: number;
  /** Monotonic milliseconds; a test passes its own to move TTLs and hit windows on without waiting. */
  now?: () => number;
}

type Entry =
  | { kind: 'value'; value: string; expiresAt: number }
  | { kind: 'hits'; stamps: number[]; expiresAt: number };

/** Claims are swept (expired ones dropped) at most this often when their bound is reached. */
const CLAIM_SWEEP_MIN_INTERVAL_MS = 1000;

interface Subscription {
  onMessage: (message: string) => void;
  active: boolean;
}

// Monotonic, so a wall-clock step neither expires nor revives keys.
const monotonicNow = (): number => performance.now();

/**
 * The shared store of a single process. Behaves as RedisStore does, errors included, and as Redis with
 * `maxmemory-policy noeviction` for claims: nothing written by setIfAbsent is dropped before it expires.
 */
export class MemoryStore implements HostStore {
  /** Evictable keys, least recently written first. */
  private readonly entries = new Map<string, Entry>();
  /** Keys written by setIfAbsent: kept until they expire or are deleted, under their own bound. */
  private readonly claims = new Map<string, Entry>();
  private readonly channels = new Map<string, Set<Subscription>>();
  private readonly logger: Logger;
  private readonly maxKeys: number;
  private readonly maxClaims: number;
  private readonly maxHitsPerKey: number;
  private readonly sweeper: NodeJS.Timeout;
  private evicted = 0;
  private claimsRefused = 0;
  private lastClaimSweep = -Infinity;
  private readonly now: () => number;

  constructor({ logger, maxKeys = 1_000_000, maxClaims = 1_000_000, maxHitsPerKey = 10_000, sweepIntervalMs = 10_000, now = monotonicNow }: MemoryStoreOptions) {
    this.now = now;
    this.logger = logger;
    this.maxKeys = maxKeys;
    this.maxClaims = maxClaims;
    this.maxHitsPerKey = maxHitsPerKey;
    this.sweeper = setInterval(() => this.sweep(), sweepIntervalMs);
    // The sweep must never keep a finished process alive.
    this.sweeper.unref();
  }

  /** Keys held (claims included), expired ones not yet swept included. */
  get size(): number {
    return this.entries.size + this.claims.size;
  }

  async get(key: string): Promise<string | null> {
    const entry = this.live(key, this.now());
    if (entry === undefined) return null;
    if (entry.kind !== 'value') throw wrongKind(key);
    return entry.value;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    const expiresAt = ttlMs === undefined ? Infinity : this.now() + wholeMs('ttlMs', ttlMs);
    this.put(key, { kind: 'value', value, expiresAt });
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = wholeMs('ttlMs', ttlMs);
    const at = this.now();
    if (this.live(key, at) !== undefined) return false;
    this.claim(key, { kind: 'value', value, expiresAt: at + ttl }, at);
    return true;
  }

  async compareAndSet(key: string, expected: string | null, value: string, ttlMs?: number): Promise<boolean> {
    const expiresAt = ttlMs === undefined ? Infinity : this.now() + wholeMs('ttlMs', ttlMs);
    const entry = this.live(key, this.now());
    if (entry !== undefined && entry.kind !== 'value') throw wrongKind(key);
    if ((entry?.value ?? null) !== expected) return false;
    this.put(key, { kind: 'value', value, expiresAt });
    return true;
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    const ttl = wholeMs('ttlMs', ttlMs);
    const at = this.now();
    const entry = this.live(key, at);
    if (entry === undefined) {
      this.put(key, { kind: 'value', value: '1', expiresAt: at + ttl });
      return 1;
    }
    if (entry.kind !== 'value') throw wrongKind(key);
    const next = Number(entry.value) + 1;
    if (!/^-?\d+$/.test(entry.value) || !Number.isSafeInteger(next)) {
      throw new Error(`value of key "${key}" is not an integer or out of range`);
    }
    // A claim that is counted on stays a claim.
    if (this.claims.has(key)) this.claims.set(key, { kind: 'value', value: String(next), expiresAt: entry.expiresAt });
    else this.put(key, { kind: 'value', value: String(next), expiresAt: entry.expiresAt });
    return next;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
    this.claims.delete(key);
  }

  async recordHit(key: string, windowMs: number): Promise<number> {
    const window = wholeMs('windowMs', windowMs);
    const at = this.now();
    const entry = this.live(key, at);
    if (entry !== undefined && entry.kind !== 'hits') throw wrongKind(key);
    const stamps = entry?.stamps ?? [];
    stamps.splice(0, firstAfter(stamps, at - window));
    stamps.push(at);
    if (stamps.length > this.maxHitsPerKey) stamps.splice(0, stamps.length - this.maxHitsPerKey);
    this.put(key, { kind: 'hits', stamps, expiresAt: at + window });
    return stamps.length;
  }

  async countHits(key: string, windowMs: number): Promise<number> {
    const window = wholeMs('windowMs', windowMs);
    const at = this.now();
    const entry = this.live(key, at);
    if (entry === undefined) return 0;
    if (entry.kind !== 'hits') throw wrongKind(key);
    return entry.stamps.length - firstAfter(entry.stamps, at - window);
  }

  async publish(channel: string, message: string): Promise<void> {
    const subscriptions = this.channels.get(channel);
    if (subscriptions === undefined) return;
    const recipients = [...subscriptions];
    // Later, as a message through Redis arrives: never inside the publisher's own call.
    setImmediate(() => {
      for (const subscription of recipients) {
        if (subscription.active) this.deliver(channel, subscription, message);
      }
    });
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    const subscription: Subscription = { onMessage, active: true };
    let subscriptions = this.channels.get(channel);
    if (subscriptions === undefined) {
      subscriptions = new Set();
      this.channels.set(channel, subscriptions);
    }
    const own = subscriptions;
    own.add(subscription);
    return async () => {
      subscription.active = false;
      own.delete(subscription);
      // A later subscribe may have replaced the emptied set; leave that one alone.
      if (own.size === 0 && this.channels.get(channel) === own) this.channels.delete(channel);
    };
  }

  /** Memory is always there. */
  async ping(): Promise<void> {}

  /** Memory never goes away: the listener is never called. */
  onAvailabilityChange(_listener: (up: boolean) => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const subscriptions of this.channels.values()) {
      for (const subscription of subscriptions) subscription.active = false;
    }
    this.channels.clear();
  }

  private live(key: string, at: number): Entry | undefined {
    const map = this.claims.has(key) ? this.claims : this.entries;
    const entry = map.get(key);
    if (entry !== undefined && entry.expiresAt <= at) {
      map.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Writes move a key to the young end of the map's order, so eviction takes the least recently written. */
  private put(key: string, entry: Entry): void {
    this.claims.delete(key);
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > this.maxKeys) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
      this.evicted += 1;
    }
  }

  /** A claim is never evicted: when their bound is reached and sweeping frees nothing, the claim is refused. */
  private claim(key: string, entry: Entry, at: number): void {
    if (this.claims.size >= this.maxClaims && at - this.lastClaimSweep >= CLAIM_SWEEP_MIN_INTERVAL_MS) {
      this.lastClaimSweep = at;
      for (const [name, held] of this.claims) if (held.expiresAt <= at) this.claims.delete(name);
    }
    if (this.claims.size >= this.maxClaims) {
      this.claimsRefused += 1;
      throw new Error(`shared store full: ${this.maxClaims} claims (used links, spent challenges) held, none expired; refusing "${key}" rather than forgetting an older one`);
    }
    this.entries.delete(key);
    this.claims.set(key, entry);
  }

  private deliver(channel: string, subscription: Subscription, message: string): void {
    try {
      subscription.onMessage(message);
    } catch (error) {
      this.logger.error('shared store subscriber failed', { channel, error: errorText(error) });
    }
  }

  private sweep(): void {
    const at = this.now();
    for (const map of [this.entries, this.claims]) {
      for (const [key, entry] of map) {
        if (entry.expiresAt <= at) map.delete(key);
      }
    }
    if (this.claimsRefused > 0) {
      this.logger.error('memory store full of claims: refused new ones (raise maxClaims or use Redis)', {
        refused: this.claimsRefused,
        maxClaims: this.maxClaims,
      });
      this.claimsRefused = 0;
    }
    if (this.evicted > 0) {
      this.logger.warn('memory store full: evicted least recently written keys (raise maxKeys or use Redis)', {
        evicted: this.evicted,
        maxKeys: this.maxKeys,
      });
      this.evicted = 0;
    }
  }
}

/** Index of the first stamp above `cutoff` in ascending `stamps`. */
function firstAfter(stamps: number[], cutoff: number): number {
  let low = 0;
  let high = stamps.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (stamps[middle] <= cutoff) low = middle + 1;
    else high = middle;
  }
  return low;
}

function wrongKind(key: string): Error {
  return new Error(`key "${key}" holds the wrong kind of value (a string versus sliding-window hits)`);
}
