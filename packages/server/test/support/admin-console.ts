/**
 * Keycloak's admin console (the npm package, built by packages/admin-console) driven in headless Chromium against a
 * real server, as an operator uses it. A ConsoleSession records every request the console makes: any 4xx/5xx that
 * is not an intended answer, any failed request and any console error is a problem, listed per page, so a test
 * fails when a page breaks. Screenshots go to test-results/screenshots (git-ignored).
 */
import type KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../admin-console/build.js';
import { masterAdminClient } from './admin-client.js';
import { launchBrowser, pushRoute, RequestsInFlight, screenshot } from './browser.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startServer, type TestServer } from './server.js';

export class ConsoleSession {
  /** What went wrong since the last page began, as lines. */
  problems: string[] = [];
  /** Every request the console made since the last page began (`METHOD path status`), for the record. */
  requests: string[] = [];
  /** Intended 4xx answers whose console error Chromium has not logged yet. */
  private intendedLoadErrors = 0;
  private readonly network: RequestsInFlight;

  private constructor(
    readonly t: TestServer,
    readonly browser: Browser,
    readonly page: Page,
    /** Answers a page is meant to get: `METHOD path-prefix status`. */
    private readonly intended: string[],
  ) {
    const local = (url: string) => url.startsWith(t.url);
    page.on('response', (response) => {
      const url = response.url();
      if (!local(url)) return;
      const path = url.slice(t.url.length);
      const line = `${response.request().method()} ${path.split('?')[0]} ${response.status()}`;
      this.requests.push(line);
      if (response.status() < 400) return;
      if (!this.intended.some((answer) => line.startsWith(answer))) this.problems.push(`${response.request().method()} ${path} → ${response.status()}`);
      // Chromium logs every 4xx as a console error too: an intended answer's is not a problem either.
      else this.intendedLoadErrors += 1;
    });
    this.network = new RequestsInFlight(page);
    page.on('requestfailed', (request) => {
      // A reload or a route change cancels requests in flight: that is the browser's doing, not the server's.
      if (request.failure()?.errorText !== 'net::ERR_ABORTED') this.problems.push(`${request.method()} ${request.url()} failed: ${request.failure()?.errorText}`);
    });
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (this.intendedLoadErrors > 0 && message.text().startsWith('Failed to load resource: the server responded with a status of')) this.intendedLoadErrors -= 1;
      else this.problems.push(`console error: ${message.text().split('\n')[0]}`);
    });
    page.on('pageerror', (error) => this.problems.push(`page error: ${error.message}`));
  }

  /** Builds the console if needed and opens a browser page on `t` (not signed in yet). */
  static async start(t: TestServer, intended: string[] = []): Promise<ConsoleSession> {
    await buildConsole({ quiet: true });
    const browser = await launchBrowser();
    return new ConsoleSession(t, browser, await browser.newPage(), intended);
  }

  /** Starts a new page's record. */
  reset(): void {
    this.problems = [];
    this.requests = [];
  }

  /** Opens /admin/ and signs in on the login page (the bootstrap administrator unless told otherwise). */
  async signIn(username = ADMIN_USERNAME, password = ADMIN_PASSWORD): Promise<void> {
    const { page, t } = this;
    await page.goto(`${t.url}/admin/`);
    await page.waitForSelector('#username', { timeout: 30_000 });
    await page.fill('#username', username);
    await page.fill('#password', password);
    await Promise.all([page.waitForURL(/\/admin\/[^/]+\/console\//), page.click('#kc-login')]);
    await page.waitForSelector('[data-testid="currentRealm"]', { timeout: 30_000 });
    await this.settled();
  }

  /** Waits until the page has settled: nothing in flight for a while (RequestsInFlight). */
  async settled(): Promise<void> {
    await this.network.settled();
  }

  /**
   * Opens a console route, waits for `ready`, screenshots it; returns its problems. On a console already loaded for
   * `realm` the route is reached inside the page (a fresh load costs ~2 s of Chromium CPU, issue 36), through the
   * console's own "Page Not Found" route: the page before is gone from the document before the route is asked for,
   * so `ready` cannot match what that page left. The console points its REST client at a new realm only in an effect
   * that runs after the new route's own (a CI run saw bob of realm acme asked of master: three 404s), so a route of
   * another realm is reached from that realm's "Page Not Found" route, which asks nothing of the REST client, once the
   * realm has loaded (its GET is answered and nothing is in flight). `fresh` opens the route by its deep link in a
   * new document instead (keycloak-js signs in again), as does a page not showing the console of `realm`.
   */
  async open(route: string, name: string, ready: (page: Page) => Promise<unknown>, realm = 'master', { fresh = false } = {}): Promise<string[]> {
    const { page, t } = this;
    const consoleUrl = `${t.url}/admin/${realm}/console/`;
    const routeRealm = route.split('/')[0];
    if (fresh || !page.url().startsWith(`${consoleUrl}#/`) || !(await page.locator('[data-testid="currentRealm"]').count())) {
      await page.goto('about:blank');
      this.reset();
      await page.goto(`${consoleUrl}#/${route}`);
    } else {
      const shownRealm = decodeURIComponent(page.url().slice(consoleUrl.length + 2).split(/[/?]/)[0] || realm);
      await this.settled();
      this.reset();
      const realmLoaded = shownRealm === routeRealm ? undefined : page.waitForResponse((r) => r.request().method() === 'GET' && new URL(r.url()).pathname === `/admin/realms/${routeRealm}`, { timeout: 30_000 });
      await this.navigate(`${routeRealm}/realmgate-test/between-pages`);
      await page.getByText('Page Not Found', { exact: true }).waitFor({ timeout: 30_000 });
      if (realmLoaded) {
        await realmLoaded;
        await this.settled();
      }
      await this.navigate(route);
    }
    await this.ready(name, ready);
    return this.problems;
  }

  /**
   * Changes the console's route as its own links do: a history entry pushed (the console's realm follows pushState
   * only, not the location: a hash change alone leaves it on the realm before), then the hash router told.
   */
  private async navigate(route: string): Promise<void> {
    await pushRoute(this.page, `#/${route}`);
  }

  /** Waits for `ready` (a page that never gets ready is screenshot too, so the failure can be looked at), then settles and screenshots. */
  async ready(name: string, ready: (page: Page) => Promise<unknown>): Promise<void> {
    await ready(this.page).catch(async (error: unknown) => {
      await screenshot(this.page, `admin-console-${name}-not-ready`);
      throw error;
    });
    await this.settled();
    await screenshot(this.page, `admin-console-${name}`);
  }

  /** Clicks `selector` and waits for the console's answer to the request it sends (`method`, a path matching `path`). */
  async clickFor(selector: string, method: string, path: RegExp): Promise<void> {
    const { page } = this;
    await Promise.all([page.waitForResponse((r) => r.request().method() === method && path.test(new URL(r.url()).pathname), { timeout: 30_000 }), page.locator(selector).first().click()]);
  }

  async close(): Promise<void> {
    await this.browser.close();
  }
}

/**
 * A test file's set-up: a server, the realm `realm` made through the admin client (left pointed at it), what
 * `prepare` adds there, then the console signed in as the bootstrap administrator. Close with `closeConsole`.
 */
export async function consoleOnRealm(realm: string, prepare: (kc: KcAdminClient) => Promise<void> = async () => {}): Promise<{ t: TestServer; kc: KcAdminClient; session: ConsoleSession }> {
  const t = await startServer();
  const kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm, enabled: true });
  kc.setConfig({ realmName: realm });
  await prepare(kc);
  const session = await ConsoleSession.start(t);
  await session.signIn();
  return { t, kc, session };
}

export async function closeConsole(set: { t?: TestServer; session?: ConsoleSession } | undefined): Promise<void> {
  await set?.session?.close();
  await set?.t?.close();
}

/** Ready when an input on the page holds `value`. */
export const inputWithValue = (value: string) => (p: Page) =>
  p.waitForFunction((v) => [...document.querySelectorAll('input')].some((input) => input.value === v), value, { timeout: 30_000 });
