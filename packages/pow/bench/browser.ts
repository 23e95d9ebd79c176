/**
 * What a person waits for, and what a bot pays, for each documented profile at its base difficulty, every
 * figure beside a baseline measured in the same run:
 *
 * - solve: the median over ROUNDS page loads of headless Chromium solving the page's challenge with the real
 *   `pow-form.js` and `pow-worker.js`, from the moment the solver has the challenge (pow-form.js's
 *   `rg-pow-challenge` performance mark, set when it has decoded the challenge, just before it creates the
 *   workers) to the moment the first answer reaches the page (its `rg-pow-solved` mark), both on the page's
 *   clock. Worker start-up, the WebAssembly and the workers' memory are inside that time. The baseline is
 *   2^d × one warm hash of the same code (pow-worker.js's `nonces` message: the solver's own hash function,
 *   in a worker, on a memory it reuses, as the solver does after its first hash) in the same browser,
 *   measured on the same page right after each solve so that both see the same load on the machine (the
 *   median of HASHES hashes per load, each worker's first hash not counted) (goal: basic <= 1.0, the others
 *   <= 1.2);
 * - the same solve timed from the page's arrival (the navigation's responseEnd), so that what happens before
 *   the solver has the challenge shows too;
 * - hashes per solve, beside their expectation: the answer's nonce + 1 (nonces 0 to n were all tried or
 *   being tried across the workers when n answered; its mean over the loads is about 2^d whatever the number
 *   of workers), and the answering worker's own hashes (rounds) beside the expected 1 / (1 - (1 - 2^-d)^W);
 *   so a reader sees whether a ratio comes from luck or from overhead;
 * - the breakdown of a solve: medians, over the loads, of each step of the answering worker (its creation, its
 *   script running, its memory mapped, its WebAssembly ready, its first hash, its later hashes), from the
 *   worker's own performance.now() marks put on the page's clock through performance.timeOrigin;
 * - one hash of the solver beside one of the argon2id package's own argon2id() driver (same WebAssembly, same
 *   worker code) and one of hash-wasm (the library the solver used before), same parameters, same browser;
 * - person to bot: the browser's median solve beside 2^d × one native hash (@node-rs/argon2, as the server
 *   verifies), what a bot with native code pays for the same work on this machine;
 * - the floor of a solve on this browser and machine, beside the same baseline: the median over the loads of an
 *   empty worker's start (a page like the solve's that creates as many workers, each running a one-line script
 *   served by the same host, loaded right after each solve; the fastest of its workers counts), plus the solve's
 *   own median memory step (the pages of m KiB mapped once, which a first hash on fresh memory cannot skip) and
 *   one warm hash (a solve is at least one round). No solver that starts its workers with the page can beat it:
 *   where it exceeds the goal, the goal cannot be met that way here.
 *
 * Then all of it again with Chromium's CPU throttling at THROTTLE× (CDP Emulation.setCPUThrottlingRate),
 * which stands in for a mid-range phone. The rate is set on the page and asked of each of its workers; the
 * bench prints what Chromium answered for the workers (Chromium 156 refuses: "Operation is only supported for
 * pages, not workers") and how much slower a fixed loop on the page and one hash in a worker actually ran.
 *
 * Timer resolution: neither the page nor its workers are cross-origin isolated, so Chromium coarsens
 * performance.now() to 100 µs; every figure here is milliseconds.
 *
 * Run alone: npx tsx packages/pow/bench/browser.ts
 */
import { hashRaw } from '@node-rs/argon2';
import type { Algorithm, Version } from '@node-rs/argon2';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
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
  /** The machine's 1-minute load average before and after the profile's measurements (the machine is shared). */
  load?: { before: number; after: number };
}

/** Medians over the page loads, in ms, of the steps of a solve, from the answering worker's `timing` marks. */
export interface SolveBreakdown {
  /** From the challenge mark to the first worker's creation (pow-form.js decoding, building the URL). */
  toWorkers: number;
  /** From its creation to its script running (thread, isolate, fetching and compiling pow-worker.js). */
  workerStart: number;
  /** From its script running to its memory being allocated and mapped (the pages a hash writes, touched once). */
  memory: number;
  /** From its script running to its WebAssembly instantiated (fetch and compile run beside the memory step). */
  wasm: number;
  /** From its creation to its first hash starting. */
  toFirstHash: number;
  /** Its first hash, and its later ones in the same solve (NaN when none). */
  firstHash: number;
  laterHash: number;
  /** From the answer computed in the worker to the page's solved mark (postMessage, the page's event loop). */
  answerToPage: number;
  /** An empty worker (a one-line script) from its creation to its script running, on a page loaded like the solve's. */
  emptyWorkerStart: number;
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
  /**
   * One warm hash, median: the solver's (pow-worker.js), the argon2id package's own driver on the same
   * WebAssembly, hash-wasm (the previous solver's library), native.
   */
  hashMs: number;
  packageHashMs: number;
  hashWasmMs: number;
  nativeMs: number;
  /**
   * One warm hash of the solver, median, measured after each page load on that page (the solve's baseline,
   * interleaved with the solves so that both see the same load on the machine).
   */
  warmHashMs: number;
  /** Median solve: from the challenge mark, and from the page's arrival. */
  solveMs: number;
  solveFromArrivalMs: number;
  /** Means over the loads: the answer's nonce + 1 (hashes across all workers), the answering worker's hashes. */
  hashesPerSolve: number;
  roundsPerSolve: number;
  breakdown: SolveBreakdown;
  /** The 1-minute load average before and after this profile's measurements. */
  load?: { before: number; after: number };
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
/**
 * Warm hashes timed per worker, after one warm-up hash: in hashTimes two workers per library, interleaved; in
 * solveTimes one worker after each page load.
 */
const HASHES = 5;
const NATIVE_HASHES = 15;
const THROTTLE = 4;
const GOALS: Record<ProfileName, number> = { basic: 1.0, strict: 1.2, 'high-traffic': 1.2 };
const SALT = 'AAECAwQFBgcICQoLDA0ODw';
const HASH_WASM_PATH = '/bench/hash-wasm-argon2.umd.min.js';
const EMPTY_WORKER_PATH = '/bench/empty-worker.js';

/** The /workers page's script: `n` empty workers created as pow-form.js creates its own; `__starts` their start times. */
function emptyWorkersScript(n: number): string {
  return `window.__starts = [];
for (var i = 0; i < ${n}; i++) {
  var created = performance.now();
  new Worker('${EMPTY_WORKER_PATH}?' + i).onmessage = (function (created) {
    return function (event) { window.__starts.push(event.data - performance.timeOrigin - created); };
  })(created);
}`;
}

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

/** Expected rounds (hashes of the answering worker) at difficulty d with W workers: 1 / (1 - (1 - 2^-d)^W). */
export function expectedRounds(d: number, workers: number): number {
  return 1 / (1 - (1 - 2 ** -d) ** workers);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** What the probe keeps of one page load; times on the page's clock (ms from its timeOrigin). */
interface Probe {
  origin: number;
  workers: number;
  /** The first worker's creation. */
  created: number;
  /** The first answer: its nonce, the answering worker's hashes and its timing marks (pow-worker.js). */
  nonce: string | null;
  tried: number;
  timing: {
    origin: number;
    script: number;
    memory: number;
    wasm: number;
    message: number;
    firstHash: number;
    hashes: number[];
  } | null;
  /** When the answering worker was created. */
  answererCreated: number;
}

/** Runs in the page before its scripts: when each worker starts, and what the first answer says. */
function installProbe(): void {
  const probe: Probe = { origin: performance.timeOrigin, workers: 0, created: -1, nonce: null, tried: -1, timing: null, answererCreated: -1 };
  (window as unknown as { __bench: Probe }).__bench = probe;
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(url: string | URL, options?: WorkerOptions) {
      const created = performance.now();
      super(url, options);
      probe.workers++;
      if (probe.created < 0) probe.created = created;
      this.addEventListener('message', (event: MessageEvent) => {
        if (typeof event.data?.nonce === 'string' && probe.nonce === null) {
          probe.nonce = event.data.nonce;
          probe.tried = event.data.tried;
          probe.timing = event.data.timing ?? null;
          probe.answererCreated = created;
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
    if (url.pathname === EMPTY_WORKER_PATH) {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      response.end('postMessage(performance.timeOrigin + performance.now());');
      return;
    }
    if (url.pathname === '/workers') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bench</title></head>
<body><form method="post"><script>${emptyWorkersScript(Number(url.searchParams.get('n')) || 1)}</script><button type="submit">Go</button></form></body></html>`);
      return;
    }
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

/**
 * Warm hashes, interleaved in fresh workers on one page: the solver's own code (pow-worker.js's `nonces`
 * message, its hash function and memory reuse), the argon2id package's own driver in that same worker code,
 * and hash-wasm. Each worker's first hash is a warm-up and not counted: the baseline is a warm hash, as the
 * issue defines it; what a solve's first hash costs more shows in the breakdown instead.
 */
export async function hashTimes(browser: Browser, origin: string, profile: ProfileName, rate: number) {
  const context = await browser.newContext();
  const page = await throttled(context, rate);
  try {
    await page.goto(`${origin}/blank?profile=${profile}`);
    const version = await page.getAttribute('[data-rg-pow]', 'data-version');
    const m = Number(PROFILES[profile].argon2_memory_kb);
    const t = Number(PROFILES[profile].argon2_iterations);
    // The first nonce warms the worker up, as hash-wasm's run(-1) does.
    const nonces = Array.from({ length: HASHES + 1 }, (_, i) => String(1000 + i));
    const solver = (driver: 'solver' | 'package') => hashInSolver(page, version!, { alg: 'argon2id', id: SALT, m, t }, nonces, driver);
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
    const pkg: number[] = [];
    const theirs: number[] = [];
    let wasm = '';
    for (let batch = 0; batch < 2; batch++) {
      const answer = await solver('solver');
      wasm = answer.wasm;
      ours.push(...answer.ms.slice(1));
      pkg.push(...(await solver('package')).ms.slice(1));
      theirs.push(...(await previous()));
    }
    return { hashMs: median(ours), packageHashMs: median(pkg), hashWasmMs: median(theirs), wasm };
  } finally {
    await context.close();
  }
}

export async function solveTimes(browser: Browser, origin: string, profile: ProfileName, rate: number) {
  const context = await browser.newContext();
  await context.addInitScript(installProbe);
  const solve: number[] = [];
  const fromArrival: number[] = [];
  const hashes: number[] = [];
  const rounds: number[] = [];
  const steps: Record<keyof SolveBreakdown, number[]> = {
    toWorkers: [],
    workerStart: [],
    memory: [],
    wasm: [],
    toFirstHash: [],
    firstHash: [],
    laterHash: [],
    answerToPage: [],
    emptyWorkerStart: [],
  };
  const warm: number[] = [];
  let workers = 0;
  let d = 0;
  let wasm = '';
  const m = Number(PROFILES[profile].argon2_memory_kb);
  const t = Number(PROFILES[profile].argon2_iterations);
  const nonces = Array.from({ length: HASHES + 1 }, (_, i) => String(1000 + i));
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const page = await throttled(context, rate);
      await page.goto(`${origin}/solve?profile=${profile}`);
      await page.waitForFunction(() => performance.getEntriesByName('rg-pow-solved').length > 0, null, { timeout: 120_000 });
      const { probe, challenged, solved, arrived } = await page.evaluate(() => {
        const navigation = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
        return {
          probe: (window as unknown as { __bench: Probe }).__bench,
          challenged: performance.getEntriesByName('rg-pow-challenge')[0].startTime,
          solved: performance.getEntriesByName('rg-pow-solved')[0].startTime,
          arrived: navigation.responseEnd,
        };
      });
      d = decodeChallenge(await page.inputValue('input[name="pow_challenge"]')).d;
      wasm = (await page.getAttribute('[data-rg-pow]', 'data-rg-pow-wasm')) ?? 'none';
      workers = probe.workers;
      solve.push(solved - challenged);
      fromArrival.push(solved - arrived);
      hashes.push(Number(probe.nonce) + 1);
      rounds.push(probe.tried);
      const w = probe.timing;
      if (w) {
        // The worker's marks on the page's clock.
        const onPage = (at: number) => w.origin + at - probe.origin;
        const computed = onPage(w.firstHash) + w.hashes.reduce((a, b) => a + b, 0);
        steps.toWorkers.push(probe.created - challenged);
        steps.workerStart.push(onPage(w.script) - probe.answererCreated);
        steps.memory.push(w.memory - w.script);
        steps.wasm.push(w.wasm - w.script);
        steps.toFirstHash.push(onPage(w.firstHash) - probe.answererCreated);
        steps.firstHash.push(w.hashes[0]);
        if (w.hashes.length > 1) steps.laterHash.push(...w.hashes.slice(1));
        steps.answerToPage.push(solved - computed);
      }
      // The baseline, interleaved with the loads so that it sees the same machine: warm hashes of the solver's
      // code in a new worker on this page, once its own workers are gone (the first hash warms up, not counted).
      const version = await page.getAttribute('[data-rg-pow]', 'data-version');
      warm.push(...(await hashInSolver(page, version!, { alg: 'argon2id', id: SALT, m, t }, nonces)).ms.slice(1));
      await page.close();
      // The floor's worker start, on a page loaded the same way with as many workers: the fastest of them.
      const empty = await throttled(context, rate);
      await empty.goto(`${origin}/workers?n=${workers}`);
      await empty.waitForFunction((n) => (window as unknown as { __starts: number[] }).__starts.length === n, workers, { timeout: 60_000 });
      steps.emptyWorkerStart.push(Math.min(...(await empty.evaluate(() => (window as unknown as { __starts: number[] }).__starts))));
      await empty.close();
    }
  } finally {
    await context.close();
  }
  const breakdown = Object.fromEntries(
    Object.entries(steps).map(([key, values]) => [key, values.length ? median(values) : Number.NaN]),
  ) as unknown as SolveBreakdown;
  return {
    solveMs: median(solve),
    warmHashMs: median(warm),
    solveFromArrivalMs: median(fromArrival),
    hashesPerSolve: mean(hashes),
    roundsPerSolve: mean(rounds),
    breakdown,
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

const STEPS: [keyof SolveBreakdown, string][] = [
  ['toWorkers', 'challenge to first worker created'],
  ['workerStart', 'worker created to its script running'],
  ['memory', 'script running to memory mapped'],
  ['wasm', 'script running to WebAssembly ready'],
  ['toFirstHash', 'worker created to its first hash'],
  ['firstHash', 'first hash'],
  ['laterHash', 'later hashes, each'],
  ['answerToPage', 'answer to the page'],
  ['emptyWorkerStart', 'an empty worker created to its script running (the fastest of as many, same page load)'],
];

/** Issue 44: a solve's goal beside its floor, every profile. */
export const FLOOR_GOAL = 1.2;

/**
 * The least a solve that starts its workers with the page can take here: an empty worker's start, the memory step
 * (the pages of m KiB mapped once) and one warm hash (a solve is at least one round). NaN when a step is missing.
 */
export function floorMs(breakdown: Pick<SolveBreakdown, 'emptyWorkerStart' | 'memory'>, warmHashMs: number): number {
  return breakdown.emptyWorkerStart + breakdown.memory + warmHashMs;
}

/** The CPU throttling rates the bench runs: POW_BENCH_THROTTLE="1" or "1,4" (default: 1 and THROTTLE). */
export function throttlesOf(value: string | undefined): number[] {
  if (!value) return [1, THROTTLE];
  const rates = value.split(',').map((part) => Number(part.trim()));
  if (rates.length === 0 || rates.some((rate) => !Number.isFinite(rate) || rate < 1)) throw new Error(`POW_BENCH_THROTTLE: expected rates >= 1 separated by commas, got "${value}"`);
  return rates;
}

export function entriesOf(runs: ProfileRun[]): BenchEntry[] {
  const entries: BenchEntry[] = [];
  for (const r of runs) {
    const at = r.throttle === 1 ? '' : ` @${r.throttle}x CPU throttling`;
    const work = 2 ** r.d;
    const of = (value: number, baselineName: string, baseline: number, goal: number | null, name: string, unit = 'ms') =>
      entries.push({ name: `${r.profile}${at}: ${name}`, value, unit, baseline: { name: baselineName, value: baseline }, ratio: value / baseline, goal, ...(r.load ? { load: r.load } : {}) });
    const hashName = `2^${r.d} x one warm hash of the solver in a worker (median, measured after each load)`;
    of(r.solveMs, hashName, work * r.warmHashMs, GOALS[r.profile],
      `median solve over ${r.rounds} page loads, challenge to first answer (d=${r.d}, ${r.workers} workers)`);
    of(r.solveFromArrivalMs, hashName, work * r.warmHashMs, null,
      `median solve over ${r.rounds} page loads, page arrival to first answer (d=${r.d}, ${r.workers} workers)`);
    of(r.hashesPerSolve, `2^${r.d}, the expected hashes per solve`, work, null,
      `hashes per solve (mean over ${r.rounds} loads of the answer's nonce + 1, all workers)`, 'hashes');
    of(r.roundsPerSolve, `expected rounds with ${r.workers} workers`, expectedRounds(r.d, r.workers), null,
      `rounds per solve (mean over ${r.rounds} loads of the answering worker's hashes)`, 'hashes');
    for (const [key, label] of STEPS)
      if (Number.isFinite(r.breakdown[key]))
        of(r.breakdown[key], 'median solve', r.solveMs, null, `breakdown (median over the loads): ${label}`);
    of(r.hashMs, 'one hash-wasm hash in a worker', r.hashWasmMs, 1.0,
      `one argon2id hash, solver (${r.wasm}), ${r.memoryKb} KiB, t=${r.iterations}`);
    of(r.hashMs, "one hash of the argon2id package's own driver, same WebAssembly, same worker", r.packageHashMs, null,
      `one argon2id hash, solver (${r.wasm}), ${r.memoryKb} KiB, t=${r.iterations}, beside the package's driver`);
    of(r.solveMs, `2^${r.d} x one native hash (@node-rs/argon2)`, work * r.nativeMs, null,
      'person to bot: browser median solve');
    const floor = floorMs(r.breakdown, r.warmHashMs);
    of(floor, hashName, work * r.warmHashMs, null,
      `floor of a solve: an empty worker's start (${r.breakdown.emptyWorkerStart.toFixed(1)} ms) + the memory step + one warm hash`);
    // Issue 44: the solve beside the floor measured in the same run, for every profile.
    of(r.solveMs, `floor of a solve, same run: an empty worker's start + the memory step (${r.breakdown.memory.toFixed(1)} ms) + one warm hash`, floor, FLOOR_GOAL,
      `median solve over ${r.rounds} page loads, challenge to first answer, beside the floor (d=${r.d}, ${r.workers} workers)`);
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
    for (const throttle of throttlesOf(process.env.POW_BENCH_THROTTLE)) {
      for (const profile of PROFILE_NAMES) {
        const loadBefore = loadavg()[0];
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
          packageHashMs: hashes.packageHashMs,
          hashWasmMs: hashes.hashWasmMs,
          nativeMs: await nativeTime(profile),
          solveMs: solved.solveMs,
          warmHashMs: solved.warmHashMs,
          solveFromArrivalMs: solved.solveFromArrivalMs,
          hashesPerSolve: solved.hashesPerSolve,
          roundsPerSolve: solved.roundsPerSolve,
          breakdown: solved.breakdown,
          load: { before: loadBefore, after: loadavg()[0] },
        });
      }
    }
    const throttling = throttlesOf(process.env.POW_BENCH_THROTTLE).includes(THROTTLE)
      ? await throttlingFactors(browser, host.origin, THROTTLE)
      : { rate: THROTTLE, page: Number.NaN, worker: Number.NaN, workerAnswers: {} };
    return { runs, throttling, entries: entriesOf(runs) };
  } finally {
    await browser.close();
    await host.close();
  }
}

export function format(bench: BrowserBench): string {
  const lines = bench.entries.map((e) => {
    const verdict = e.goal === null ? '' : e.ratio <= e.goal ? `  ok (goal <= ${e.goal})` : `  MISS (goal <= ${e.goal})`;
    const load = e.load ? ` (load ${e.load.before.toFixed(1)}-${e.load.after.toFixed(1)})` : '';
    return `  ${e.name}: ${e.value.toFixed(1)} ${e.unit} | baseline ${e.baseline.name}: ${e.baseline.value.toFixed(1)} ${e.unit} | ratio ${e.ratio.toFixed(2)}${verdict}${load}`;
  });
  for (const r of bench.runs) {
    const at = r.throttle === 1 ? '' : ` @${r.throttle}x`;
    const b = r.breakdown;
    lines.push(
      `  ${r.profile}${at}: ${r.hashesPerSolve.toFixed(2)} hashes per solve (expected ${2 ** r.d}), the answering worker ` +
        `${r.roundsPerSolve.toFixed(2)} (expected ${expectedRounds(r.d, r.workers).toFixed(2)}); pure hashing with ${r.workers} ` +
        `workers at d=${r.d} would give a median solve ratio of ${hashingOnlyRatio(r.d, r.workers).toFixed(2)}. Medians, ms: ` +
        `challenge to worker ${b.toWorkers.toFixed(1)}, worker to its script ${b.workerStart.toFixed(1)}, ` +
        `memory mapped +${b.memory.toFixed(1)}, WebAssembly ready +${b.wasm.toFixed(1)}, worker to first hash ` +
        `${b.toFirstHash.toFixed(1)}, first hash ${b.firstHash.toFixed(1)}, later hashes ${b.laterHash.toFixed(1)}, ` +
        `answer to page ${b.answerToPage.toFixed(1)}; an empty worker's start on a page like it ${b.emptyWorkerStart.toFixed(1)}`,
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
