import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient } from './support/admin-client.js';
import { AccountConsoleSession } from './support/account-console.js';
import { launchBrowser } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';

/**
 * Keycloak's account console with a realm's `accountTheme` (issue 42 item 4), in headless Chromium: a theme of the
 * theme directory whose parent is keycloak.v3 changes the console as Keycloak's does (its style sheets after the
 * console's, its logo, title and texts, its resources at its own resourceUrl, the console's where it has none); a
 * realm without it, or naming a theme the directory lacks, gets the console as built. And the masthead's link back to
 * the application (`referrer` / `referrer_uri`): the client's name, only a URI the client may redirect to.
 */
let t: TestServer;
let themeDir: string;
let browser: Browser;
const sessions: AccountConsoleSession[] = [];

/** The border the test theme's style sheet gives the page's body: read back as a computed style. */
const THEMED_BORDER = 'rgb(12, 34, 56)';

beforeAll(async () => {
  themeDir = mkdtempSync(join(tmpdir(), 'realmgate-account-theme-'));
  const account = join(themeDir, 'brand', 'account');
  mkdirSync(join(account, 'resources', 'css'), { recursive: true });
  mkdirSync(join(account, 'resources', 'img'), { recursive: true });
  mkdirSync(join(account, 'messages'), { recursive: true });
  writeFileSync(join(account, 'theme.properties'), ['parent=keycloak.v3', 'styles=css/brand.css', 'logo=/img/brand-logo.svg', 'title=Brand account'].join('\n'));
  writeFileSync(join(account, 'resources', 'css', 'brand.css'), `body { border-top: 7px solid ${THEMED_BORDER}; }\n`);
  writeFileSync(join(account, 'resources', 'img', 'brand-logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#0c2238"/></svg>');
  writeFileSync(join(account, 'messages', 'messages_en.properties'), 'personalInfo=Brand profile\n');
  t = await startServer({ config: { REALMGATE_THEME_DIR: themeDir } });
  const kc = await masterAdminClient(t.url);
  // `gone` names a theme the directory does not have (a realm file's): the console as built, as Keycloak falls back.
  for (const [realm, accountTheme] of [['branded', 'brand'], ['plain', undefined], ['gone', 'no-such-theme']] as const) {
    await kc.realms.create({ realm, enabled: true, ...(accountTheme ? { accountTheme } : {}) });
    kc.setConfig({ realmName: realm });
    await kc.users.create({ username: 'ruth', enabled: true, email: 'ruth@example.com', emailVerified: true, firstName: 'Ruth', lastName: 'Ng', credentials: [{ type: 'password', value: 'ruth-pass-1' }] });
    kc.setConfig({ realmName: 'master' });
  }
  kc.setConfig({ realmName: 'plain' });
  await kc.clients.create({ clientId: 'shop', name: 'Shop Front', publicClient: true, redirectUris: ['http://127.0.0.1:9/shop/*'], baseUrl: 'http://127.0.0.1:9/shop/home' });
  await kc.clients.create({ clientId: 'nameless', publicClient: true, redirectUris: ['http://127.0.0.1:9/nameless/*'] });
  await kc.clients.create({ clientId: 'retired', name: 'Old Shop', enabled: false, publicClient: true, redirectUris: ['http://127.0.0.1:9/old/*'], rootUrl: 'http://127.0.0.1:9', baseUrl: '/old/' });
  browser = await launchBrowser();
});
afterAll(async () => {
  for (const s of sessions) await s.close();
  await browser?.close();
  await t?.close();
  rmSync(themeDir, { recursive: true, force: true });
});

async function signedIn(realm: string): Promise<AccountConsoleSession> {
  const s = await AccountConsoleSession.start(t, realm, browser);
  sessions.push(s);
  await s.signIn('ruth', 'ruth-pass-1');
  await s.page.waitForSelector('#email', { timeout: 30_000 });
  return s;
}

/** The environment the console's page carries, read over HTTP as a browser's navigation. */
async function environmentOf(path: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${t.url}${path}`, { headers: { accept: 'text/html' } });
  expect(response.status).toBe(200);
  const html = await response.text();
  const json = /<script id="environment" type="application\/json">(.*?)<\/script>/s.exec(html)?.[1];
  expect(json).toBeDefined();
  return JSON.parse(json!) as Record<string, unknown>;
}

describe("account console: the realm's accountTheme", () => {
  it("applies the theme's style sheet, logo, title and texts to a realm whose accountTheme names it", async () => {
    const s = await signedIn('branded');
    await s.page.waitForSelector('text=Brand profile', { timeout: 30_000 });
    await s.settled();
    expect(await s.page.evaluate(() => getComputedStyle(document.body).borderTopColor)).toBe(THEMED_BORDER);
    expect(await s.page.evaluate(() => getComputedStyle(document.body).borderTopWidth)).toBe('7px');
    expect(await s.page.title()).toBe('Brand account');
    const logo = s.page.locator('[data-testid="page-header"] img').first();
    expect(await logo.getAttribute('src')).toBe('/resources/account-console/themes/brand/img/brand-logo.svg');
    expect(await logo.evaluate((img) => (img as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);
    // The console's menu (content.json) is not in the theme: the console's own, from the theme's resourceUrl.
    expect(s.requests).toContain('GET /resources/account-console/themes/brand/content.json 200');
    expect(s.requests).toContain('GET /resources/account-console/themes/brand/css/brand.css 200');
    expect(s.problems).toEqual([]);
  });

  it('leaves the console as built for a realm without it, and for one naming a theme the directory lacks', async () => {
    for (const realm of ['plain', 'gone']) {
      const s = await signedIn(realm);
      await s.page.waitForSelector('text=Personal info', { timeout: 30_000 });
      await s.settled();
      expect(await s.page.evaluate(() => getComputedStyle(document.body).borderTopWidth)).toBe('0px');
      expect(await s.page.title()).toBe('Account Management');
      expect(await s.page.locator('[data-testid="page-header"] img').first().getAttribute('src')).toBe('/resources/account-console/logo.svg');
      expect(await s.page.locator('text=Brand profile').count()).toBe(0);
      expect(s.requests.filter((line) => line.includes('/themes/'))).toEqual([]);
      expect(s.problems).toEqual([]);
    }
  });

  it("serves only the theme's indexed resources, then the console's own files, at the theme's resourceUrl", async () => {
    const get = (path: string) => fetch(`${t.url}/resources/account-console/themes/${path}`);
    const css = await get('brand/css/brand.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(await css.text()).toContain(THEMED_BORDER);
    expect((await get('brand/favicon.svg')).status).toBe(200);
    // Nothing outside the theme's resources: its properties, its messages, a path climbing out, another name.
    for (const path of ['brand/theme.properties', 'brand/../theme.properties', 'brand/..%2Ftheme.properties', 'brand/%2E%2E/%2E%2E/messages/messages_en.properties', '..%2Fbrand/css/brand.css', 'no-such-theme/favicon.svg', 'keycloak.v3/favicon.svg']) {
      const response = await get(path);
      expect([path, response.status]).toEqual([path, 404]);
      expect(await response.text()).not.toContain(THEMED_BORDER);
    }
  });

  it("answers the console's messages with the theme's texts over the console's, for that realm only", async () => {
    const list = async (realm: string) => Object.fromEntries(((await (await fetch(`${t.url}/resources/${realm}/account/en`)).json()) as { key: string; value: string }[]).map(({ key, value }) => [key, value]));
    const branded = await list('branded');
    const plain = await list('plain');
    expect(branded.personalInfo).toBe('Brand profile');
    expect(plain.personalInfo).toBe('Personal info');
    // Every other text is the console's.
    expect(branded.backTo).toBe(plain.backTo);
    expect(Object.keys(branded).length).toBe(Object.keys(plain).length);
  });

  it("puts the realm's own overrides (Realm settings → Localization) over the console's and the theme's texts, at once", async () => {
    const list = async (realm: string, locale = 'en') => Object.fromEntries(((await (await fetch(`${t.url}/resources/${realm}/account/${locale}`)).json()) as { key: string; value: string }[]).map(({ key, value }) => [key, value]));
    const kc = await masterAdminClient(t.url);
    const before = await list('branded');
    await kc.realms.addLocalization({ realm: 'branded', selectedLocale: 'en', key: 'personalInfo' }, 'Realm profile');
    await kc.realms.addLocalization({ realm: 'branded', selectedLocale: 'de', key: 'backTo' }, 'Zurück zu {{app}} (Realm)');
    expect((await list('branded')).personalInfo).toBe('Realm profile');
    expect((await list('branded')).backTo).toBe(before.backTo);
    expect((await list('branded', 'de')).backTo).toBe('Zurück zu {{app}} (Realm)');
    // Another realm keeps its texts; a changed override shows on the next request.
    expect((await list('plain')).personalInfo).toBe('Personal info');
    await kc.realms.addLocalization({ realm: 'branded', selectedLocale: 'en', key: 'personalInfo' }, 'Realm profile, changed');
    expect((await list('branded')).personalInfo).toBe('Realm profile, changed');
    await kc.realms.deleteRealmLocalizationTexts({ realm: 'branded', selectedLocale: 'en', key: 'personalInfo' });
    await kc.realms.deleteRealmLocalizationTexts({ realm: 'branded', selectedLocale: 'de', key: 'backTo' });
    expect((await list('branded')).personalInfo).toBe('Brand profile');
  });
});

describe("account console: the link back to the application (referrer, referrer_uri)", () => {
  it("names the referring client and links to a URI it may redirect to", async () => {
    const s = await signedIn('plain');
    s.reset();
    await s.page.goto(`${s.base}?referrer=shop&referrer_uri=${encodeURIComponent('http://127.0.0.1:9/shop/orders')}`);
    const link = s.page.locator('[data-testid="referrer-link"]');
    await link.waitFor({ timeout: 30_000 });
    expect(await link.textContent()).toContain('Back to Shop Front');
    expect(await link.getAttribute('href')).toBe('http://127.0.0.1:9/shop/orders');
    await s.settled();
    expect(s.problems).toEqual([]);
  });

  it("offers no link for a URI the client may not redirect to, and the client's base URL without one", async () => {
    const env = (query: string) => environmentOf(`/realms/plain/account/?${query}`);
    const outside = await env(`referrer=shop&referrer_uri=${encodeURIComponent('http://127.0.0.1:9/elsewhere')}`);
    expect([outside.referrerName, outside.referrerUrl]).toEqual(['', '']);
    const foreign = await env(`referrer=shop&referrer_uri=${encodeURIComponent('https://attacker.invalid/shop/x')}`);
    expect([foreign.referrerName, foreign.referrerUrl]).toEqual(['', '']);
    const base = await env('referrer=shop');
    expect([base.referrerName, base.referrerUrl]).toEqual(['Shop Front', 'http://127.0.0.1:9/shop/home']);
    // A client without a name is named by its clientId; one without a base URL and no URI asked has no link.
    const nameless = await env(`referrer=nameless&referrer_uri=${encodeURIComponent('http://127.0.0.1:9/nameless/a')}`);
    expect([nameless.referrerName, nameless.referrerUrl]).toEqual(['nameless', 'http://127.0.0.1:9/nameless/a']);
    expect((await env('referrer=nameless')).referrerUrl).toBe('');
    // As Keycloak's getReferrer: a disabled client is still named, and a relative base URL is made absolute on its root URL.
    const retired = await env('referrer=retired');
    expect([retired.referrerName, retired.referrerUrl]).toEqual(['Old Shop', 'http://127.0.0.1:9/old/']);
    // The realm's own account client: its root URL is `${authBaseUrl}`, this server.
    expect((await env('referrer=account')).referrerUrl).toBe(`${t.url}/realms/plain/account/`);
    expect((await env(`referrer=no-such-client&referrer_uri=${encodeURIComponent('http://127.0.0.1:9/shop/x')}`)).referrerUrl).toBe('');
    // Another realm's client is not this realm's referrer.
    expect((await environmentOf(`/realms/branded/account/?referrer=shop&referrer_uri=${encodeURIComponent('http://127.0.0.1:9/shop/x')}`)).referrerUrl).toBe('');
  });

  it('keeps the theme out of the environment of a realm without one, and names its resourceUrl for one with it', async () => {
    expect((await environmentOf('/realms/plain/account/')).resourceUrl).toBe('/resources/account-console');
    expect((await environmentOf('/realms/gone/account/')).resourceUrl).toBe('/resources/account-console');
    const branded = await environmentOf('/realms/branded/account/');
    expect([branded.resourceUrl, branded.logo]).toEqual(['/resources/account-console/themes/brand', '/img/brand-logo.svg']);
  });
});
