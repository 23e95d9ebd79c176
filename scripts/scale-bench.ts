/**
 * Data scale (issue 19, point 3): token grants and admin user searches with 100, 10,000 and 1,000,000 users in a
 * realm, on SQLite and on PostgreSQL, each figure beside the same one with 100 users in the same run.
 *
 * For each database, `run()`:
 *  1. starts two real server processes (packages/server/src/main.ts, production mode, --hostname on 127.0.0.1),
 *     each on a fresh database (a temporary SQLite file; a PostgreSQL database of its own on REALMGATE_TEST_PG_URL,
 *     dropped afterwards): one stays at 100 users (the baseline), the other grows;
 *  2. creates through the admin API a realm `scale`, a confidential client with a service account and direct
 *     access grants, and one user with a password, whose Argon2id hash every seeded user then shares;
 *  3. grows the realm to each size through the bulk path, UserRepository.insertMany in transactions of 5,000
 *     users, measured (users/s) beside single-row inserts (one transaction each, as one admin POST does);
 *  4. asks the database for its query plan of each lookup the grants and the searches make (EXPLAIN QUERY PLAN,
 *     EXPLAIN), and runs a load process (`--load`, this file in a second Node process) against the server with
 *     keep-alive connections (Node's fetch: undici's pooled agent): client_credentials and password grants
 *     (requests/s; a password grant verifies one Argon2id hash: that is its cost), and admin searches by exact
 *     username, by `search=` and by exact e-mail (p50/p99 ms).
 *
 * Each figure at 10,000 and 1,000,000 users is the median of SCALE_BENCH_ROUNDS (default 3) load runs alternating
 * with as many against a second server whose database stays at 100 users (see runDatabase).
 * SCALE_BENCH_MAX_USERS caps the sizes (default 1,000,000), SCALE_BENCH_SECONDS is each load phase's length
 * (default 5), SCALE_BENCH_DATABASES picks `sqlite`, `postgres` or both (default both).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { concurrently, startRealmgate, type RealmgateOptions } from './bench-support.js';
import { api, createPgDatabase, tokenRequest } from '../packages/server/test/support/server.js';

const ROOT = resolve(import.meta.dirname, '..');
const MAX_USERS = Number(process.env.SCALE_BENCH_MAX_USERS ?? 1_000_000);
const SECONDS = Number(process.env.SCALE_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.SCALE_BENCH_ROUNDS ?? 3);
const DATABASES = (process.env.SCALE_BENCH_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const SIZES = [100, 10_000, 1_000_000].filter((n) => n <= MAX_USERS);
const BATCH = 5_000;
export const ADMIN_PASSWORD = 'scale-bench-admin-password';
export const USER_PASSWORD = 'scale-bench-user-password';
export const CLIENT_SECRET = 'scale-bench-client-secret';
export const REALM = 'scale';

export interface ScaleFigure {
  name: string;
  value: number;
  unit: string;
  baseline: { name: string; value: number } | null;
  /** Higher is better: value / baseline for rates, baseline / value for latencies. */
  ratio: number | null;
  /** The bar for `ratio`, or null where the issue sets none. */
  goal: string | null;
}

export interface ScaleBench {
  sizes: number[];
  seconds: number;
  rounds: number;
  figures: ScaleFigure[];
  plans: Record<string, Record<string, string>>;
  loadAverages: number[][];
  notes: string[];
}

type LoadResult = Record<string, { count: number; errors: number; rate: number; p50: number; p99: number }>;

// ---------------------------------------------------------------- load process

async function load(url: string, users: number): Promise<LoadResult> {
  const token = `${url}/realms/${REALM}/protocol/openid-connect/token`;
  const pick = () => Math.floor(Math.random() * users);
  const phase = async (clients: number, op: () => Promise<Response>) => {
    let errors = 0;
    const { latencies, elapsed, at } = await concurrently(clients, SECONDS, async () => {
      const response = await op();
      await response.arrayBuffer();
      if (response.status !== 200) errors++;
    });
    return { count: latencies.length, errors, rate: (latencies.length - errors) / elapsed, p50: at(0.5), p99: at(0.99) };
  };
  const form = (body: Record<string, string>) => () => fetch(token, { method: 'POST', body: new URLSearchParams(body) });
  const adminToken = async () => {
    const response = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: ADMIN_PASSWORD }),
    });
    return ((await response.json()) as { access_token: string }).access_token;
  };
  const admin = async (query: () => string) => {
    const bearer = await adminToken(); // fresh for each phase: master tokens are short-lived
    return phase(4, () => fetch(`${url}/admin/realms/${REALM}/users?${query()}`, { headers: { authorization: `Bearer ${bearer}` } }));
  };
  const result: LoadResult = {};
  result['client_credentials'] = await phase(4, form({ grant_type: 'client_credentials', client_id: 'bench', client_secret: CLIENT_SECRET }));
  result['password'] = await phase(4, () =>
    form({ grant_type: 'password', client_id: 'bench', client_secret: CLIENT_SECRET, username: `user-${pick()}`, password: USER_PASSWORD })(),
  );
  result['search username exact'] = await admin(() => `username=user-${pick()}&exact=true`);
  result['search'] = await admin(() => `search=user-${pick()}`);
  result['search email exact'] = await admin(() => `email=user-${pick()}@scale.test&exact=true`);
  return result;
}

function runLoad(url: string, users: number): Promise<LoadResult> {
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--load', url, String(users)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.on('error', fail);
    proc.on('close', (code) => (code === 0 ? done(JSON.parse(out.trim().split('\n').pop()!) as LoadResult) : fail(new Error(`load process exited ${code}`))));
  });
}

// ---------------------------------------------------------------- server process and setup

export { freePort } from './bench-support.js';

/** A Realmgate process on `dbUrl` with the bench's administrator; `options` as startRealmgate's (another checkout's server). */
export function startServer(dbUrl: string, dir: string, options: Pick<RealmgateOptions, 'root' | 'moduleLog'> = {}): ReturnType<typeof startRealmgate> {
  return startRealmgate({ dbUrl, dir, adminPassword: ADMIN_PASSWORD, ...options });
}

/** Realm `scale`: a confidential client `bench` (service account, direct access grants) and the user `user-0`. */
export async function setUp(url: string): Promise<void> {
  const bearer = (await tokenRequest(url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: ADMIN_PASSWORD })).body.access_token as string;
  const create = async (path: string, body: unknown) => {
    const { status, body: answer } = await api(url, 'POST', path, bearer, body);
    if (status !== 201) throw new Error(`POST ${path}: ${status} ${JSON.stringify(answer)}`);
  };
  await create('/admin/realms', { realm: REALM, enabled: true });
  await create(`/admin/realms/${REALM}/clients`, { clientId: 'bench', publicClient: false, secret: CLIENT_SECRET, serviceAccountsEnabled: true, directAccessGrantsEnabled: true });
  await create(`/admin/realms/${REALM}/users`, {
    username: 'user-0',
    email: 'user-0@scale.test',
    enabled: true,
    credentials: [{ type: 'password', value: USER_PASSWORD, temporary: false }],
  });
}

// ---------------------------------------------------------------- seeding and plans

type Storage = import('../packages/server/src/storage/index.js').Storage;
type User = import('../packages/server/src/model/types.js').User;

/** Grows the realm from `from` to `to` users (user-<i>, i in [from, to)) through insertMany; users/s. */
async function seed(storage: Storage, realmId: string, hash: string, from: number, to: number): Promise<number> {
  const now = Date.now();
  const start = performance.now();
  for (let base = from; base < to; base += BATCH) {
    const users: User[] = [];
    for (let i = base; i < Math.min(to, base + BATCH); i++) {
      users.push({
        id: randomUUID(),
        realmId,
        username: `user-${i}`,
        email: `user-${i}@scale.test`,
        emailVerified: true,
        firstName: `First${i}`,
        lastName: `Last${i}`,
        enabled: true,
        createdTimestamp: now,
        attributes: {},
        serviceAccountClientId: null,
        passwordHash: hash,
        passwordCreated: now,
      });
    }
    await storage.transaction((trx) => storage.users.insertMany(users, trx));
  }
  return (to - from) / ((performance.now() - start) / 1000);
}

/** Single-row inserts, one implicit transaction each (what one admin POST costs the database): users/s. */
async function seedOneByOne(storage: Storage, realmId: string, hash: string, count: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    await storage.users.insert({
      id: randomUUID(), realmId, username: `single-${i}`, email: `single-${i}@scale.test`, emailVerified: true, firstName: null, lastName: null,
      enabled: true, createdTimestamp: Date.now(), attributes: {}, serviceAccountClientId: null, passwordHash: hash, passwordCreated: Date.now(),
    });
  }
  const rate = count / ((performance.now() - start) / 1000);
  await storage.db.deleteFrom('user_entity').where('realm_id', '=', realmId).where('username', 'like', 'single-%').execute();
  return rate;
}

/**
 * The database's plan for each lookup a grant or a search makes: the SQL the repositories build (users.ts
 * `filtered` for the admin searches, so a change to the search is what the plan shows).
 */
async function plans(storage: Storage, realmId: string, clientUuid: string): Promise<Record<string, string>> {
  const { sql } = await import('kysely');
  const r = sql.lit(realmId);
  /** A compiled query with its parameters written in, for EXPLAIN. */
  const inline = (query: { sql: string; parameters: readonly unknown[] }) => {
    let text = query.sql;
    query.parameters.forEach((value, i) => {
      const literal = typeof value === 'string' ? `'${value.replace(/'/g, "''")}'` : String(value);
      text = storage.dialect === 'sqlite' ? text.replace('?', () => literal) : text.replace(new RegExp(`\\$${i + 1}\\b`), () => literal);
    });
    return sql.raw(text);
  };
  const search = (q: Parameters<Storage['users']['searchQuery']>[1]) => inline(storage.users.searchQuery(realmId, q).compile());
  const queries: Record<string, ReturnType<typeof sql>> = {
    'client by client_id (both grants)': sql`select * from client where realm_id = ${r} and client_id = ${sql.lit('bench')}`,
    'service account of client (client_credentials)': sql`select * from user_entity where service_account_client_id = ${sql.lit(clientUuid)}`,
    'user by username (password grant)': sql`select * from user_entity where realm_id = ${r} and username = ${sql.lit('user-4242')}`,
    'user by e-mail (password grant with an e-mail)': sql`select * from user_entity where realm_id = ${r} and email = ${sql.lit('user-4242@scale.test')}`,
    'search username exact': search({ username: 'user-4242', exact: true }),
    'search email exact': search({ email: 'user-4242@scale.test', exact: true }),
    'search (prefix of four fields, Keycloak\'s default)': search({ search: 'user-4242' }),
    'search (substring of four fields, *value*)': search({ search: '*user-4242*' }),
  };
  const out: Record<string, string> = {};
  for (const [name, query] of Object.entries(queries)) {
    const prefix = storage.dialect === 'sqlite' ? sql`explain query plan ` : sql`explain `;
    const { rows } = await sql`${prefix}${query}`.execute(storage.db);
    out[name] = (rows as Record<string, unknown>[])
      .map((row) => String(storage.dialect === 'sqlite' ? row.detail : row['QUERY PLAN']).trim())
      .join(' | ');
  }
  return out;
}

// ---------------------------------------------------------------- one database

/** One server on its own fresh database, with the bench's realm set up. */
async function openSide(kind: string) {
  const { Storage } = await import('../packages/server/src/storage/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-scale-bench-'));
  const pgDb = kind === 'postgres' ? await createPgDatabase() : null;
  const dbUrl = pgDb ? pgDb.url : `sqlite:${join(dir, 'scale.db')}`;
  const server = await startServer(dbUrl, dir);
  let storage: Storage | null = null;
  try {
    await setUp(server.url);
    storage = await Storage.open(dbUrl);
    const realm = (await storage.realms.byName(REALM))!;
    const user0 = (await storage.users.byUsername(realm.id, 'user-0'))!;
    const client = await storage.db.selectFrom('client').select('id').where('realm_id', '=', realm.id).where('client_id', '=', 'bench').executeTakeFirstOrThrow();
    const opened = storage;
    return {
      server,
      storage: opened,
      realmId: realm.id,
      clientUuid: client.id,
      hash: user0.passwordHash!,
      users: 1,
      async close() {
        await opened.close();
        await server.stop();
        await pgDb?.drop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await storage?.close();
    await server.stop();
    await pgDb?.drop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Each metric's median over rounds (rate, p50 and p99 each on their own); errors and counts summed. */
function medians(results: LoadResult[]): LoadResult {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const out: LoadResult = {};
  for (const metric of Object.keys(results[0])) {
    const all = results.map((r) => r[metric]);
    out[metric] = {
      count: all.reduce((sum, r) => sum + r.count, 0),
      errors: all.reduce((sum, r) => sum + r.errors, 0),
      rate: median(all.map((r) => r.rate)),
      p50: median(all.map((r) => r.p50)),
      p99: median(all.map((r) => r.p99)),
    };
  }
  return out;
}

/**
 * Two servers, each on a database of its own: `small` stays at SIZES[0] users, `big` grows through SIZES. At each
 * size their load phases alternate, ROUNDS each, and each figure is the median of its rounds beside the median of
 * the small database's rounds in the same stretch of time: a figure and its baseline see the same machine (a
 * baseline taken once at the start moved ratios by ±20 % and more as the machine's load changed). The small
 * database is a fresh one, not a small realm in the big database, whose indexes would be as deep as the big realm's.
 */
async function runDatabase(kind: string, bench: ScaleBench): Promise<void> {
  const small = await openSide(kind);
  try {
    const big = await openSide(kind);
    try {
      const single = await seedOneByOne(big.storage, big.realmId, big.hash, 2_000);
      await seed(small.storage, small.realmId, small.hash, 1, SIZES[0]);
      if (kind === 'postgres') await (await import('kysely')).sql`analyze user_entity`.execute(small.storage.db);
      const add = (metric: string, n: number, value: number, base: number | null, unit: string, lowerIsBetter: boolean, goal: string | null) => {
        const name = `${kind}: ${metric} with ${n.toLocaleString('en')} users`;
        bench.figures.push(
          base === null
            ? { name, value, unit, baseline: null, ratio: null, goal }
            : { name, value, unit, baseline: { name: `the same with ${SIZES[0]} users, alternating with it`, value: base }, ratio: lowerIsBetter ? base / value : value / base, goal },
        );
      };
      for (const n of SIZES) {
        const before = loadavg()[0];
        const rate = await seed(big.storage, big.realmId, big.hash, big.users, n);
        if (n - big.users >= BATCH) {
          bench.figures.push({
            name: `${kind}: bulk insert (insertMany, ${BATCH.toLocaleString('en')} users a transaction), ${big.users.toLocaleString('en')} to ${n.toLocaleString('en')} users`,
            value: rate,
            unit: 'users/s',
            baseline: { name: 'single-row inserts, one transaction each (2,000 users)', value: single },
            ratio: rate / single,
            goal: null,
          });
        }
        console.error(`  ${kind}: ${n} users (seeded ${(n - big.users).toLocaleString('en')} at ${rate.toFixed(0)} users/s)`);
        big.users = n;
        if (kind === 'postgres') await (await import('kysely')).sql`analyze user_entity`.execute(big.storage.db);
        bench.plans[`${kind} with ${n} users`] = await plans(big.storage, big.realmId, big.clientUuid);
        const smallRounds: LoadResult[] = [];
        const bigRounds: LoadResult[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          smallRounds.push(await runLoad(small.server.url, SIZES[0]));
          if (n !== SIZES[0]) bigRounds.push(await runLoad(big.server.url, n));
        }
        bench.loadAverages.push([n, before, loadavg()[0]]);
        const baseline = medians(smallRounds);
        const result = n === SIZES[0] ? baseline : medians(bigRounds);
        for (const [metric, r] of Object.entries(result)) {
          if (r.errors) bench.notes.push(`${kind} ${n}: ${metric} had ${r.errors} non-200 answers of ${r.count}`);
          const base = n === SIZES[0] ? null : baseline[metric];
          if (metric === 'client_credentials' || metric === 'password') {
            add(`${metric} grant`, n, r.rate, base && base.rate, 'requests/s', false, '>= 0.9');
            add(`${metric} grant p50`, n, r.p50, base && base.p50, 'ms', true, null);
          } else {
            add(`admin ${metric} p50`, n, r.p50, base && base.p50, 'ms', true, null);
            add(`admin ${metric} p99`, n, r.p99, base && base.p99, 'ms', true, null);
          }
        }
      }
    } finally {
      await big.close();
    }
  } finally {
    await small.close();
  }
}

export async function run(): Promise<ScaleBench> {
  const bench: ScaleBench = { sizes: SIZES, seconds: SECONDS, rounds: ROUNDS, figures: [], plans: {}, loadAverages: [], notes: [] };
  for (const kind of DATABASES) await runDatabase(kind, bench);
  return bench;
}

export function format(bench: ScaleBench): string {
  const lines: string[] = [];
  for (const f of bench.figures) {
    const v = (x: number) => x.toFixed(x < 10 ? 2 : 0);
    lines.push(`  ${f.name}: ${v(f.value)} ${f.unit}${f.baseline ? `  | baseline ${f.baseline.name}: ${v(f.baseline.value)}  | ratio ${f.ratio!.toFixed(2)}${f.goal ? ` (goal ${f.goal})` : ''}` : ''}`);
  }
  for (const [at, plan] of Object.entries(bench.plans)) {
    lines.push(`  plans, ${at}:`);
    for (const [q, p] of Object.entries(plan)) lines.push(`    ${q}: ${p}`);
  }
  lines.push(`  load average (1 min) before/after each size: ${bench.loadAverages.map(([n, a, b]) => `${n}: ${a.toFixed(2)}/${b.toFixed(2)}`).join(', ')}`);
  for (const note of bench.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

if (process.argv[2] === '--load') {
  console.log(JSON.stringify(await load(process.argv[3], Number(process.argv[4]))));
  process.exit(0);
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(format(await run()));
}
