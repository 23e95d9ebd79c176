import type { Logger, SharedStore } from '@realmgate/spi';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';
import type { DependencyState } from './unavailable.js';

export { MemoryStore } from './memory-store.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions } from './redis-store.js';
export { DependencyState, DependencyUnavailableError, type Dependency } from './unavailable.js';

/** The host's own view of the store: the SPI's operations and those only the host needs. */
export interface HostStore extends SharedStore {
  /**
   * Atomic: stores `value` (with `ttlMs`, or none) only when the key holds `expected` now (`null`: the key is
   * absent), and says whether it did. A read-modify-write loops on it, so concurrent writers lose no update.
   */
  compareAndSet(key: string, expected: string | null, value: string, ttlMs?: number): Promise<boolean>;
  /**
   * `listener(false)` when the store becomes unreachable, `listener(true)` when it is back with its
   * subscriptions renewed (messages published meanwhile were lost). Returns a function that stops listening.
   */
  onAvailabilityChange(listener: (up: boolean) => void): () => void;
}

/** A store as the host holds it: it closes the store at shutdown, providers only get the SharedStore. */
export interface OwnedSharedStore extends HostStore {
  /** Throws DependencyUnavailableError unless the store answers now: /health/ready's check. */
  ping(): Promise<void>;
  /** Up or down as the last operation found it (memory: always up); what the metrics show. */
  readonly state?: DependencyState;
  /** Counter operations answered from this process's memory because the shared store was down. */
  readonly counterFallbacks?: number;
  close(): Promise<void>;
}

export interface SharedStoreOptions {
  /** Redis when given (several processes share state), memory otherwise (one process). */
  redisUrl?: string;
  logger: Logger;
  /** Redis only: put before every key and channel. */
  keyPrefix?: string;
  /** Memory only (Redis counts by its own clock): see MemoryStoreOptions.now. */
  now?: () => number;
}

export function createSharedStore({ redisUrl, logger, keyPrefix, now }: SharedStoreOptions): OwnedSharedStore {
  return redisUrl ? new RedisStore({ url: redisUrl, logger, keyPrefix }) : new MemoryStore({ logger, now });
}

/** A view of `store` in which every key and channel gets `<namespace>:` before it. */
export function namespacedStore(store: HostStore, namespace: string): HostStore {
  if (namespace === '') throw new Error('a shared-store namespace must not be empty');
  const scoped = (name: string): string => `${namespace}:${name}`;
  return {
    get: (key) => store.get(scoped(key)),
    set: (key, value, ttlMs) => store.set(scoped(key), value, ttlMs),
    setIfAbsent: (key, value, ttlMs) => store.setIfAbsent(scoped(key), value, ttlMs),
    compareAndSet: (key, expected, value, ttlMs) => store.compareAndSet(scoped(key), expected, value, ttlMs),
    increment: (key, ttlMs) => store.increment(scoped(key), ttlMs),
    delete: (key) => store.delete(scoped(key)),
    recordHit: (key, windowMs) => store.recordHit(scoped(key), windowMs),
    countHits: (key, windowMs) => store.countHits(scoped(key), windowMs),
    publish: (channel, message) => store.publish(scoped(channel), message),
    subscribe: (channel, onMessage) => store.subscribe(scoped(channel), onMessage),
    onAvailabilityChange: (listener) => store.onAvailabilityChange(listener),
  };
}
export { RequestAbandonedError, requestScope, throwIfAbandoned, type RequestScope } from './request-scope.js';
