/**
 * Host throughput on Node 24 beside the machine's Node (20 here), in the same run: what the SQLite choice costs.
 * On Node 24 the storage layer runs on node:sqlite, on Node 20 on better-sqlite3 12 (packages/server/src/storage/
 * sqlite-driver.ts), so these figures are the "must not cost throughput" check (target: ratio >= 0.95).
 *
 * `run()` starts this file as a child process on each Node, alternately (A B A B …) so that machine load drifts
 * over both alike, and keeps each figure's median. A child (`node --import tsx scripts/host-bench.ts --child`)
 * measures, for a fixed time each, on a real server with a fresh SQLite file:
 *  - storage: one insert and two indexed reads through Kysely and the storage layer, no HTTP (ops/s);
 *  - admin reads: GET a user by id and a page of 20 users over HTTP, 4 clients (requests/s);
 *  - admin writes: POST a new user over HTTP, 4 clients (requests/s);
 * and the process CPU time per operation beside each, less noisy than wall time on a shared machine.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.HOST_BENCH_SECONDS ?? 4);

export interface HostFigure {
  name: string;
  unit: string;
  /** On Node 24. */
  value: number;
  baseline: { name: string; value: number };
  /** value / baseline.value; higher is better for every figure here. */
  ratio: number;
}

export interface HostBench {
  node: string;
  baselineNode: string;
  drivers: Record<string, string>;
  rounds: number;
  figures: HostFigure[];
}

type ChildResult = { node: string; driver: string; figures: Record<string, number> };

/** Ops/s of `op` run by `clients` concurrent loops for `seconds`, and CPU ms per op. */
async function measure(seconds: number, clients: number, op: (i: number) => Promise<void>): Promise<{ rate: number; cpuMs: number }> {
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) await op(next++);
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return { rate: next / elapsed, cpuMs: (used.user + used.system) / 1000 / next };
}

async function child(): Promise<ChildResult> {
  const { default: pino } = await import('pino');
  const { createServer, loadConfig } = await import('../packages/server/src/index.js');
  const { openDatabase } = await import('../packages/server/src/storage/db.js');
  const { sql } = await import('kysely');
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-host-bench-'));
  try {
    const figures: Record<string, number> = {};

    // Storage alone: the driver under Kysely, nothing else.
    const handle = await openDatabase(`sqlite:${join(dir, 'storage.db')}`);
    const db = handle.db;
    await sql`create table bench (id integer primary key, name text not null unique, body text not null)`.execute(db);
    const storage = await measure(SECONDS, 1, async (i) => {
      await sql`insert into bench (name, body) values (${`user-${i}`}, ${JSON.stringify({ i, attributes: { a: [String(i)] } })})`.execute(db);
      await sql`select id, name, body from bench where name = ${`user-${i}`}`.execute(db);
      await sql`select id, name, body from bench where id > ${Math.max(0, i - 20)} order by id limit 20`.execute(db);
    });
    figures['storage ops/s'] = storage.rate;
    figures['storage CPU ms/op'] = storage.cpuMs;
    const driver = handle.sqliteDriver ?? 'none';
    await handle.close();

    const config = loadConfig({
      env: {
        REALMGATE_HTTP_PORT: '0',
        REALMGATE_HTTP_HOST: '127.0.0.1',
        REALMGATE_DB_URL: `sqlite:${join(dir, 'server.db')}`,
        REALMGATE_BOOTSTRAP_ADMIN_USERNAME: 'admin',
        REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: 'host-bench-admin-password',
        REALMGATE_PROVIDERS_DIR: join(dir, 'providers'),
      },
    });
    const server = await createServer(config, { logger: pino({ level: 'silent' }), env: {} });
    const url = await server.listen();
    try {
      const token = async (): Promise<string> => {
        const response = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
          method: 'POST',
          body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'host-bench-admin-password' }),
        });
        if (response.status !== 200) throw new Error(`admin token: ${response.status}`);
        return ((await response.json()) as { access_token: string }).access_token;
      };
      const call = async (bearer: string, method: string, path: string, body?: unknown): Promise<Response> => {
        const response = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
        return response;
      };
      let bearer = await token();
      await call(bearer, 'POST', '/admin/realms', { realm: 'bench', enabled: true });
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) {
        const created = await call(bearer, 'POST', '/admin/realms/bench/users', { username: `seed-${i}`, email: `seed-${i}@example.test`, enabled: true });
        ids.push(created.headers.get('location')!.split('/').pop()!);
      }

      bearer = await token(); // fresh for each timed phase: master tokens are short-lived
      const reads = await measure(SECONDS, 4, async (i) => {
        const path = i % 2 ? `/admin/realms/bench/users/${ids[i % ids.length]}` : `/admin/realms/bench/users?first=${i % 30}&max=20`;
        await (await call(bearer, 'GET', path)).arrayBuffer();
      });
      figures['admin reads req/s'] = reads.rate;
      figures['admin reads CPU ms/req'] = reads.cpuMs;

      bearer = await token();
      const writes = await measure(SECONDS, 4, async (i) => {
        await (await call(bearer, 'POST', '/admin/realms/bench/users', { username: `user-${i}`, email: `user-${i}@example.test`, enabled: true })).arrayBuffer();
      });
      figures['admin writes req/s'] = writes.rate;
      figures['admin writes CPU ms/req'] = writes.cpuMs;
    } finally {
      await server.close();
    }
    return { node: process.version, driver, figures };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(node: string): Promise<ChildResult> {
  return new Promise((done, fail) => {
    const proc = spawn(node, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.on('error', fail);
    proc.on('close', (code, signal) => {
      if (code !== 0) return fail(new Error(`host bench on ${node} exited ${code ?? signal}`));
      done(JSON.parse(out.trim().split('\n').pop()!) as ChildResult);
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function run(rounds = 3): Promise<HostBench> {
  const node24 = execFileSync(process.execPath, [join(ROOT, 'scripts/node-runtime.mjs'), '24'], { encoding: 'utf8' }).trim();
  const results: { base: ChildResult[]; next: ChildResult[] } = { base: [], next: [] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first, so neither always gets the cooler machine.
    if (r % 2 === 0) {
      results.base.push(await runChild(process.execPath));
      results.next.push(await runChild(node24));
    } else {
      results.next.push(await runChild(node24));
      results.base.push(await runChild(process.execPath));
    }
  }
  const baseNode = results.base[0].node;
  const nextNode = results.next[0].node;
  const figures: HostFigure[] = Object.keys(results.base[0].figures).map((name) => {
    const base = median(results.base.map((r) => r.figures[name]));
    const value = median(results.next.map((r) => r.figures[name]));
    // CPU per operation: lower is better, so its ratio is inverted to read like the rates (>= 0.95 is the bar).
    const lowerIsBetter = name.includes('CPU');
    return { name: `${name} on ${nextNode}`, unit: name.split(' ').pop()!, value, baseline: { name: `on ${baseNode}`, value: base }, ratio: lowerIsBetter ? base / value : value / base };
  });
  return { node: nextNode, baselineNode: baseNode, drivers: { [nextNode]: results.next[0].driver, [baseNode]: results.base[0].driver }, rounds, figures };
}

export function format(bench: HostBench): string {
  const lines = [`  drivers: ${Object.entries(bench.drivers).map(([n, d]) => `${n} ${d}`).join(', ')}; median of ${bench.rounds} alternating runs each`];
  for (const f of bench.figures) {
    lines.push(`  ${f.name}: ${f.value.toFixed(f.value < 10 ? 3 : 0)}  | baseline ${f.baseline.name}: ${f.baseline.value.toFixed(f.baseline.value < 10 ? 3 : 0)}  | ratio ${f.ratio.toFixed(2)} (target >= 0.95, higher is better)`);
  }
  return lines.join('\n');
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(await child()));
  process.exit(0); // the server's pools and timers are closed; nothing left should hold the process
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(format(await run()));
}
