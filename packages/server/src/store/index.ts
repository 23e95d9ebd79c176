import type { Logger, SharedStore } from '@realmgate/spi';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';

export { MemoryStore } from './memory-store.js';
export type { MemoryStoreOptions } from './memory-store.js';
export { RedisStore } from './redis-store.js';
export type { RedisStoreOptions } from './redis-store.js';

/** A store as the host holds it: it closes the store at shutdown, providers only get the SharedStore. */
export interface OwnedSharedStore extends SharedStore {
  close(): Promise<void>;
}

export interface SharedStoreOptions {
  /** Redis when given (several processes share state), memory otherwise (one process). */
  redisUrl?: string;
  logger: Logger;
  /** Redis only: put before every key and channel. */
  keyPrefix?: string;
}

export function createSharedStore({ redisUrl, logger, keyPrefix }: SharedStoreOptions): OwnedSharedStore {
  return redisUrl ? new RedisStore({ url: redisUrl, logger, keyPrefix }) : new MemoryStore({ logger });
}

/** A view of `store` in which every key and channel gets `<namespace>:` before it. */
export function namespacedStore(store: SharedStore, namespace: string): SharedStore {
  if (namespace === '') throw new Error('a shared-store namespace must not be empty');
  const scoped = (name: string): string => `${namespace}:${name}`;
  return {
    get: (key) => store.get(scoped(key)),
    set: (key, value, ttlMs) => store.set(scoped(key), value, ttlMs),
    setIfAbsent: (key, value, ttlMs) => store.setIfAbsent(scoped(key), value, ttlMs),
    increment: (key, ttlMs) => store.increment(scoped(key), ttlMs),
    delete: (key) => store.delete(scoped(key)),
    recordHit: (key, windowMs) => store.recordHit(scoped(key), windowMs),
    countHits: (key, windowMs) => store.countHits(scoped(key), windowMs),
    publish: (channel, message) => store.publish(scoped(channel), message),
    subscribe: (channel, onMessage) => store.subscribe(scoped(channel), onMessage),
  };
}
