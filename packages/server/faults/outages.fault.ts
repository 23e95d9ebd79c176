import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, ADMIN_USERNAME, api, startServer, tokenRequest, type TestServer } from '../test/support/server.js';
import { missingBinaries, OwnPostgres, OwnRedis } from './services.js';

/**
 * Issue 34's fault suite (`npm run test:faults`): two nodes on one PostgreSQL and one Redis, both the suite's own
 * (services.ts), under a paced mixed load (password and client-credentials grants, admin user creation), while
 * PostgreSQL is restarted, its connections terminated, a table locked, Redis killed and hung. Asserted: no crash
 * (an uncaught error fails the run), no 500, recovery within a second of the dependency's return (measured and
 * printed), no acknowledged user lost, no permission stale after Redis is back.
 */

const missing = missingBinaries();
if (missing) {
  console.error(`\n${'!'.repeat(100)}\n!! FAULT SUITE SKIPPED: ${missing} not installed.\n${'!'.repeat(100)}\n`);
}

const STATEMENT_TIMEOUT_MS = 1500;
/** How long the table stays locked at least: well past the statement timeout. */
const LOCK_MS = 6000;
/** How long PostgreSQL stays stopped at least. */
const STOPPED_MS = 1500;
/**
 * The measured goals (recovery and stale permissions within a second of the dependency's return, no delivery
 * of a healthy receiver more than a second late) are figures, printed at the end against those goals: on a machine
 * shared with other work a wall-clock bound fails by luck. What is asserted is what must hold however slow the
 * machine: no 500, no crash, recovery at all, answers while the fault lasts, nothing lost, nothing stale.
 */
const figures: Record<string, number> = {};
/** The webhook outbox's lease (its default): how long a delivery whose node lost track of it waits to be sent again. */
const OUTBOX_LEASE_MS = 60_000;

/** The webhook provider in outbox mode, polling often: deliveries of LOGIN events to a healthy receiver. */
const WEBHOOK_ENV = { REALMGATE_WEBHOOK_MODE: 'outbox', REALMGATE_WEBHOOK_BACKOFF_JITTER_PERCENT: '0', REALMGATE_WEBHOOK_POLL_MS: '50' };
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Claimed deliveries on `url`'s node, and how many of them waited more than a second past their due time. */
async function lateness(url: string): Promise<{ claimed: number; overOneSecond: number }> {
  const text = (await api(url, 'GET', '/metrics', null)).body as string;
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? 0);
  const claimed = value(/^realmgate_outbox_claim_lateness_seconds_count\{provider="ext-event-webhook"\} (\d+)/m);
  const withinOne = value(/^realmgate_outbox_claim_lateness_seconds_bucket\{le="1",provider="ext-event-webhook"\} (\d+)/m);
  return { claimed, overOneSecond: claimed - withinOne };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `ok` every 10 ms from now; the time it took to be true. */
async function timeUntil(ok: () => Promise<boolean>, limitMs = 15_000): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await ok().catch(() => false)) return Math.round(performance.now() - started);
    if (performance.now() - started > limitMs) throw new Error(`not recovered within ${limitMs} ms`);
    await sleep(10);
  }
}

interface Outcome {
  op: string;
  node: number;
  status: number;
  ms: number;
  /** When it was sent and when answered (performance.now()). */
  startedAt: number;
  endedAt: number;
}

/** The paced mixed load: a few workers, each sending one request at a time to the nodes in turn. */
class Load {
  readonly outcomes: Outcome[] = [];
  readonly acknowledgedUsers: string[] = [];
  private running = false;
  private workers: Promise<void>[] = [];
  private created = 0;

  constructor(
    private readonly nodes: TestServer[],
    private readonly token: () => string,
  ) {}

  start(workers = 3): void {
    this.running = true;
    this.workers = Array.from({ length: workers }, (_, w) => this.work(w));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  /** Whether a request sent after `since` (performance.now()) has had an answer that matches: to wait for one while a fault lasts. */
  seen(since: number, matches: (o: Outcome) => boolean): Promise<boolean> {
    return Promise.resolve(this.outcomes.some((o) => o.startedAt > since && matches(o)));
  }

  /** Statuses seen since `from` (an index into outcomes). */
  statuses(from = 0): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const o of this.outcomes.slice(from)) counts[`${o.op} ${o.status}`] = (counts[`${o.op} ${o.status}`] ?? 0) + 1;
    return counts;
  }

  private async work(worker: number): Promise<void> {
    for (let i = worker; this.running; i++) {
      const node = i % this.nodes.length;
      const url = this.nodes[node].url;
      const op = (['password', 'client_credentials', 'create_user', 'hooked_login'] as const)[i % 4];
      const started = performance.now();
      let status: number;
      try {
        if (op === 'password') {
          status = (await tokenRequest(url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'load-user', password: 'load-password-1' })).status;
        } else if (op === 'hooked_login') {
          status = (await tokenRequest(url, 'hooks', { grant_type: 'password', client_id: 'app', username: `hook-user-${i % 5}`, password: 'hook-password-1' })).status;
        } else if (op === 'client_credentials') {
          status = (await tokenRequest(url, 'master', { grant_type: 'client_credentials', client_id: 'load-service', client_secret: 'load-service-secret' })).status;
        } else {
          const username = `load-${worker}-${++this.created}`;
          status = (await api(url, 'POST', '/admin/realms/master/users', this.token(), { username, enabled: true })).status;
          if (status === 201) this.acknowledgedUsers.push(username);
        }
      } catch {
        status = 0; // connection reset or refused: a node that is gone
      }
      const endedAt = performance.now();
      this.outcomes.push({ op, node, status, ms: Math.round(endedAt - started), startedAt: started, endedAt });
      await sleep(20);
    }
  }
}

describe.skipIf(missing !== null)('fault suite: two nodes, own PostgreSQL and Redis', () => {
  let postgres: OwnPostgres;
  let redis: OwnRedis;
  let dbUrl: string;
  let a: TestServer;
  let b: TestServer;
  let load: Load;
  let adminAccess = '';
  let refresher: NodeJS.Timeout;
  let providers: string;
  let receiver: Server;
  /** The webhook-id of each LOGIN delivery received (at least once: a delivery sent again has the same one). */
  const receivedLogins = new Set<string>();
  let received = 0;

  const superuser = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const refreshAdmin = async () => {
    const response = await tokenRequest(a.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD }).catch(() => null);
    if (response?.status === 200) adminAccess = response.body.access_token as string;
  };
  const writesOnBoth = async () => {
    for (const node of [a, b]) {
      const response = await api(node.url, 'POST', '/admin/realms/master/users', adminAccess, { username: `probe-${Math.random().toString(36).slice(2)}`, enabled: true });
      if (response.status !== 201) return false;
      load.acknowledgedUsers.push(response.body?.username ?? '');
    }
    return true;
  };
  const readyOnBoth = async () => (await Promise.all([a, b].map((node) => api(node.url, 'GET', '/health/ready', null)))).every((r) => r.status === 200);

  beforeAll(async () => {
    // Below Linux's ephemeral range (32768-60999): a port there can be held by any outgoing connection's local end,
    // and then neither server can bind it (CI saw Redis fail to come up on 44044 that way).
    const offset = process.pid % 5000;
    postgres = await OwnPostgres.start(22_000 + offset);
    redis = await OwnRedis.start(27_000 + offset);
    await superuser((client) => client.query('create database realmgate'));
    dbUrl = postgres.url.replace(/\/postgres$/, '/realmgate');
    providers = mkdtempSync(join(tmpdir(), 'realmgate-faults-providers-'));
    symlinkSync(resolve(import.meta.dirname, '../../event-webhook'), join(providers, 'event-webhook'), 'dir');
    receiver = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received++;
        if ((JSON.parse(Buffer.concat(chunks).toString()) as { type?: string }).type === 'LOGIN') receivedLogins.add(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const config = {
      REALMGATE_DB_URL: dbUrl,
      REALMGATE_REDIS_URL: redis.url,
      REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000',
      REALMGATE_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      REALMGATE_DB_ACQUIRE_TIMEOUT_MS: '2000',
      REALMGATE_LOG_LEVEL: 'info',
    };
    a = await startServer({ config, providersDir: providers, env: WEBHOOK_ENV });
    b = await startServer({ config, providersDir: providers, env: WEBHOOK_ENV });
    await refreshAdmin();
    refresher = setInterval(() => void refreshAdmin(), 20_000);
    expect((await api(a.url, 'POST', '/admin/realms/master/users', adminAccess, { username: 'load-user', enabled: true, credentials: [{ type: 'password', value: 'load-password-1', temporary: false }] })).status).toBe(201);
    expect((await api(a.url, 'POST', '/admin/realms/master/users', adminAccess, { username: 'stale-user', enabled: true, credentials: [{ type: 'password', value: 'stale-password-1', temporary: false }] })).status).toBe(201);
    expect((await api(a.url, 'POST', '/admin/realms/master/clients', adminAccess, { clientId: 'load-service', publicClient: false, secret: 'load-service-secret', serviceAccountsEnabled: true, standardFlowEnabled: false })).status).toBe(201);
    expect((await api(a.url, 'POST', '/admin/realms', adminAccess, { realm: 'hooks', enabled: true, eventsListeners: ['ext-event-webhook'] })).status).toBe(201);
    expect((await api(a.url, 'POST', '/admin/realms/hooks/clients', adminAccess, { clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, attributes: { 'api.url': hookUrl, 'api.key': 'k-1', 'api.secret': WEBHOOK_SECRET } })).status).toBe(201);
    for (let i = 0; i < 5; i++) {
      const user = { username: `hook-user-${i}`, enabled: true, email: `hook-user-${i}@example.test`, firstName: 'Hook', lastName: 'User', emailVerified: true, credentials: [{ type: 'password', value: 'hook-password-1', temporary: false }] };
      expect((await api(a.url, 'POST', '/admin/realms/hooks/users', adminAccess, user)).status).toBe(201);
    }
    load = new Load([a, b], () => adminAccess);
    load.start();
    await sleep(500);
  }, 120_000);

  afterAll(async () => {
    clearInterval(refresher);
    await load?.stop();
    console.log('\nfault suite figures (ms):', JSON.stringify(figures, null, 2));
    await b?.close().catch(() => {});
    await a?.close().catch(() => {});
    await redis?.close();
    await postgres?.close();
    receiver?.close();
    if (providers) rmSync(providers, { recursive: true, force: true });
  }, 120_000);

  it('with no fault, no webhook delivery to a healthy receiver is put off until a lease ends (how late they are claimed is a figure)', async () => {
    // A delivery never attempted is due when written, unless a predecessor of its user waits for a retry (none does:
    // the receiver answers 204) or was written a moment later by the clock of the other node's write (then it is due
    // when that one is: milliseconds). Issue 34 saw them due at a predecessor's lease end, a whole lease later.
    const client = new pg.Client({ connectionString: dbUrl });
    await client.connect();
    let putOffMs = 0;
    try {
      for (const started = performance.now(); performance.now() - started < 4000; await sleep(100)) {
        const { rows } = await client.query<{ ms: string | null }>(`select max(due_at - created_at) as ms from provider_outbox where state = 'pending' and attempts = 0`);
        putOffMs = Math.max(putOffMs, Number(rows[0].ms ?? 0));
      }
    } finally {
      await client.end();
    }
    const [la, lb] = await Promise.all([lateness(a.url), lateness(b.url)]);
    figures.controlDeliveriesClaimed = la.claimed + lb.claimed;
    figures.controlDeliveriesLateOverOneSecond = la.overOneSecond + lb.overOneSecond;
    figures.controlLongestPutOffMs = putOffMs;
    expect(figures.controlDeliveriesClaimed).toBeGreaterThan(0);
    expect(putOffMs).toBeLessThan(OUTBOX_LEASE_MS / 2);
  });

  it('PostgreSQL connections terminated (pg_terminate_backend) under load: no crash, no 500, serving again at once', async () => {
    const from = load.outcomes.length;
    await sleep(300);
    await superuser((client) => client.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = 'realmgate' and pid <> pg_backend_pid()`));
    figures.terminateRecoveryMs = await timeUntil(writesOnBoth);
    await sleep(300);
    expect(load.outcomes.slice(from).filter((o) => o.status === 500 || o.status === 0)).toEqual([]);
  });

  it('PostgreSQL restarted under load: no crash, no 500, answered 503 while it is down, serving again after its return', async () => {
    const from = load.outcomes.length;
    await sleep(300);
    await postgres.stop();
    const stoppedAt = performance.now();
    await sleep(STOPPED_MS);
    // Down until the load has been answered 503 for it (at once on an idle machine).
    await timeUntil(() => load.seen(stoppedAt, (o) => o.status === 503), 30_000);
    await postgres.start();
    figures.restartRecoveryMs = await timeUntil(writesOnBoth);
    await sleep(300);
    expect(load.outcomes.slice(from).filter((o) => o.status === 500 || o.status === 0)).toEqual([]);
  });

  it('a table locked longer than the statement timeout: answered 503 (not hung, not 500), serving again once it is released', async () => {
    const from = load.outcomes.length;
    const locker = new pg.Client({ connectionString: dbUrl });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table user_entity in access exclusive mode');
    const lockedAt = performance.now();
    await sleep(LOCK_MS);
    // Locked until a user creation has been answered 503 while it is (one that waited for the lock to go would be
    // answered only after): at once on an idle machine.
    await timeUntil(() => load.seen(lockedAt, (o) => o.op === 'create_user' && o.status === 503), 60_000);
    const releasedAt = performance.now();
    await locker.query('rollback');
    await locker.end();
    figures.lockRecoveryMs = await timeUntil(writesOnBoth);
    const during = load.outcomes.slice(from);
    figures.lockSlowestRequestMs = Math.max(...during.map((o) => o.ms));
    expect(during.filter((o) => o.status === 500 || o.status === 0)).toEqual([]);
    // Answered while the lock still held: a statement waits at most the statement timeout, not for the lock.
    expect(during.filter((o) => o.op === 'create_user' && o.status === 503 && o.startedAt > lockedAt && o.endedAt < releasedAt).length).toBeGreaterThan(0);
  });

  it('Redis killed under load: sign-in keeps working, no 500, and a user disabled during the outage is refused everywhere within a second of its return', async () => {
    const from = load.outcomes.length;
    expect((await tokenRequest(b.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'stale-user', password: 'stale-password-1' })).status).toBe(200);
    await redis.kill();
    const killedAt = performance.now();
    await sleep(500);
    const users = await api(a.url, 'GET', '/admin/realms/master/users?username=stale-user&exact=true', adminAccess);
    expect((await api(a.url, 'PUT', `/admin/realms/master/users/${users.body[0].id}`, adminAccess, { enabled: false })).status).toBe(204);
    // The other node, asked from the disabling on: tokens for the disabled user would be a stale permission.
    const staleAnswers: number[] = [];
    const refused = async () => {
      const status = (await tokenRequest(b.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'stale-user', password: 'stale-password-1' })).status;
      staleAnswers.push(status);
      return status === 400;
    };
    await refused();
    // Sign-in keeps working while Redis is down (counters per node).
    await timeUntil(() => load.seen(killedAt, (o) => o.op === 'password' && o.status === 200), 30_000);
    await sleep(500);
    await refused();
    await redis.start();
    // Both measured from Redis's return.
    [figures.redisKillStalePermissionMs, figures.redisKillRecoveryMs] = await Promise.all([timeUntil(refused), timeUntil(readyOnBoth)]);
    await sleep(300);
    expect(load.outcomes.slice(from).filter((o) => o.status === 500 || o.status === 0)).toEqual([]);
    expect(staleAnswers.filter((status) => status === 200)).toEqual([]);
  });

  it('Redis hung (SIGSTOP) under load: sign-in keeps working, no 500, ready again within a second of its return', async () => {
    const from = load.outcomes.length;
    redis.hang();
    const hungAt = performance.now();
    await sleep(2500);
    // Sign-in keeps working while Redis does not answer: a hung command costs its 1 s timeout, then answers at once.
    await timeUntil(() => load.seen(hungAt, (o) => o.op === 'password' && o.status === 200), 30_000);
    expect((await api(a.url, 'GET', '/health/ready', null)).status).toBe(503);
    redis.resume();
    figures.redisHangRecoveryMs = await timeUntil(readyOnBoth);
    await sleep(300);
    expect(load.outcomes.slice(from).filter((o) => o.status === 500 || o.status === 0)).toEqual([]);
  });

  it('lost no acknowledged user or event, and both nodes are alive', { timeout: OUTBOX_LEASE_MS + 60_000 }, async () => {
    await load.stop();
    await refreshAdmin();
    const listed = await api(a.url, 'GET', '/admin/realms/master/users?max=100000&briefRepresentation=true', adminAccess);
    const present = new Set((listed.body as { username: string }[]).map((u) => u.username));
    const acknowledged = load.acknowledgedUsers.filter(Boolean);
    figures.acknowledgedUsers = acknowledged.length;
    // Every sign-in that was answered 200 wrote its LOGIN event's delivery before the answer: each arrives, at least
    // once. Waited for past a lease: a delivery whose claim a lost connection hid from its node is sent again after
    // its lease, as documented (and the figure says how long it took).
    const acknowledgedLogins = load.outcomes.filter((o) => o.op === 'hooked_login' && o.status === 200).length;
    figures.acknowledgedHookedLogins = acknowledgedLogins;
    try {
      figures.webhooksAllReceivedAfterMs = await timeUntil(async () => receivedLogins.size >= acknowledgedLogins, OUTBOX_LEASE_MS + 30_000);
    } catch (error) {
      // What is missing, and whether it is in the outbox at all (a sign-in answered 200 whose event was never written).
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      const { rows } = await client
        .query(`select id, state, attempts, due_at - $1::bigint as due_in_ms, claimed_by, order_key, last_error from provider_outbox where type = 'LOGIN'`, [Date.now()])
        .finally(() => client.end());
      const missing = rows.filter((row) => !receivedLogins.has(row.id));
      throw new Error(`${(error as Error).message}: ${acknowledgedLogins} sign-ins answered 200, ${rows.length} LOGIN deliveries in the outbox, ${receivedLogins.size} received; not received: ${JSON.stringify(missing)}`);
    } finally {
      figures.webhookLoginsReceived = receivedLogins.size;
      figures.webhooksReceivedWithRepeats = received;
    }
    const [la, lb] = await Promise.all([lateness(a.url), lateness(b.url)]);
    // Reported, not asserted: a delivery due while the database was down waits for it, as it must.
    figures.deliveriesClaimed = la.claimed + lb.claimed;
    figures.deliveriesLateOverOneSecond = la.overOneSecond + lb.overOneSecond;
    figures.requests = load.outcomes.length;
    figures.answered503 = load.outcomes.filter((o) => o.status === 503).length;
    expect(acknowledged.filter((u) => !present.has(u))).toEqual([]);
    // An outage is a line when it starts and one when it ends, never a stack per request; and one fault is one outage.
    // Outages that began with a timeout (a Redis command or a new connection not answered in time) are figures only:
    // anything that holds up a node's event loop for a second causes them too, a busy machine or, here, node B's
    // start-up in the same process (node A logs a Redis command timed out as B starts, in every run). A lost or
    // refused connection is the faults' doing: two database faults (terminate, restart; a lock is timeouts, not an
    // outage) and one of Redis (kill; its hang is timeouts) may log one each.
    for (const [name, node] of [['A', a], ['B', b]] as const) {
      expect(node.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
      for (const [dependency, figure, connectionFaults] of [['database', 'database', 2], ['shared-store', 'sharedStore', 1]] as const) {
        const outages = node.logs.filter((l) => l.msg === `${dependency} unavailable: requests that need it answer 503 until it is back`);
        const lost = outages.filter((l) => !/timed out|timeout/i.test(String(l.error)));
        figures[`${figure}OutagesLogged${name}`] = outages.length;
        figures[`${figure}OutagesFromTimeouts${name}`] = outages.length - lost.length;
        expect(lost.length, JSON.stringify(outages.map((l) => ({ time: l.time, error: l.error })))).toBeLessThanOrEqual(connectionFaults);
      }
    }
    for (const node of [a, b]) expect((await api(node.url, 'GET', '/health/live', null)).status).toBe(200);
  });
});
