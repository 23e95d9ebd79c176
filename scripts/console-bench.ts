/**
 * The admin console's first load (issue 18): the time from navigating to the console until the realm list shows,
 * in headless Chromium, with Realmgate serving the console beside the same built files served by a bare static
 * server, both measured in the same run; the bytes each load transfers, the content-encoding and Cache-Control of
 * the hashed assets.
 *
 * What runs, all on 127.0.0.1, each in its own process:
 *  - Realmgate (packages/server/src/main.ts, production mode, a fresh SQLite file, the bootstrap administrator with
 *    a known password, log level warn) with hostname-strict=false, so that it takes its public URL from each
 *    request's Host header and one server answers under every origin below (as behind a proxy);
 *  - a bare static server (`--static`: node:http and fs, URL path → file below its root, a MIME table,
 *    ETag/Last-Modified and 304s, `Cache-Control: public, max-age=0` as express.static sends by default, no
 *    compression; CONSOLE_BENCH_STATIC=precompressed serves the build's .br/.gz twins instead, as nginx's
 *    brotli_static/gzip_static would). Its root holds a copy of packages/admin-console/dist under
 *    resources/admin-console/ and, as admin/master/console/index.html, the console page Realmgate serves for the
 *    static origin, fetched once: the same bytes, environment included;
 *  - two fronts (`--fronts`: the same pass-through proxy code, node:http, keep-alive to the upstreams, Host kept):
 *    the "realmgate" front sends every request to Realmgate; the "static" front sends the console's page
 *    (/admin/master/console/) and assets (/resources/admin-console/*) to the static server and everything else
 *    (sign-in, tokens, whoami, messages, the admin API) to the same Realmgate. So both variants do the same API
 *    work through the same proxy, and differ only in what serves the page and the bundle. Realmgate alone, without
 *    a front ("direct"), is measured too, beside the realmgate front: what the proxy adds.
 *
 * Each variant signs in once through the login form (which warms its server up too); its cookies (the SSO
 * session) then seed every measured context, so keycloak-js's login-required redirect comes back with a code
 * without a form, and the HTTP cache starts empty. A load: a new browser context, Date.now() in this process, then
 * navigation to /admin/master/console/#/master/realms; it ends when a MutationObserver installed in every document
 * sees the realm selector ([data-testid="currentRealm"]) and a table cell naming the master realm on screen (what
 * browser-admin-console.test.ts waits for), at the page's Date.now(). That spans the page, its bundle, the
 * redirect to the authorization endpoint and back (the page and bundle again, from the cache when allowed), the
 * code exchange, whoami, the messages, the realm and the realm list. The warm load is the same navigation again in
 * the same context (via about:blank), after the network went idle. Every round measures each variant once, after
 * one unmeasured round, Realmgate and the static server taking turns to go first; figures are medians and p90
 * (nearest rank) over the rounds, and the paired ratio is the median of each round's realmgate / static.
 * Bytes are CDP's encodedDataLength (headers and body as received) of every response until the network is idle.
 *
 * The account console (issue 42) is measured by the same code (`run('account')`, or `npx tsx scripts/console-bench.ts
 * account`): its page /realms/master/account/ up to the personal-info form filled for the administrator, the static
 * front sending the page (a navigation, not the account API's JSON on the same path) and /resources/account-console/*
 * to the static server.
 *
 * CONSOLE_BENCH_LOADS: measured rounds (default 11); CONSOLE_BENCH_STATIC: plain (default) or precompressed;
 * CONSOLE_BENCH_DEBUG=1 lists every response of every load on stderr.
 * Run alone: npx tsx scripts/console-bench.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, createReadStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Agent, createServer as createHttpServer, get as httpGet, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Cookie, Page } from 'playwright-core';
import { startRealmgate, stopper } from './bench-support.js';

const ROOT = resolve(import.meta.dirname, '..');
const LOADS = Math.max(1, Number(process.env.CONSOLE_BENCH_LOADS ?? 11));
const STATIC_MODE = process.env.CONSOLE_BENCH_STATIC === 'precompressed' ? 'precompressed' : 'plain';
const ADMIN_USERNAME = 'admin';
const ADMIN_PASSWORD = 'console-bench-admin-password';
const GOAL = 1.2;

/**
 * What is measured: the admin console up to its realm list, or (issue 42) the account console up to its personal-info
 * page, signed in as the same administrator of the master realm. Everything else (servers, fronts, rounds, figures)
 * is the same code for both.
 */
interface Target {
  key: 'admin' | 'account';
  /** The console's page, and the prefix of its hashed assets. */
  page: string;
  resources: string;
  /** Where a load navigates below `page`, and what it waits for, in words. */
  route: string;
  what: string;
  /** A script expression, true in the page when `what` is on screen (`shown(element)` is given). */
  ready: string;
  /** A selector on screen once signed in, for the sign-in round. */
  signedIn: string;
  /** Whether a request with this path and Accept header is the console's page or asset (not its REST API). */
  isBundle(path: string, headers: IncomingHttpHeaders): boolean;
  build(): Promise<string>;
}

const ADMIN_TARGET: Target = {
  key: 'admin',
  page: '/admin/master/console/',
  resources: '/resources/admin-console/',
  // The realm list: Keycloak's "Manage realms" page, a lazily loaded chunk of its own.
  route: '#/master/realms',
  what: 'the realm list',
  ready: `shown(document.querySelector('[data-testid="currentRealm"]')) &&
    [...document.querySelectorAll('table td')].some((cell) => /^master/.test((cell.textContent || '').trim()) && shown(cell))`,
  signedIn: '[data-testid="currentRealm"]',
  isBundle: (path) => path === ADMIN_TARGET.page || path.startsWith(ADMIN_TARGET.resources),
  async build() {
    const { buildConsole, CONSOLE_DIST } = await import('../packages/admin-console/build.js');
    await buildConsole({ quiet: true });
    return CONSOLE_DIST;
  },
};

const ACCOUNT_TARGET: Target = {
  key: 'account',
  page: '/realms/master/account/',
  resources: '/resources/account-console/',
  route: '',
  what: 'the personal-info page',
  // The form filled from the account API: the username shown in its field (the login page's is empty).
  ready: `shown(document.querySelector('#email')) && (document.querySelector('#username') || {}).value === ${JSON.stringify(ADMIN_USERNAME)}`,
  signedIn: '#email',
  // The same path is the account REST API for the console's calls (a bearer token, JSON): those stay with Realmgate.
  isBundle: (path, headers) =>
    (path === ACCOUNT_TARGET.page && headers.authorization === undefined && !/json/i.test(String(headers.accept ?? ''))) || path.startsWith(ACCOUNT_TARGET.resources),
  async build() {
    const { buildAccountConsole, ACCOUNT_CONSOLE_DIST } = await import('../packages/account-console/build.js');
    await buildAccountConsole({ quiet: true });
    return ACCOUNT_CONSOLE_DIST;
  },
};

const TARGETS = { admin: ADMIN_TARGET, account: ACCOUNT_TARGET };
/** The target of this process's run (the fronts' child process is told it by argument). */
let T: Target = ADMIN_TARGET;
const TIMEOUT = 60_000;

type Variant = 'realmgate' | 'static' | 'direct';
const VARIANTS: Variant[] = ['realmgate', 'static', 'direct'];

/** One figure as bench/results.json keeps it; every ratio here is value / baseline, lower is better. */
export interface ConsoleFigure {
  name: string;
  value: number;
  unit: string;
  baseline: { name: string; value: number } | null;
  ratio: number | null;
  /** The issue's bar for `ratio` (ratio <= goal), or null where it sets none. */
  goal: number | null;
}

/** What one load fetched, from CDP's Network events. */
interface LoadNetwork {
  /** Responses that came over the network (304s included), and their bytes (encodedDataLength). */
  requests: number;
  bytes: number;
  /** The same for the page (/admin/master/console/) and its assets (/resources/admin-console/*) alone. */
  bundleRequests: number;
  bundleBytes: number;
  /** Bundle responses taken from Chromium's cache without asking (memory or disk). */
  bundleFromCache: number;
  /** Bundle answers 304 Not Modified. */
  bundleNotModified: number;
  /** Hashed assets (/resources/admin-console/assets/*) by content-encoding ("identity" when none). */
  assetEncodings: Record<string, number>;
  /** Distinct Cache-Control values of the hashed assets, of the page, and what Chromium asked for. */
  assetCacheControl: string[];
  pageCacheControl: string[];
  acceptEncoding: string;
  /** Answers >= 400 and failed requests. */
  problems: string[];
}

interface Load {
  ms: number;
  network: LoadNetwork;
}

export interface ConsoleBench {
  node: string;
  chromium: string;
  loads: number;
  staticServer: string;
  route: string;
  figures: ConsoleFigure[];
  /** Per variant: the cold and warm load of each round, in ms, in the order measured. */
  samples: Record<Variant, { cold: number[]; warm: number[] }>;
  /** Median over rounds of realmgate / static in the same round (drift between rounds cancels out). */
  pairedRatio: number;
  /** Per variant, from the first measured round's loads: what went over the network. */
  network: Record<Variant, { cold: LoadNetwork; warm: LoadNetwork }>;
  /** 1-minute load average when each round began and ended. */
  loadAverages: { round: number; before: number; after: number }[];
  notes: string[];
}

// ---------------------------------------------------------------- small helpers

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Nearest-rank percentile: p90 of 11 values is the 10th smallest. */
const percentile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
};

/** Starts this file with `args` in a new Node process, which prints one JSON line when ready and then serves. */
function serveChild<T>(args: string[]): Promise<{ ready: T; proc: ChildProcess; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_ENV: 'production' },
  });
  return new Promise((done, fail) => {
    let out = '';
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) done({ ready: JSON.parse(line) as T, proc, stop: stopper(proc) });
    });
    proc.on('error', fail);
    proc.on('exit', (code) => fail(new Error(`${args[0]} exited ${code}`)));
  });
}

// ---------------------------------------------------------------- the bare static server (its own process)

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
};

/** URL path → file below `root` (a directory → its index.html), no application logic. */
function serveStatic(root: string, port: number, precompressed: boolean): Promise<Server> {
  const server = createHttpServer((request, response) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    let file: string;
    try {
      file = normalize(join(root, decodeURIComponent((request.url ?? '/').split('?')[0])));
    } catch {
      response.writeHead(400).end();
      return;
    }
    if (file !== root && !file.startsWith(root + sep)) {
      response.writeHead(403).end();
      return;
    }
    let stats;
    try {
      stats = statSync(file);
      if (stats.isDirectory()) {
        file = join(file, 'index.html');
        stats = statSync(file);
      }
    } catch {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    const etag = `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
    const headers: Record<string, string | number> = {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': 'public, max-age=0',
      'last-modified': stats.mtime.toUTCString(),
      etag,
    };
    if (request.headers['if-none-match'] === etag) {
      response.writeHead(304, headers).end();
      return;
    }
    if (precompressed) {
      const accepted = String(request.headers['accept-encoding'] ?? '');
      for (const [encoding, suffix] of [['br', '.br'], ['gzip', '.gz']] as const) {
        if (!new RegExp(`\\b${encoding}\\b`).test(accepted)) continue;
        try {
          const twin = statSync(file + suffix);
          headers.vary = 'accept-encoding';
          headers['content-encoding'] = encoding;
          stats = twin;
          file += suffix;
          break;
        } catch {
          // no twin: the next encoding, or the file itself
        }
      }
    }
    headers['content-length'] = stats.size;
    response.writeHead(200, headers);
    if (request.method === 'HEAD') response.end();
    else createReadStream(file).pipe(response);
  });
  return new Promise((done) => server.listen(port, '127.0.0.1', () => done(server)));
}

// ---------------------------------------------------------------- the fronts (their own process)

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const endToEnd = (headers: IncomingHttpHeaders): IncomingHttpHeaders =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

/** A pass-through HTTP proxy: each request (Host kept) to the origin `upstream` picks for its path. */
function front(upstream: (path: string, headers: IncomingHttpHeaders) => URL): Promise<Server> {
  const agents = new Map<string, Agent>();
  const server = createHttpServer((request, response) => {
    const path = request.url ?? '/';
    const target = upstream(path.split('?')[0], request.headers);
    let agent = agents.get(target.host);
    if (!agent) agents.set(target.host, (agent = new Agent({ keepAlive: true })));
    const forwarded = httpRequest(
      { host: target.hostname, port: target.port, method: request.method, path, headers: endToEnd(request.headers), agent },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(response);
      },
    );
    forwarded.setNoDelay(true);
    forwarded.on('error', () => {
      if (!response.headersSent) response.writeHead(502);
      response.end();
    });
    request.pipe(forwarded);
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done(server)));
}

async function serveFronts(realmgate: string, staticServer: string): Promise<{ realmgate: string; static: string }> {
  const toRealmgate = new URL(realmgate);
  const toStatic = new URL(staticServer);
  const all = await front(() => toRealmgate);
  const split = await front((path, headers) => (T.isBundle(path, headers) ? toStatic : toRealmgate));
  const url = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return { realmgate: url(all), static: url(split) };
}

// ---------------------------------------------------------------- Realmgate

function startConsoleRealmgate(dir: string): ReturnType<typeof startRealmgate> {
  // Its public URL from each request's Host: the fronts keep it, so each origin gets its own environment.
  return startRealmgate({ dbUrl: `sqlite:${join(dir, 'console.db')}`, dir, adminUsername: ADMIN_USERNAME, adminPassword: ADMIN_PASSWORD, hostnameFromRequest: true });
}

/** The console page Realmgate serves when asked under `origin` (its Host header). */
function consolePage(realmgate: string, origin: string): Promise<string> {
  const target = new URL(realmgate);
  return new Promise((done, fail) => {
    httpGet({ host: target.hostname, port: target.port, path: T.page, headers: { host: new URL(origin).host, accept: 'text/html' } }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => (response.statusCode === 200 ? done(body) : fail(new Error(`console page: ${response.statusCode} ${body}`))));
    }).on('error', fail);
  });
}

// ---------------------------------------------------------------- in the browser

/**
 * Runs in every document before its scripts: notes (page clock, epoch ms) when the target's page is on screen. A string,
 * not a function: tsx would wrap the inner functions in a helper the page does not have.
 */
const probe = (target: Target) => `(() => {
  const shown = (element) => !!element && element.getClientRects().length > 0;
  const ready = () => ${target.ready};
  const observer = new MutationObserver(() => {
    if (window.__consoleReadyAt === undefined && ready()) {
      window.__consoleReadyAt = Date.now();
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true, characterData: true });
})();`;

/** Records every response of `page` over CDP until `finish()`. */
async function watchNetwork(context: BrowserContext, page: Page): Promise<{ finish(): Promise<LoadNetwork> }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  type Seen = { path: string; status: number; headers: Record<string, string>; fromCache: boolean; bytes: number };
  const pending = new Map<string, Seen>();
  const done: Seen[] = [];
  const problems: string[] = [];
  let acceptEncoding = '';
  const lower = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const pathOf = (url: string) => {
    const u = new URL(url);
    return u.protocol.startsWith('http') ? u.pathname : url;
  };
  const urls = new Map<string, string>();
  cdp.on('Network.requestWillBeSentExtraInfo', (event) => {
    if (!acceptEncoding && urls.get(event.requestId)?.includes(T.resources)) acceptEncoding = lower(event.headers)['accept-encoding'] ?? '';
  });
  cdp.on('Network.requestWillBeSent', (event) => {
    urls.set(event.requestId, event.request.url);
    const r = event.redirectResponse;
    if (r) done.push({ path: pathOf(r.url), status: r.status, headers: lower(r.headers), fromCache: false, bytes: r.encodedDataLength });
  });
  cdp.on('Network.responseReceived', (event) => {
    const r = event.response;
    if (!r.url.startsWith('http')) return;
    pending.set(event.requestId, { path: pathOf(r.url), status: r.status, headers: lower(r.headers), fromCache: Boolean(r.fromDiskCache || r.fromPrefetchCache), bytes: 0 });
  });
  cdp.on('Network.requestServedFromCache', (event) => {
    const seen = pending.get(event.requestId);
    if (seen) seen.fromCache = true;
  });
  cdp.on('Network.loadingFinished', (event) => {
    const seen = pending.get(event.requestId);
    if (!seen) return;
    pending.delete(event.requestId);
    // Chromium does not always flag its HTTP cache's answers (fromDiskCache): nothing came over the wire for them.
    if (event.encodedDataLength === 0) seen.fromCache = true;
    seen.bytes = seen.fromCache ? 0 : event.encodedDataLength;
    if (seen.status >= 400) problems.push(`${seen.path} ${seen.status}`);
    done.push(seen);
  });
  cdp.on('Network.loadingFailed', (event) => {
    if (!event.canceled) problems.push(`${pending.get(event.requestId)?.path ?? event.requestId} failed: ${event.errorText}`);
  });
  return {
    async finish() {
      await cdp.detach().catch(() => {});
      if (process.env.CONSOLE_BENCH_DEBUG) for (const r of done) console.error(`    ${r.status} ${r.fromCache ? 'cache' : 'net'} ${r.bytes} ${r.headers['content-encoding'] ?? ''} ${r.path}`);
      // The page's own path also answers the account API's JSON: only text/html answers there are the page.
      const isPage = (s: Seen) => s.path === T.page && !/json/i.test(s.headers['content-type'] ?? '');
      const bundle = done.filter((s) => isPage(s) || s.path.startsWith(T.resources));
      const assets = bundle.filter((s) => s.path.startsWith(`${T.resources}assets/`) && !s.fromCache && s.status === 200);
      const network = (list: Seen[]) => list.filter((s) => !s.fromCache);
      const assetEncodings: Record<string, number> = {};
      for (const a of assets) {
        const encoding = a.headers['content-encoding'] ?? 'identity';
        assetEncodings[encoding] = (assetEncodings[encoding] ?? 0) + 1;
      }
      const distinct = (list: Seen[]) => [...new Set(list.map((s) => s.headers['cache-control'] ?? '(none)'))];
      return {
        requests: network(done).length,
        bytes: network(done).reduce((sum, s) => sum + s.bytes, 0),
        bundleRequests: network(bundle).length,
        bundleBytes: network(bundle).reduce((sum, s) => sum + s.bytes, 0),
        bundleFromCache: bundle.filter((s) => s.fromCache).length,
        bundleNotModified: bundle.filter((s) => s.status === 304).length,
        assetEncodings,
        assetCacheControl: distinct(assets),
        pageCacheControl: distinct(network(bundle.filter(isPage))),
        acceptEncoding,
        problems,
      };
    },
  };
}

/** Signs the administrator in through the login form on `origin`; the context's cookies (the SSO session). */
async function signIn(browser: Browser, origin: string): Promise<Cookie[]> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${origin}${T.page}`);
    await page.waitForSelector('#username', { timeout: TIMEOUT });
    await page.fill('#username', ADMIN_USERNAME);
    await page.fill('#password', ADMIN_PASSWORD);
    await Promise.all([page.waitForURL((url) => url.pathname.startsWith(T.page), { timeout: TIMEOUT }), page.click('#kc-login')]);
    await page.waitForSelector(T.signedIn, { timeout: TIMEOUT }).catch(async (error: unknown) => {
      const shot = join(tmpdir(), `console-bench-sign-in-${T.key}.png`);
      await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
      throw new Error(`signing in on ${origin}: ${T.signedIn} did not show at ${page.url()} (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); screenshot ${shot}`);
    });
    return (await context.storageState()).cookies;
  } finally {
    await context.close();
  }
}

/** One navigation to the target's page in `page`: ms from this side's Date.now() before it to the page's mark. */
async function timedLoad(context: BrowserContext, page: Page, origin: string, label: string): Promise<Load> {
  const watcher = await watchNetwork(context, page);
  const started = Date.now();
  await page.goto(`${origin}${T.page}${T.route}`, { waitUntil: 'commit', timeout: TIMEOUT });
  const readyAt = await page
    .waitForFunction(() => (window as unknown as { __consoleReadyAt?: number }).__consoleReadyAt, null, { timeout: TIMEOUT, polling: 50 })
    .then((handle) => handle.jsonValue() as Promise<number>)
    .catch(async (error: unknown) => {
      const shot = join(tmpdir(), 'console-bench-not-ready.png');
      await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
      const cells = await page.evaluate(() => [...document.querySelectorAll('table td')].slice(0, 6).map((c) => c.textContent)).catch(() => []);
      throw new Error(
        `${label}: ${T.what} did not show at ${page.url()} (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); ` +
          `table cells ${JSON.stringify(cells)}, screenshot ${shot}`,
      );
    });
  // The page keeps loading a little after it shows (the session-status frame…): counted until it is idle.
  await page.waitForLoadState('networkidle', { timeout: 15_000 }).catch(() => {});
  return { ms: readyAt - started, network: await watcher.finish() };
}

/** A cold load in a new context seeded with `cookies`, then a warm one in the same context. */
async function coldAndWarm(browser: Browser, origin: string, cookies: Cookie[], label: string): Promise<{ cold: Load; warm: Load }> {
  const context = await browser.newContext({ storageState: { cookies, origins: [] } });
  try {
    await context.addInitScript(probe(T));
    const page = await context.newPage();
    const cold = await timedLoad(context, page, origin, `${label} cold`);
    await page.goto('about:blank');
    const warm = await timedLoad(context, page, origin, `${label} warm`);
    return { cold, warm };
  } finally {
    await context.close();
  }
}

// ---------------------------------------------------------------- the bench

export async function run(target: keyof typeof TARGETS = 'admin'): Promise<ConsoleBench> {
  T = TARGETS[target];
  const { launchBrowser } = await import('../packages/server/test/support/browser.js');
  const dist = await T.build();
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-console-bench-'));
  const stops: (() => Promise<void>)[] = [];
  try {
    // The static server's root: the build as it is, and the page once Realmgate has made it for the static origin.
    const root = join(dir, 'static');
    cpSync(dist, join(root, T.resources), { recursive: true });
    const realmgate = await startConsoleRealmgate(dir);
    stops.push(realmgate.stop);
    const staticServer = await serveChild<{ url: string }>(['--static', root, STATIC_MODE]);
    stops.push(staticServer.stop);
    const fronts = await serveChild<{ realmgate: string; static: string }>(['--fronts', realmgate.url, staticServer.ready.url, T.key]);
    stops.push(fronts.stop);
    mkdirSync(join(root, T.page), { recursive: true });
    writeFileSync(join(root, T.page, 'index.html'), await consolePage(realmgate.url, fronts.ready.static));
    const origins: Record<Variant, string> = { realmgate: fronts.ready.realmgate, static: fronts.ready.static, direct: realmgate.url };

    const browser = await launchBrowser();
    stops.push(() => browser.close());
    const bench: ConsoleBench = {
      node: process.version,
      chromium: browser.version(),
      loads: LOADS,
      staticServer:
        STATIC_MODE === 'plain'
          ? 'node:http + fs, no compression, Cache-Control: public, max-age=0 with ETag/Last-Modified (304s)'
          : 'node:http + fs, the build’s .br/.gz twins when accepted, Cache-Control: public, max-age=0 with ETag/Last-Modified (304s)',
      route: `${T.page}${T.route}`,
      figures: [],
      samples: { realmgate: { cold: [], warm: [] }, static: { cold: [], warm: [] }, direct: { cold: [], warm: [] } },
      pairedRatio: Number.NaN,
      network: {} as ConsoleBench['network'],
      loadAverages: [],
      notes: [],
    };
    const cookies = {} as Record<Variant, Cookie[]>;
    for (const variant of VARIANTS) cookies[variant] = await signIn(browser, origins[variant]);

    const problems = new Set<string>();
    // Round 0 warms every server and Chromium up and is not counted. Realmgate and the static server take turns
    // going first (A B A B …), so that neither always gets the cooler machine; Realmgate alone moves between them.
    for (let round = 0; round <= LOADS; round++) {
      const before = loadavg()[0];
      const order: Variant[] = round % 2 ? ['static', 'realmgate'] : ['realmgate', 'static'];
      order.splice(round % 3, 0, 'direct');
      for (const variant of order) {
        const { cold, warm } = await coldAndWarm(browser, origins[variant], cookies[variant], `${variant} round ${round}`);
        for (const problem of [...cold.network.problems, ...warm.network.problems]) problems.add(`${variant}: ${problem}`);
        if (round === 0) continue;
        bench.samples[variant].cold.push(cold.ms);
        bench.samples[variant].warm.push(warm.ms);
        if (round === 1) bench.network[variant] = { cold: cold.network, warm: warm.network };
      }
      if (round > 0) bench.loadAverages.push({ round, before, after: loadavg()[0] });
    }
    for (const problem of problems) bench.notes.push(`answer >= 400 or failed request: ${problem}`);

    const s = bench.samples;
    bench.pairedRatio = median(s.realmgate.cold.map((ms, i) => ms / s.static.cold[i]));
    const staticName = STATIC_MODE === 'plain' ? 'bare static server (no compression)' : 'bare static server (precompressed twins)';
    const time = (name: string, value: number, baselineName: string, baseline: number, goal: number | null): ConsoleFigure => ({
      name,
      value,
      unit: 'ms',
      baseline: { name: baselineName, value: baseline },
      ratio: value / baseline,
      goal,
    });
    const n = `${LOADS} loads`;
    const kb = (bytes: number) => bytes / 1024;
    const net = bench.network;
    bench.figures = [
      time(`time to ${T.what}, cold cache, median of ${n}`, median(s.realmgate.cold), `the same build from a ${staticName}, same proxy and API`, median(s.static.cold), GOAL),
      time(`time to ${T.what}, cold cache, p90 of ${n}`, percentile(s.realmgate.cold, 0.9), `the same build from a ${staticName}`, percentile(s.static.cold, 0.9), null),
      time(`time to ${T.what}, warm cache (same context, again), median of ${n}`, median(s.realmgate.warm), `the same build from a ${staticName}`, median(s.static.warm), null),
      time(`time to ${T.what}, warm cache, p90 of ${n}`, percentile(s.realmgate.warm, 0.9), `the same build from a ${staticName}`, percentile(s.static.warm, 0.9), null),
      time(`time to ${T.what}, cold cache, Realmgate alone (no proxy), median of ${n}`, median(s.direct.cold), 'Realmgate through the proxy', median(s.realmgate.cold), null),
      time(`time to ${T.what}, warm cache, Realmgate alone (no proxy), median of ${n}`, median(s.direct.warm), 'Realmgate through the proxy', median(s.realmgate.warm), null),
      {
        name: 'bytes received, cold load (page, bundle, sign-in redirect and API, until the network is idle)',
        value: kb(net.realmgate.cold.bytes),
        unit: 'KiB',
        baseline: { name: staticName, value: kb(net.static.cold.bytes) },
        ratio: net.realmgate.cold.bytes / net.static.cold.bytes,
        goal: null,
      },
      {
        name: 'bytes received for the page and its assets, cold load',
        value: kb(net.realmgate.cold.bundleBytes),
        unit: 'KiB',
        baseline: { name: staticName, value: kb(net.static.cold.bundleBytes) },
        ratio: net.realmgate.cold.bundleBytes / net.static.cold.bundleBytes,
        goal: null,
      },
      {
        name: 'requests for the page and its assets over the network, warm load',
        value: net.realmgate.warm.bundleRequests,
        unit: 'requests',
        baseline: { name: staticName, value: net.static.warm.bundleRequests },
        ratio: net.static.warm.bundleRequests ? net.realmgate.warm.bundleRequests / net.static.warm.bundleRequests : null,
        goal: null,
      },
    ];
    return bench;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

export function format(bench: ConsoleBench): string {
  const v = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 0));
  const lines = [
    `  ${bench.node}, Chromium ${bench.chromium}, ${bench.route}, ${bench.loads} rounds (each variant once a round, realmgate and static alternately first, one unmeasured round before)`,
    `  baseline: ${bench.staticServer}; both behind the same pass-through proxy, API from the same Realmgate`,
  ];
  for (const f of bench.figures) {
    const miss = f.goal !== null && f.ratio !== null && f.ratio > f.goal ? '  MISSED' : '';
    lines.push(
      `  ${f.name}: ${v(f.value)} ${f.unit}${f.baseline ? `  | baseline ${f.baseline.name}: ${v(f.baseline.value)}  | ratio ${f.ratio === null ? '-' : f.ratio.toFixed(2)}${f.goal !== null ? ` (goal <= ${f.goal.toFixed(1)})${miss}` : ''}` : ''}`,
    );
  }
  lines.push(`  paired ratio (median over rounds of realmgate / static, cold): ${bench.pairedRatio.toFixed(2)}`);
  for (const variant of ['realmgate', 'static', 'direct'] as const) {
    const n = bench.network[variant];
    if (!n) continue;
    const encodings = Object.entries(n.cold.assetEncodings).map(([e, c]) => `${e} ${c}`).join(', ');
    lines.push(
      `  ${variant}: cold ${n.cold.requests} requests, ${(n.cold.bytes / 1024).toFixed(0)} KiB (page and assets ${n.cold.bundleRequests} requests, ${(n.cold.bundleBytes / 1024).toFixed(0)} KiB); ` +
        `hashed assets by content-encoding: ${encodings || 'none'} (Chromium sent Accept-Encoding: ${n.cold.acceptEncoding || '?'}), Cache-Control ${n.cold.assetCacheControl.join(' | ')}; page ${n.cold.pageCacheControl.join(' | ')}; ` +
        `warm: page and assets ${n.warm.bundleRequests} over the network (${n.warm.bundleNotModified} 304s), ${n.warm.bundleFromCache} from the cache`,
    );
  }
  const averages = bench.loadAverages.flatMap((l) => [l.before, l.after]);
  lines.push(`  load average (1 min) over the rounds: ${Math.min(...averages).toFixed(1)} to ${Math.max(...averages).toFixed(1)}`);
  for (const note of bench.notes) lines.push(`  note: ${note}`);
  return lines.join('\n');
}

const [flag, ...args] = process.argv.slice(2);
if (flag === '--static') {
  const server = await serveStatic(resolve(args[0]), 0, args[1] === 'precompressed');
  console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
} else if (flag === '--fronts') {
  T = TARGETS[args[2] === 'account' ? 'account' : 'admin'];
  console.log(JSON.stringify(await serveFronts(args[0], args[1])));
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(format(await run(flag === 'account' ? 'account' : 'admin')));
  process.exit(0);
}
