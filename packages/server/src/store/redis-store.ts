import { createHash, randomUUID } from 'node:crypto';
import { Redis, ReplyError } from 'ioredis';
import type { Logger } from '@realmgate/spi';
import type { HostStore } from './index.js';
import { errorText, wholeMs } from './internal.js';
import { MemoryStore } from './memory-store.js';
import { DependencyState, DependencyUnavailableError } from './unavailable.js';

export interface RedisStoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  logger: Logger;
  /** Put before every key and channel, so deployments and test runs can share one Redis. */
  keyPrefix?: string;
  /** Bounds how long a request waits on a Redis that accepts connections but does not answer. */
  commandTimeoutMs?: number;
  /** Hits kept per sliding-window key; counts stop rising there. */
  maxHitsPerKey?: number;
  /** While Redis is down, how often it is asked (PING) whether it is back. */
  probeIntervalMs?: number;
}

interface Script {
  lua: string;
  sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

// The TTL starts with the first increment only; later ones must not extend it.
const INCREMENT = script(`
local created = redis.call('EXISTS', KEYS[1]) == 0
local value = redis.call('INCR', KEYS[1])
if created then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return value`);

// ARGV: 1 if a value is expected (0: the key must be absent), the expected value, the new value, the TTL ('' for none).
const COMPARE_AND_SET = script(`
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
if ARGV[4] == '' then redis.call('SET', KEYS[1], ARGV[3]) else redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4]) end
return 1`);

// Redis's clock rather than each process's, so processes with skewed clocks count one window.
const NOW_MS = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`;

const RECORD_HIT = script(`${NOW_MS}
local window = tonumber(ARGV[1])
local max = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[2])
local count = redis.call('ZCARD', KEYS[1])
if count > max then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, count - max - 1)
  count = max
end
redis.call('PEXPIRE', KEYS[1], window)
return count`);

const COUNT_HITS = script(`${NOW_MS}
return redis.call('ZCOUNT', KEYS[1], '(' .. (now - tonumber(ARGV[1])), '+inf')`);

interface Connection {
  client: Redis;
  /** The last connection error, until the connection is ready again. */
  failure: string | undefined;
}

interface Channel {
  handlers: Set<(message: string) => void>;
  subscribed: Promise<void>;
}

/**
 * The shared store of several processes. While Redis is unreachable (refused, lost, or not answering within the
 * command timeout) the store is down, decided per kind of operation, so callers need not:
 * - counters (increment, recordHit, countHits: rate limits, brute force per address, proof-of-work scaling)
 *   count in this process's memory instead, with one warning per outage: sign-in keeps working, each node
 *   counting its own share;
 * - everything else (claims that guard a single use, values read back) throws DependencyUnavailableError,
 *   which the HTTP layer answers 503 with Retry-After: fail closed, never a 500.
 * While down, operations answer at once (no request waits for a dead Redis) and a PING every
 * `probeIntervalMs` finds it back; then subscriptions are renewed before the store counts as up again, and
 * `onAvailabilityChange` listeners hear it (the configuration cache drops what it may have missed).
 */
export class RedisStore implements HostStore {
  private readonly url: string;
  private readonly logger: Logger;
  private readonly prefix: string;
  private readonly commandTimeoutMs: number;
  private readonly maxHitsPerKey: number;
  private readonly commands: Connection;
  // ioredis needs a connection of its own for subscriptions; opened on the first subscribe.
  private subscriber: Connection | undefined;
  /** By prefixed channel name. */
  private readonly channels = new Map<string, Channel>();
  /** Up or down; logs one line when an outage starts and one when it ends. */
  readonly state: DependencyState;
  /** Counters while Redis is down: this process's own. */
  private readonly fallback: MemoryStore;
  /** Counter operations answered from this process's memory. */
  counterFallbacks = 0;
  private fallbackWarned = false;
  private readonly probeIntervalMs: number;
  private probe: NodeJS.Timeout | undefined;
  private recovering: Promise<void> | undefined;
  private readonly availabilityListeners = new Set<(up: boolean) => void>();
  private closing = false;

  constructor({
    url,
    logger,
    keyPrefix = 'realmgate:',
    commandTimeoutMs = 1000,
    maxHitsPerKey = 10_000,
    probeIntervalMs = 200,
  }: RedisStoreOptions) {
    this.url = url;
    this.logger = logger;
    this.prefix = keyPrefix;
    this.commandTimeoutMs = commandTimeoutMs;
    this.maxHitsPerKey = maxHitsPerKey;
    this.probeIntervalMs = probeIntervalMs;
    this.state = new DependencyState('shared-store', logger);
    this.fallback = new MemoryStore({ logger, maxHitsPerKey });
    this.commands = this.open('commands');
  }

  async get(key: string): Promise<string | null> {
    return this.run('get', this.commands, (client) => client.get(this.prefix + key));
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    const name = this.prefix + key;
    if (ttlMs === undefined) {
      await this.run('set', this.commands, (client) => client.set(name, value));
    } else {
      const ttl = wholeMs('ttlMs', ttlMs);
      await this.run('set', this.commands, (client) => client.set(name, value, 'PX', ttl));
    }
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = wholeMs('ttlMs', ttlMs);
    const reply = await this.run('setIfAbsent', this.commands, (client) =>
      client.set(this.prefix + key, value, 'PX', ttl, 'NX'),
    );
    return reply === 'OK';
  }

  async compareAndSet(key: string, expected: string | null, value: string, ttlMs?: number): Promise<boolean> {
    const ttl = ttlMs === undefined ? '' : wholeMs('ttlMs', ttlMs);
    const args = [expected === null ? '0' : '1', expected ?? '', value, ttl];
    return Number(await this.evaluate('compareAndSet', COMPARE_AND_SET, key, args)) === 1;
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    const ttl = wholeMs('ttlMs', ttlMs);
    return this.counter(
      async () => Number(await this.evaluate('increment', INCREMENT, key, [ttl])),
      () => this.fallback.increment(key, ttl),
    );
  }

  async delete(key: string): Promise<void> {
    await this.run('delete', this.commands, (client) => client.del(this.prefix + key));
  }

  async recordHit(key: string, windowMs: number): Promise<number> {
    const window = wholeMs('windowMs', windowMs);
    return this.counter(
      async () => Number(await this.evaluate('recordHit', RECORD_HIT, key, [window, randomUUID(), this.maxHitsPerKey])),
      () => this.fallback.recordHit(key, window),
    );
  }

  async countHits(key: string, windowMs: number): Promise<number> {
    const window = wholeMs('windowMs', windowMs);
    return this.counter(
      async () => Number(await this.evaluate('countHits', COUNT_HITS, key, [window])),
      () => this.fallback.countHits(key, window),
    );
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.run('publish', this.commands, (client) => client.publish(this.prefix + channel, message));
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    const name = this.prefix + channel;
    const subscriber = (this.subscriber ??= this.open('subscriber'));
    let entry = this.channels.get(name);
    if (entry === undefined) {
      const created: Channel = {
        handlers: new Set(),
        subscribed: this.run('subscribe', subscriber, (client) => client.subscribe(name)).then(() => undefined),
      };
      // A failed SUBSCRIBE is forgotten, so the next subscribe tries again.
      created.subscribed.catch(() => {
        if (this.channels.get(name) === created) this.channels.delete(name);
      });
      this.channels.set(name, created);
      entry = created;
    }
    const own = entry;
    // A wrapper, so one function subscribed twice is two subscriptions, as in MemoryStore.
    const handler = (message: string): void => onMessage(message);
    own.handlers.add(handler);
    await own.subscribed;
    return async () => {
      if (!own.handlers.delete(handler) || own.handlers.size > 0 || this.channels.get(name) !== own) return;
      this.channels.delete(name);
      // Delivery has stopped already (no handlers left); a failed UNSUBSCRIBE only leaves Redis sending
      // messages nobody reads, so it is not the caller's problem.
      try {
        await this.run('unsubscribe', subscriber, (client) => client.unsubscribe(name));
      } catch (error) {
        this.logger.warn('Redis unsubscribe failed', { channel, error: errorText(error) });
      }
    };
  }

  /** Throws DependencyUnavailableError unless Redis answers now (within the command timeout). */
  async ping(): Promise<void> {
    await this.run('ping', this.commands, (client) => client.ping());
  }

  /** `listener(false)` when an outage starts, `listener(true)` when Redis is back and subscriptions renewed. */
  onAvailabilityChange(listener: (up: boolean) => void): () => void {
    this.availabilityListeners.add(listener);
    return () => this.availabilityListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.probe);
    this.channels.clear();
    await this.fallback.close();
    await Promise.all([this.commands, this.subscriber].map((connection) => connection && quit(connection.client)));
  }

  private open(role: 'commands' | 'subscriber'): Connection {
    const client = new Redis(this.url, {
      // Opened by its first command (a store never used opens nothing); recover() opens one an outage kept from it.
      lazyConnect: true,
      // Fail commands at the first failed (re)connection attempt rather than queueing them through many.
      maxRetriesPerRequest: 0,
      commandTimeout: this.commandTimeoutMs,
      // Reconnect soon after Redis is back (it is local or near): a node serves again within a second of its return.
      retryStrategy: (attempt) => Math.min(attempt * 50, 200),
    });
    const connection: Connection = { client, failure: undefined };
    client.on('error', (error: Error) => {
      const first = connection.failure === undefined;
      connection.failure = error.message;
      // The outage is logged once (markDown); the reconnect loop repeats the same error several times a second.
      if (first) this.markDown(error.message);
      this.logger.debug('Redis connection failing', { connection: role, error: error.message });
    });
    client.on('ready', () => {
      if (connection.failure !== undefined) this.logger.info('Redis connection restored', { connection: role });
      connection.failure = undefined;
      if (role === 'commands') void this.checkEvictionPolicy(client);
      this.recover();
    });
    // A subscriber that lost its connection missed what was published meanwhile: the store is down until it is
    // back and subscribed again (the configuration cache must not trust what it holds).
    if (role === 'subscriber') client.on('close', () => !this.closing && this.markDown('subscriber connection lost'));
    if (role === 'subscriber') {
      client.on('message', (name: string, message: string) => this.dispatch(name, message));
    }
    return connection;
  }

  /**
   * Every key here has a TTL, so any eviction policy but `noeviction` (Redis's default) may drop used-link and
   * spent-challenge markers before they expire, and let them be used again. Said once per connection; a Redis
   * that does not answer INFO (some managed ones) is taken on trust.
   */
  private async checkEvictionPolicy(client: Redis): Promise<void> {
    try {
      const policy = /^maxmemory_policy:(\S+)/m.exec(await client.info('memory'))?.[1];
      if (policy !== undefined && policy !== 'noeviction') {
        this.logger.warn('Redis may evict keys before they expire: set maxmemory-policy noeviction, or used e-mail links and spent proof-of-work challenges can be replayed under memory pressure', { maxmemoryPolicy: policy });
      }
    } catch (error) {
      this.logger.debug('Redis eviction policy unknown (INFO refused)', { error: errorText(error) });
    }
  }

  private dispatch(name: string, message: string): void {
    for (const handler of this.channels.get(name)?.handlers ?? []) {
      try {
        handler(message);
      } catch (error) {
        this.logger.error('shared store subscriber failed', {
          channel: name.slice(this.prefix.length),
          error: errorText(error),
        });
      }
    }
  }

  private async run<T>(operation: string, connection: Connection, command: (client: Redis) => Promise<T>): Promise<T> {
    const unreachable = (): string => `Redis is unreachable (${connection.failure ?? this.state.reason ?? 'connection lost'})`;
    // Known to be down (between reconnection attempts, or until the probe finds it back): answer now.
    if (connection.client.status === 'reconnecting' || !this.state.up) {
      throw new DependencyUnavailableError('shared-store', `Redis ${operation} failed: ${unreachable()}`);
    }
    try {
      return await command(connection.client);
    } catch (error) {
      // A reply of Redis's own (a wrong type, a script error) is a fault of the caller's, not an outage.
      if (error instanceof ReplyError) throw new Error(`Redis ${operation} failed: ${errorText(error)}`, { cause: error });
      // ioredis words a failed connection as a retry limit; the connection's own error says what happened.
      const lost = error instanceof Error && error.name === 'MaxRetriesPerRequestError';
      const reason = lost ? unreachable() : errorText(error);
      this.markDown(reason);
      throw new DependencyUnavailableError('shared-store', `Redis ${operation} failed: ${reason}`, 1, { cause: error });
    }
  }

  /** A counter: Redis's while it answers, this process's memory while it does not. */
  private async counter(shared: () => Promise<number>, local: () => Promise<number>): Promise<number> {
    try {
      return await shared();
    } catch (error) {
      if (!(error instanceof DependencyUnavailableError)) throw error;
      this.counterFallbacks++;
      if (!this.fallbackWarned) {
        this.fallbackWarned = true;
        this.logger.warn('Redis unavailable: rate limits and brute-force counts per address are kept in this process only until it is back', { error: error.message });
      }
      return local();
    }
  }

  private markDown(reason: string): void {
    if (this.closing) return;
    const wasUp = this.state.up;
    this.state.failed(reason);
    if (!wasUp) return;
    for (const listener of this.availabilityListeners) listener(false);
    this.probe ??= setInterval(() => this.recover(), this.probeIntervalMs);
    this.probe.unref();
  }

  /**
   * Up again once Redis answers a PING on the commands connection and, if subscriptions were made, the
   * subscriber is connected and subscribed again (ioredis resubscribes on its own, but without telling when).
   */
  private recover(): void {
    if (this.state.up || this.recovering || this.closing) return;
    this.recovering = (async () => {
      if (!this.readyOpeningIfIdle(this.commands)) return;
      await this.commands.client.ping();
      if (this.subscriber) {
        const names = [...this.channels.keys()];
        if (!this.readyOpeningIfIdle(this.subscriber)) return;
        if (names.length) await this.subscriber.client.subscribe(...names);
      }
      if (this.closing || this.state.up) return;
      clearInterval(this.probe);
      this.probe = undefined;
      this.fallbackWarned = false;
      this.state.succeeded();
      for (const listener of this.availabilityListeners) listener(true);
    })()
      .catch(() => {
        // Still down: the next probe asks again.
      })
      .finally(() => {
        this.recovering = undefined;
      });
  }

  /**
   * Whether the connection is ready. One that ioredis is not connecting is opened now, and its 'ready' event
   * tries recovery again: a lazy connection never used yet stays unopened while the store is down, since every
   * operation is refused before reaching it (the first operation timed out on the other connection, or a
   * subscriber was opened during the outage), and without this the store stayed down for good (issue 36). Never
   * after close() began (a probe's PING may still be under way then): a closed connection stays closed.
   */
  private readyOpeningIfIdle({ client }: Connection): boolean {
    if (!this.closing && (client.status === 'wait' || client.status === 'end')) {
      // A failure is the connection's 'error' event too, which the store already hears.
      client.connect().catch(() => {});
    }
    return client.status === 'ready';
  }

  private evaluate(operation: string, { lua, sha }: Script, key: string, args: (string | number)[]): Promise<unknown> {
    return this.run(operation, this.commands, async (client) => {
      try {
        return await client.evalsha(sha, 1, this.prefix + key, ...args);
      } catch (error) {
        // Redis forgets scripts on restart or SCRIPT FLUSH; EVAL loads it again.
        if (!errorText(error).startsWith('NOSCRIPT')) throw error;
        return client.eval(lua, 1, this.prefix + key, ...args);
      }
    });
  }
}

async function quit(client: Redis): Promise<void> {
  if (client.status === 'wait' || client.status === 'end') {
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    // Unreachable: nothing to say goodbye to, so just stop reconnecting.
    client.disconnect();
  }
}
