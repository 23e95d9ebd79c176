import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Storage } from '../src/storage/index.js';
import { ConfigCache } from '../src/storage/config-cache.js';
import { DependencyUnavailableError, RequestAbandonedError, requestScope, throwIfAbandoned } from '../src/store/index.js';
import { FaultProxy } from './support/fault-proxy.js';
import { adminToken, api, createPgDatabase, pgUrl, startServer, type TestServer } from './support/server.js';

/** Issue 34, part 4: nothing a request does waits without bound, and a request nobody waits for commits nothing. */

describe('PostgreSQL timeouts', () => {
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let storage: Storage;

  beforeAll(async () => {
    database = await createPgDatabase();
    // The schema first, without the short timeouts: a migration is no request (one ran past 200 ms on a busy machine).
    await (await Storage.open(database.url)).close();
    storage = await Storage.open(database.url, { statementTimeoutMs: 200, acquireTimeoutMs: 200 });
  });
  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('ends a statement that runs past the statement timeout (a lock wait, a slow query) as unavailable', async () => {
    await expect(sql`select pg_sleep(30)`.execute(storage.db)).rejects.toBeInstanceOf(DependencyUnavailableError);
    // Counted, but the database is not down: a locked table must not read as an outage.
    expect(storage.state.timeouts).toBe(1);
    expect(storage.state.up).toBe(true);
    expect(await storage.db.selectFrom('realm').select('id').execute()).toEqual(expect.any(Array));
  });

  it('does not wait past the acquisition timeout for a pooled connection when all are busy', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Each holder tries again until it is in: on a loaded machine opening a connection can itself take longer than
    // the 200 ms acquisition timeout (a holder refused so failed the test once, with an unhandled rejection).
    const inside: Promise<void>[] = [];
    const holders = Array.from({ length: 10 }, () => {
      let entered!: () => void;
      inside.push(new Promise<void>((resolve) => (entered = resolve)));
      return (async () => {
        for (;;) {
          try {
            return await storage.transaction(async (trx) => {
              await trx.selectFrom('realm').select('id').execute();
              entered();
              await held;
            });
          } catch (error) {
            if (!(error instanceof DependencyUnavailableError)) throw error;
          }
        }
      })();
    });
    await Promise.all(inside);
    // Every one of the pool's ten connections is in a transaction: the eleventh statement cannot get one.
    await expect.poll(async () => {
      try {
        await storage.db.selectFrom('realm').select('id').execute();
        return 'served';
      } catch (error) {
        return error instanceof DependencyUnavailableError ? 'unavailable' : String(error);
      }
    }).toBe('unavailable');
    expect(storage.state.up).toBe(true);
    release();
    await Promise.all(holders);
    expect(await storage.db.selectFrom('realm').select('id').execute()).toEqual(expect.any(Array));
  });
});

describe.each(['sqlite', 'postgres'] as const)('a request whose client is gone (%s)', (kind) => {
  let database: Awaited<ReturnType<typeof createPgDatabase>> | undefined;
  let storage: Storage;

  beforeAll(async () => {
    database = kind === 'postgres' ? await createPgDatabase() : undefined;
    storage = await Storage.open(database?.url ?? 'sqlite::memory:');
  });
  afterAll(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('commits nothing it wrote after that, and starts no new statement', async () => {
    const controller = new AbortController();
    const name = `abandoned-${kind}`;
    await sql`create table if not exists abandon_probe (name text)`.execute(storage.db);
    const transaction = requestScope.run({ signal: controller.signal }, () =>
      storage.transaction(async (trx) => {
        await sql`insert into abandon_probe (name) values (${name})`.execute(trx);
        controller.abort('client gone');
      }),
    );
    await expect(transaction).rejects.toBeInstanceOf(RequestAbandonedError);
    await expect(requestScope.run({ signal: controller.signal }, () => storage.db.selectFrom('realm').select('id').execute())).rejects.toBeInstanceOf(RequestAbandonedError);
    expect((await sql`select name from abandon_probe`.execute(storage.db)).rows).toEqual([]);
  });
});

describe('a configuration-cache load started by a request whose client is gone', () => {
  it('still serves the other requests that share it', async () => {
    const cache = new ConfigCache();
    const gone = new AbortController();
    gone.abort('client gone');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // What a load does: the database driver refuses an abandoned request's statement (availability.ts).
    const load = async () => {
      await gate;
      throwIfAbandoned();
      return { name: 'realm' };
    };
    const abandoned = requestScope.run({ signal: gone.signal }, () => cache.get('realm:x', ['realm'], load));
    const other = cache.get('realm:x', ['realm'], load);
    release();
    expect(await other).toEqual({ name: 'realm' });
    expect(await abandoned).toEqual({ name: 'realm' });
  });
});

describe('a request past REALMGATE_REQUEST_TIMEOUT_MS', () => {
  let proxy: FaultProxy;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let t: TestServer;

  beforeAll(async () => {
    database = await createPgDatabase();
    proxy = await FaultProxy.start(Number(new URL(pgUrl).port));
    t = await startServer({ config: { REALMGATE_DB_URL: proxy.url(database.url), REALMGATE_REQUEST_TIMEOUT_MS: '2000', REALMGATE_DB_STATEMENT_TIMEOUT_MS: '0' } });
  });
  afterAll(async () => {
    proxy?.restore();
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('is answered 503 with Retry-After while the database does not answer, not left waiting', async () => {
    const token = await adminToken(t.url);
    proxy.hang();
    const response = await api(t.url, 'POST', '/admin/realms/master/users', token, { username: 'never-answered', enabled: true });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.body).toMatchObject({ error: 'temporarily_unavailable' });
    proxy.restore();
  });
});

describe('an HTTP request whose client goes while it waits on the database (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let t: TestServer;

  beforeAll(async () => {
    database = await createPgDatabase();
    t = await startServer({ config: { REALMGATE_DB_URL: database.url } });
  });
  afterAll(async () => {
    await t?.close();
    await database?.drop();
  });

  it('commits nothing it would have written after that: the user it was creating is not created', async () => {
    const token = await adminToken(t.url);
    const locker = new pg.Client({ connectionString: database.url });
    // Another client watches: inside the locker's transaction pg_stat_activity would be read once and kept.
    const watcher = new pg.Client({ connectionString: database.url });
    await Promise.all([locker.connect(), watcher.connect()]);
    try {
      // The user table locked against writes (reads go on): the creation's INSERT waits inside its transaction.
      await locker.query('begin');
      await locker.query('lock table user_entity in share mode');
      const serverSide = new Promise<Socket>((resolve) => t.server.app.server.once('connection', resolve));
      const request = httpRequest(`${t.url}/admin/realms/master/users`, {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
      request.on('error', () => {}); // the reset this test causes
      request.end(JSON.stringify({ username: 'left-behind', enabled: true }));
      const socket = await serverSide;
      const waiting = async () =>
        (
          await watcher.query<{ pid: number; inTransaction: boolean }>(
            `select pid, xact_start < query_start as "inTransaction" from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          )
        ).rows[0];
      await expect.poll(waiting).toEqual({ pid: expect.any(Number), inTransaction: true });
      const { pid } = (await waiting())!;
      // The client gives up; the server has seen it go once its side of the connection has closed.
      const closed = once(socket, 'close');
      request.destroy();
      await closed;
      await locker.query('rollback');
      // The INSERT runs now; the COMMIT after it is refused (rolled back), and so would any new connection be: once the
      // backend is out of the transaction, it has ended one way or the other.
      await expect
        .poll(async () => (await watcher.query<{ state: string }>('select state from pg_stat_activity where pid = $1', [pid])).rows[0]?.state ?? 'gone')
        .toMatch(/^(idle|gone)$/);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
    const found = await api(t.url, 'GET', '/admin/realms/master/users?username=left-behind&exact=true', token);
    expect(found.body).toEqual([]);
    // And nothing half-done stands in the way of the user being created by a request that is answered.
    expect((await api(t.url, 'POST', '/admin/realms/master/users', token, { username: 'left-behind', enabled: true })).status).toBe(201);
  });
});
