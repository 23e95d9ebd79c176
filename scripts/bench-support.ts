import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Helpers the benches' scripts share.
 *
 * The loop every load phase of the benches runs: `clients` concurrent loops calling `op` until `seconds` have
 * passed, each call's latency kept. Returns the latencies (sorted, ms) and the seconds the phase took.
 */
export async function concurrently(clients: number, seconds: number, op: () => Promise<void>): Promise<{ latencies: number[]; elapsed: number; at(q: number): number }> {
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { latencies, elapsed, at: (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0 };
}

/** Stops a server process the bench started (SIGTERM) and resolves when it has exited. */
export function stopper(proc: ChildProcess): () => Promise<void> {
  let exited = proc.exitCode !== null || proc.signalCode !== null;
  proc.on('exit', () => (exited = true));
  return () =>
    new Promise((done) => {
      if (exited) return done();
      proc.on('exit', () => done());
      proc.kill('SIGTERM');
    });
}

/** A loopback port free at the time of asking. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createNetServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => done(port));
    });
  });
}

/** Options of `startRealmgate`. */
export interface RealmgateOptions {
  dbUrl: string;
  dir: string;
  adminUsername?: string;
  adminPassword: string;
  env?: Record<string, string>;
  hostnameFromRequest?: boolean;
  /** The checkout whose server runs (its packages/server/src/main.ts, its node_modules); this one's by default. */
  root?: string;
  /** A file to which the process writes the URL of every module it loads (scripts/module-log.mjs). */
  moduleLog?: string;
}

/**
 * A Realmgate server process as `npm start` runs it (production mode, log level warn, loopback), on `dbUrl`,
 * its providers directory under `dir`; `env` adds to or overrides its settings; with `hostnameFromRequest` it has
 * no hostname and takes its public URL from each request (hostname-strict false). Resolves once its discovery
 * document answers (at most 120 s).
 */
export async function startRealmgate(options: RealmgateOptions): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const root = options.root ?? ROOT;
  const moduleLog = options.moduleLog ? ['--import', join(ROOT, 'scripts/module-log.mjs')] : [];
  const proc = spawn(process.execPath, ['--import', 'tsx', ...moduleLog, join(root, 'packages/server/src/main.ts')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      REALMGATE_MODE: 'production',
      ...(options.hostnameFromRequest ? { REALMGATE_HOSTNAME_STRICT: 'false' } : { REALMGATE_HOSTNAME: url }),
      REALMGATE_HTTP_HOST: '127.0.0.1',
      REALMGATE_HTTP_PORT: String(port),
      REALMGATE_DB_URL: options.dbUrl,
      REALMGATE_BOOTSTRAP_ADMIN_USERNAME: options.adminUsername ?? 'admin',
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: options.adminPassword,
      REALMGATE_PROVIDERS_DIR: join(options.dir, 'providers'),
      REALMGATE_LOG_LEVEL: 'warn',
      ...(options.moduleLog ? { REALMGATE_BENCH_MODULE_LOG: options.moduleLog } : {}),
      ...options.env,
    },
  });
  const stop = stopper(proc);
  let exited = false;
  proc.on('exit', () => (exited = true));
  for (let i = 0; ; i++) {
    if (exited) throw new Error('Realmgate exited at start');
    try {
      if ((await fetch(`${url}/realms/master/.well-known/openid-configuration`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (i > 600) {
      await stop();
      throw new Error('Realmgate did not start in 120 s');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, proc, stop };
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Whether the last two of `rounds` (rates) agree within `tolerance` of the larger one (0.05: within 5%). */
export function steady(rounds: number[], tolerance = 0.05): boolean {
  if (rounds.length < 2) return false;
  const [a, b] = rounds.slice(-2);
  if (!(a > 0 && b > 0)) return false;
  return Math.abs(a - b) <= tolerance * Math.max(a, b);
}

export interface WarmUp {
  /** Every round's rate, in order. */
  rounds: number[];
  steady: boolean;
  /** Seconds the warm-up took (by `now`). */
  seconds: number;
}

/**
 * Runs `round` (one timed load, its rate) until two consecutive rounds agree within `tolerance` or `capSeconds` have
 * passed (a round begun before the cap finishes); a JVM's rate climbs for minutes as it compiles. `now` (ms) is for
 * tests.
 */
export async function warmUntilSteady(round: () => Promise<number>, options: { tolerance?: number; capSeconds: number; now?: () => number }): Promise<WarmUp> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const rounds: number[] = [];
  while (!steady(rounds, options.tolerance) && now() - started < options.capSeconds * 1000) rounds.push(await round());
  return { rounds, steady: steady(rounds, options.tolerance), seconds: (now() - started) / 1000 };
}

/** `pid` and every process descended from it (Linux /proc; just `pid` elsewhere). */
export function processTree(pid: number, proc = '/proc'): number[] {
  const parents = new Map<number, number[]>();
  let entries: string[] = [];
  try {
    entries = readdirSync(proc).filter((name) => /^\d+$/.test(name));
  } catch {
    return [pid];
  }
  for (const entry of entries) {
    try {
      // The fields after the command name (which may hold spaces and parentheses): state, then the parent's id.
      const ppid = Number(readFileSync(`${proc}/${entry}/stat`, 'utf8').split(') ').pop()!.split(' ')[1]);
      (parents.get(ppid) ?? parents.set(ppid, []).get(ppid)!).push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]) ?? []));
  return tree;
}

/** The resident set of `pid` and its descendants together, in MB (Linux /proc), or NaN when none can be read. */
export function treeRssMb(pid: number, proc = '/proc'): number {
  let kb = 0;
  let read = false;
  for (const member of processTree(pid, proc)) {
    try {
      const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`${proc}/${member}/status`, 'utf8'));
      if (rss) {
        kb += Number(rss[1]);
        read = true;
      }
    } catch {
      // gone meanwhile
    }
  }
  return read ? kb / 1024 : Number.NaN;
}

/** The CPU time (user + system, all threads) of `pid` and its descendants together, in ms (Linux /proc), or NaN. */
export function treeCpuMs(pid: number, proc = '/proc'): number {
  let ticks = 0;
  let read = false;
  for (const member of processTree(pid, proc)) {
    try {
      // After the command name: utime and stime are the 12th and 13th fields.
      const fields = readFileSync(`${proc}/${member}/stat`, 'utf8').split(') ').pop()!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
      read = true;
    } catch {
      // gone meanwhile
    }
  }
  return read ? (ticks * 1000) / 100 : Number.NaN; // USER_HZ is 100 on Linux
}

/**
 * The CPU time of `pid` (all its threads) in ms with nanosecond resolution: the sum of each thread's run time in
 * /proc/<pid>/task/<tid>/schedstat (the scheduler's own count), where /proc/<pid>/stat counts 10 ms ticks, too coarse
 * for blocks of a few hundred sub-millisecond requests. A thread that ended takes its time with it (Node's threads
 * live as long as the process). NaN when it cannot be read (not Linux, the process gone).
 */
export function threadsCpuMs(pid: number, proc = '/proc'): number {
  let ns = 0;
  let read = false;
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`${proc}/${pid}/task`);
  } catch {
    return Number.NaN;
  }
  for (const task of tasks) {
    try {
      ns += Number(readFileSync(`${proc}/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      read = true;
    } catch {
      // ended meanwhile
    }
  }
  return read ? ns / 1e6 : Number.NaN;
}

/** The `q` quantile (0..1) of `values`, interpolated between the two nearest (q 0.5 is the median). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return low + 1 < sorted.length ? sorted[low] + (sorted[low + 1] - sorted[low]) * (at - low) : sorted[low];
}

/**
 * Calls `kill` (synchronous: a SIGKILL, a removal) when this process exits, and on SIGINT, SIGTERM and SIGHUP, after
 * which this process exits 130: what a bench started must not outlive it when it fails or is interrupted. Returns the
 * function that takes the hooks off again (once the bench cleaned up itself).
 */
export function killOnExit(kill: () => void): () => void {
  const onSignal = () => {
    kill();
    process.exit(130);
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  process.on('exit', kill);
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    process.off('exit', kill);
    for (const signal of signals) process.off(signal, onSignal);
  };
}
