/**
 * Keycloak's admin console (the npm package, built by packages/admin-console) in headless Chromium against a real
 * server: the bootstrap administrator opens /admin/, signs in through keycloak-js (security-admin-console, PKCE),
 * lands on the welcome page, then opens each page below by its deep link and a reload (keycloak-js signs in again
 * with the fragment route in its redirect URI, as in Keycloak). Every request is recorded: any 4xx/5xx that is not
 * an intended answer, any failed request and any console error fails the test, listed by page. Screenshots go to
 * test-results/screenshots (git-ignored).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../admin-console/build.js';
import { launchBrowser, screenshot } from './support/browser.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startServer, type TestServer } from './support/server.js';

let t: TestServer;
let browser: Browser;
let page: Page;
/** What went wrong since the last page began, as lines. */
let problems: string[] = [];
/** Every request the console made (path and status), for the record. */
let requests: string[] = [];

/** Answers a page is meant to get (none yet): `METHOD path-prefix status`. */
const INTENDED: string[] = [];

beforeAll(async () => {
  await buildConsole({ quiet: true });
  t = await startServer();
  browser = await launchBrowser();
  page = await browser.newPage();
  const local = (url: string) => url.startsWith(t.url);
  page.on('response', (response) => {
    const url = response.url();
    if (!local(url)) return;
    const path = url.slice(t.url.length);
    const line = `${response.request().method()} ${path.split('?')[0]} ${response.status()}`;
    requests.push(line);
    if (response.status() >= 400 && !INTENDED.some((intended) => line.startsWith(intended))) problems.push(`${response.request().method()} ${path} → ${response.status()}`);
  });
  page.on('requestfailed', (request) => {
    // A reload or a route change cancels requests in flight: that is the browser's doing, not the server's.
    if (request.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`${request.method()} ${request.url()} failed: ${request.failure()?.errorText}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text().split('\n')[0]}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** Waits until no request has been in flight for a moment (the session-status frame's checks are short). */
async function settled(): Promise<void> {
  await page.waitForLoadState('networkidle', { timeout: 30_000 });
}

/** Opens a console route by its deep link and a reload, waits for `ready`, screenshots it; returns its problems. */
async function open(route: string, name: string, ready: (page: Page) => Promise<unknown>): Promise<string[]> {
  problems = [];
  requests = [];
  await page.goto(`${t.url}/admin/master/console/#/${route}`);
  await page.reload();
  // A page that never gets ready is screenshot too, so the failure can be looked at.
  await ready(page).catch(async (error: unknown) => {
    await screenshot(page, `admin-console-${name}-not-ready`);
    throw error;
  });
  await settled();
  await screenshot(page, `admin-console-${name}`);
  return problems;
}

const inputWithValue = (value: string) => (p: Page) =>
  p.waitForFunction((v) => [...document.querySelectorAll('input')].some((input) => input.value === v), value, { timeout: 30_000 });

describe('the admin console in Chromium', () => {
  it('/admin/ signs the bootstrap administrator in through security-admin-console with PKCE and shows the welcome page', async () => {
    problems = [];
    const authorizations: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/protocol/openid-connect/auth?')) authorizations.push(request.url());
    });
    await page.goto(`${t.url}/admin/`);
    await page.waitForSelector('#username', { timeout: 30_000 });
    expect(authorizations[0]).toContain('client_id=security-admin-console');
    expect(authorizations[0]).toContain('code_challenge_method=S256');
    await page.fill('#username', ADMIN_USERNAME);
    await page.fill('#password', ADMIN_PASSWORD);
    await Promise.all([page.waitForURL(/\/admin\/master\/console\//), page.click('#kc-login')]);
    await page.waitForSelector('[data-testid="currentRealm"]', { timeout: 30_000 });
    await settled();
    await screenshot(page, 'admin-console-welcome');
    expect(page.url()).toMatch(new RegExp(`^${t.url}/admin/master/console/`));
    expect(requests.some((r) => r.startsWith('GET /admin/master/console/whoami 200'))).toBe(true);
    expect(problems).toEqual([]);
  });

  it('realm settings (general) shows the realm', async () => {
    expect(await open('master/realm-settings', 'realm-settings', inputWithValue('master'))).toEqual([]);
    expect(requests).toContain('GET /admin/realms/master 200');
  });

  it('the clients list shows the realm’s clients', async () => {
    expect(await open('master/clients', 'clients', (p) => p.getByText('security-admin-console').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests.some((r) => /^GET \/admin\/realms\/master\/clients\/? 200/.test(r))).toBe(true);
  });

  it('the users list shows the administrator', async () => {
    expect(await open('master/users', 'users', (p) => p.getByRole('link', { name: ADMIN_USERNAME, exact: true }).waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests).toContain('GET /admin/realms/master/ui-ext/brute-force-user 200');
  });

  it('the realm list names master', async () => {
    expect(await open('master/realms', 'realms', (p) => p.locator('table td').filter({ hasText: /^master/ }).first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests.some((r) => r.startsWith('GET /admin/realms/master/ui-ext/realms/names 200'))).toBe(true);
  });

  it('sessions lists the administrator’s own session', async () => {
    expect(await open('master/sessions', 'sessions', (p) => p.getByText(ADMIN_USERNAME, { exact: true }).first().waitFor({ timeout: 30_000 }))).toEqual([]);
  });

  it('authentication lists the flows and what uses them', async () => {
    expect(await open('master/authentication', 'authentication', (p) => p.getByText('Browser flow').first().or(p.getByText('flow.browser').first()).waitFor({ timeout: 30_000 }))).toEqual([]);
  });

  it('realm settings → events shows the event listeners', async () => {
    expect(await open('master/realm-settings/events', 'realm-settings-events', (p) => p.waitForResponse((r) => r.url().includes('/ui-ext/available-event-listeners'), { timeout: 30_000 }))).toEqual([]);
  });

  it('a user’s details (settings, attributes, sessions) and a client’s settings and sessions', async () => {
    const storage = t.server.context.storage;
    const master = (await storage.realms.byName('master'))!;
    const admin = (await storage.users.byUsername(master.id, ADMIN_USERNAME))!;
    const consoleClient = (await storage.clients.byClientId(master.id, 'security-admin-console'))!;
    expect(await open(`master/users/${admin.id}/settings`, 'user-settings', inputWithValue(ADMIN_USERNAME))).toEqual([]);
    expect(await open(`master/users/${admin.id}/sessions`, 'user-sessions', (p) => p.waitForResponse((r) => r.url().includes(`/users/${admin.id}/sessions`), { timeout: 30_000 }))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/settings`, 'client-settings', inputWithValue('security-admin-console'))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/sessions`, 'client-sessions', (p) => p.waitForResponse((r) => r.url().includes('/ui-ext/sessions/client'), { timeout: 30_000 }))).toEqual([]);
  });

  it('client scopes: the list, a scope’s mappers, and a client’s client scopes tab', async () => {
    const storage = t.server.context.storage;
    const master = (await storage.realms.byName('master'))!;
    const profile = (await storage.clientScopes.byName(master.id, 'profile'))!;
    const consoleClient = (await storage.clients.byClientId(master.id, 'security-admin-console'))!;
    expect(await open('master/client-scopes', 'client-scopes', (p) => p.getByText('microprofile-jwt').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests.some((r) => r.startsWith('GET /admin/realms/master/default-default-client-scopes 200'))).toBe(true);
    expect(await open(`master/client-scopes/${profile.id}/mappers`, 'client-scope-mappers', (p) => p.getByText('given name').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/clientScopes/setup`, 'client-client-scopes', (p) => p.getByText('security-admin-console-dedicated').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests.some((r) => new RegExp(`^GET /admin/realms/master/clients/${consoleClient.id}/default-client-scopes 200`).test(r))).toBe(true);
  });

  it('the realm roles list shows the default roles', async () => {
    expect(await open('master/roles', 'realm-roles', (p) => p.getByText('default-roles-master').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(requests.some((r) => r.startsWith('GET /admin/realms/master/roles 200'))).toBe(true);
  });
});
