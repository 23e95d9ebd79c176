/**
 * Keycloak's account console (the npm package, built by packages/account-console) driven in headless Chromium
 * against a real server, as a user uses it. An AccountConsoleSession records every request the console makes and
 * every page error: any 4xx/5xx, any failed request, any console or page error is a problem, listed per page, so a
 * test fails when a page breaks. Screenshots go to test-results/screenshots (git-ignored).
 */
import type { Browser, Page } from 'playwright-core';
import { buildAccountConsole } from '../../../account-console/build.js';
import { closeContext, launchBrowser, pushRoute, RequestsInFlight, screenshot } from './browser.js';
import type { TestServer } from './server.js';

export class AccountConsoleSession {
  /** What went wrong since the last page began, as lines. */
  problems: string[] = [];
  /** Every request since the last page began (`METHOD path status`), for the record. */
  requests: string[] = [];
  /** The access token the console last received from the token endpoint (for the tests' own API calls). */
  accessToken: string | null = null;
  /** Answers a step is meant to get (`METHOD path status`, e.g. a refused e-mail's 400): not problems. */
  intended: string[] = [];
  /** Intended 4xx answers whose console error Chromium has not logged yet. */
  private intendedLoadErrors = 0;
  private readonly network: RequestsInFlight;

  private constructor(
    readonly t: TestServer,
    readonly browser: Browser,
    readonly page: Page,
    readonly realm: string,
    private readonly ownsBrowser: boolean,
  ) {
    page.on('response', (response) => {
      const url = response.url();
      if (!url.startsWith(t.url)) return;
      const line = `${response.request().method()} ${url.slice(t.url.length).split('?')[0]} ${response.status()}`;
      this.requests.push(line);
      if (response.status() >= 400 && this.intended.includes(line)) this.intendedLoadErrors += 1;
      else if (response.status() >= 400) this.problems.push(`${response.request().method()} ${url.slice(t.url.length)} → ${response.status()}`);
      if (response.status() === 200 && url.endsWith('/protocol/openid-connect/token')) {
        response.json().then((body: { access_token?: string }) => (this.accessToken = body.access_token ?? null), () => {});
      }
    });
    this.network = new RequestsInFlight(page);
    page.on('requestfailed', (request) => {
      // A navigation cancels requests in flight: that is the browser's doing, not the server's.
      if (request.failure()?.errorText !== 'net::ERR_ABORTED') this.problems.push(`${request.method()} ${request.url()} failed: ${request.failure()?.errorText}`);
    });
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      // Chromium logs every 4xx as a console error too: an intended answer's is not a problem either.
      if (this.intendedLoadErrors > 0 && message.text().startsWith('Failed to load resource: the server responded with a status of')) this.intendedLoadErrors -= 1;
      else this.problems.push(`console error: ${message.text().split('\n')[0]}`);
    });
    page.on('pageerror', (error) => this.problems.push(`page error: ${error.message}`));
  }

  /** Builds the console if needed and opens a browser page on `t` for `realm` (not signed in yet). */
  static async start(t: TestServer, realm: string, browser?: Browser): Promise<AccountConsoleSession> {
    await buildAccountConsole({ quiet: true });
    const b = browser ?? (await launchBrowser());
    // A context of its own: another session started on the same browser does not share its cookies.
    return new AccountConsoleSession(t, b, await (await b.newContext()).newPage(), realm, browser === undefined);
  }

  get base(): string {
    return `${this.t.url}/realms/${this.realm}/account/`;
  }

  reset(): void {
    this.problems = [];
    this.requests = [];
  }

  /** Opens the console, is sent to the sign-in page by keycloak-js, signs in, and waits for the personal-info page. */
  async signIn(username: string, password: string): Promise<void> {
    const { page } = this;
    await page.goto(this.base);
    await page.waitForSelector('#username', { timeout: 30_000 });
    await page.fill('#username', username);
    await page.fill('#password', password);
    await Promise.all([page.waitForURL((url) => url.pathname.startsWith(`/realms/${this.realm}/account/`) && !url.search.includes('code='), { timeout: 30_000 }), page.click('#kc-login')]);
    await this.ready('personal-info', (p) => p.waitForSelector('[data-testid="page-heading"], h1', { timeout: 30_000 }));
  }

  /** Waits until the page has settled: nothing in flight for a while (RequestsInFlight), after a click as after a load. */
  async settled(): Promise<void> {
    await this.network.settled();
  }

  /**
   * Opens a console route (below /account/), waits for `ready`, screenshots it; returns its problems. On the console
   * already loaded and signed in the route is reached inside the page, as the console's menu does (a fresh load costs
   * the whole bundle and keycloak-js's sign-in check again, issue 36), through a route that shows no page (the
   * console's `content/` route for a component its menu does not have, which asks for the menu and renders nothing):
   * the page before is gone from the document before the route is asked for, so `ready` cannot match what it left.
   * `fresh` opens the route in a new document instead, as does a page not showing the console: what the server
   * writes into the page (the realm's features, such as whether UPDATE_EMAIL or delete_account is enabled) is read
   * by the console only when it loads.
   */
  async open(route: string, name: string, ready: (page: Page) => Promise<unknown>, { fresh = false } = {}): Promise<string[]> {
    const { page } = this;
    if (fresh || !page.url().startsWith(this.base) || !(await page.locator('[data-testid="page-header"]').count())) {
      await page.goto('about:blank');
      this.reset();
      await page.goto(`${this.base}${route}`);
    } else {
      await this.settled();
      this.reset();
      // The content route's own request, sent once it has replaced the page before (the menu's is sent at load only).
      const betweenPages = page.waitForResponse((r) => r.request().method() === 'GET' && new URL(r.url()).pathname.endsWith('/content.json'), { timeout: 30_000 });
      await pushRoute(page, `${this.base}content/realmgate-test-between-pages`);
      await betweenPages;
      await pushRoute(page, `${this.base}${route}`);
    }
    await this.ready(name, ready);
    return this.problems;
  }

  async ready(name: string, ready: (page: Page) => Promise<unknown>): Promise<void> {
    await ready(this.page).catch(async (error: unknown) => {
      await screenshot(this.page, `account-console-${name}-not-ready`);
      throw new Error(`${name} not ready: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\nproblems:\n${this.problems.slice(0, 20).join('\n')}\nrequests:\n${this.requests.slice(0, 40).join('\n')}`);
    });
    await this.settled();
    await screenshot(this.page, `account-console-${name}`);
  }

  async close(): Promise<void> {
    if (this.ownsBrowser) await this.browser.close();
    else await closeContext(this.page.context());
  }
}
