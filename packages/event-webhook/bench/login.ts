/**
 * Login latency with a webhook whose receiver never answers, over login latency without a webhook.
 * `npx tsx packages/event-webhook/bench/login.ts`, or `run()` from the repository's bench script.
 *
 * One real server (SQLite, this package installed from a providers directory), two realms in it:
 *  - `bench-hook`: `ext-event-webhook` among its event listeners, client `app` with `api.url` pointing at a
 *    node:http receiver that accepts the request and never answers (every delivery hangs until the 10 s
 *    response timeout, then is retried: the worker slots stay full and the queue grows, the worst case);
 *  - `bench-plain`: no listener, client `app` without webhook attributes (the baseline).
 * Each sample is a browser-less form login: GET the authorization request (login page, auth-session
 * cookie), then POST the credentials until the 302 with the code. The two realms alternate login by
 * login (ABBA) so that warm-up, GC and machine noise hit both alike; the figure is the ratio of the
 * medians (target <= 1.05). The process CPU time per login of each realm is printed beside it: on a shared,
 * loaded machine wall-clock medians drift by several per cent between runs, CPU time much less.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { createServer, loadConfig } from '@realmgate/server';
import { sql } from 'kysely';
import { createPgDatabase } from '../../server/test/support/server.js';
import { formLogin } from '../test/form-login.js';

export interface LoginBench {
  samples: number;
  /** Median ms of a form login (GET login page + POST credentials). */
  baselineMs: number;
  webhookMs: number;
  /** webhookMs / baselineMs. */
  ratio: number;
  /** Median over the pairs (the i-th login of each realm, measured close together) of webhook / baseline. */
  pairedRatio: number;
  /**
   * Process CPU time (user + system, server and bench client together, Argon2 threads included) per login:
   * what the webhook costs in work rather than in wall time, which on a busy machine is far less noisy.
   */
  baselineCpuMs: number;
  webhookCpuMs: number;
  baselineP90Ms: number;
  webhookP90Ms: number;
  /** Deliveries the never-answering receiver accepted during the run (proof the webhook was live). */
  hangingRequests: number;
  /** The 1-minute load average before and after the timed logins (the machine is shared). */
  load: { before: number; after: number };
}

const ADMIN = { username: 'admin', password: 'bench-admin-password' };
const WARMUP = 10;

export interface LoginBenchOptions {
  /**
   * Outbox mode, with a dead receiver (a loopback port that refuses): each login also commits its delivery before
   * it is answered, and the worker keeps failing in the background.
   */
  outbox?: boolean;
  /** The server on PostgreSQL (a database of its own on REALMGATE_TEST_PG_URL, dropped afterwards) instead of SQLite. */
  postgres?: boolean;
}

export async function run(samples = 150, options: LoginBenchOptions = {}): Promise<LoginBench> {
  // First, so that a missing PostgreSQL fails the run before anything is listening.
  const pg = options.postgres ? await createPgDatabase() : null;
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-webhook-bench-'));
  const providersDir = join(dir, 'providers');
  mkdirSync(providersDir);
  symlinkSync(resolve(import.meta.dirname, '..'), join(providersDir, 'event-webhook'), 'dir');

  let hanging = 0;
  const receiver = createHttpServer((req) => {
    hanging++;
    req.resume(); // read the body, never answer
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  const deadPort = await refusingPort();
  const hookUrl = options.outbox ? `http://127.0.0.1:${deadPort}/hook` : `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const callback = 'http://127.0.0.1:9/cb'; // never followed: the login stops at the 302

  const server = await benchServer(dir, providersDir, options.outbox ? { REALMGATE_WEBHOOK_MODE: 'outbox' } : {}, pg?.url);
  const base = await server.listen();
  try {
    const token = await adminToken(base);
    const admin = (method: string, path: string, body?: unknown) => adminCall(base, token, method, path, body);
    for (const [realm, webhook] of [['bench-hook', true], ['bench-plain', false]] as const) {
      await admin('POST', '/admin/realms', { realm, enabled: true, ...(webhook ? { eventsListeners: ['ext-event-webhook'] } : {}) });
      await admin('POST', `/admin/realms/${realm}/clients`, {
        clientId: 'app',
        publicClient: true,
        redirectUris: [callback],
        attributes: webhook ? { 'api.url': hookUrl, 'api.key': 'bench-key' } : {},
      });
      await admin('POST', `/admin/realms/${realm}/users`, {
        username: 'alice',
        email: 'alice@example.com',
        firstName: 'Alice',
        enabled: true,
        credentials: [{ type: 'password', value: 'bench-pass-1', temporary: false }],
      });
    }
    const login = async (realm: string) => {
      const started = performance.now();
      const result = await formLogin({ baseUrl: base, realm, clientId: 'app', redirectUri: callback }, 'alice', 'bench-pass-1', { 'user-agent': 'bench/1' });
      const ms = performance.now() - started;
      if (result.status !== 302 || !result.location?.startsWith(callback)) throw new Error(`login in ${realm} failed: ${result.status} ${result.html.slice(0, 200)}`);
      return ms;
    };

    for (let i = 0; i < WARMUP; i++) {
      await login('bench-hook');
      await login('bench-plain');
    }
    // ABBA per pair: neither realm always goes first, and drift hits both alike. The CPU window of a login
    // (process-wide: server and this client share the process) closes a few ms after its response, so that
    // the background webhook work the login caused is counted with it.
    const withHook: number[] = [];
    const without: number[] = [];
    const cpu = { 'bench-hook': 0, 'bench-plain': 0 };
    const loadBefore = loadavg()[0];
    const measure = async (realm: 'bench-hook' | 'bench-plain') => {
      const before = process.cpuUsage();
      (realm === 'bench-hook' ? withHook : without).push(await login(realm));
      await new Promise((done) => setTimeout(done, 5));
      const used = process.cpuUsage(before);
      cpu[realm] += (used.user + used.system) / 1000;
    };
    for (let i = 0; i < samples; i++) {
      const order = i % 4 === 0 || i % 4 === 3 ? (['bench-hook', 'bench-plain'] as const) : (['bench-plain', 'bench-hook'] as const);
      for (const realm of order) await measure(realm);
    }
    if (options.outbox) {
      // The proof the webhook was live: the rows the logins wrote.
      const rows = await sql<{ n: number }>`select count(*) as n from provider_outbox`.execute(server.context.storage.db);
      hanging = Number(rows.rows[0].n);
    }
    if (hanging === 0) throw new Error('the webhook receiver got no delivery: the bench measured nothing');
    const baselineMs = quantile(without, 0.5);
    const webhookMs = quantile(withHook, 0.5);
    return {
      samples: withHook.length,
      baselineMs,
      webhookMs,
      ratio: webhookMs / baselineMs,
      pairedRatio: quantile(withHook.map((ms, i) => ms / without[i]), 0.5),
      baselineCpuMs: cpu['bench-plain'] / without.length,
      webhookCpuMs: cpu['bench-hook'] / withHook.length,
      baselineP90Ms: quantile(without, 0.9),
      webhookP90Ms: quantile(withHook, 0.9),
      hangingRequests: hanging,
      load: { before: loadBefore, after: loadavg()[0] },
    };
  } finally {
    await server.close();
    await pg?.drop();
    receiver.closeAllConnections();
    await new Promise<void>((done) => receiver.close(() => done()));
    rmSync(dir, { recursive: true, force: true });
  }
}

export function format(result: LoginBench, options: LoginBenchOptions = {}): string {
  const target = options.outbox ? 1.1 : 1.05;
  return [
    `  form login, no webhook (median of ${result.samples}):                 ${result.baselineMs.toFixed(2)} ms  (p90 ${result.baselineP90Ms.toFixed(2)} ms)`,
    options.outbox
      ? `  form login, outbox on, receiver dead (median):                  ${result.webhookMs.toFixed(2)} ms  (p90 ${result.webhookP90Ms.toFixed(2)} ms)`
      : `  form login, webhook to a receiver that never answers (median):  ${result.webhookMs.toFixed(2)} ms  (p90 ${result.webhookP90Ms.toFixed(2)} ms)`,
    `  ratio of medians: ${result.ratio.toFixed(3)} (target <= ${target}; ${result.ratio <= target ? 'met' : 'NOT met'}); median of paired ratios: ${result.pairedRatio.toFixed(3)}`,
    `  process CPU per login: ${result.baselineCpuMs.toFixed(2)} ms without, ${result.webhookCpuMs.toFixed(2)} ms with the webhook (ratio ${(result.webhookCpuMs / result.baselineCpuMs).toFixed(3)})`,
    options.outbox
      ? `  deliveries written to the outbox during the run: ${result.hangingRequests}`
      : `  deliveries hanging at the receiver during the run: ${result.hangingRequests}`,
    `  load average (1 min) ${result.load.before.toFixed(1)} before, ${result.load.after.toFixed(1)} after`,
  ].join('\n');
}

/**
 * A silent server on SQLite under `dir` with the providers of `providersDir`; `webhookEnv` is what the webhook
 * provider reads (shutdown grace 0 unless given: the deliveries left at the end are not the bench's concern).
 */
export async function benchServer(dir: string, providersDir: string, webhookEnv: Record<string, string> = {}, dbUrl = `sqlite:${join(dir, 'bench.db')}`) {
  const config = loadConfig({
    env: {
      REALMGATE_HTTP_PORT: '0',
      REALMGATE_HTTP_HOST: '127.0.0.1',
      REALMGATE_DB_URL: dbUrl,
      REALMGATE_BOOTSTRAP_ADMIN_USERNAME: ADMIN.username,
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      REALMGATE_PROVIDERS_DIR: providersDir,
      REALMGATE_LOG_LEVEL: 'error',
      // Keep shutdown short: the hanging deliveries are dropped at the end anyway.
      REALMGATE_SHUTDOWN_GRACE_MS: '2000',
    },
  });
  return createServer(config, { logger: pino({ level: 'silent' }), env: { REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS: '0', ...webhookEnv } });
}

/** A loopback port nothing listens on. */
export async function refusingPort(): Promise<number> {
  const probe = createHttpServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((done) => probe.close(() => done()));
  return port;
}

/** The q-quantile of `values` (an element of them: for an odd count, q = 0.5 is the middle one). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

async function adminToken(base: string): Promise<string> {
  const response = await fetch(`${base}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...ADMIN }),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`admin token: ${response.status}`);
  return body.access_token;
}

async function adminCall(base: string, token: string, method: string, path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const options = { outbox: process.argv.includes('--outbox'), postgres: process.argv.includes('--postgres') };
  const samples = process.argv.slice(2).find((arg) => /^\d+$/.test(arg));
  console.log(format(await run(samples ? Number(samples) : undefined, options), options));
}
