import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Frame, type Page, type Request } from 'playwright-core';
import { REPO_ROOT } from './server.js';

const CHROMIUM = process.env.REALMGATE_CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = join(REPO_ROOT, 'test-results', 'screenshots');

/**
 * This process's Chromium: started by the first file that asks, shared by every later one (issue 36). Kept on
 * globalThis, which outlives a file's module graph: whether or not the worker re-imports this module for each file,
 * no Chromium is left running unreachable.
 */
const SHARED = Symbol.for('realmgate.test.chromium');
const holder = globalThis as { [SHARED]?: Promise<Browser> };

/** Debian's Chromium, headless, without the background traffic this machine's closed network refuses. */
function startChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * A browser for one test file. Starting Chromium costs a second or two of CPU, and a test worker runs many browser
 * files one after another: they share one Chromium per worker process. What a file gets behaves as its own browser
 * for everything the tests use: each page or context it opens is a fresh context (no cookies, storage or cache of
 * another file's), and close() closes the contexts it opened, not the Chromium the next file will use. The Chromium
 * ends with the worker process (Playwright's exit handler).
 */
export async function launchBrowser(): Promise<Browser> {
  let browser = holder[SHARED] ? await holder[SHARED].catch(() => null) : null;
  if (!browser?.isConnected()) {
    holder[SHARED] = startChromium();
    browser = await holder[SHARED];
  }
  return fileBrowser(browser);
}

function fileBrowser(browser: Browser): Browser {
  const contexts = new Set<BrowserContext>();
  const own = <T extends BrowserContext>(context: T): T => {
    contexts.add(context);
    return context;
  };
  return new Proxy(browser, {
    get(target, property) {
      if (property === 'newContext') return async (...args: Parameters<Browser['newContext']>) => own(await target.newContext(...args));
      if (property === 'newPage') {
        // As Browser.newPage: a context of the page's own, closed with the page.
        return async (...args: Parameters<Browser['newPage']>) => {
          const page = await target.newPage(...args);
          own(page.context());
          return page;
        };
      }
      if (property === 'contexts') return () => [...contexts];
      if (property === 'close') {
        return async () => {
          const open = [...contexts];
          contexts.clear();
          await Promise.all(open.map((context) => closeContext(context)));
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** How long a context's close may take before the Chromium it belongs to is taken as stuck. */
const CONTEXT_CLOSE_MS = 15_000;

/**
 * Closes a context of the shared Chromium. A close once hung for a whole minute on a loaded CI machine (2026-11-29,
 * browser-account-console's afterAll): after CONTEXT_CLOSE_MS the Chromium is closed instead and forgotten, so the
 * file ends and the next one starts a Chromium of its own rather than inheriting a stuck one.
 */
export async function closeContext(context: BrowserContext): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const closed = context.close().then(
    () => true,
    () => true,
  );
  const inTime = await Promise.race([closed, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CONTEXT_CLOSE_MS)))]);
  clearTimeout(timer);
  if (inTime) return;
  process.stderr.write(`a Chromium context did not close within ${CONTEXT_CLOSE_MS} ms: that Chromium is closed and a new one started for the next file\n`);
  const browser = context.browser();
  if (holder[SHARED] && browser && (await holder[SHARED].catch(() => null)) === browser) delete holder[SHARED];
  await browser?.close().catch(() => {});
}

/** How long no request may be in flight before a page counts as settled: Playwright's `networkidle` wait. */
const QUIET_MS = 500;

/**
 * The requests a page has in flight, for a console session's wait until its page has settled. Playwright's
 * `networkidle` fires once per document, and so says nothing about a route a console opens inside the document it
 * has loaded, nor about what a click on a loaded page sends.
 */
export class RequestsInFlight {
  private readonly inFlight = new Set<Request>();
  private idleSince: number | undefined = performance.now();
  private idleTimer: NodeJS.Timeout | undefined;
  private onIdle: (() => void) | undefined;

  constructor(private readonly page: Page) {
    page.on('request', (request) => {
      // A new document: what the one it replaces has in flight goes with it, and Chromium reports most, not all, of
      // those requests as failed.
      if (request.isNavigationRequest() && frameOf(request) === page.mainFrame()) this.inFlight.clear();
      this.inFlight.add(request);
      this.idleSince = undefined;
      clearTimeout(this.idleTimer);
    });
    const done = (request: Request) => {
      if (!this.inFlight.delete(request) || this.inFlight.size > 0) return;
      this.idleSince = performance.now();
      this.armIdle();
    };
    page.on('requestfinished', done);
    page.on('requestfailed', done);
  }

  /**
   * Waits until the document has reached `networkidle` and no request has been in flight for half a second, as
   * `networkidle` does for a document (the admin console's session-status frame's checks are short, and a request a
   * console sends on another's answer follows it by less).
   */
  async settled(): Promise<void> {
    await this.page.waitForLoadState('networkidle', { timeout: 30_000 });
    if (this.inFlight.size === 0 && this.idleSince !== undefined && performance.now() - this.idleSince >= QUIET_MS) return;
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => {
        this.onIdle = undefined;
        reject(new Error(`requests still in flight after 30 s: ${[...this.inFlight].map((r) => r.url()).join(', ')}`));
      }, 30_000);
      this.onIdle = () => {
        clearTimeout(deadline);
        this.onIdle = undefined;
        resolve();
      };
      this.armIdle();
    });
  }

  /** Calls `onIdle` once nothing has been in flight for QUIET_MS; a request started meanwhile re-arms it. */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.inFlight.size > 0 || !this.onIdle) return;
    const wait = this.idleSince === undefined ? QUIET_MS : Math.max(0, QUIET_MS - (performance.now() - this.idleSince));
    this.idleTimer = setTimeout(() => this.onIdle?.(), wait);
  }
}

/** The frame a request is for; null for a navigation request of a frame not made yet (a popup's). */
function frameOf(request: Request): Frame | null {
  try {
    return request.frame();
  } catch {
    return null;
  }
}

/**
 * Changes the route of a console (React Router, browser or hash history) as its own links do: a history entry pushed,
 * then the router told, as it learns of the back button. `to` is a URL or a part of one (`#/realm/route`).
 */
export async function pushRoute(page: Page, to: string): Promise<void> {
  await page.evaluate((url) => {
    const idx = ((history.state as { idx?: number } | null)?.idx ?? 0) + 1;
    history.pushState({ usr: null, key: Math.random().toString(36).slice(2, 10), idx }, '', url);
    window.dispatchEvent(new PopStateEvent('popstate', { state: history.state }));
  }, to);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}
