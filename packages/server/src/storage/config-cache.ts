/**
 * The in-process cache of configuration the hot paths read on every request (realms, clients, service-account
 * users, effective roles, signing keys) and of the users signing in (the row, the credentials' types, the pending
 * required actions, as Keycloak's user cache), invalidated by what is written to the database.
 *
 * Invalidation is by table, written once: `db.ts` wraps Kysely's driver, reads the table every INSERT, UPDATE
 * and DELETE names (or a raw statement's), and calls `tablesWritten` when it is committed (at once outside a
 * transaction, at COMMIT inside one). Each table has a generation number; an entry remembers the sum of its
 * tables' generations when its load began and is valid while that sum is unchanged (the numbers only grow).
 * So a write costs an increment, a read a few additions, and a load that raced a write is never kept.
 *
 * With several processes, `tablesWritten` also publishes the tables on the shared store's channel
 * (`connect`), and every other process bumps the same generations when the message arrives (Redis pub/sub:
 * milliseconds). A lost message is bounded by `maxAgeMs`: no entry is served older than that.
 *
 * Tables that change per request and hold no configuration (sessions, events, revocations) do not invalidate;
 * a write to a table this module does not know (a table added later) invalidates everything. Anything that
 * changes configuration outside the database calls `invalidateConfiguration()`.
 *
 * Only found values are kept: an unknown realm, client id or key id is looked up again every time, so a flood
 * of made-up names cannot fill the cache or push real entries out. Values are frozen: callers get the shared
 * object and must copy before changing it.
 */

import { requestScope } from '../store/index.js';

/** Tables written per request that no cached value is read from. */
const VOLATILE_TABLES = new Set([
  'user_session',
  'client_session',
  'refresh_token_family',
  'revoked_token',
  'password_history',
  // Webhook deliveries of the outbox (one per event): nothing cached is read from them.
  'provider_outbox',
  'provider_outbox_attempt',
  'provider_outbox_endpoint',
  'event_entity',
  'admin_event_entity',
  'kysely_migration',
  'kysely_migration_lock',
]);

/** Tables cached values are read from, each invalidated alone; a write to any other table invalidates everything. */
const CACHED_TABLES = new Set([
  'realm', 'realm_key', 'client', 'user_entity', 'role', 'role_composite', 'user_role', 'scope_mapping',
  // What every sign-in reads of its user besides the row: the credentials' types (an OTP set up?) and the pending
  // required actions (users.ts, credentials.ts). Written when a user changes them, not per sign-in.
  'credential', 'user_required_action',
  // Effective roles come through groups too (services/roles.ts).
  'realm_group', 'user_group', 'group_role',
  // A client's scopes and mappers (services/client-scope-set.ts), and the scopes' role scope mappings (roles).
  'client_scope', 'protocol_mapper', 'realm_client_scope', 'client_client_scope', 'client_scope_role',
  // Authentication flows walked at every sign-in (flows/repository.ts).
  'auth_flow', 'auth_execution', 'authenticator_config',
  // The login page's buttons and the redirector's providers (storage/federation.ts).
  'identity_provider',
  // The realm's overrides of the pages' and e-mails' texts (pages/i18n.ts).
  'realm_localization',
]);

/** Every entry depends on these: any unknown table, and the realm (its deletion cascades to everything). */
const ALWAYS = ['*', 'realm'] as const;

const CHANNEL = 'config-cache:invalidate';

export interface ConfigCacheOptions {
  /** Entries kept across every realm; the least recently used goes first. */
  maxEntries?: number;
  /** No entry is served older than this, whatever the invalidation messages said. */
  maxAgeMs?: number;
}

export interface ConfigCacheStats {
  hits: number;
  misses: number;
  entries: number;
  invalidations: number;
}

interface Entry {
  value: unknown;
  stamp: number;
  deps: readonly string[];
  loadedAt: number;
}

/** The part of the shared store the cache needs (HostStore has it). */
export interface InvalidationChannel {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>>;
  /** Told when the channel goes down and comes back (messages published meanwhile are lost). */
  onAvailabilityChange?(listener: (up: boolean) => void): () => void;
}

export class ConfigCache {
  /** While true, nothing is served from memory (several processes, not yet subscribed to invalidations). */
  bypass = false;
  /** Set by disconnect (the server closed): no further subscription is attempted. */
  closed = false;
  readonly maxEntries: number;
  readonly maxAgeMs: number;
  private readonly generations = new Map<string, number>();
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, { stamp: number; promise: Promise<unknown> }>();
  private channel: InvalidationChannel | null = null;
  private unsubscribe: (() => Promise<void>) | null = null;
  private stopWatching: (() => void) | null = null;
  /** A publish failed: the other processes may have missed a change, so everything is invalidated once it is back. */
  private publishOwed = false;
  private onPublishError: (error: unknown) => void = () => {};
  private readonly stats: ConfigCacheStats = { hits: 0, misses: 0, entries: 0, invalidations: 0 };

  constructor(options: ConfigCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.maxAgeMs = options.maxAgeMs ?? 30_000;
  }

  /**
   * The value cached under `key`, or `load()`'s (kept when not null/undefined). `deps` are the tables the value
   * is read from. Concurrent misses of one key share one load.
   */
  async get<T>(key: string, deps: readonly string[], load: () => Promise<T | null | undefined>): Promise<T | null> {
    if (this.bypass) {
      this.stats.misses++;
      const value = await load();
      return value === null || value === undefined ? null : deepFreeze(value);
    }
    const stamp = this.stamp(deps);
    const entry = this.entries.get(key);
    if (entry && entry.stamp === stamp && Date.now() - entry.loadedAt < this.maxAgeMs) {
      this.stats.hits++;
      // Most recently used last, so the first key is the one to evict.
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry.value as T;
    }
    this.stats.misses++;
    if (entry) this.entries.delete(key);
    const pending = this.loading.get(key);
    if (pending && pending.stamp === stamp) return (await pending.promise) as T | null;
    const loadedAt = Date.now();
    // Outside the request's scope (store/request-scope.ts): other requests share this load, and must not fail
    // because the request that started it was abandoned by its client.
    const promise = requestScope.exit(load).then((value) => {
      if (this.loading.get(key)?.promise === promise) this.loading.delete(key);
      if (value === null || value === undefined) return null;
      const frozen = deepFreeze(value);
      // A write that committed while this loaded changed the stamp: the value may be older than it, so not kept.
      if (this.stamp(deps) === stamp) this.store(key, { value: frozen, stamp, deps, loadedAt });
      return frozen;
    });
    promise.catch(() => {
      if (this.loading.get(key)?.promise === promise) this.loading.delete(key);
    });
    this.loading.set(key, { stamp, promise });
    return (await promise) as T | null;
  }

  /**
   * The tables a committed statement wrote: their entries become invalid here at once, and in every other
   * process when the shared store delivers the message.
   */
  tablesWritten(tables: Iterable<string>): void {
    const relevant = this.bump(tables);
    if (relevant.length && this.channel) {
      this.publish(relevant.join(','));
    }
  }

  /**
   * Everything cached becomes invalid, here and in the other processes. For a change of configuration this
   * module cannot see as a table write (the groups' role mappings call it when they are not tables it knows).
   */
  invalidateConfiguration(): void {
    this.tablesWritten(['*']);
  }

  /** Listens for other processes' invalidations on the shared store and publishes this one's. */
  async connect(channel: InvalidationChannel, onPublishError: (error: unknown) => void): Promise<void> {
    if (this.closed) throw new Error('configuration cache closed');
    this.onPublishError = onPublishError;
    this.unsubscribe = await channel.subscribe(CHANNEL, (message) => this.bump(message.split(',')));
    this.channel = channel;
    this.stopWatching = channel.onAvailabilityChange?.((up) => this.availabilityChanged(up)) ?? null;
    // Whatever was read before the subscription may have missed a message.
    this.bump(['*']);
  }

  /**
   * While the channel is down nothing is served from memory (another process's change would not be heard);
   * when it is back everything read before is dropped, since messages published meanwhile were lost, and this
   * process tells the others to do the same if one of its own messages failed.
   */
  private availabilityChanged(up: boolean): void {
    if (this.closed) return;
    if (!up) {
      this.bypass = true;
      return;
    }
    this.bump(['*']);
    this.bypass = false;
    if (this.publishOwed) {
      this.publishOwed = false;
      this.publish('*');
    }
  }

  private publish(tables: string): void {
    this.channel?.publish(CHANNEL, tables).catch((error: unknown) => {
      // Said once per outage, not once per write.
      if (!this.publishOwed) this.onPublishError(error);
      this.publishOwed = true;
    });
  }

  async disconnect(): Promise<void> {
    this.closed = true;
    this.channel = null;
    this.stopWatching?.();
    this.stopWatching = null;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = null;
    await unsubscribe?.();
  }

  snapshot(): ConfigCacheStats {
    return { ...this.stats, entries: this.entries.size };
  }

  /** hits / (hits + misses) since start; 0 before the first read. */
  hitRatio(): number {
    const total = this.stats.hits + this.stats.misses;
    return total === 0 ? 0 : this.stats.hits / total;
  }

  private bump(tables: Iterable<string>): string[] {
    const relevant: string[] = [];
    for (const raw of tables) {
      const table = VOLATILE_TABLES.has(raw) ? null : CACHED_TABLES.has(raw) ? raw : '*';
      if (!table || relevant.includes(table)) continue;
      relevant.push(table);
      this.generations.set(table, (this.generations.get(table) ?? 0) + 1);
    }
    if (relevant.length) this.stats.invalidations++;
    return relevant;
  }

  /** Sum of the generations of `deps` and of the tables every entry depends on. */
  private stamp(deps: readonly string[]): number {
    let sum = 0;
    for (const table of ALWAYS) sum += this.generations.get(table) ?? 0;
    for (const table of deps) sum += this.generations.get(table) ?? 0;
    return sum;
  }

  private store(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  // Key objects (node:crypto KeyObject, WebCrypto CryptoKey) are not data: leave them as they are.
  if (!(Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype || value instanceof Map || value instanceof Set)) return value;
  if (value instanceof Map || value instanceof Set) return value;
  for (const member of Object.values(value)) deepFreeze(member);
  return Object.freeze(value);
}
