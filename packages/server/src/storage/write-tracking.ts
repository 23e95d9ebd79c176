import type {
  CompiledQuery,
  DatabaseConnection,
  Dialect,
  Driver,
  OperationNode,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { AsyncLocalStorage } from 'node:async_hooks';
import { WrappedDialect } from './wrapped-dialect.js';

/** Set while a background worker (not a request) runs: its statements are counted apart. */
const backgroundWork = new AsyncLocalStorage<true>();

/**
 * Runs `work` (and everything it awaits or schedules) as a background worker's: its statements count in
 * `counts.background`, not `counts.queries`. What a request costs the database is then read from `queries` alone,
 * whatever a worker polling beside it sends (a test counting one login's statements once counted a poll in it).
 */
export function inBackground<T>(work: () => T): T {
  return backgroundWork.run(true, work);
}

/**
 * A Kysely dialect around another that reports which tables every committed write touched: at once for a
 * statement outside a transaction, at COMMIT for those inside one (nothing on ROLLBACK). The one place where
 * the configuration cache (config-cache.ts) learns of changes, whichever repository or module wrote them.
 */
export class WriteTrackingDialect extends WrappedDialect {
  /**
   * Statements run through this dialect (transaction control excluded): `queries` outside background workers (what
   * requests cost the database), `background` inside them (inBackground).
   */
  readonly counts = { queries: 0, background: 0 };

  constructor(
    inner: Dialect,
    private readonly onCommitted: (tables: Set<string>) => void,
  ) {
    super(inner);
  }

  createDriver(): Driver {
    return new WriteTrackingDriver(this.inner.createDriver(), this.onCommitted, this.counts);
  }
}

class TrackedConnection implements DatabaseConnection {
  /** Tables written in the open transaction; null outside one. */
  pending: Set<string> | null = null;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly onCommitted: (tables: Set<string>) => void,
    private readonly counts: { queries: number; background: number },
  ) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (backgroundWork.getStore()) this.counts.background++;
    else this.counts.queries++;
    const tables = writtenTables(compiledQuery);
    const result = await this.inner.executeQuery<R>(compiledQuery);
    if (tables) {
      if (this.pending) for (const t of tables) this.pending.add(t);
      else this.onCommitted(tables);
    }
    return result;
  }

  streamQuery<R>(compiledQuery: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(compiledQuery, chunkSize);
  }
}

class WriteTrackingDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, TrackedConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly onCommitted: (tables: Set<string>) => void,
    private readonly counts: { queries: number; background: number },
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let tracked = this.wrapped.get(connection);
    if (!tracked) {
      tracked = new TrackedConnection(connection, this.onCommitted, this.counts);
      this.wrapped.set(connection, tracked);
    }
    return tracked;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const tracked = connection as TrackedConnection;
    await this.inner.beginTransaction(tracked.inner, settings);
    tracked.pending = new Set();
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    const written = tracked.pending;
    tracked.pending = null;
    try {
      await this.inner.commitTransaction(tracked.inner);
    } finally {
      // Also when COMMIT failed: whether it took effect is not known, and a needless reload is harmless.
      if (written?.size) this.onCommitted(written);
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    tracked.pending = null;
    await this.inner.rollbackTransaction(tracked.inner);
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.savepoint!((connection as TrackedConnection).inner, name, compile);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    // What was written since the savepoint is undone; keeping its tables only costs a needless reload.
    await this.inner.rollbackToSavepoint!((connection as TrackedConnection).inner, name, compile);
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.releaseSavepoint!((connection as TrackedConnection).inner, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as TrackedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

const RAW_WRITE = /^\s*(?:with\b[\s\S]*?\)\s*)?(insert\s+(?:or\s+\w+\s+)?into|update|delete\s+from|replace\s+into)\s+["`]?(\w+)/i;
const RAW_SCHEMA = /^\s*(create|alter|drop|truncate)\b/i;

/** The tables a statement writes, '*' when it cannot tell; null for a statement that writes nothing. */
export function writtenTables(compiledQuery: CompiledQuery): Set<string> | null {
  const node = compiledQuery.query as OperationNode & Record<string, unknown>;
  switch (node.kind) {
    case 'SelectQueryNode':
      return null;
    case 'InsertQueryNode':
      return tablesOf([node.into]);
    case 'UpdateQueryNode':
      return tablesOf([node.table]);
    case 'DeleteQueryNode':
      return tablesOf(((node.from as { froms?: unknown[] } | undefined)?.froms ?? []) as unknown[]);
    case 'MergeQueryNode':
      return tablesOf([node.into]);
    default: {
      const text = compiledQuery.sql;
      // A read, `WITH RECURSIVE … SELECT` included (the groups' role walk), unless it holds a write.
      if (/^\s*(select|pragma|explain|with)\b/i.test(text) && !/\b(insert|update|delete)\b/i.test(text)) return null;
      const write = RAW_WRITE.exec(text);
      if (write) return new Set([write[2].toLowerCase()]);
      if (RAW_SCHEMA.test(text)) return new Set(['*']);
      return /^\s*(begin|commit|rollback|savepoint|release)\b/i.test(text) ? null : new Set(['*']);
    }
  }
}

function tablesOf(nodes: unknown[]): Set<string> {
  const tables = new Set<string>();
  for (const node of nodes) {
    const name = tableName(node);
    tables.add(name ?? '*');
  }
  return tables.size ? tables : new Set(['*']);
}

/** A TableNode's name, or an aliased one's. */
function tableName(node: unknown): string | null {
  const n = node as { kind?: string; table?: { identifier?: { name?: string } }; node?: unknown } | undefined;
  if (n?.kind === 'TableNode') return n.table?.identifier?.name ?? null;
  if (n?.kind === 'AliasNode') return tableName(n.node);
  return null;
}
