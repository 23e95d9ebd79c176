/**
 * Keycloak as a column in the bench (issue 44 items 4 and 5): `npm run bench -- keycloak`.
 *
 * Realmgate and Keycloak 26.7.3 on this machine, loopback only, configured alike through their admin APIs, measured
 * with the same load processes in alternating rounds:
 *  - Realmgate as `npm start` runs it (scripts/bench-support.ts startRealmgate: production mode, log level warn, a
 *    fresh SQLite file, an empty providers directory, so no proof of work);
 *  - Keycloak in its production profile, a distribution of its own under $HOME/kc/bench (scripts/keycloak-dist.ts:
 *    fetched with Maven, cached, never committed), built once (`kc.sh build --db=dev-file`, untimed), then
 *    `kc.sh start --http-enabled=true --hostname-strict=false --cache=local --db=dev-file` on 127.0.0.1:8280
 *    (management port 9280) with its embedded database made fresh for each run, the bootstrap administrator from
 *    KC_BOOTSTRAP_ADMIN_*; in a process group of its own, killed when the run ends, fails or is interrupted.
 * Each is started on an empty database (first start), configured, stopped and started again (the restart: the
 * start-up figure with a goal), from spawning to the master realm's discovery document answering 200 (polled every
 * 200 ms on both). Both get: realm `scale` with the password policy `hashAlgorithm(argon2) and hashIterations(5)`
 * (Argon2id, 7168 KiB, 5 iterations, parallelism 1 on both: Realmgate's and Keycloak 26's defaults; the hash each
 * made is read back through the admin API and reported), the confidential client `bench` (client_credentials and
 * direct access grants), the public client `bench-browser` (code flow with PKCE) and the user `user-0`.
 *
 * Modes (each a load process of its own, the same for both servers; 1 s of warm-up not counted):
 *  - client_credentials and password grants: token-bench's load process (16 keep-alive connections);
 *  - browser login: BROWSERS concurrent logins without JavaScript (this file, `--browser-load`): a fresh cookie jar,
 *    GET the authorization endpoint (PKCE), POST the login form's fields with username and password and the cookies,
 *    the redirect to the client with a code, and the code exchanged at the token endpoint (200 with an access token).
 * Each server is warmed, mode by mode, until two consecutive rounds agree within 5% (at most WARM_UP_SECONDS per
 * server, split over the modes; a mode that did not settle is reported), then ROUNDS rounds run every mode on both,
 * the order of the servers alternating (A B, B A, ...). Figures are medians over the rounds; p99 from the load
 * processes; resident memory is the process tree's (/proc: kc.sh and its JVM; the Node process) after the restart,
 * idle, and the maximum sampled under load. The server's CPU time per success (the process tree's, /proc) is given
 * beside the rates: on a shared machine it is the figure least moved by other work.
 *
 * KEYCLOAK_BENCH_SECONDS (per round, default 10), KEYCLOAK_BENCH_ROUNDS (default 3), KEYCLOAK_BENCH_WARM_UP_SECONDS
 * (cap per server, default 300), KEYCLOAK_BENCH_BROWSERS (default 8).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { concurrently, killOnExit, median, startRealmgate, treeCpuMs, treeRssMb, warmUntilSteady, type WarmUp } from './bench-support.js';
import { KEYCLOAK_CACHE, KEYCLOAK_VERSION, keycloakHome, missingTools, spawnGroup } from './keycloak-dist.js';
import { loadProcess, type LoadResult } from './token-bench.js';
import { CookieJar } from '../packages/event-webhook/test/form-login.js';

// The server's modules (through scale-bench and the test support) only where servers are set up, so the browser
// load process carries none of them; the realm's names and secrets reach it as arguments.
const scaleBench = () => import('./scale-bench.js');

const ROOT = resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.KEYCLOAK_BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.KEYCLOAK_BENCH_ROUNDS ?? 3);
const WARM_UP_SECONDS = Number(process.env.KEYCLOAK_BENCH_WARM_UP_SECONDS ?? 300);
const BROWSERS = Number(process.env.KEYCLOAK_BENCH_BROWSERS ?? 8);
export const KEYCLOAK_BENCH_PORT = 8280;
export const KEYCLOAK_BENCH_MANAGEMENT_PORT = 9280;
const PASSWORD_POLICY = 'hashAlgorithm(argon2) and hashIterations(5)';
const BROWSER_CLIENT = 'bench-browser';
const CALLBACK = 'http://127.0.0.1:9/cb'; // never requested: a login ends at the redirect to it
const USER = 'user-0';
const READY_POLL_MS = 200;

export type ServerName = 'realmgate' | 'keycloak';
export type BenchMode = 'client_credentials' | 'password' | 'browser login';
const MODES: BenchMode[] = ['client_credentials', 'password', 'browser login'];

export interface KeycloakFigure {
  name: string;
  unit: string;
  realmgate: number;
  keycloak: number | null;
  /** realmgate / keycloak. */
  ratio: number | null;
  /** The issue's bar for `ratio`: at least (rates) or at most (memory, start-up); null where it sets none. */
  goal: { atLeast: number } | { atMost: number } | null;
  met: boolean | null;
}

export interface KeycloakBench {
  node: string;
  machine: { cores: number; arch: string; java: string | null };
  keycloak: string | null;
  seconds: number;
  rounds: number;
  browsers: number;
  passwordHashing: { policy: string; realmgate: unknown; keycloak: unknown };
  warmUp: Record<string, WarmUp>;
  figures: KeycloakFigure[];
  samples: Record<string, number[]>;
  loadAverages: { phase: string; before: number; after: number }[];
  notes: string[];
}

// ---------------------------------------------------------------- the browser login (load process)

/** The fields a login page's form posts: its action (absolute) and its hidden inputs. */
export function loginForm(baseUrl: string, html: string): { action: string; fields: Record<string, string> } {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  const action = form && /\baction="([^"]*)"/i.exec(form[1])?.[1];
  if (!form || !action) throw new Error(`no login form on the page: ${html.slice(0, 200)}`);
  const unescape = (text: string) => text.replace(/&amp;/g, '&').replace(/&#x2F;/gi, '/').replace(/&#39;/g, "'").replace(/&quot;/g, '"');
  const fields: Record<string, string> = {};
  for (const input of form[2].matchAll(/<input\b([^>]*)>/gi)) {
    const attribute = (name: string) => new RegExp(`\\b${name}="([^"]*)"`, 'i').exec(input[1])?.[1];
    const name = attribute('name');
    if (attribute('type')?.toLowerCase() === 'hidden' && name) fields[name] = unescape(attribute('value') ?? '');
  }
  return { action: new URL(unescape(action), baseUrl).href, fields };
}

/** One whole login as a browser without JavaScript does it, then the client's code exchange; throws unless all went as expected. */
export async function browserLogin(baseUrl: string, realmName: string, password: string): Promise<void> {
  const jar = new CookieJar();
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: BROWSER_CLIENT,
    redirect_uri: CALLBACK,
    response_type: 'code',
    scope: 'openid',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const realm = `${baseUrl}/realms/${realmName}/protocol/openid-connect`;
  const page = await fetch(`${realm}/auth?${query}`, { redirect: 'manual' });
  jar.take(page);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`login page: ${page.status}`);
  if (html.includes('rg-pow')) throw new Error('the login page asks for proof of work');
  const form = loginForm(baseUrl, html);
  let answer = await fetch(form.action, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: jar.header() },
    body: new URLSearchParams({ ...form.fields, username: USER, password }),
  });
  for (let hops = 0; ; hops++) {
    jar.take(answer);
    await answer.text();
    const location = answer.headers.get('location') ?? '';
    if ((answer.status !== 302 && answer.status !== 303) || hops > 4) throw new Error(`login: ${answer.status} ${location}`);
    if (location.startsWith(`${CALLBACK}?`)) {
      const code = new URL(location).searchParams.get('code');
      if (!code) throw new Error(`login: no code in ${location}`);
      const token = await fetch(`${realm}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, client_id: BROWSER_CLIENT, code_verifier: verifier }),
      });
      const body = (await token.json()) as { access_token?: string };
      if (token.status !== 200 || !body.access_token) throw new Error(`code exchange: ${token.status}`);
      return;
    }
    answer = await fetch(new URL(location, baseUrl), { redirect: 'manual', headers: { cookie: jar.header() } });
  }
}

/** `--browser-load`: BROWSERS logins in flight against `baseUrl` for `seconds` after 1 s not counted. */
async function browserLoad(baseUrl: string, seconds: number, browsers: number, realm: string, password: string): Promise<Omit<LoadResult, 'cpu'>> {
  const phase = async (length: number) => {
    let errors = 0;
    const statuses: Record<string, number> = {};
    const { latencies, elapsed, at } = await concurrently(browsers, length, async () => {
      await browserLogin(baseUrl, realm, password).then(
        () => (statuses.ok = (statuses.ok ?? 0) + 1),
        (error: unknown) => {
          errors++;
          const key = error instanceof Error ? error.message.slice(0, 60) : 'error';
          statuses[key] = (statuses[key] ?? 0) + 1;
        },
      );
    });
    return { count: latencies.length, errors, rate: (latencies.length - errors) / elapsed, p50: at(0.5), p99: at(0.99), statuses };
  };
  await phase(1);
  return phase(seconds);
}

async function browserLoadProcess(baseUrl: string, seconds: number): Promise<Omit<LoadResult, 'cpu'>> {
  const { REALM, USER_PASSWORD } = await scaleBench();
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--browser-load', baseUrl, String(seconds), String(BROWSERS), REALM, USER_PASSWORD], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.on('error', fail);
    proc.on('close', (code) => (code === 0 ? done(JSON.parse(out.trim().split('\n').pop()!)) : fail(new Error(`--browser-load exited ${code}`))));
  });
}

// ---------------------------------------------------------------- the two servers, configured alike

interface Server {
  name: ServerName;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function adminToken(url: string, adminPassword: string): Promise<string> {
  const response = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: adminPassword }),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`admin token from ${url}: ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/**
 * The same admin API calls on both: the realm with its password policy, the two clients and the user. Returns what
 * the server says of the user's password hash (algorithm, iterations, Argon2 parameters).
 */
export async function configure(url: string, adminPassword: string): Promise<unknown> {
  const { CLIENT_SECRET, REALM, USER_PASSWORD } = await scaleBench();
  const bearer = await adminToken(url, adminPassword);
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${url}/admin/realms${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path} on ${url}: ${response.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  };
  await call('POST', '', { realm: REALM, enabled: true, passwordPolicy: PASSWORD_POLICY });
  await call('POST', `/${REALM}/clients`, { clientId: 'bench', publicClient: false, secret: CLIENT_SECRET, serviceAccountsEnabled: true, directAccessGrantsEnabled: true, standardFlowEnabled: false });
  await call('POST', `/${REALM}/clients`, {
    clientId: BROWSER_CLIENT,
    publicClient: true,
    standardFlowEnabled: true,
    directAccessGrantsEnabled: false,
    redirectUris: [CALLBACK],
    attributes: { 'pkce.code.challenge.method': 'S256' },
  });
  // First and last name and a verified address: Keycloak's default user profile asks for them at login otherwise.
  await call('POST', `/${REALM}/users`, {
    username: USER,
    email: `${USER}@scale.test`,
    emailVerified: true,
    firstName: 'Bench',
    lastName: 'User',
    enabled: true,
    credentials: [{ type: 'password', value: USER_PASSWORD, temporary: false }],
  });
  const [user] = (await call('GET', `/${REALM}/users?username=${USER}&exact=true`)) as { id: string }[];
  const credentials = (await call('GET', `/${REALM}/users/${user.id}/credentials`)) as { type: string; credentialData?: string }[];
  const password = credentials.find((c) => c.type === 'password');
  return password?.credentialData ? JSON.parse(password.credentialData) : null;
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/realms/master/.well-known/openid-configuration`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** A Realmgate on the SQLite file in `dir`, and the seconds from spawning it to its answering. */
async function startOwn(dir: string): Promise<{ server: Server; seconds: number }> {
  const { ADMIN_PASSWORD } = await scaleBench();
  const started = performance.now();
  const own = await startRealmgate({ dbUrl: `sqlite:${join(dir, 'bench.db')}`, dir, adminPassword: ADMIN_PASSWORD });
  const seconds = (performance.now() - started) / 1000;
  // Killed with this process too, as Keycloak's group is (Ctrl-C reaches it anyway; a SIGTERM to the bench would not).
  const forget = killOnExit(() => own.proc.kill('SIGKILL'));
  const stop = async () => {
    await own.stop();
    forget();
  };
  return { server: { name: 'realmgate', url: own.url, pid: own.proc.pid!, stop }, seconds };
}

const KEYCLOAK_BUILD_OPTIONS = ['--db=dev-file'];

/** Keycloak's bench distribution, built once for the production profile with KEYCLOAK_BUILD_OPTIONS (untimed). */
function keycloakBenchHome(log: (line: string) => void): string {
  const home = keycloakHome(log, join(KEYCLOAK_CACHE, 'bench'));
  const marker = join(home, 'realmgate-bench-build');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== KEYCLOAK_BUILD_OPTIONS.join(' ')) {
    log(`building Keycloak for the production profile (${KEYCLOAK_BUILD_OPTIONS.join(' ')}; once, untimed)`);
    execFileSync(join(home, 'bin', 'kc.sh'), ['build', ...KEYCLOAK_BUILD_OPTIONS], { stdio: ['ignore', 'ignore', 'inherit'] });
    writeFileSync(marker, KEYCLOAK_BUILD_OPTIONS.join(' '));
  }
  return home;
}

/** Keycloak started in the production profile on 127.0.0.1:8280, and the seconds from spawning it to its answering. */
async function startKeycloak(home: string, adminPassword: string, log: (line: string) => void): Promise<{ server: Server; seconds: number }> {
  const url = `http://127.0.0.1:${KEYCLOAK_BENCH_PORT}`;
  if (await answers(url)) throw new Error(`something already answers on ${url}; stop it first`);
  const logFile = join(KEYCLOAK_CACHE, 'bench', 'last-run.log');
  const out = createWriteStream(logFile, { flags: 'a' });
  log(`starting Keycloak ${KEYCLOAK_VERSION} (production profile) on ${url} (its log: ${logFile})`);
  const started = performance.now();
  const group = spawnGroup(
    join(home, 'bin', 'kc.sh'),
    [
      'start',
      '--http-enabled=true',
      '--hostname-strict=false',
      '--cache=local',
      ...KEYCLOAK_BUILD_OPTIONS,
      '--http-host=127.0.0.1',
      `--http-port=${KEYCLOAK_BENCH_PORT}`,
      `--http-management-port=${KEYCLOAK_BENCH_MANAGEMENT_PORT}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KC_BOOTSTRAP_ADMIN_USERNAME: 'admin', KC_BOOTSTRAP_ADMIN_PASSWORD: adminPassword } },
  );
  group.child.stdout!.pipe(out);
  group.child.stderr!.pipe(out);
  const deadline = Date.now() + 15 * 60_000;
  while (!(await answers(url))) {
    if (group.exitCode() !== null) throw new Error(`Keycloak exited with ${group.exitCode()} before it answered; see ${logFile}`);
    if (Date.now() > deadline) {
      await group.stop();
      throw new Error(`Keycloak did not answer on ${url} in 15 minutes; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
  const seconds = (performance.now() - started) / 1000;
  return { server: { name: 'keycloak', url, pid: group.child.pid!, stop: () => group.stop() }, seconds };
}

// ---------------------------------------------------------------- measuring

async function measure(server: Server, mode: BenchMode, seconds: number): Promise<{ rate: number; p99: number; rssMax: number; cpu: number; errors: number; count: number; statuses: Record<string, number> }> {
  const { REALM } = await scaleBench();
  let rssMax = treeRssMb(server.pid);
  const cpuBefore = treeCpuMs(server.pid);
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, treeRssMb(server.pid))), 500);
  try {
    const tokenUrl = `${server.url}/realms/${REALM}/protocol/openid-connect/token`;
    const result = mode === 'browser login' ? await browserLoadProcess(server.url, seconds) : await loadProcess(tokenUrl, mode, seconds);
    // The load process's 1 s of warm-up is in the server's CPU time too: spread over its share of the successes.
    const successes = (result.count - result.errors) * ((seconds + 1) / seconds);
    const cpu = (treeCpuMs(server.pid) - cpuBefore) / Math.max(1, successes);
    return { rate: result.rate, p99: result.p99, rssMax, cpu, errors: result.errors, count: result.count, statuses: result.statuses };
  } finally {
    clearInterval(sampler);
  }
}

/** The figures of `samples` (per-round values under `<server> <key>`), the ratio realmgate / keycloak and the goal. */
export function figuresOf(samples: Record<string, number[]>, withKeycloak: boolean): KeycloakFigure[] {
  const figure = (name: string, key: string, unit: string, goal: KeycloakFigure['goal']): KeycloakFigure => {
    const realmgate = median(samples[`realmgate ${key}`] ?? [Number.NaN]);
    const keycloak = withKeycloak ? median(samples[`keycloak ${key}`] ?? [Number.NaN]) : null;
    const ratio = keycloak === null ? null : realmgate / keycloak;
    const met = ratio === null || goal === null || !Number.isFinite(ratio) ? null : 'atLeast' in goal ? ratio >= goal.atLeast : ratio <= goal.atMost;
    return { name, unit, realmgate, keycloak, ratio, goal, met };
  };
  return [
    figure('client_credentials grants', 'client_credentials rate', '/s', { atLeast: 3 }),
    figure('password grants (Argon2id m=7168 KiB, t=5, p=1 on both)', 'password rate', '/s', null),
    figure('browser logins (login page, form post, code exchange)', 'browser login rate', '/s', { atLeast: 2 }),
    figure('p99 latency, client_credentials, 16 connections', 'client_credentials p99', 'ms', null),
    figure('p99 latency, password grants, 16 connections', 'password p99', 'ms', null),
    figure(`p99 latency, whole browser login, ${BROWSERS} in flight`, 'browser login p99', 'ms', null),
    figure('server CPU time per client_credentials grant (process tree)', 'client_credentials cpu', 'ms', null),
    figure('server CPU time per password grant (process tree)', 'password cpu', 'ms', null),
    figure('server CPU time per browser login (process tree)', 'browser login cpu', 'ms', null),
    figure('resident memory after the restart, idle (process tree)', 'rss start', 'MB', { atMost: 0.5 }),
    figure('resident memory under load, the most sampled (process tree)', 'rss load', 'MB', { atMost: 0.5 }),
    figure('start-up: spawn to the discovery document, existing database (restart)', 'restart', 's', { atMost: 0.3 }),
    figure('start-up: spawn to the discovery document, empty database (first start)', 'first start', 's', null),
  ];
}

/** The first line `java -version` writes (to stderr), or null. */
function javaLine(): string | null {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  return java.error ? null : `${java.stderr}${java.stdout}`.split('\n')[0].trim() || null;
}

export async function run(): Promise<KeycloakBench> {
  const log = (line: string) => console.log(`  ${line}`);
  const missing = missingTools();
  const { ADMIN_PASSWORD } = await scaleBench();
  const bench: KeycloakBench = {
    node: process.version,
    machine: { cores: availableParallelism(), arch: arch(), java: missing ? null : javaLine() },
    keycloak: missing ? null : KEYCLOAK_VERSION,
    seconds: SECONDS,
    rounds: ROUNDS,
    browsers: BROWSERS,
    passwordHashing: { policy: PASSWORD_POLICY, realmgate: null, keycloak: null },
    warmUp: {},
    figures: [],
    samples: {},
    loadAverages: [],
    notes: [],
  };
  if (missing) {
    const note = `Keycloak not measured: ${missing}; Realmgate's figures only, without ratios`;
    console.log(`  KEYCLOAK NOT MEASURED: ${missing}`);
    bench.notes.push(note);
  }
  const add = (key: string, value: number) => (bench.samples[key] ??= []).push(value);
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-keycloak-bench-'));
  // Removed on an interrupted run too (a signal ends the process without the `finally` below).
  const forgetDir = killOnExit(() => rmSync(dir, { recursive: true, force: true }));
  const running: Server[] = [];
  const stopAll = async () => {
    for (const server of running.splice(0).reverse()) await server.stop();
  };
  try {
    // First starts on empty databases, the configuration, then the restarts that are measured.
    const first = await startOwn(dir);
    running.push(first.server);
    add('realmgate first start', first.seconds);
    bench.passwordHashing.realmgate = await configure(first.server.url, ADMIN_PASSWORD);
    await stopAll();
    let keycloakPassword = '';
    let home = '';
    if (!missing) {
      home = keycloakBenchHome(log);
      rmSync(join(home, 'data'), { recursive: true, force: true });
      keycloakPassword = randomBytes(18).toString('base64url');
      const kcFirst = await startKeycloak(home, keycloakPassword, log);
      running.push(kcFirst.server);
      add('keycloak first start', kcFirst.seconds);
      log(`Keycloak's first start: ${kcFirst.seconds.toFixed(1)} s`);
      bench.passwordHashing.keycloak = await configure(kcFirst.server.url, keycloakPassword);
      await stopAll();
    }
    const realmgate = await startOwn(dir);
    running.push(realmgate.server);
    add('realmgate restart', realmgate.seconds);
    const servers: Server[] = [realmgate.server];
    if (!missing) {
      const keycloak = await startKeycloak(home, keycloakPassword, log);
      running.push(keycloak.server);
      add('keycloak restart', keycloak.seconds);
      servers.push(keycloak.server);
    }
    await new Promise((r) => setTimeout(r, 2000));
    for (const server of servers) add(`${server.name} rss start`, treeRssMb(server.pid));

    for (const server of servers) {
      for (const mode of MODES) {
        const before = loadavg()[0];
        const warm = await warmUntilSteady(async () => (await measure(server, mode, SECONDS)).rate, { capSeconds: WARM_UP_SECONDS / MODES.length });
        bench.loadAverages.push({ phase: `warm-up ${server.name} ${mode}`, before, after: loadavg()[0] });
        bench.warmUp[`${server.name} ${mode}`] = warm;
        log(`warm-up ${server.name} ${mode}: ${warm.rounds.map((r) => r.toFixed(1)).join(', ')}/s${warm.steady ? '' : ' NOT STEADY'}`);
        if (!warm.steady) bench.notes.push(`${server.name} ${mode}: not steady within 5% after ${warm.seconds.toFixed(0)} s of warm-up (rounds ${warm.rounds.map((r) => r.toFixed(1)).join(', ')}/s)`);
      }
    }
    const rssLoad: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      const rssRound: Record<string, number> = {};
      for (const mode of MODES) {
        for (const server of round % 2 ? [...servers].reverse() : servers) {
          const before = loadavg()[0];
          const result = await measure(server, mode, SECONDS);
          bench.loadAverages.push({ phase: `round ${round + 1} ${server.name} ${mode}`, before, after: loadavg()[0] });
          add(`${server.name} ${mode} rate`, result.rate);
          add(`${server.name} ${mode} p99`, result.p99);
          add(`${server.name} ${mode} cpu`, result.cpu);
          rssRound[server.name] = Math.max(rssRound[server.name] ?? 0, result.rssMax);
          rssLoad[server.name] = Math.max(rssLoad[server.name] ?? 0, result.rssMax);
          if (result.errors) bench.notes.push(`round ${round + 1} ${server.name} ${mode}: ${result.errors} of ${result.count} not as expected: ${JSON.stringify(result.statuses)}`);
          log(`round ${round + 1} ${server.name} ${mode}: ${result.rate.toFixed(1)}/s, p99 ${result.p99.toFixed(1)} ms, CPU ${result.cpu.toFixed(2)} ms, RSS ${result.rssMax.toFixed(0)} MB`);
        }
      }
      for (const [name, rss] of Object.entries(rssRound)) add(`${name} rss load`, rss);
    }
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    forgetDir();
  }
  bench.figures = figuresOf(bench.samples, !missing);
  const loads = bench.loadAverages.map((l) => l.before);
  bench.notes.push(
    `shared machine: other work ran beside the bench; 1-minute load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} on ${availableParallelism()} cores over the phases (bench.loadAverages)`,
  );
  return bench;
}

export function format(bench: KeycloakBench): string {
  const v = (x: number | null) => (x === null || !Number.isFinite(x) ? '-' : x.toFixed(x < 10 ? 2 : x < 100 ? 1 : 0));
  const lines = [
    `  ${bench.node}, ${bench.machine.cores} cores ${bench.machine.arch}, ${bench.keycloak ? `Keycloak ${bench.keycloak} on ${bench.machine.java}` : 'no Keycloak'}; ${bench.seconds} s per round, median of ${bench.rounds} alternating rounds`,
    `  password hashing: ${bench.passwordHashing.policy}; Realmgate's hash ${JSON.stringify(bench.passwordHashing.realmgate)}; Keycloak's ${JSON.stringify(bench.passwordHashing.keycloak)}`,
  ];
  for (const f of bench.figures) {
    const goal = f.goal === null ? '' : 'atLeast' in f.goal ? ` (goal >= ${f.goal.atLeast})` : ` (goal <= ${f.goal.atMost})`;
    const miss = f.met === false ? '  MISSED' : '';
    lines.push(`  ${f.name}: Realmgate ${v(f.realmgate)} ${f.unit}  | Keycloak ${v(f.keycloak)} ${f.unit}  | ratio ${v(f.ratio)}${goal}${miss}`);
  }
  for (const note of bench.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

const [flag, ...args] = process.argv.slice(2);
if (flag === '--browser-load') {
  console.log(JSON.stringify(await browserLoad(args[0], Number(args[1]), Number(args[2]), args[3], args[4])));
  process.exit(0);
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(format(await run()));
}
