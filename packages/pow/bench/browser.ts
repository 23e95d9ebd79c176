/**
 * What a person waits for: for each documented profile, the median time headless Chromium takes to solve a
 * challenge at the profile's base difficulty with the real `pow-form.js` and `pow-worker.js` (from the first
 * worker's creation to the first answer, so worker start-up and WebAssembly compilation count), against
 * 2^d × one WASM Argon2id hash measured in the same browser, in a worker, with the same parameters.
 * W workers share the search; `hashingOnlyRatio` is what pure hashing would give (about 1/W at higher d),
 * anything above it is worker start-up, script loading and WebAssembly compilation.
 * Run alone: npx tsx packages/pow/bench/browser.ts
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { FormProtector, RealmResource } from '@realmgate/spi';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { createProviders, decodeChallenge, PROFILES } from '../src/index.js';
import type { ProfileName } from '../src/index.js';
import { providerContext, realm, requestFrom, serveAsset } from '../test/context.js';

export interface BrowserFigure {
  profile: ProfileName;
  d: number;
  memoryKb: number;
  iterations: number;
  workers: number;
  /** One warm Argon2id hash in a worker (hash-wasm), median. */
  hashMs: number;
  /** Page solve, first worker created to first answer, median over `rounds`. */
  solveMs: number;
  rounds: number;
  /** solveMs / (2^d × hashMs). */
  ratio: number;
}

const CHROMIUM = process.env.REALMGATE_CHROMIUM_PATH ?? '/usr/bin/chromium';
const PROFILE_NAMES: ProfileName[] = ['basic', 'strict', 'high-traffic'];
const ROUNDS = 11;
const HASHES = 7;

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
  const probe = { start: -1, found: -1, workers: 0 };
  (window as unknown as { __bench: typeof probe }).__bench = probe;
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(url: string | URL, options?: WorkerOptions) {
      super(url, options);
      probe.workers++;
      if (probe.start < 0) probe.start = performance.now();
      this.addEventListener('message', (event: MessageEvent) => {
        if (typeof event.data?.nonce === 'string' && probe.found < 0) probe.found = performance.now();
      });
    }
  };
}

/** A worker that loads hash-wasm's Argon2id build and times `count` hashes after one warm-up. */
const HASH_WORKER = `
self.onmessage = async (event) => {
  const { url, m, t, count } = event.data;
  importScripts(url);
  const run = (i) => self.hashwasm.argon2id({ password: String(i), salt: 'AAECAwQFBgcICQoLDA0ODw', iterations: t,
    parallelism: 1, memorySize: m, hashLength: 32, outputType: 'binary' });
  await run(-1);
  const times = [];
  for (let i = 0; i < count; i++) { const s = performance.now(); await run(i); times.push(performance.now() - s); }
  self.postMessage(times);
};`;

async function startHost(): Promise<{ origin: string; close(): Promise<void> }> {
  const [protectorFactory, resourceFactory] = createProviders();
  const host = providerContext();
  await protectorFactory.init!(host.context);
  await resourceFactory.init!(host.context);
  if (protectorFactory.kind !== 'form-protector' || resourceFactory.kind !== 'realm-resource') throw new Error('kinds');
  const protector: FormProtector = protectorFactory.create();
  const resource: RealmResource = resourceFactory.create();

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (await serveAsset(resource, url, request, response)) return;
    const profile = (url.searchParams.get('profile') ?? 'basic') as ProfileName;
    const fields =
      url.pathname === '/solve'
        ? await protector.render({
            realm,
            form: 'login',
            config: PROFILES[profile],
            request: requestFrom('127.0.0.1'),
            resourceBaseUrl: '/realms/demo/ext-pow',
          })
        : '';
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bench</title></head>
<body><form method="post">${fields}<button type="submit">Go</button></form></body></html>`);
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

async function hashTime(browser: Browser, origin: string, profile: ProfileName): Promise<number> {
  const page = await browser.newPage();
  try {
    await page.goto(`${origin}/blank`);
    const settings = PROFILES[profile];
    const times = await page.evaluate(
      ({ source, url, m, t, count }) =>
        new Promise<number[]>((resolve, reject) => {
          const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
          worker.onmessage = (event) => {
            worker.terminate();
            resolve(event.data as number[]);
          };
          worker.onerror = (event) => reject(new Error(event.message));
          worker.postMessage({ url, m, t, count });
        }),
      {
        source: HASH_WORKER,
        url: `${origin}/realms/demo/ext-pow/assets/argon2.umd.min.js`,
        m: Number(settings.argon2_memory_kb),
        t: Number(settings.argon2_iterations),
        count: HASHES,
      },
    );
    return median(times);
  } finally {
    await page.close();
  }
}

async function solveTimes(browser: Browser, origin: string, profile: ProfileName) {
  const context = await browser.newContext();
  await context.addInitScript(installProbe);
  const times: number[] = [];
  let workers = 0;
  let d = 0;
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const page = await context.newPage();
      await page.goto(`${origin}/solve?profile=${profile}`);
      await page.waitForFunction(() => (window as unknown as { __bench: { found: number } }).__bench.found >= 0, null, {
        timeout: 120_000,
      });
      const probe = await page.evaluate(() => (window as unknown as { __bench: { start: number; found: number; workers: number } }).__bench);
      d = decodeChallenge(await page.inputValue('input[name="pow_challenge"]')).d;
      workers = probe.workers;
      times.push(probe.found - probe.start);
      await page.close();
    }
  } finally {
    await context.close();
  }
  return { solveMs: median(times), workers, d };
}

export async function run(): Promise<BrowserFigure[]> {
  const host = await startHost();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const figures: BrowserFigure[] = [];
    for (const profile of PROFILE_NAMES) {
      const hashMs = await hashTime(browser, host.origin, profile);
      const { solveMs, workers, d } = await solveTimes(browser, host.origin, profile);
      figures.push({
        profile,
        d,
        memoryKb: Number(PROFILES[profile].argon2_memory_kb),
        iterations: Number(PROFILES[profile].argon2_iterations),
        workers,
        hashMs,
        solveMs,
        rounds: ROUNDS,
        ratio: solveMs / (2 ** d * hashMs),
      });
    }
    return figures;
  } finally {
    await browser.close();
    await host.close();
  }
}

export function format(figures: BrowserFigure[]): string {
  return figures
    .map(
      (f) =>
        `  ${f.profile} (d=${f.d}, ${f.memoryKb} KiB, t=${f.iterations}, ${f.workers} workers): ` +
        `median solve ${f.solveMs.toFixed(0)} ms over ${f.rounds} page loads | baseline 2^${f.d} x one WASM hash ` +
        `${f.hashMs.toFixed(1)} ms = ${(2 ** f.d * f.hashMs).toFixed(0)} ms | ratio ${f.ratio.toFixed(2)} ` +
        `(pure hashing: ${hashingOnlyRatio(f.d, f.workers).toFixed(2)})`,
    )
    .join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(format(await run()));
}
