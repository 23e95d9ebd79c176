import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';

/**
 * Which SQLite library backs Kysely's SqliteDialect, chosen when the database opens:
 *
 * - `node:sqlite` (Node's built-in DatabaseSync) wherever it is there without a flag and has
 *   `StatementSync#columns()` (Node >= 22.16, 23.11, 24): nothing native to build or install, and no
 *   `node::ObjectWrap` finaliser. better-sqlite3 12's statements are ObjectWraps whose destructor aborts the
 *   whole process on Node 24 (`Assertion failed: (env) != nullptr` in `Statement::~Statement()`) when the
 *   garbage collector frees them outside a JavaScript context, e.g. V8's idle-time GC.
 * - `better-sqlite3` 12 elsewhere (Node 20, early 22): there the same destructor is harmless, and better-sqlite3
 *   13 (Node-API) would not load at all on Node 20.
 *
 * docs/architecture.md has the measurements behind this.
 */
export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

/** The subset of node:sqlite used here, typed locally: @types/node for Node 20 has no node:sqlite. */
interface NodeStatement {
  all(...parameters: unknown[]): unknown[];
  run(...parameters: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  iterate(...parameters: unknown[]): IterableIterator<unknown>;
  columns(): unknown[];
}
interface NodeDatabase {
  prepare(sql: string): NodeStatement;
  exec(sql: string): void;
  close(): void;
}
interface NodeSqliteModule {
  DatabaseSync: new (path: string) => NodeDatabase;
  StatementSync: { prototype: object };
}

let nodeSqlite: NodeSqliteModule | null | undefined;

/** node:sqlite when this Node has it in a usable form, else null. Loaded once. */
function loadNodeSqlite(): NodeSqliteModule | null {
  if (nodeSqlite !== undefined) return nodeSqlite;
  // Node 22 prints "ExperimentalWarning: SQLite is an experimental feature" on first load, on every start of the
  // server; Node 24 no longer does. Only that one warning is held back, and only while the module loads.
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (/SQLite is an experimental feature/.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const mod = process.getBuiltinModule('node:sqlite') as NodeSqliteModule | undefined;
    // columns() tells a reader from a writer without parsing SQL (Kysely needs `reader`); Node 22.13-22.15 lack it.
    nodeSqlite = mod && typeof (mod.StatementSync.prototype as { columns?: unknown }).columns === 'function' ? mod : null;
  } catch {
    nodeSqlite = null; // Node 22.5-22.12 without --experimental-sqlite
  } finally {
    process.emitWarning = emitWarning;
  }
  return nodeSqlite;
}

export function defaultSqliteDriver(): SqliteDriverName {
  return loadNodeSqlite() ? 'node:sqlite' : 'better-sqlite3';
}

/**
 * Kysely's SQLite dialect with every transaction begun IMMEDIATE: it takes the write lock at BEGIN, waiting for it
 * (busy_timeout) if the checkpoint thread holds it. A deferred transaction (Kysely's BEGIN) that read first and
 * then wrote would instead fail at once with SQLITE_BUSY ("database is locked") while the thread's RESTART holds the
 * lock: SQLite does not let a reader wait to become a writer. Nothing is lost by locking up front: the server has one
 * connection, and Kysely runs one transaction at a time on it.
 */
export class ImmediateTransactionSqliteDialect extends SqliteDialect {
  constructor(private readonly database: SqliteDatabase) {
    super({ database });
  }

  override createDriver(): Driver {
    return new ImmediateTransactionSqliteDriver({ database: this.database });
  }
}

class ImmediateTransactionSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** SQLite's own `wal_autocheckpoint` (pages), what a connection goes back to when the checkpoint thread fails. */
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;

/**
 * PRAGMAs both drivers run on open. The busy timeout first: the others read the file, and another connection may hold
 * it locked for a moment (a previous server's checkpoint thread closing as the last connection checkpoints and removes
 * the log under an exclusive lock). node:sqlite opens with no timeout at all, so `journal_mode` failed at once then.
 */
const PRAGMAS = ['busy_timeout = 5000', 'journal_mode = WAL', 'foreign_keys = ON', 'synchronous = NORMAL'];

/**
 * Opens `location` (a file path or `:memory:`) with the given driver, shaped as Kysely's SqliteDatabase. A file's
 * write-ahead log is checkpointed on a thread of its own (sqlite-checkpointer.ts); `checkpointThread: false` leaves
 * it to SQLite's automatic checkpoints instead (the bench's baseline).
 */
export async function openSqliteDriver(location: string, driver: SqliteDriverName, { checkpointThread = true } = {}): Promise<StatementCache> {
  const checkpointed = (pragma: (setting: string) => void, close: () => void): (() => Promise<void>) => {
    if (location === ':memory:' || !checkpointThread) {
      return async () => close();
    }
    pragma('wal_autocheckpoint = 0');
    const checkpointer = new SqliteCheckpointer(location, driver, () => pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT}`));
    return () => {
      const threadClosed = checkpointer.close();
      close();
      return threadClosed;
    };
  };
  if (driver === 'node:sqlite') {
    const mod = loadNodeSqlite();
    if (!mod) throw new Error(`node:sqlite is not usable on Node ${process.versions.node}: use better-sqlite3`);
    const database = new mod.DatabaseSync(location);
    for (const pragma of PRAGMAS) database.exec(`PRAGMA ${pragma}`);
    return new StatementCache({
      prepare: (sql) => new NodeSqliteStatement(translated(() => database.prepare(sql))),
      close: checkpointed((setting) => database.exec(`PRAGMA ${setting}`), () => database.close()),
    });
  }
  let SQLite: typeof import('better-sqlite3');
  try {
    ({ default: SQLite } = await import('better-sqlite3'));
  } catch (error) {
    // better-sqlite3 is an optional dependency: on a Node that has node:sqlite a failed native build is harmless.
    throw new Error(`better-sqlite3 is not installed for Node ${process.versions.node} (${(error as Error).message})`);
  }
  const database = new SQLite(location);
  for (const pragma of PRAGMAS) database.pragma(pragma);
  return new StatementCache({
    prepare: (sql) => database.prepare(sql) as unknown as SqliteStatement,
    close: checkpointed((setting) => database.pragma(setting), () => database.close()),
  });
}

/**
 * How many prepared statements one database keeps. Kysely prepares every query anew; reusing them saves the
 * prepare on each request (the same few hundred SQL texts recur) and leaves no statements for the GC to
 * finalise. Queries with a varying number of `in (?, …)` parameters are what the bound is for.
 */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * Both drivers behind Kysely's SqliteDatabase, with their prepared statements kept by SQL text (least recently
 * used evicted first, at STATEMENT_CACHE_SIZE). A statement is reused only after the previous use finished:
 * Kysely's SQLite driver runs one query at a time on its single connection.
 */
export class StatementCache implements SqliteDatabase {
  private readonly statements = new Map<string, SqliteStatement>();
  /** Statements prepared since open (a cache miss each); `hits` counts reuses. */
  prepared = 0;
  hits = 0;

  private closing: Promise<void> = Promise.resolve();

  constructor(private readonly driver: { prepare(sql: string): SqliteStatement; close(): Promise<void> }) {}

  get size(): number {
    return this.statements.size;
  }

  prepare(sql: string): SqliteStatement {
    const cached = this.statements.get(sql);
    if (cached) {
      this.hits++;
      // Most recently used last, so the first key is the one to evict.
      this.statements.delete(sql);
      this.statements.set(sql, cached);
      return cached;
    }
    const statement = this.driver.prepare(sql);
    this.prepared++;
    this.statements.set(sql, statement);
    if (this.statements.size > STATEMENT_CACHE_SIZE) this.statements.delete(this.statements.keys().next().value!);
    return statement;
  }

  /** Kysely's close (synchronous): the connection closes now; `closed()` waits for the checkpoint thread's as well. */
  close(): void {
    this.statements.clear();
    this.closing = this.driver.close();
  }

  /** Resolves once every connection to the file this opened is closed (see SqliteCheckpointer.close). */
  closed(): Promise<void> {
    return this.closing;
  }
}

class NodeSqliteStatement implements SqliteStatement {
  readonly reader: boolean;

  constructor(private readonly statement: NodeStatement) {
    // better-sqlite3's `reader`: the statement returns rows (SELECT, PRAGMA, INSERT … RETURNING).
    this.reader = statement.columns().length > 0;
  }

  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = translated(() => this.statement.all(...parameters));
    // node:sqlite's rows have a null prototype; the repositories and their callers expect plain objects
    // (hasOwnProperty, spreading into representations), as better-sqlite3 gives.
    for (let i = 0; i < rows.length; i++) rows[i] = { ...(rows[i] as object) };
    return rows;
  }

  run(parameters: ReadonlyArray<unknown>): { changes: number | bigint; lastInsertRowid: number | bigint } {
    return translated(() => this.statement.run(...parameters));
  }

  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    const rows = translated(() => this.statement.iterate(...parameters));
    for (const row of rows) yield { ...(row as object) };
  }
}

/**
 * SQLite's extended result codes by number, named as better-sqlite3 names them (`SQLITE_CONSTRAINT_UNIQUE`):
 * node:sqlite reports every SQLite failure as `ERR_SQLITE_ERROR` with the number in `errcode`, while the
 * repositories (codec.ts isUniqueViolation) read better-sqlite3's `code`.
 */
const RESULT_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  2: 'SQLITE_INTERNAL',
  3: 'SQLITE_PERM',
  4: 'SQLITE_ABORT',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM',
  8: 'SQLITE_READONLY',
  9: 'SQLITE_INTERRUPT',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  12: 'SQLITE_NOTFOUND',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
  17: 'SQLITE_SCHEMA',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE',
  25: 'SQLITE_RANGE',
  26: 'SQLITE_NOTADB',
  261: 'SQLITE_BUSY_RECOVERY',
  262: 'SQLITE_LOCKED_SHAREDCACHE',
  517: 'SQLITE_BUSY_SNAPSHOT',
  773: 'SQLITE_BUSY_TIMEOUT',
  275: 'SQLITE_CONSTRAINT_CHECK',
  531: 'SQLITE_CONSTRAINT_COMMITHOOK',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1043: 'SQLITE_CONSTRAINT_FUNCTION',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  1811: 'SQLITE_CONSTRAINT_TRIGGER',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
  2323: 'SQLITE_CONSTRAINT_VTAB',
  2579: 'SQLITE_CONSTRAINT_ROWID',
  3091: 'SQLITE_CONSTRAINT_DATATYPE',
};

function translated<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    const e = error as { code?: string; errcode?: number };
    if (e && e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
      e.code = RESULT_CODES[e.errcode] ?? RESULT_CODES[e.errcode & 0xff] ?? 'SQLITE_ERROR';
    }
    throw error;
  }
}
