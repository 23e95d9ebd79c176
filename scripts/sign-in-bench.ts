/**
 * Sign-in through the flow runner (issue 35): a form login through the Keycloak-shaped browser flow, and the password
 * grant, each beside the same on the commit before the change (BEFORE, 4898357), measured in the same run.
 *
 * Two server processes run side by side for the whole run, each as token-bench starts one (production mode, so the
 * realm's production Argon2id cost on both; a fresh SQLite file; loopback; scale-bench's realm `scale`, confidential
 * client `bench`, user `user-0`), plus a public client `bench-browser` whose redirect URI is never followed:
 *  - "after": this checkout's packages/server/src/main.ts;
 *  - "before": the same file from a detached git worktree of BEFORE in a temporary directory, removed at the end of
 *    the run (on failure and on SIGINT/SIGTERM too). Its node_modules is a directory of its own holding a symlink to
 *    each entry of this checkout's node_modules (the same third-party code on both sides) except @realmgate, whose
 *    workspace links point at the worktree's own packages/*: linking node_modules whole would resolve
 *    @realmgate/spi through this checkout's `../../packages/spi` and run the after code. Both processes write every
 *    module they load to a log (scripts/module-log.mjs); the run fails unless each loaded its packages' files only
 *    from its own checkout, and only the after server loaded flows/engine.ts (which BEFORE does not have).
 * Each side is warmed up untimed (JIT_WARM_UP_SECONDS per mode), then ROUNDS rounds run both modes on both sides in
 * the order A B, then B A (A/B/B/A...), so drift hits both alike. A phase is SECONDS long:
 *  - form login: CLIENTS concurrent browsers without JavaScript in this process (packages/event-webhook/test/
 *    form-login.ts: a fresh cookie jar, GET the authorization endpoint with PKCE, POST username, password and the
 *    page's session_code with its cookies, then follow redirects until the one to the client's redirect URI with a
 *    `code`); only such logins count, anything else is an error and is reported;
 *  - password grant: token-bench's load process (16 keep-alive connections, 1 s warm-up not counted).
 * Per side: successes/s, median latency, and the server process's CPU time per success (/proc: the figure least moved
 * by the other load on a shared machine); each the median over rounds; the ratio is after's cost over before's
 * (before/after for rates), so <= 1.05 is the issue's goal; beside it the median of each round's ratio.
 *
 * SIGN_IN_BENCH_SECONDS (default 5), SIGN_IN_BENCH_ROUNDS (default 4), SIGN_IN_BENCH_CLIENTS (form logins in
 * flight, default 4), SIGN_IN_BENCH_BEFORE (the commit, default 4898357).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { concurrently, median } from './bench-support.js';
import { cpuMs, loadProcess, startSetUpRealmgate, type Target } from './token-bench.js';
import { CookieJar, formLogin } from '../packages/event-webhook/test/form-login.js';

const ROOT = resolve(import.meta.dirname, '..');
const BEFORE = process.env.SIGN_IN_BENCH_BEFORE ?? '4898357';
const SECONDS = Number(process.env.SIGN_IN_BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.SIGN_IN_BENCH_ROUNDS ?? 4);
const CLIENTS = Number(process.env.SIGN_IN_BENCH_CLIENTS ?? 4);
/** Untimed, per side and mode, before the rounds: until some hundreds of sign-ins have run V8 still compiles. */
const JIT_WARM_UP_SECONDS = 4;
const BROWSER_CLIENT = 'bench-browser';
const CALLBACK = 'http://127.0.0.1:9/cb'; // never requested: a login ends at the redirect to it
/** A file only the after code has: the after server must load it, the before server cannot. */
const AFTER_ONLY_FILE = 'packages/server/src/flows/engine.ts';

type Side = 'before' | 'after';
type SignInMode = 'form login' | 'password grant';

export interface SignInFigure {
  name: string;
  before: number;
  after: number;
  unit: string;
  /** After's cost over before's, of the medians: after / before for latencies and CPU, before / after for rates. */
  ratio: number;
  /** The same ratio in each round (the two sides measured next to each other), its median. */
  pairedRatio: number;
  /** The issue's bar for `ratio` (at most), or null. */
  goal: number | null;
}

export interface SignInBench {
  node: string;
  before: { commit: string; subject: string };
  after: { commit: string; subject: string; uncommittedChanges: boolean };
  seconds: number;
  rounds: number;
  formClients: number;
  figures: SignInFigure[];
  /** Files under packages/ each server loaded, by the checkout they came from: the proof each ran its own code. */
  modules: Record<Side, { ownCheckout: number; otherCheckout: number; afterOnlyFileLoaded: boolean }>;
  /** Every round's value, in the order measured. */
  samples: Record<string, number[]>;
  loadAverages: { phase: string; before: number; after: number }[];
  notes: string[];
}

// ---------------------------------------------------------------- the before checkout

interface Checkout {
  root: string;
  remove(): void;
}

/**
 * A detached worktree of `commit` in a temporary directory, with a node_modules that runs its own workspace packages
 * (see the file's comment). `remove` is synchronous, so it can run from a signal handler.
 */
function beforeCheckout(commit: string): Checkout {
  const root = mkdtempSync(join(tmpdir(), 'realmgate-sign-in-bench-before-'));
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    // node_modules first: it is a directory of symlinks (rmSync removes links, never what they point at).
    rmSync(join(root, 'node_modules'), { recursive: true, force: true });
    try {
      execFileSync('git', ['worktree', 'remove', '--force', root], { cwd: ROOT, stdio: 'ignore' });
    } catch {
      // not registered (the add failed) or already gone: the directory and git's record are cleaned below
    }
    rmSync(root, { recursive: true, force: true });
    execFileSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' });
  };
  try {
    execFileSync('git', ['worktree', 'add', '--detach', root, commit], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    const modules = join(root, 'node_modules');
    mkdirSync(join(modules, '@realmgate'), { recursive: true });
    for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
      if (entry === '@realmgate' || entry.startsWith('.')) continue; // .bin, .vite, npm's lock copy: not modules
      symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry));
    }
    for (const entry of readdirSync(join(ROOT, 'node_modules/@realmgate'))) {
      if (existsSync(join(root, 'packages', entry))) symlinkSync(join(root, 'packages', entry), join(modules, '@realmgate', entry), 'dir');
    }
    return { root, remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/** The files under `packages/` the module log lists, by whether they lie in `own` or in `other` (checkout roots). */
function loadedFrom(log: string, own: string, other: string): SignInBench['modules'][Side] {
  const urls = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  const files = new Set(urls.map((url) => fileURLToPath(url.replace(/[?#].*$/, ''))));
  const under = (root: string) => [...files].filter((file) => file.startsWith(join(root, 'packages') + '/'));
  return { ownCheckout: under(own).length, otherCheckout: under(other).length, afterOnlyFileLoaded: files.has(join(own, AFTER_ONLY_FILE)) };
}

// ---------------------------------------------------------------- the two modes

/** The public client the form logins use, on a server set up by token-bench. */
async function addBrowserClient(url: string): Promise<void> {
  const { ADMIN_PASSWORD, REALM } = await import('./scale-bench.js');
  const { api, tokenRequest } = await import('../packages/server/test/support/server.js');
  const bearer = (await tokenRequest(url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: ADMIN_PASSWORD })).body.access_token as string;
  const { status, body } = await api(url, 'POST', `/admin/realms/${REALM}/clients`, bearer, { clientId: BROWSER_CLIENT, publicClient: true, standardFlowEnabled: true, redirectUris: [CALLBACK] });
  if (status !== 201) throw new Error(`creating ${BROWSER_CLIENT}: ${status} ${JSON.stringify(body)}`);
}

/**
 * One form login to the end: true when it reached the redirect to the client with a code. Redirects before it (none
 * on either side today) are followed with the login's cookies.
 */
async function oneFormLogin(url: string): Promise<boolean> {
  const { REALM, USER_PASSWORD } = await import('./scale-bench.js');
  const jar = new CookieJar();
  let answer = await formLogin({ baseUrl: url, realm: REALM, clientId: BROWSER_CLIENT, redirectUri: CALLBACK }, 'user-0', USER_PASSWORD, {}, jar);
  for (let hops = 0; hops < 5; hops++) {
    if (answer.status !== 302 && answer.status !== 303) return false;
    const location = answer.location ?? '';
    if (location.startsWith(`${CALLBACK}?`)) return new URL(location).searchParams.has('code');
    const response = await fetch(new URL(location, url), { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(response);
    answer = { status: response.status, location: response.headers.get('location'), html: await response.text() };
  }
  return false;
}

interface PhaseResult {
  count: number;
  errors: number;
  rate: number;
  p50: number;
  /** The server process's CPU time per successful sign-in, ms (all its threads). */
  cpu: number;
}

async function formLogins(target: Target, seconds: number): Promise<PhaseResult> {
  const succeeded: number[] = [];
  const cpuBefore = cpuMs(target.pid);
  const { latencies, elapsed } = await concurrently(CLIENTS, seconds, async () => {
    const started = performance.now();
    if (await oneFormLogin(target.url!).catch(() => false)) succeeded.push(performance.now() - started);
  });
  return {
    count: latencies.length,
    errors: latencies.length - succeeded.length,
    rate: succeeded.length / elapsed,
    p50: succeeded.length ? median(succeeded) : Number.NaN,
    cpu: (cpuMs(target.pid) - cpuBefore) / Math.max(1, succeeded.length),
  };
}

async function passwordGrants(target: Target, seconds: number): Promise<PhaseResult> {
  const cpuBefore = cpuMs(target.pid);
  const result = await loadProcess(target.token, 'password', seconds);
  // The load process's 1 s warm-up is in the server's CPU time too: spread over its share of the requests.
  const successes = (result.count - result.errors) * ((seconds + 1) / seconds);
  return { count: result.count, errors: result.errors, rate: result.rate, p50: result.p50, cpu: (cpuMs(target.pid) - cpuBefore) / Math.max(1, successes) };
}

const phases: Record<SignInMode, (target: Target, seconds: number) => Promise<PhaseResult>> = { 'form login': formLogins, 'password grant': passwordGrants };

// ---------------------------------------------------------------- the run

function commitOf(root: string, revision: string): { commit: string; subject: string } {
  const [commit, subject] = execFileSync('git', ['log', '-1', '--format=%H%n%s', revision], { cwd: root, encoding: 'utf8' }).split('\n');
  return { commit, subject };
}

export async function run(): Promise<SignInBench> {
  const bench: SignInBench = {
    node: process.version,
    before: commitOf(ROOT, BEFORE),
    after: { ...commitOf(ROOT, 'HEAD'), uncommittedChanges: execFileSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '' },
    seconds: SECONDS,
    rounds: ROUNDS,
    formClients: CLIENTS,
    figures: [],
    modules: {} as SignInBench['modules'],
    samples: {},
    loadAverages: [],
    notes: [],
  };
  const logs = mkdtempSync(join(tmpdir(), 'realmgate-sign-in-bench-modules-'));
  const checkout = beforeCheckout(BEFORE);
  const targets: Partial<Record<Side, Target>> = {};
  const onSignal = (signal: NodeJS.Signals) => {
    for (const target of Object.values(targets)) void target.stop(); // sends SIGTERM now
    checkout.remove();
    rmSync(logs, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const roots: Record<Side, string> = { before: checkout.root, after: ROOT };
    for (const side of ['before', 'after'] as const) {
      const target = await startSetUpRealmgate('sqlite', { root: roots[side], moduleLog: join(logs, `${side}.log`) });
      targets[side] = target;
      await addBrowserClient(target.url!);
    }
    const sides = targets as Record<Side, Target>;
    const modes: SignInMode[] = ['form login', 'password grant'];
    for (const mode of modes) for (const side of ['before', 'after'] as const) await phases[mode](sides[side], JIT_WARM_UP_SECONDS);
    for (let round = 0; round < ROUNDS; round++) {
      const order: Side[] = round % 2 ? ['after', 'before'] : ['before', 'after'];
      for (const mode of modes) {
        for (const side of order) {
          const phase = `${side} ${mode}`;
          const load = loadavg()[0];
          const result = await phases[mode](sides[side], SECONDS);
          bench.loadAverages.push({ phase, before: load, after: loadavg()[0] });
          if (result.errors) bench.notes.push(`round ${round + 1}, ${phase}: ${result.errors} of ${result.count} did not end in a code (not counted)`);
          for (const [key, value] of Object.entries({ rate: result.rate, p50: result.p50, cpu: result.cpu })) (bench.samples[`${phase} ${key}`] ??= []).push(value);
        }
      }
    }
    for (const side of ['before', 'after'] as const) bench.modules[side] = loadedFrom(join(logs, `${side}.log`), roots[side], roots[side === 'before' ? 'after' : 'before']);
  } finally {
    for (const side of ['after', 'before'] as const) await targets[side]?.stop();
    checkout.remove();
    rmSync(logs, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const { before, after } = bench.modules;
  if (!before.ownCheckout || before.otherCheckout || before.afterOnlyFileLoaded || !after.ownCheckout || after.otherCheckout || !after.afterOnlyFileLoaded) {
    throw new Error(`a server did not run its own checkout's code: ${JSON.stringify(bench.modules)}`);
  }
  const m = (key: string) => median(bench.samples[key]);
  for (const mode of ['form login', 'password grant'] as const) {
    const figure = (name: string, key: string, unit: string, higherIsBetter: boolean, goal: number | null): SignInFigure => {
      const cost = (b: number, a: number) => (higherIsBetter ? b / a : a / b);
      const b = m(`before ${mode} ${key}`);
      const a = m(`after ${mode} ${key}`);
      const paired = median(bench.samples[`before ${mode} ${key}`].map((value, round) => cost(value, bench.samples[`after ${mode} ${key}`][round])));
      return { name: `${mode}: ${name}`, before: b, after: a, unit, ratio: cost(b, a), pairedRatio: paired, goal };
    };
    bench.figures.push(
      figure(mode === 'form login' ? `logins per second, ${CLIENTS} in flight` : 'grants per second, 16 connections', 'rate', '/s', true, 1.05),
      figure('median latency', 'p50', 'ms', false, null),
      figure('server CPU time per success', 'cpu', 'ms', false, null),
    );
  }
  return bench;
}

export function format(bench: SignInBench): string {
  const v = (x: number) => x.toFixed(x < 10 ? 2 : 1);
  const lines = [
    `  ${bench.node}; before ${bench.before.commit.slice(0, 7)} "${bench.before.subject.slice(0, 60)}", after ${bench.after.commit.slice(0, 7)}${bench.after.uncommittedChanges ? ' + uncommitted changes' : ''}`,
    `  ${bench.seconds} s per phase, median of ${bench.rounds} rounds alternating which side goes first; ratio = after's cost / before's`,
  ];
  for (const f of bench.figures) {
    const met = f.goal === null ? '' : f.ratio <= f.goal ? ` (goal <= ${f.goal}: met)` : ` (goal <= ${f.goal}: MISSED)`;
    lines.push(`  ${f.name}: before ${v(f.before)} ${f.unit}, after ${v(f.after)} ${f.unit}  | ratio ${f.ratio.toFixed(3)}${met}, per round ${f.pairedRatio.toFixed(3)}`);
  }
  lines.push(`  modules under packages/ loaded from their own checkout: before ${bench.modules.before.ownCheckout}, after ${bench.modules.after.ownCheckout} (from the other: ${bench.modules.before.otherCheckout}, ${bench.modules.after.otherCheckout})`);
  lines.push(`  load average (1 min) per phase: ${bench.loadAverages.map((l) => `${l.phase} ${l.before.toFixed(1)}/${l.after.toFixed(1)}`).join('; ')}`);
  for (const note of bench.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(format(await run()));
