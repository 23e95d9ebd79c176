import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { migrations } from './migrations.js';
import { defaultSqliteDriver, ImmediateTransactionSqliteDialect, openSqliteDriver, type SqliteDriverName, type StatementCache } from './sqlite-driver.js';
import { ConfigCache, type ConfigCacheOptions } from './config-cache.js';
import { WriteTrackingDialect } from './write-tracking.js';

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
  counts: { queries: number };
  close(): Promise<void>;
}

const provider: MigrationProvider = { getMigrations: async () => migrations };

export interface OpenDatabaseOptions {
  /** Defaults to node:sqlite where this Node has it, else better-sqlite3; tests and the bench pick one. */
  sqliteDriver?: SqliteDriverName;
  cache?: ConfigCacheOptions;
}

/** Opens `sqlite:<path>` (or `sqlite::memory:`) or `postgres://…` and brings the schema up to date. */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<DatabaseHandle> {
  const handle =
    url.startsWith('postgres://') || url.startsWith('postgresql://')
      ? await openPostgres(url, new ConfigCache(options.cache))
      : await openSqlite(url, options.sqliteDriver ?? defaultSqliteDriver(), new ConfigCache(options.cache));
  const { error, results } = await new Migrator({ db: handle.db, provider }).migrateToLatest();
  if (error) {
    await handle.close();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message}`);
  }
  return handle;
}

async function openSqlite(url: string, driver: SqliteDriverName, cache: ConfigCache): Promise<DatabaseHandle> {
  if (!url.startsWith('sqlite:')) {
    throw new Error(`unsupported database URL "${url}": use sqlite:<path> or postgres://…`);
  }
  const location = url.slice('sqlite:'.length);
  const inMemory = location === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(location)), { recursive: true });
  const database = await openSqliteDriver(inMemory ? ':memory:' : resolve(location), driver);
  const dialect = tracked(new ImmediateTransactionSqliteDialect(database), cache);
  const db = new Kysely<Database>({ dialect });
  const close = async () => {
    await db.destroy();
    await database.closed();
  };
  return { db, dialect: 'sqlite', sqliteDriver: driver, statements: database, cache, counts: dialect.counts, close };
}

async function openPostgres(url: string, cache: ConfigCache): Promise<DatabaseHandle> {
  const pg = await import('pg');
  // int8 columns hold epoch milliseconds, well inside Number's exact range.
  pg.default.types.setTypeParser(20, (value: string) => Number(value));
  const pool = new pg.default.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {
    // An idle client's connection dropped; the pool replaces it on next use.
  });
  const dialect = tracked(new PostgresDialect({ pool }), cache);
  const db = new Kysely<Database>({ dialect });
  return { db, dialect: 'postgres', cache, counts: dialect.counts, close: () => db.destroy() };
}

const tracked = (dialect: ImmediateTransactionSqliteDialect | PostgresDialect, cache: ConfigCache) =>
  new WriteTrackingDialect(dialect, (tables) => cache.tablesWritten(tables));
