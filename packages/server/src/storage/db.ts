import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import { migrations } from './migrations.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  dialect: 'sqlite' | 'postgres';
  close(): Promise<void>;
}

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Opens `sqlite:<path>` (or `sqlite::memory:`) or `postgres://…` and brings the schema up to date. */
export async function openDatabase(url: string): Promise<DatabaseHandle> {
  const handle = url.startsWith('postgres://') || url.startsWith('postgresql://') ? await openPostgres(url) : await openSqlite(url);
  const { error, results } = await new Migrator({ db: handle.db, provider }).migrateToLatest();
  if (error) {
    await handle.close();
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message}`);
  }
  return handle;
}

async function openSqlite(url: string): Promise<DatabaseHandle> {
  if (!url.startsWith('sqlite:')) {
    throw new Error(`unsupported database URL "${url}": use sqlite:<path> or postgres://…`);
  }
  const { default: SQLite } = await import('better-sqlite3');
  const location = url.slice('sqlite:'.length);
  const inMemory = location === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(location)), { recursive: true });
  const sqlite = new SQLite(inMemory ? ':memory:' : resolve(location));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
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
