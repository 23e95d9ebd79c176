import type { DatabaseIntrospector, Dialect, DialectAdapter, Driver, Kysely, QueryCompiler } from 'kysely';

/**
 * A Kysely dialect that wraps another's driver and takes the rest (compiler, adapter, introspector) from it as they
 * are: the base of the dialects that watch every statement (write tracking, availability).
 */
export abstract class WrappedDialect implements Dialect {
  constructor(protected readonly inner: Dialect) {}

  abstract createDriver(): Driver;

  createQueryCompiler(): QueryCompiler {
    return this.inner.createQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return this.inner.createAdapter();
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return this.inner.createIntrospector(db);
  }
}
