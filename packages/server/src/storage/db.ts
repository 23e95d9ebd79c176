import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { migrations } from './migrations.js';
import { defaultSqliteDriver, ImmediateTransactionSqliteDialect, openSqliteDriver, type SqliteDriverName, type StatementCache } from './sqlite-driver.js';
import { ConfigCache, type ConfigCacheOptions } from './config-cache.js';
import { WriteTrackingDialect } from './write-tracking.js';
import type { Logger } from '@realmgate/spi';
import type { Pool } from 'pg';
import { DependencyState } from '../store/index.js';
import { AvailabilityDialect } from './availability.js';

export type { SqliteDriverName } from './sqlite-driver.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  dialect: 'sqlite' | 'postgres';
  /** The library under Kysely for SQLite (see sqlite-driver.ts); absent for PostgreSQL. */
  sqliteDriver?: SqliteDriverName;
  /** SQLite only: the prepared statements kept for reuse, and how many were prepared. */
  statements?: StatementCache;
  /** Configuration the hot paths read, invalidated by every committed write (write-tracking.ts). */
  cache: ConfigCache;
  /** Statements sent to the database since open (transaction control excluded). */
  counts: { queries: number; background: number };
  /** Up or down as the last statement found it; a lost connection is logged once per outage, here. */
  state: DependencyState;
  close(): Promise<void>;
}

/** How long a request may wait on PostgreSQL; see the options dbAcquireTimeoutMs and dbStatementTimeoutMs. */
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 5000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000;

const provider: MigrationProvider = { getMigrations: async () => migrations };

export interface OpenDatabaseOptions {
  /** Defaults to node:sqlite where this Node has it, else better-sqlite3; tests and the bench pick one. */
  sqliteDriver?: SqliteDriverName;
  cache?: ConfigCacheOptions;
  /** Where an outage is said (once when it starts, once when it ends); silent when not given. */
  logger?: Logger;
  /** PostgreSQL: longest wait for a pooled connection (all busy, or the database not answering); 0 waits for ever. */
  acquireTimeoutMs?: number;
  /** PostgreSQL: longest a statement may run, lock waits included (its statement_timeout); 0 for none. */
  statementTimeoutMs?: number;
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Opens `sqlite:<path>` (or `sqlite::memory:`) or `postgres://…` and brings the schema up to date. */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<DatabaseHandle> {
  const state = new DependencyState('database', options.logger ?? silent);
  const handle =
    url.startsWith('postgres://') || url.startsWith('postgresql://')
      ? await openPostgres(url, new ConfigCache(options.cache), state, options)
      : await openSqlite(url, options.sqliteDriver ?? defaultSqliteDriver(), new ConfigCache(options.cache), state);
  const { error, results } = await new Migrator({ db: handle.db, provider }).migrateToLatest();
  if (error) {
    await handle.close();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message}`);
  }
  return handle;
}

async function openSqlite(url: string, driver: SqliteDriverName, cache: ConfigCache, state: DependencyState): Promise<DatabaseHandle> {
  if (!url.startsWith('sqlite:')) {
    throw new Error(`unsupported database URL "${url}": use sqlite:<path> or postgres://…`);
  }
  const location = url.slice('sqlite:'.length);
  const inMemory = location === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(location)), { recursive: true });
  const database = await openSqliteDriver(inMemory ? ':memory:' : resolve(location), driver);
  const dialect = tracked(new ImmediateTransactionSqliteDialect(database), cache, state);
  const db = new Kysely<Database>({ dialect });
  const close = async () => {
    await db.destroy();
    await database.closed();
  };
  return { db, dialect: 'sqlite', sqliteDriver: driver, statements: database, cache, counts: dialect.counts, state, close };
}

async function openPostgres(url: string, cache: ConfigCache, state: DependencyState, options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  const pg = await import('pg');
  // int8 columns hold epoch milliseconds, well inside Number's exact range.
  pg.default.types.setTypeParser(20, (value: string) => Number(value));
  const pool = new pg.default.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS,
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
  });
  // Counted, not an outage by itself: the statements decide (availability.ts), so that idle connections dropping
  // one by one while new ones already work do not log the database going down and up again.
  const lost = () => void state.connectionsLost++;
  // An idle client's connection dropped: the pool removes it and connects a new one on next use.
  pool.on('error', lost);
  const opened = new WeakMap<object, number>();
  pool.on('connect', (client) => {
    opened.set(client, performance.now());
    // A checked-out client's connection dropped between statements (a restart, pg_terminate_backend): the pool's
    // listener covers idle clients only, and an 'error' nobody listens to ends the process. The statement that uses
    // the client next fails (503), and the pool drops the client when it is released.
    client.on('error', lost);
  });
  const dialect = tracked(new PostgresDialect({ pool: withoutClientsBefore(pool, opened, state) }), cache, state);
  const db = new Kysely<Database>({ dialect });
  return { db, dialect: 'postgres', cache, counts: dialect.counts, state, close: () => db.destroy() };
}

/**
 * `pool`, never handing out a client opened before the latest outage began: PostgreSQL ends the backends of a restart
 * or pg_terminate_backend one by one, and the pool hears that a client's connection dropped only when it next reads
 * it, so such a client may be broken without knowing yet (and may work a few statements more first). It is closed
 * instead, and another taken, so that a request after the database's return does not fail on the outage's leftovers,
 * nor have them logged as an outage of their own.
 */
function withoutClientsBefore(pool: Pool, opened: WeakMap<object, number>, state: DependencyState) {
  return {
    async connect() {
      for (;;) {
        const client = await pool.connect();
        if (!state.predatesOutage(opened.get(client) ?? Number.POSITIVE_INFINITY)) return client;
        // An error given back removes the client from the pool and closes it.
        client.release(new Error('opened before the latest database outage'));
      }
    },
    end: () => pool.end(),
  };
}

const tracked = (dialect: ImmediateTransactionSqliteDialect | PostgresDialect, cache: ConfigCache, state: DependencyState) =>
  new WriteTrackingDialect(new AvailabilityDialect(dialect, state), (tables) => cache.tablesWritten(tables));
