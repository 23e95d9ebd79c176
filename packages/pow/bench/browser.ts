/**
 * What a person waits for, and what a bot pays, for each documented profile at its base difficulty, every
 * figure beside a baseline measured in the same run:
 *
 * - solve: the median over ROUNDS page loads of headless Chromium solving the page's challenge with the real
 *   `pow-form.js` and `pow-worker.js`, from the first worker's creation to the first answer (worker start-up,
 *   loading the library and compiling its WebAssembly included), beside 2^d × one warm hash of the same
 *   library timed by the same worker code in the same browser (goal: basic <= 1.0, the others <= 1.2);
 * - the same solve timed from the page's arrival (the navigation's responseEnd), so that what happens before
 *   the workers exist shows too;
 * - one hash of the library the solver uses (argon2id) beside one of the library it used before (hash-wasm),
 *   same parameters, same browser;
 * - person to bot: the browser's median solve beside 2^d × one native hash (@node-rs/argon2, as the server
 *   verifies), what a bot with native code pays for the same work on this machine.
 *
 * Then all of it again with Chromium's CPU throttling at THROTTLE× (CDP Emulation.setCPUThrottlingRate),
 * which stands in for a mid-range phone. The rate is set on the page and asked of each of its workers; the
 * bench prints what Chromium answered for the workers (Chromium 156 refuses: "Operation is only supported for
 * pages, not workers") and how much slower a fixed loop on the page and one hash in a worker actually ran.
 *
 * Run alone: npx tsx packages/pow/bench/browser.ts
 */
import { hashRaw } from '@node-rs/argon2';
import type { Algorithm, Version } from '@node-rs/argon2';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { FormProtector, RealmResource } from '@realmgate/spi';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createProviders, decodeChallenge, PROFILES } from '../src/index.js';
import type { ProfileName } from '../src/index.js';
import { hashInSolver, providerContext, realm, requestFrom, serveAsset } from '../test/context.js';

/** One figure as bench/results.json keeps it; every ratio here is value / baseline, lower is better. */
export interface BenchEntry {
  name: string;
  value: number;
  unit: string;
  baseline: { name: string; value: number };
  ratio: number;
  goal: number | null;
}

export interface ProfileRun {
  profile: ProfileName;
  throttle: number;
  d: number;
  memoryKb: number;
  iterations: number;
  workers: number;
  rounds: number;
  /** Which build of the argon2id WebAssembly the solver ran. */
  wasm: string;
  /** One warm hash, median: argon2id (the solver's), hash-wasm (the previous solver's), native. */
  hashMs: number;
  hashWasmMs: number;
  nativeMs: number;
  /** Median solve: from the first worker's creation, and from the page's arrival. */
  solveMs: number;
  solveFromArrivalMs: number;
  /** Medians for the answering worker: when its library was ready (ms from its start), hashes it computed. */
  readyMs: number;
  tried: number;
}

export interface BrowserBench {
  runs: ProfileRun[];
  /**
   * Measured slow-down at THROTTLE× of a fixed loop on the page and of one hash in a worker, and Chromium's
   * answers to throttling each worker (answer → count).
   */
  throttling: { rate: number; page: number; worker: number; workerAnswers: Record<string, number> };
  entries: BenchEntry[];
}

const CHROMIUM = process.env.REALMGATE_CHROMIUM_PATH ?? '/usr/bin/chromium';
const PROFILE_NAMES: ProfileName[] = ['basic', 'strict', 'high-traffic'];
const ROUNDS = 11;
/** Warm hashes timed per batch, after one warm-up hash; two batches per library, interleaved. */
const HASHES = 5;
const NATIVE_HASHES = 15;
const THROTTLE = 4;
const GOALS: Record<ProfileName, number> = { basic: 1.0, strict: 1.2, 'high-traffic': 1.2 };
const SALT = 'AAECAwQFBgcICQoLDA0ODw';
const HASH_WASM_PATH = '/bench/hash-wasm-argon2.umd.min.js';

const require = createRequire(import.meta.url);

/**
 * The ratio a solve would show if it were nothing but hashing: W workers try one nonce each per round, each
 * succeeding with p = 2^-d; the median number of rounds is the smallest k with 1 - (1 - p)^(W k) >= 1/2.
 */
export function hashingOnlyRatio(d: number, workers: number): number {
  const miss = (1 - 2 ** -d) ** workers;
  const rounds = miss === 0 ? 1 : Math.max(1, Math.ceil(Math.log(0.5) / Math.log(miss)));
  return rounds / 2 ** d;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Runs in the page before its scripts: when the first worker starts and when the first nonce comes back. */
function installProbe(): void {
  const probe = { start: -1, found: -1, workers: 0, readyAt: -1, tried: -1 };
  (window as unknown as { __bench: typeof probe }).__bench = probe;
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options);
      probe.workers++;
      if (probe.start < 0) probe.start = performance.now();
      this.addEventListener('message', (event: MessageEvent) => {
        if (typeof event.data?.nonce === 'string' && probe.found < 0) {
          probe.found = performance.now();
          probe.readyAt = event.data.readyAt;
          probe.tried = event.data.tried;
        }
      });
    }
  };
}

/** A worker that loads hash-wasm's Argon2id build and times `count` hashes after one warm-up. */
const HASH_WASM_WORKER = `
self.onmessage = async (event) => {
  const { url, salt, m, t, count } = event.data;
  importScripts(url);
  const run = (i) => self.hashwasm.argon2id({ password: String(i), salt, iterations: t,
    parallelism: 1, memorySize: m, hashLength: 32, outputType: 'binary' });
  await run(-1);
  const times = [];
  for (let i = 0; i < count; i++) { const s = performance.now(); await run(i); times.push(performance.now() - s); }
  self.postMessage(times);
};`;

/** A fixed amount of work on the page's main thread, in ms: how much the throttling slows the page. */
function pageLoop(): number {
  const started = performance.now();
  let x = 0;
  for (let i = 0; i < 20_000_000; i++) x = (x + i * 7) % 1_000_003;
  if (x < 0) throw new Error('unreachable');
  return performance.now() - started;
}

export async function startHost(): Promise<{ origin: string; close(): Promise<void> }> {
  const [protectorFactory, resourceFactory] = createProviders();
  const host = providerContext();
  await protectorFactory.init!(host.context);
  await resourceFactory.init!(host.context);
  if (protectorFactory.kind !== 'form-protector' || resourceFactory.kind !== 'realm-resource') throw new Error('kinds');
  const protector: FormProtector = protectorFactory.create();
  const resource: RealmResource = resourceFactory.create();
  const hashWasm = await readFile(require.resolve('hash-wasm/dist/argon2.umd.min.js'));

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (await serveAsset(resource, url, request, response)) return;
    if (url.pathname === HASH_WASM_PATH) {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'max-age=3600' });
      response.end(hashWasm);
      return;
    }
    const profile = (url.searchParams.get('profile') ?? 'basic') as ProfileName;
    const fields =
      url.pathname === '/solve' || url.pathname === '/blank'
        ? await protector.render({
            realm,
            form: 'login',
            config: PROFILES[profile],
            request: requestFrom('127.0.0.1'),
            resourceBaseUrl: '/realms/demo/ext-pow',
          })
        : '';
    // /blank: the same page without the solver's script, for timing single hashes.
    const body = url.pathname === '/blank' ? fields.replace(/<script[^>]*><\/script>/, '') : fields;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bench</title></head>
<body><form method="post">${body}<button type="submit">Go</button></form></body></html>`);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(500);
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What Chromium answered when asked to throttle a worker: 'applied', or its error message, and how often. */
const workerThrottling = new Map<string, number>();

/**
 * A new page of `context` whose CPU is throttled `rate` times; its workers are asked too (through a second
 * CDP attachment to each, not paused at start, so the solve is timed as without it), and their answers kept.
 */
async function throttled(context: BrowserContext, rate: number): Promise<Page> {
  const page = await context.newPage();
  if (rate === 1) return page;
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate });
  let id = 0;
  cdp.on('Target.attachedToTarget', (event) => {
    if (event.targetInfo.type !== 'worker') return;
    const message = { id: ++id, method: 'Emulation.setCPUThrottlingRate', params: { rate } };
    cdp.send('Target.sendMessageToTarget', { sessionId: event.sessionId, message: JSON.stringify(message) }).catch(() => {});
  });
  cdp.on('Target.receivedMessageFromTarget', (event) => {
    const reply = JSON.parse(event.message) as { id?: number; error?: { message: string } };
    if (reply.id === undefined) return;
    const outcome = reply.error ? reply.error.message : 'applied';
    workerThrottling.set(outcome, (workerThrottling.get(outcome) ?? 0) + 1);
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  return page;
}

/** Warm hashes of the solver's own code (pow-worker.js's `nonces` message) and of hash-wasm, interleaved. */
async function hashTimes(browser: Browser, origin: string, profile: ProfileName, rate: number) {
  const context = await browser.newContext();
  const page = await throttled(context, rate);
  try {
    await page.goto(`${origin}/blank?profile=${profile}`);
    const version = await page.getAttribute('[data-rg-pow]', 'data-version');
    const m = Number(PROFILES[profile].argon2_memory_kb);
    const t = Number(PROFILES[profile].argon2_iterations);
    // The first nonce warms the worker up, as hash-wasm's run(-1) does.
    const nonces = Array.from({ length: HASHES + 1 }, (_, i) => String(1000 + i));
    const solver = () => hashInSolver(page, version!, { alg: 'argon2id', id: SALT, m, t }, nonces);
    const previous = () =>
      page.evaluate(
        ({ source, url, salt, m, t, count }) =>
          new Promise<number[]>((resolve, reject) => {
            const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
            worker.onmessage = (event) => {
              worker.terminate();
              resolve(event.data as number[]);
            };
            worker.onerror = (event) => reject(new Error(event.message));
            worker.postMessage({ url: new URL(url, location.href).href, salt, m, t, count });
          }),
        { source: HASH_WASM_WORKER, url: HASH_WASM_PATH, salt: SALT, m, t, count: HASHES },
      );
    const ours: number[] = [];
    const theirs: number[] = [];
    let wasm = '';
    for (let batch = 0; batch < 2; batch++) {
      const answer = await solver();
      wasm = answer.wasm;
      ours.push(...answer.ms.slice(1));
      theirs.push(...(await previous()));
    }
    return { hashMs: median(ours), hashWasmMs: median(theirs), wasm };
  } finally {
    await context.close();
  }
}

export async function solveTimes(browser: Browser, origin: string, profile: ProfileName, rate: number) {
  const context = await browser.newContext();
  await context.addInitScript(installProbe);
  const fromWorkers: number[] = [];
  const fromArrival: number[] = [];
  const readyAt: number[] = [];
  const tried: number[] = [];
  let workers = 0;
  let d = 0;
  let wasm = '';
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const page = await throttled(context, rate);
      await page.goto(`${origin}/solve?profile=${profile}`);
      await page.waitForFunction(() => (window as unknown as { __bench: { found: number } }).__bench.found >= 0, null, {
        timeout: 120_000,
      });
      const probe = await page.evaluate(() => {
        const bench = (window as unknown as { __bench: { start: number; found: number; workers: number; readyAt: number; tried: number } })
          .__bench;
        const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
        return { ...bench, arrived: navigation.responseEnd };
      });
      d = decodeChallenge(await page.inputValue('input[name="pow_challenge"]')).d;
      wasm = (await page.getAttribute('[data-rg-pow]', 'data-rg-pow-wasm')) ?? 'none';
      workers = probe.workers;
      fromWorkers.push(probe.found - probe.start);
      fromArrival.push(probe.found - probe.arrived);
      readyAt.push(probe.readyAt);
      tried.push(probe.tried);
      await page.close();
    }
  } finally {
    await context.close();
  }
  return {
    solveMs: median(fromWorkers),
    solveFromArrivalMs: median(fromArrival),
    /** The answering worker: when its library was ready (its own clock, from its start), hashes it computed. */
    readyMs: median(readyAt),
    tried: median(tried),
    workers,
    d,
    wasm,
  };
}

async function nativeTime(profile: ProfileName): Promise<number> {
  const options = {
    algorithm: 2 as Algorithm,
    version: 1 as Version,
    memoryCost: Number(PROFILES[profile].argon2_memory_kb),
    timeCost: Number(PROFILES[profile].argon2_iterations),
    parallelism: 1,
    outputLen: 32,
    salt: Buffer.from(SALT, 'utf8'),
  };
  await hashRaw('warm-up', options);
  const times: number[] = [];
  for (let i = 0; i < NATIVE_HASHES; i++) {
    const started = performance.now();
    await hashRaw(String(i), options);
    times.push(performance.now() - started);
  }
  return median(times);
}

/** How much slower, at `rate`, a fixed loop runs on the page and one hash runs in a worker. */
async function throttlingFactors(browser: Browser, origin: string, rate: number) {
  const measure = async (r: number) => {
    const context = await browser.newContext();
    const page = await throttled(context, r);
    await page.goto(`${origin}/blank?profile=basic`);
    const loop: number[] = [];
    for (let i = 0; i < 3; i++) loop.push(await page.evaluate(`(${pageLoop.toString()})()`));
    await context.close();
    return { loop: median(loop), hash: (await hashTimes(browser, origin, 'basic', r)).hashMs };
  };
  const normal = await measure(1);
  const slowed = await measure(rate);
  return {
    rate,
    page: slowed.loop / normal.loop,
    worker: slowed.hash / normal.hash,
    workerAnswers: Object.fromEntries(workerThrottling),
  };
}

export function entriesOf(runs: ProfileRun[]): BenchEntry[] {
  const entries: BenchEntry[] = [];
  for (const r of runs) {
    const at = r.throttle === 1 ? '' : ` @${r.throttle}x CPU throttling`;
    const work = 2 ** r.d;
    const of = (value: number, baselineName: string, baseline: number, goal: number | null, name: string, unit = 'ms') =>
      entries.push({ name: `${r.profile}${at}: ${name}`, value, unit, baseline: { name: baselineName, value: baseline }, ratio: value / baseline, goal });
    of(r.solveMs, `2^${r.d} x one argon2id hash in a worker`, work * r.hashMs, GOALS[r.profile],
      `median solve over ${r.rounds} page loads, first worker to answer (d=${r.d}, ${r.workers} workers)`);
    of(r.solveFromArrivalMs, `2^${r.d} x one argon2id hash in a worker`, work * r.hashMs, null,
      `median solve over ${r.rounds} page loads, page arrival to answer (d=${r.d}, ${r.workers} workers)`);
    of(r.hashMs, 'one hash-wasm hash in a worker', r.hashWasmMs, 1.0,
      `one argon2id hash (${r.wasm}), ${r.memoryKb} KiB, t=${r.iterations}`);
    of(r.solveMs, `2^${r.d} x one native hash (@node-rs/argon2)`, work * r.nativeMs, null,
      'person to bot: browser median solve');
  }
  return entries;
}

export async function run(): Promise<BrowserBench> {
  const host = await startHost();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const runs: ProfileRun[] = [];
    for (const throttle of [1, THROTTLE]) {
      for (const profile of PROFILE_NAMES) {
        const hashes = await hashTimes(browser, host.origin, profile, throttle);
        const solved = await solveTimes(browser, host.origin, profile, throttle);
        runs.push({
          profile,
          throttle,
          d: solved.d,
          memoryKb: Number(PROFILES[profile].argon2_memory_kb),
          iterations: Number(PROFILES[profile].argon2_iterations),
          workers: solved.workers,
          rounds: ROUNDS,
          wasm: solved.wasm,
          hashMs: hashes.hashMs,
          hashWasmMs: hashes.hashWasmMs,
          nativeMs: await nativeTime(profile),
          solveMs: solved.solveMs,
          solveFromArrivalMs: solved.solveFromArrivalMs,
          readyMs: solved.readyMs,
          tried: solved.tried,
        });
      }
    }
    const throttling = await throttlingFactors(browser, host.origin, THROTTLE);
    return { runs, throttling, entries: entriesOf(runs) };
  } finally {
    await browser.close();
    await host.close();
  }
}

export function format(bench: BrowserBench): string {
  const lines = bench.entries.map((e) => {
    const verdict = e.goal === null ? '' : e.ratio <= e.goal ? `  ok (goal <= ${e.goal})` : `  MISS (goal <= ${e.goal})`;
    return `  ${e.name}: ${e.value.toFixed(1)} ${e.unit} | baseline ${e.baseline.name}: ${e.baseline.value.toFixed(1)} ${e.unit} | ratio ${e.ratio.toFixed(2)}${verdict}`;
  });
  for (const r of bench.runs) {
    const at = r.throttle === 1 ? '' : ` @${r.throttle}x`;
    lines.push(
      `  ${r.profile}${at}: the answering worker had its library ready ${r.readyMs.toFixed(0)} ms after it started and ` +
        `computed ${r.tried} hash(es) (medians); pure hashing with ${r.workers} workers at d=${r.d} would give a solve ` +
        `ratio of ${hashingOnlyRatio(r.d, r.workers).toFixed(2)}`,
    );
  }
  const t = bench.throttling;
  lines.push(
    `  CPU throttling ${t.rate}x measured: a fixed loop on the page ran ${t.page.toFixed(2)}x slower, one hash in a worker ` +
      `${t.worker.toFixed(2)}x; asked to throttle each worker, Chromium answered: ` +
      (Object.entries(t.workerAnswers)
        .map(([answer, count]) => `"${answer}" (${count} workers)`)
        .join(', ') || 'nothing'),
  );
  return lines.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(format(await run()));
}
