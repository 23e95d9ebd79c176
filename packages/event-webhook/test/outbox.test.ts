/**
 * Outbox mode end to end: real servers with this package from a providers directory, real loopback receivers,
 * SQLite and PostgreSQL. Fake time is Date only (vi.useFakeTimers({ toFake: ['Date'] })): the outbox's due
 * times follow it, while its polling and the sockets run on real timers.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServer, loadConfig } from '../../server/src/index.js';
import { OutboxRepository } from '../../server/src/storage/outbox.js';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  adminToken,
  api,
  createPgDatabase,
  eventually,
  redisUrl,
  startServer,
  tokenRequest,
  type TestServer,
} from '../../server/test/support/server.js';
import { movableDate } from '../../server/test/support/clock.js';
import { encodeStored } from '../src/outbox.js';

const PACKAGES = resolve(import.meta.dirname, '../..');
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PASSWORD = 'outbox-Passw0rd!';
const realSleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
v8.setFlagsFromString('--expose-gc');
/** A full collection, so that heapUsed measures what is retained. */
const gc = vm.runInNewContext('gc') as () => void;
const retainedHeap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

function providersDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-outbox-'));
  symlinkSync(join(PACKAGES, 'event-webhook'), join(dir, 'event-webhook'), 'dir');
  return dir;
}

const OUTBOX = { REALMGATE_WEBHOOK_MODE: 'outbox', REALMGATE_WEBHOOK_BACKOFF_JITTER_PERCENT: '0' };

interface Hit {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on a fixed loopback port that can be stopped (connections refused) and started again. */
class Receiver {
  readonly hits: Hit[] = [];
  private server: Server | null = null;
  constructor(
    readonly port: number,
    private readonly answer: (n: number) => number | 'never' = () => 204,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async start(): Promise<void> {
    this.server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        const status = this.answer(this.hits.length);
        if (status !== 'never') res.writeHead(status, { 'content-type': 'text/plain' }).end(`ok ${this.hits.length}`);
      });
    });
    await new Promise<void>((done) => this.server!.listen(this.port, '127.0.0.1', done));
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
}

/** A loopback port nothing listens on (taken and released). */
async function freePort(): Promise<number> {
  const server = createHttpServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** A realm with the listener, a client `app` whose webhook points at `hookUrl`, and the named users. */
async function setUpRealm(url: string, realm: string, hookUrl: string, users: string[]): Promise<void> {
  const token = await adminToken(url);
  expect((await api(url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsListeners: ['ext-event-webhook'] })).status).toBe(201);
  const client = await api(url, 'POST', `/admin/realms/${realm}/clients`, token, {
    clientId: 'app',
    publicClient: true,
    directAccessGrantsEnabled: true,
    attributes: { 'api.url': hookUrl, 'api.key': 'k-123', 'api.secret': SECRET },
  });
  expect(client.status).toBe(201);
  for (const username of users) {
    const created = await api(url, 'POST', `/admin/realms/${realm}/users`, token, {
      username,
      enabled: true,
      email: `${username}@example.test`,
      firstName: username,
      lastName: 'Test',
      emailVerified: true,
      credentials: [{ type: 'password', value: PASSWORD, temporary: false }],
    });
    expect(created.status).toBe(201);
  }
}

async function login(url: string, realm: string, username: string): Promise<number> {
  const started = performance.now();
  const response = await tokenRequest(url, realm, { grant_type: 'password', client_id: 'app', username, password: PASSWORD, scope: 'openid' });
  expect(response.status).toBe(200);
  return performance.now() - started;
}

const deliveries = async (url: string, realm: string, query = '') =>
  (await api(url, 'GET', `/admin/realms/${realm}/ext-event-webhook/deliveries${query}`, await adminToken(url))).body as {
    id: string;
    userName: string;
    state: string;
    totalAttempts: number;
    attemptLog: { node: string; status: number | null; error: string | null; responseExcerpt: string | null }[];
  }[];

const verifier = new Webhook(SECRET);

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const step of cleanup.reverse()) await step().catch(() => {});
  cleanup = [];
});

describe('outbox mode', () => {
  it('receiver down for 10 minutes (fake time), then up: every event arrives once, in order per user', async () => {
    const receiver = new Receiver(await freePort(), () => 200); // 200, not 204: the delivery log keeps the body
    const dir = providersDir();
    const t = await startServer({
      providersDir: dir,
      // A lease of a day: fake time jumps 30 s at a time, and an attempt must not outlive its lease meanwhile.
      env: { ...OUTBOX, REALMGATE_WEBHOOK_BACKOFF_MS: '1000,5000,30000,60000,120000,300000', REALMGATE_WEBHOOK_MAX_ATTEMPTS: '30', REALMGATE_WEBHOOK_POLL_MS: '20', REALMGATE_WEBHOOK_LEASE_MS: '86400000' },
    });
    cleanup.push(
      () => t.close(),
      () => receiver.stop(),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
    const users = ['ann', 'bob', 'cy'];
    await setUpRealm(t.url, 'down', receiver.url, users);
    for (let round = 0; round < 4; round++) for (const user of users) await login(t.url, 'down', user);

    // Written before each login was answered: all 12 are in the outbox now.
    const queued = await deliveries(t.url, 'down');
    expect(queued).toHaveLength(12);

    vi.useFakeTimers({ toFake: ['Date'] });
    let now = Date.now();
    const advance = async (ms: number) => {
      now += ms;
      vi.setSystemTime(now);
      await realSleep(40);
    };
    for (let step = 0; step < 20; step++) await advance(30_000); // 10 minutes, receiver down
    vi.setSystemTime(now); // keep the clock still while reading
    const during = await deliveries(t.url, 'down');
    expect(receiver.hits).toHaveLength(0);
    // Only the head of each user's queue was tried (1 s, 5 s, 30 s, 60 s, 120 s, 300 s after one another).
    const tried = during.filter((d) => d.totalAttempts > 0);
    expect(tried.map((d) => d.userName).sort()).toEqual(users);
    for (const d of tried) {
      expect(d.totalAttempts).toBeGreaterThanOrEqual(6);
      expect(d.attemptLog[0].error).toMatch(/ECONNREFUSED|connect/);
    }

    await receiver.start();
    for (let step = 0; step < 40 && receiver.hits.length < 12; step++) await advance(30_000);
    await eventually(() => receiver.hits.length >= 12, 10_000);
    await realSleep(300);
    expect(receiver.hits).toHaveLength(12); // none twice

    const ids = receiver.hits.map((hit) => hit.headers['webhook-id'] as string);
    expect(new Set(ids).size).toBe(12);
    for (const hit of receiver.hits) verifier.verify(hit.body, hit.headers as Record<string, string>);
    // Per user, the order of arrival is the order of the logins (the outbox lists newest first).
    const enqueued = queued.slice().reverse();
    for (const user of users) {
      const expected = enqueued.filter((d) => d.userName === user).map((d) => d.id);
      const arrived = receiver.hits.filter((hit) => JSON.parse(hit.body).user_name === user).map((hit) => hit.headers['webhook-id']);
      expect(arrived).toEqual(expected);
    }
    const after = await deliveries(t.url, 'down', '?state=delivered');
    expect(after).toHaveLength(12);
    const last = after.find((d) => d.totalAttempts > 1)!;
    expect(last.attemptLog.at(-1)).toMatchObject({ status: 200, error: null });
    expect(last.attemptLog.at(-1)!.responseExcerpt).toMatch(/^ok \d+$/);
  }, 120_000);

  it('two nodes on PostgreSQL: the sending node is killed (SIGKILL) mid-delivery, the other sends it after the lease, same webhook-id', async () => {
    const db = await createPgDatabase();
    const dir = providersDir();
    const env = {
      REALMGATE_HTTP_PORT: '0',
      REALMGATE_HTTP_HOST: '127.0.0.1',
      REALMGATE_DB_URL: db.url,
      REALMGATE_REDIS_URL: redisUrl,
      REALMGATE_BOOTSTRAP_ADMIN_USERNAME: ADMIN_USERNAME,
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
      REALMGATE_PROVIDERS_DIR: dir,
      ...OUTBOX,
      // Long enough that node B cannot take it over before its clock is moved past the lease, however slow the machine.
      REALMGATE_WEBHOOK_LEASE_MS: '60000',
      // Long too: node A must still be in its first attempt when it is killed. With 2 s, a loaded machine (starting
      // node B takes seconds) let A time out and retry first: two hits before the kill (seen in a run at load 21).
      REALMGATE_WEBHOOK_RESPONSE_TIMEOUT_MS: '30000',
      REALMGATE_WEBHOOK_POLL_MS: '100',
    };
    const receiver = new Receiver(await freePort(), (n) => (n === 1 ? 'never' : 204));
    await receiver.start();
    // Node A: a process of its own, so that it can really be killed.
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'outbox-node.ts')], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanup.push(
      async () => rmSync(dir, { recursive: true, force: true }),
      () => db.drop(),
      () => receiver.stop(),
      async () => void child.kill('SIGKILL'),
    );
    const aUrl = await new Promise<string>((done, fail) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) done((JSON.parse(line) as { url: string }).url);
      });
      child.on('exit', (code) => fail(new Error(`node A exited with ${code}`)));
    });
    await setUpRealm(aUrl, 'pair', receiver.url, ['dana']);
    await login(aUrl, 'pair', 'dana');
    await eventually(() => receiver.hits.length === 1, 10_000); // node A is sending; the receiver never answers

    // Node B runs in this process, on a clock the test moves on past A's lease instead of waiting for it.
    const clock = movableDate();
    cleanup.push(async () => clock.restore());
    const config = loadConfig({ env });
    const b = await createServer(config, { logger: pino({ level: 'silent' }), env });
    const bUrl = await b.listen();
    cleanup.push(() => b.close());
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL'); // kill -9: no shutdown code runs in node A
    await exited;

    // While A's lease runs, B (polling every 100 ms) leaves the delivery alone.
    await realSleep(500);
    expect(receiver.hits).toHaveLength(1);
    clock.pass(61_000);
    await eventually(() => receiver.hits.length === 2, 10_000);
    const [first, second] = receiver.hits;
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(second.body).toBe(first.body);
    verifier.verify(second.body, second.headers as Record<string, string>);

    const [delivery] = await eventually(async () => {
      const list = await deliveries(bUrl, 'pair', '?state=delivered');
      return list.length === 1 ? list : null;
    });
    expect(delivery.id).toBe(first.headers['webhook-id']);
    expect(delivery.totalAttempts).toBe(1); // A died before recording its attempt; B's is the one
    expect(delivery.attemptLog[0]).toMatchObject({ status: 204 });
    await realSleep(500);
    expect(receiver.hits).toHaveLength(2);
  }, 60_000);

  it('admin API: deliveries with their attempts, resend one or a filtered set, pause and resume; manage-clients required, audited', async () => {
    let status = 500;
    const receiver = new Receiver(await freePort(), () => status);
    await receiver.start();
    const dir = providersDir();
    const t = await startServer({
      providersDir: dir,
      env: { ...OUTBOX, REALMGATE_WEBHOOK_BACKOFF_MS: '50', REALMGATE_WEBHOOK_MAX_ATTEMPTS: '2', REALMGATE_WEBHOOK_POLL_MS: '20', REALMGATE_WEBHOOK_PAUSE_AFTER_FAILURES: '6' },
    });
    cleanup.push(
      () => t.close(),
      () => receiver.stop(),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
    await setUpRealm(t.url, 'adm', receiver.url, ['fay', 'gus']);
    const token = await adminToken(t.url);
    expect((await api(t.url, 'PUT', '/admin/realms/adm', token, { adminEventsEnabled: true, adminEventsDetailsEnabled: true })).status).toBe(204);
    const base = '/admin/realms/adm/ext-event-webhook';
    await login(t.url, 'adm', 'fay');
    await login(t.url, 'adm', 'gus');
    // 500, then 500 again: both dead after their 2 attempts
    const dead = await eventually(async () => {
      const list = (await api(t.url, 'GET', `${base}/deliveries?clientId=app&state=dead&type=LOGIN`, token)).body;
      return Array.isArray(list) && list.length === 2 ? list : null;
    });
    expect(dead[0].attemptLog).toHaveLength(2);
    expect(dead[0].attemptLog[0]).toMatchObject({ status: 500, error: '500 Internal Server Error', responseExcerpt: expect.stringMatching(/^ok \d+$/) });
    expect(dead[0].payload).toMatchObject({ type: 'LOGIN' });
    expect((await api(t.url, 'GET', `${base}/deliveries?state=delivered`, token)).body).toEqual([]);
    expect((await api(t.url, 'GET', `${base}/deliveries?state=lost`, token)).status).toBe(400);
    expect((await api(t.url, 'GET', `${base}/deliveries?clientId=nope`, token)).status).toBe(404);

    // resend one: it goes out again with the same webhook-id
    status = 200;
    const one = dead.find((d: { userName: string }) => d.userName === 'fay');
    expect((await api(t.url, 'POST', `${base}/deliveries/${one.id}/resend`, token)).body).toEqual({ requeued: 1 });
    await eventually(() => receiver.hits.some((hit) => hit.headers['webhook-id'] === one.id && JSON.parse(hit.body).user_name === 'fay') && receiver.hits.length === 5);
    // The receiver has it; the attempt is recorded with the next group commit, and until then it is still sending.
    await eventually(async () => (await api(t.url, 'GET', `${base}/deliveries/${one.id}`, token)).body.state === 'delivered');
    expect((await api(t.url, 'POST', `${base}/deliveries/${one.id}/resend`, token)).body).toEqual({ requeued: 1 });
    // resend the filtered set (the dead ones of client app): gus's
    await eventually(async () => (await api(t.url, 'GET', `${base}/deliveries/${one.id}`, token)).body.state === 'delivered');
    expect((await api(t.url, 'POST', `${base}/deliveries/resend`, token, { clientId: 'app', state: 'dead' })).body).toEqual({ requeued: 1 });
    await eventually(() => receiver.hits.filter((hit) => JSON.parse(hit.body).user_name === 'gus').length === 3);
    expect((await api(t.url, 'POST', `${base}/deliveries/resend`, token, { state: 'pending' })).status).toBe(400);

    // pause: deliveries wait; resume: they go
    expect((await api(t.url, 'POST', `${base}/clients/app/pause`, token)).body).toMatchObject({ clientId: 'app', paused: true, reason: 'paused by an administrator' });
    const hitsBefore = receiver.hits.length;
    await login(t.url, 'adm', 'fay');
    await realSleep(300);
    expect(receiver.hits.length).toBe(hitsBefore);
    expect((await api(t.url, 'GET', `${base}/deliveries?state=pending`, token)).body).toHaveLength(1);
    expect((await api(t.url, 'POST', `${base}/clients/app/resume`, token)).body).toMatchObject({ paused: false, consecutiveFailures: 0 });
    await eventually(() => receiver.hits.length === hitsBefore + 1);

    // pauseAfterFailures: 6 failures in a row pause the endpoint by themselves
    status = 503;
    for (let i = 0; i < 3; i++) await login(t.url, 'adm', i % 2 ? 'fay' : 'gus');
    const paused = await eventually(async () => {
      const state = (await api(t.url, 'GET', `${base}/clients/app/endpoint`, token)).body;
      return state.paused ? state : null;
    });
    expect(paused.reason).toMatch(/6 consecutive failed attempts/);

    // permissions: a user without manage-clients gets 403, no token 401
    const viewer = await api(t.url, 'POST', '/admin/realms/adm/users', token, { username: 'viewer', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    expect(viewer.status).toBe(201);
    const clients = (await api(t.url, 'GET', '/admin/realms/adm/clients?clientId=realm-management', token)).body;
    const viewClients = (await api(t.url, 'GET', `/admin/realms/adm/clients/${clients[0].id}/roles/view-clients`, token)).body;
    const viewerId = viewer.headers.get('location')!.split('/').pop();
    await api(t.url, 'POST', `/admin/realms/adm/users/${viewerId}/role-mappings/clients/${clients[0].id}`, token, [viewClients]);
    const viewerToken = (await tokenRequest(t.url, 'adm', { grant_type: 'password', client_id: 'app', username: 'viewer', password: PASSWORD })).body.access_token as string;
    expect((await api(t.url, 'GET', `${base}/deliveries`, viewerToken)).status).toBe(403);
    expect((await api(t.url, 'POST', `${base}/clients/app/resume`, viewerToken)).status).toBe(403);
    expect((await api(t.url, 'GET', `${base}/deliveries`, null)).status).toBe(401);

    // every successful POST is an admin event (ACTION, CUSTOM)
    const events = (await api(t.url, 'GET', '/admin/realms/adm/admin-events?resourceTypes=CUSTOM', token)).body as { operationType: string; resourcePath: string }[];
    expect(events.map((e) => `${e.operationType} ${e.resourcePath}`).sort()).toEqual(
      [
        `ACTION ext-event-webhook/deliveries/${one.id}/resend`,
        `ACTION ext-event-webhook/deliveries/${one.id}/resend`,
        'ACTION ext-event-webhook/deliveries/resend',
        'ACTION ext-event-webhook/clients/app/pause',
        'ACTION ext-event-webhook/clients/app/resume',
      ].sort(),
    );
  }, 60_000);

  it("a client's webhook moved to a denied host gets no request (the target guard, at each attempt); moved back, the next is delivered", async () => {
    const receiver = new Receiver(await freePort());
    await receiver.start();
    const dir = providersDir();
    // blocked.localhost would be loopback (RFC 6761), so nothing leaves the machine even if the rule failed.
    const t = await startServer({ providersDir: dir, env: { ...OUTBOX, REALMGATE_WEBHOOK_POLL_MS: '20', REALMGATE_WEBHOOK_DENY: 'blocked.localhost' } });
    cleanup.push(
      () => t.close(),
      () => receiver.stop(),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
    await setUpRealm(t.url, 'guarded', receiver.url, ['ann']);
    const token = await adminToken(t.url);
    const [client] = (await api(t.url, 'GET', '/admin/realms/guarded/clients?clientId=app', token)).body as { id: string; attributes: Record<string, string> }[];
    const pointTo = async (hookUrl: string) => {
      const update = await api(t.url, 'PUT', `/admin/realms/guarded/clients/${client.id}`, token, { ...client, attributes: { ...client.attributes, 'api.url': hookUrl } });
      expect(update.status).toBe(204);
      await realSleep(1100); // the worker's client lookups are reused for up to 1 s
    };

    await login(t.url, 'guarded', 'ann');
    await eventually(() => receiver.hits.length === 1, 10_000);
    await pointTo(`http://blocked.localhost:${receiver.port}/hook`);
    await login(t.url, 'guarded', 'ann');
    await eventually(async () => (await deliveries(t.url, 'guarded', '?state=dead')).length === 1, 10_000);
    const [refused] = await deliveries(t.url, 'guarded', '?state=dead');
    expect(refused.attemptLog).toHaveLength(1);
    expect(refused.attemptLog[0]).toMatchObject({ status: null, error: expect.stringMatching(/blocked\.localhost is denied/) });
    expect(receiver.hits).toHaveLength(1);
    await pointTo(receiver.url);
    await login(t.url, 'guarded', 'ann');
    await eventually(() => receiver.hits.length === 2, 10_000);
  });

  it('100,000 deliveries to a dead receiver: they wait in the database, the heap stays bounded, logins still answer', async () => {
    const port = await freePort(); // nothing listens: every attempt is refused
    const dir = providersDir();
    const t: TestServer = await startServer({
      providersDir: dir,
      env: { ...OUTBOX, REALMGATE_WEBHOOK_POLL_MS: '200', REALMGATE_WEBHOOK_BACKOFF_MS: '60000' },
    });
    cleanup.push(
      () => t.close(),
      async () => rmSync(dir, { recursive: true, force: true }),
    );
    await setUpRealm(t.url, 'flood', `http://127.0.0.1:${port}/hook`, ['eve']);
    const before: number[] = [];
    for (let i = 0; i < 8; i++) before.push(await login(t.url, 'flood', 'eve'));

    const ctx = t.server.context;
    const realm = (await ctx.storage.realms.byName('flood'))!;
    const client = (await ctx.storage.clients.byClientId(realm.id, 'app'))!;
    const store = new OutboxRepository(ctx.storage.db, ctx.storage.dialect, 'ext-event-webhook', 'bulk-loader');
    const body = JSON.stringify({ type: 'LOGIN', user_name: 'someone', padding: 'x'.repeat(600) });
    const heapBefore = retainedHeap();
    const started = performance.now();
    for (let batch = 0; batch < 100; batch++) {
      await store.enqueue(
        Array.from({ length: 1000 }, (_, i) => ({
          id: `msg_bulk_${batch}_${i}`,
          realmId: realm.id,
          endpoint: client.id,
          endpointLabel: 'app',
          orderKey: `user-${(batch * 1000 + i) % 5000}`,
          type: 'LOGIN',
          label: 'someone',
          payload: encodeStored({ realm: 'flood', body }),
          maxAttempts: 3,
        })),
      );
    }
    const enqueueMs = performance.now() - started;
    const during: number[] = [];
    for (let i = 0; i < 8; i++) during.push(await login(t.url, 'flood', 'eve'));
    // The gauges are refreshed every 5 s from the database.
    const metrics = await eventually(async () => {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      const depth = Number(/^realmgate_webhook_outbox_depth (\d+)/m.exec(text)?.[1] ?? 0);
      return depth >= 100_000 ? text : null;
    }, 15_000);
    const heapAfter = retainedHeap();
    const attempts = Number(/^realmgate_webhook_attempts_total (\d+)/m.exec(metrics)?.[1] ?? 0);
    expect(attempts).toBeGreaterThan(0); // the worker is busy failing against the dead port meanwhile
    // The hold: a dead receiver gets one attempt per backoff step (60 s here), not one per queued delivery. At most the
    // first wave of the 8 slots fails before a record says the endpoint is held; claiming ahead adds none (a node
    // starts no attempt to an endpoint whose failed attempt is not recorded yet).
    expect(attempts).toBeLessThanOrEqual(16);
    // 100,000 rows of ~700 bytes would be 70 MB and more as JS strings: they are not in this process.
    expect(heapAfter - heapBefore).toBeLessThan(24 * 1024 * 1024);
    const median = (xs: number[]) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    console.log(
      `100k outbox: login median ${median(before).toFixed(1)} ms before, ${median(during).toFixed(1)} ms with the backlog; retained heap growth ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MiB; enqueue ${enqueueMs.toFixed(0)} ms; attempts ${attempts}`,
    );
    // How much slower a login is with the backlog is printed, not asserted: a wall-clock ratio fails on a loaded
    // machine for no fault of the code (issue 36); what a login costs with the outbox on is `npm run bench`'s.
  }, 180_000);
});
