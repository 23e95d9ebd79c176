import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { migrations } from './migrations.js';
import { defaultSqliteDriver, openSqliteDriver, type SqliteDriverName } from './sqlite-driver.js';

export type { SqliteDriverName } from './sqlite-driver.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  dialect: 'sqlite' | 'postgres';
  /** The library under Kysely for SQLite (see sqlite-driver.ts); absent for PostgreSQL. */
  sqliteDriver?: SqliteDriverName;
  close(): Promise<void>;
}

const provider: MigrationProvider = { getMigrations: async () => migrations };

export interface OpenDatabaseOptions {
  /** Defaults to node:sqlite where this Node has it, else better-sqlite3; tests and the bench pick one. */
  sqliteDriver?: SqliteDriverName;
}

/** Opens `sqlite:<path>` (or `sqlite::memory:`) or `postgres://…` and brings the schema up to date. */
export async function openDatabase(url: string, options: OpenDatabaseOptions = {}): Promise<DatabaseHandle> {
  const handle =
    url.startsWith('postgres://') || url.startsWith('postgresql://')
      ? await openPostgres(url)
      : await openSqlite(url, options.sqliteDriver ?? defaultSqliteDriver());
  const { error, results } = await new Migrator({ db: handle.db, provider }).migrateToLatest();
  if (error) {
    await handle.close();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message}`);
  }
  return handle;
}

async function openSqlite(url: string, driver: SqliteDriverName): Promise<DatabaseHandle> {
  if (!url.startsWith('sqlite:')) {
    throw new Error(`unsupported database URL "${url}": use sqlite:<path> or postgres://…`);
  }
  const location = url.slice('sqlite:'.length);
  const inMemory = location === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(location)), { recursive: true });
  const database = await openSqliteDriver(inMemory ? ':memory:' : resolve(location), driver);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  return { db, dialect: 'sqlite', sqliteDriver: driver, close: () => db.destroy() };
}

async function openPostgres(url: string): Promise<DatabaseHandle> {
  const pg = await import('pg');
  // int8 columns hold epoch milliseconds, well inside Number's exact range.
  pg.default.types.setTypeParser(20, (value: string) => Number(value));
  const pool = new pg.default.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {
    // An idle client's connection dropped; the pool replaces it on next use.
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, dialect: 'postgres', close: () => db.destroy() };
}
