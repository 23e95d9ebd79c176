import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Storage } from '../src/storage/index.js';
import { DependencyUnavailableError, RedisStore } from '../src/store/index.js';
import { FaultProxy } from './support/fault-proxy.js';
import { adminToken, api, createPgDatabase, eventually, pgUrl, redisUrl, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 34: a database or shared store that goes away (restarted, killed, connections terminated, hung) costs
 * the requests that need it a 503 with Retry-After, never the process and never a 500, and the node serves again
 * as soon as it is back. Each dependency is reached through a FaultProxy, so the shared PostgreSQL and Redis are
 * never touched.
 */

const port = (url: string) => Number(new URL(url).port);

interface Captured {
  level: string;
  message: string;
  fields?: Record<string, unknown>;
}

function capturingLogger() {
  const lines: Captured[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, fields });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

/** A RedisStore reaching the shared Redis through `proxy`, under keys of its own, giving up on a command after 300 ms. */
const storeThrough = (proxy: FaultProxy, logger: ReturnType<typeof capturingLogger>['logger'], name: string) =>
  new RedisStore({ url: proxy.url(redisUrl), logger, keyPrefix: `${name}:${process.pid}:${Date.now()}:`, commandTimeoutMs: 300 });

const password = (username: string, secret: string) => ({ grant_type: 'password', client_id: 'admin-cli', username, password: secret });

describe('PostgreSQL connections lost under a checked-out client', () => {
  let proxy: FaultProxy;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let storage: Storage;
  const log = capturingLogger();

  beforeAll(async () => {
    database = await createPgDatabase();
    proxy = await FaultProxy.start(port(pgUrl));
    storage = await Storage.open(proxy.url(database.url), { logger: log.logger });
  });
  afterAll(async () => {
    await storage?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('fails the transaction holding the client with DependencyUnavailableError, does not crash, and the pool connects again', async () => {
    const transaction = storage.transaction(async (trx) => {
      await trx.selectFrom('realm').select('id').execute();
      // The connection dies between two statements, while the client is checked out: pg emits 'error' on it,
      // which nobody listened to before (an uncaught exception, the process gone).
      await proxy.cut();
      await eventually(() => storage.state.connectionsLost > 0);
      await trx.selectFrom('realm').select('id').execute();
    });
    await expect(transaction).rejects.toBeInstanceOf(DependencyUnavailableError);
    // The next statement gets a new connection.
    expect(await storage.db.selectFrom('realm').select('id').execute()).toEqual(expect.any(Array));
    expect(storage.state.up).toBe(true);
    // One line when the outage began and one when it ended, not one per failed statement.
    expect(log.lines.filter((l) => l.level === 'error').map((l) => l.message)).toEqual(['database unavailable: requests that need it answer 503 until it is back']);
    expect(log.lines.filter((l) => l.level === 'info').map((l) => l.message)).toEqual(['database available again']);
  });
});

describe('a node whose PostgreSQL goes away and comes back', () => {
  let proxy: FaultProxy;
  let database: Awaited<ReturnType<typeof createPgDatabase>>;
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    database = await createPgDatabase();
    proxy = await FaultProxy.start(port(pgUrl));
    t = await startServer({ config: { REALMGATE_DB_URL: proxy.url(database.url) } });
    token = await adminToken(t.url);
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 with Retry-After while it is down, says so at /health/ready, and serves again once it is back', async () => {
    const creations = Array.from({ length: 8 }, (_, i) => api(t.url, 'POST', '/admin/realms/master/users', token, { username: `under-load-${i}`, enabled: true }));
    await proxy.refuse();
    const during = await Promise.all(creations);
    // Each one either committed before the cut or was refused as unavailable: never a 500.
    for (const response of during) expect([201, 503]).toContain(response.status);

    const refused = await api(t.url, 'POST', '/admin/realms/master/users', token, { username: 'while-down', enabled: true });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body).toMatchObject({ error: 'temporarily_unavailable', errorMessage: 'The database is unavailable; try again shortly' });
    const ready = await api(t.url, 'GET', '/health/ready', null);
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toContainEqual({ name: 'database', status: 'DOWN' });
    expect((await api(t.url, 'GET', '/metrics', null)).body).toMatch(/^realmgate_database_up 0$/m);

    proxy.restore();
    const created = await api(t.url, 'POST', '/admin/realms/master/users', token, { username: 'after-return', enabled: true });
    expect(created.status).toBe(201);
    expect((await api(t.url, 'GET', '/health/ready', null)).status).toBe(200);
    expect((await api(t.url, 'GET', '/metrics', null)).body).toMatch(/^realmgate_database_up 1$/m);
    // No stack per request: the outage is one line, the requests it failed none.
    expect(t.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
    expect(t.logs.filter((l) => l.msg === 'database unavailable: requests that need it answer 503 until it is back')).toHaveLength(1);
  });
});

describe('RedisStore while Redis is down', () => {
  let proxy: FaultProxy;
  let store: RedisStore;
  const log = capturingLogger();

  beforeAll(async () => {
    proxy = await FaultProxy.start(port(redisUrl));
    store = storeThrough(proxy, log.logger, 'outage-test');
    await store.set('warm', '1', 60_000);
  });
  afterEach(() => proxy.restore());
  afterAll(async () => {
    await store?.close();
    await proxy?.close();
  });

  for (const fault of ['refuse', 'hang'] as const) {
    it(`(${fault}) counts in memory, refuses claims and reads as unavailable, and is back once Redis is`, async () => {
      const changes: boolean[] = [];
      const stop = store.onAvailabilityChange((up) => changes.push(up));
      if (fault === 'refuse') await proxy.refuse();
      else proxy.hang();
      // Counters: this process's memory, with one warning.
      expect(await store.recordHit(`hits-${fault}`, 60_000)).toBe(1);
      expect(await store.recordHit(`hits-${fault}`, 60_000)).toBe(2);
      expect(await store.countHits(`hits-${fault}`, 60_000)).toBe(2);
      expect(await store.increment(`count-${fault}`, 60_000)).toBe(1);
      // Claims and values fail closed, as a typed error the HTTP layer answers 503.
      await expect(store.setIfAbsent(`claim-${fault}`, '1', 60_000)).rejects.toBeInstanceOf(DependencyUnavailableError);
      await expect(store.get('warm')).rejects.toBeInstanceOf(DependencyUnavailableError);
      await expect(store.ping()).rejects.toBeInstanceOf(DependencyUnavailableError);
      expect(store.state.up).toBe(false);
      expect(log.lines.filter((l) => l.level === 'warn' && l.message.startsWith('Redis unavailable: rate limits'))).toHaveLength(fault === 'refuse' ? 1 : 2);

      proxy.restore();
      await eventually(() => store.state.up);
      expect(changes).toEqual([false, true]);
      expect(await store.get('warm')).toBe('1');
      expect(await store.setIfAbsent(`claim-${fault}`, '1', 60_000)).toBe(true);
      stop();
    });
  }
});

describe('RedisStore whose Redis does not answer at first', () => {
  let proxy: FaultProxy;
  let store: RedisStore;
  const log = capturingLogger();

  beforeEach(async () => {
    proxy = await FaultProxy.start(port(redisUrl));
    // Silent from the first byte: connections are accepted and nothing comes back (a Redis still loading, a busy
    // machine), so the store's first operation times out before either connection was ever ready.
    proxy.hang();
    store = storeThrough(proxy, log.logger, 'first-answer-test');
  });
  afterEach(async () => {
    await store?.close();
    await proxy?.close();
  });

  /** Up again by itself once Redis answers; then a subscription is made and hears what is published. */
  async function recoversAndSubscribes(changes: boolean[]): Promise<void> {
    expect(store.state.up).toBe(false);
    proxy.restore();
    // A precondition's bound, not a measure: the first connection through the proxy can take seconds on a loaded machine.
    await eventually(() => store.state.up, 30_000);
    expect(changes).toEqual([false, true]);
    const heard: string[] = [];
    await store.subscribe('after-return', (message) => heard.push(message));
    await store.publish('after-return', 'hello');
    await eventually(() => heard.length > 0);
    expect(heard).toEqual(['hello']);
    await store.ping();
  }

  it('recovers when its first operation is a SUBSCRIBE that times out (the commands connection never opened)', async () => {
    const changes: boolean[] = [];
    store.onAvailabilityChange((up) => changes.push(up));
    await expect(store.subscribe('first', () => {})).rejects.toBeInstanceOf(DependencyUnavailableError);
    await recoversAndSubscribes(changes);
  });

  it('recovers when its first command times out and a subscription is asked for while it is down (the subscriber never opened)', async () => {
    const changes: boolean[] = [];
    store.onAvailabilityChange((up) => changes.push(up));
    await expect(store.get('first')).rejects.toBeInstanceOf(DependencyUnavailableError);
    // Refused at once while down, before the subscriber connection has sent anything.
    await expect(store.subscribe('first', () => {})).rejects.toBeInstanceOf(DependencyUnavailableError);
    await recoversAndSubscribes(changes);
  });

  it('recovers when the commands connection answers and only the subscriber\'s first SUBSCRIBE times out', async () => {
    proxy.restore();
    await store.set('warm', '1', 60_000);
    const changes: boolean[] = [];
    store.onAvailabilityChange((up) => changes.push(up));
    // The subscriber connection is opened by this SUBSCRIBE, while Redis is silent.
    proxy.hang();
    await expect(store.subscribe('first', () => {})).rejects.toBeInstanceOf(DependencyUnavailableError);
    await recoversAndSubscribes(changes);
    expect(await store.get('warm')).toBe('1');
  });
});

describe('a node whose Redis does not answer at start', () => {
  let proxy: FaultProxy;
  let t: TestServer;

  beforeAll(async () => {
    proxy = await FaultProxy.start(port(redisUrl));
    proxy.hang();
    t = await startServer({ config: { REALMGATE_REDIS_URL: proxy.url(redisUrl) } });
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  it('reports the shared store DOWN while Redis is silent, then UP once it answers, with the configuration cache subscribed', async () => {
    const cache = t.server.context.storage.cache;
    // The configuration cache's first SUBSCRIBE timed out: it reads from the database until subscribed.
    await eventually(() => t.logs.some((l) => l.msg === 'configuration cache: no subscription to invalidations yet; reading configuration from the database'), 30_000);
    expect(cache.bypass).toBe(true);
    const down = await api(t.url, 'GET', '/health/ready', null);
    expect(down.status).toBe(503);
    expect(down.body.checks).toContainEqual({ name: 'sharedStore', status: 'DOWN' });
    const invalidationsBefore = cache.snapshot().invalidations;

    proxy.restore();
    // A precondition's bound, not a measure (see above).
    await eventually(async () => (await api(t.url, 'GET', '/health/ready', null)).status === 200, 30_000);
    await eventually(() => !cache.bypass, 30_000);
    // Subscribing dropped whatever was read before the subscription (an invalidate-all).
    expect(cache.snapshot().invalidations).toBeGreaterThan(invalidationsBefore);
    expect((await tokenRequest(t.url, 'master', password('admin', 'admin-test-password'))).status).toBe(200);
    expect(t.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
  });
});

describe('a node whose Redis goes away (killed, then hung)', () => {
  let proxy: FaultProxy;
  let t: TestServer;

  beforeAll(async () => {
    proxy = await FaultProxy.start(port(redisUrl));
    t = await startServer({ config: { REALMGATE_REDIS_URL: proxy.url(redisUrl) } });
    // A precondition, not a measure: on a loaded machine the first Redis connection through the proxy can take seconds
    // (30 s was not enough once, in a CI run of 2026-11-29 with both cores 90% busy; the file then passed alone in 1 s).
    // Failing, it names the check that stayed DOWN (twice in CI on 2026-11-29 in the full suite, never alone).
    let last: unknown = null;
    await eventually(async () => {
      const ready = await api(t.url, 'GET', '/health/ready', null);
      last = ready.body;
      return ready.status === 200;
    }, 50_000).catch(() => {
      throw new Error(`not ready through the proxy: ${JSON.stringify(last)}; server log: ${JSON.stringify(t.logs.slice(-20)).slice(0, 3000)}`);
    });
  }, 90_000);
  afterEach(() => proxy.restore());
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
  });

  for (const fault of ['refuse', 'hang'] as const) {
    it(`(${fault}) keeps password sign-in working, refuses a code with 503 + Retry-After, and says so at /health/ready and /metrics`, async () => {
      if (fault === 'refuse') await proxy.refuse();
      else proxy.hang();
      // The per-address brute-force count degrades to this node's memory: sign-in works.
      expect((await tokenRequest(t.url, 'master', password('admin', 'admin-test-password'))).status).toBe(200);
      const wrong = await tokenRequest(t.url, 'master', password('admin', 'not-the-password'));
      expect(wrong.status).toBe(400);
      // A single-use code cannot be claimed: fail closed, and say when to come back.
      const response = await fetch(`${t.url}/realms/master/protocol/openid-connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: 'admin-cli', code: 'some-code', redirect_uri: 'http://127.0.0.1/cb' }),
      });
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ error: 'temporarily_unavailable' });
      const ready = await api(t.url, 'GET', '/health/ready', null);
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toEqual([
        { name: 'database', status: 'UP' },
        { name: 'sharedStore', status: 'DOWN' },
      ]);
      const metrics = (await api(t.url, 'GET', '/metrics', null)).body as string;
      expect(metrics).toMatch(/^realmgate_shared_store_up 0$/m);
      expect(metrics).toMatch(/^realmgate_shared_store_counter_fallbacks_total [1-9]/m);

      proxy.restore();
      await eventually(async () => (await api(t.url, 'GET', '/health/ready', null)).status === 200);
      expect((await tokenRequest(t.url, 'master', password('admin', 'admin-test-password'))).status).toBe(200);
      expect(t.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
    });
  }
});

describe('two nodes: a change made while Redis was down is seen on the other node once it is back', () => {
  let proxy: FaultProxy;
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    proxy = await FaultProxy.start(port(redisUrl));
    const shared = { REALMGATE_REDIS_URL: proxy.url(redisUrl), REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' };
    a = await startServer({ database: 'postgres', config: shared });
    b = await startServer({ config: { ...shared, REALMGATE_DB_URL: a.server.context.config.dbUrl } });
    for (const node of [a, b]) await eventually(async () => (await api(node.url, 'GET', '/health/ready', null)).status === 200);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await proxy?.close();
  });

  it('refuses on node B a user disabled on node A during the outage, as soon as B is ready again', async () => {
    const token = await adminToken(a.url);
    const created = await api(a.url, 'POST', '/admin/realms/master/users', token, {
      username: 'outage-user',
      enabled: true,
      credentials: [{ type: 'password', value: 'outage-password-1', temporary: false }],
    });
    expect(created.status).toBe(201);
    const userId = (created.headers.get('location') ?? '').split('/').pop()!;
    // Node B holds the user in its configuration cache.
    expect((await tokenRequest(b.url, 'master', password('outage-user', 'outage-password-1'))).status).toBe(200);
    expect((await tokenRequest(b.url, 'master', password('outage-user', 'outage-password-1'))).status).toBe(200);

    await proxy.refuse();
    const adminTokenA = await adminToken(a.url);
    expect((await api(a.url, 'PUT', `/admin/realms/master/users/${userId}`, adminTokenA, { enabled: false })).status).toBe(204);
    proxy.restore();

    await eventually(async () => (await api(b.url, 'GET', '/health/ready', null)).status === 200);
    const after = await tokenRequest(b.url, 'master', password('outage-user', 'outage-password-1'));
    expect(after.status).toBe(400);
    expect(after.body.error).toBe('invalid_grant');
  });
});
