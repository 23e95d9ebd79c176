import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { WrappedDialect } from './wrapped-dialect.js';
import { DependencyUnavailableError, throwIfAbandoned, type DependencyState } from '../store/index.js';

/**
 * PostgreSQL's SQLSTATEs that say the database cannot serve now rather than that the statement is wrong:
 * class 08 (connection exception), 57P01-57P03 (terminated by an administrator, crash, starting up),
 * 53300 (too many connections), 57014 (statement timeout), 55P03 (lock not available).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300|57014|55P03)$/;
/** A statement that ran out of time (statement_timeout, lock_timeout): the database is up, only busy or locked. */
const TIMED_OUT_SQLSTATE = new Set(['57014', '55P03']);
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** node-postgres's own words for a lost connection or an acquisition that timed out (no code on these). */
const UNAVAILABLE_MESSAGE = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|not queryable|SQLITE_BUSY|database is locked/i;

/** A statement past its time, or a wait for a pooled connection past the acquisition timeout (all of them busy). */
function timedOut(error: unknown): boolean {
  return TIMED_OUT_SQLSTATE.has(String((error as { code?: unknown }).code)) || /timeout exceeded when trying to connect/.test(String((error as Error).message));
}

/** Whether `error` says the database cannot serve now (lost, refused, timed out, busy) rather than a bug or bad input. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DependencyUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code) || code === 'SQLITE_BUSY')) return true;
  return UNAVAILABLE_MESSAGE.test(error.message);
}

/**
 * A Kysely dialect around another whose every failure that means "the database cannot serve now" becomes a
 * DependencyUnavailableError (503 with Retry-After, no stack logged) and marks the database down in `state`
 * (one log line per outage); the next statement that succeeds marks it up again.
 *
 * One outage is one outage however its broken connections are found: a connection checked out before an outage
 * began and held through it (a transaction under way) may fail only after the database has come back, and that
 * failure counts with the outage that broke it, not as a new one. (Idle pooled connections open when it began are
 * not handed out again: storage/db.ts.)
 */
export class AvailabilityDialect extends WrappedDialect {
  constructor(
    inner: Dialect,
    private readonly state: DependencyState,
  ) {
    super(inner);
  }

  createDriver(): Driver {
    return new AvailabilityDriver(this.inner.createDriver(), this.state);
  }
}

async function guarded<T>(state: DependencyState, work: () => Promise<T>, connection?: GuardedConnection): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (error) {
    if (!isUnavailable(error)) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    // A timeout fails its request (503) but is no outage: counted (realmgate_database_timeouts_total), not logged
    // as the database going down and up again with every statement a lock holds up.
    if (timedOut(error)) state.timeouts++;
    else if (connection && state.predatesOutage(connection.checkedOutAt)) state.failedLate();
    else state.failed(reason);
    throw error instanceof DependencyUnavailableError ? error : new DependencyUnavailableError('database', `database unavailable: ${reason}`, 1, { cause: error });
  }
  state.succeeded();
  return result;
}

class GuardedConnection implements DatabaseConnection {
  /** When it was last handed out (performance.now()). */
  checkedOutAt = performance.now();

  constructor(
    readonly inner: DatabaseConnection,
    private readonly state: DependencyState,
  ) {}

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    return guarded(this.state, () => this.inner.executeQuery<R>(compiledQuery), this);
  }

  streamQuery<R>(compiledQuery: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(compiledQuery, chunkSize);
  }
}

class AvailabilityDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, GuardedConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly state: DependencyState,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    // A request whose client is gone (or whose time is up) starts no new database work.
    throwIfAbandoned();
    const connection = await guarded(this.state, () => this.inner.acquireConnection());
    let guardedConnection = this.wrapped.get(connection);
    if (!guardedConnection) {
      guardedConnection = new GuardedConnection(connection, this.state);
      this.wrapped.set(connection, guardedConnection);
    }
    guardedConnection.checkedOutAt = performance.now();
    return guardedConnection;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return guarded(this.state, () => this.inner.beginTransaction((connection as GuardedConnection).inner, settings), connection as GuardedConnection);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    // Nor commits what it started: Kysely rolls the transaction back when this throws.
    throwIfAbandoned();
    return guarded(this.state, () => this.inner.commitTransaction((connection as GuardedConnection).inner), connection as GuardedConnection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return guarded(this.state, () => this.inner.rollbackTransaction((connection as GuardedConnection).inner), connection as GuardedConnection);
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return guarded(this.state, () => this.inner.savepoint!((connection as GuardedConnection).inner, name, compile), connection as GuardedConnection);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return guarded(this.state, () => this.inner.rollbackToSavepoint!((connection as GuardedConnection).inner, name, compile), connection as GuardedConnection);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    return guarded(this.state, () => this.inner.releaseSavepoint!((connection as GuardedConnection).inner, name, compile), connection as GuardedConnection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as GuardedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
