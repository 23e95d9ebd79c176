/**
 * keycloak-js 26, unchanged from npm, in headless Chromium against a real server: the app is served from a second
 * loopback port (another origin), so every call it makes is a CORS call. Each flow runs with checkLoginIframe on
 * (the session-status frame and the third-party cookie check) and off. One server, one browser for the file.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAccountConsole } from '../../account-console/build.js';
import { launchBrowser } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';
import { libraryFile, spaRealm, startSpa } from './support/spa.js';

const REALM = 'spa';
const CLIENT = 'kc-app';
const USER = { username: 'kim', password: 'kim-pass-1', email: 'kim@example.com', firstName: 'Kim', lastName: 'Lee' };

let t: TestServer;
let spa: Awaited<ReturnType<typeof startSpa>>;
let browser: Browser;

/**
 * The app: reads keycloak-js's init options from its query, calls init() on every load (the first one and the one
 * the login redirect comes back to) and exposes the instance and the outcome to the test.
 */
const appPage = (serverUrl: string) => `<!doctype html><html><head><meta charset="utf-8"><title>app</title></head><body>
<script type="module">
import Keycloak from '/keycloak.js';
const query = new URLSearchParams(location.search);
const keycloak = new Keycloak({ url: ${JSON.stringify(serverUrl)}, realm: ${JSON.stringify(REALM)}, clientId: ${JSON.stringify(CLIENT)} });
window.keycloak = keycloak;
const options = { checkLoginIframe: query.get('iframe') === 'on', checkLoginIframeInterval: Number(query.get('interval') ?? 1) };
// The session-status frame's answers to each check, in order, for the test to count.
window.statusAnswers = [];
window.addEventListener('message', (event) => { if (event.origin === new URL(${JSON.stringify(serverUrl)}).origin && ['unchanged', 'changed', 'error'].includes(event.data)) window.statusAnswers.push(event.data); });
if (query.get('onLoad')) options.onLoad = query.get('onLoad');
if (query.get('silent') === 'on') options.silentCheckSsoRedirectUri = location.origin + '/silent-check-sso.html';
if (query.get('logoutMethod')) options.logoutMethod = query.get('logoutMethod');
keycloak.init(options).then((authenticated) => { window.outcome = { authenticated }; }, (error) => { window.outcome = { error: String(error && (error.error || error.message || error)) }; });
</script></body></html>`;

/** What keycloak-js's documentation asks an app to serve for a silent check-sso. */
const SILENT_CHECK_SSO = '<!doctype html><html><body><script>parent.postMessage(location.href, location.origin);</script></body></html>';

beforeAll(async () => {
  t = await startServer();
  spa = await startSpa({
    '/app.html': appPage(t.url),
    '/keycloak.js': libraryFile('keycloak-js/lib/keycloak.js'),
    '/silent-check-sso.html': SILENT_CHECK_SSO,
  });
  const kc = await spaRealm(t.url, { realm: REALM, clientId: CLIENT, appOrigin: spa.origin, user: USER });
  const user = (await kc.users.find({ username: USER.username, exact: true }))[0];
  await kc.roles.create({ name: 'reader' });
  const reader = await kc.roles.findOneByName({ name: 'reader' });
  await kc.users.addRealmRoleMappings({ id: user.id!, roles: [{ id: reader!.id!, name: 'reader' }] });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await spa?.close();
  await t?.close();
});

const appUrl = (params: Record<string, string>) => `${spa.origin}/app.html?${new URLSearchParams(params)}`;

/** Waits for init() to settle and returns what it gave. */
async function outcome(page: Page): Promise<{ authenticated?: boolean; error?: string }> {
  await page.waitForFunction(() => (window as unknown as { outcome?: unknown }).outcome !== undefined, undefined, { timeout: 15_000 });
  return page.evaluate(() => (window as unknown as { outcome: { authenticated?: boolean; error?: string } }).outcome);
}

async function signInOnLoginPage(page: Page): Promise<void> {
  await page.waitForSelector('#username');
  await page.fill('#username', USER.username);
  await page.fill('#password', USER.password);
  await Promise.all([page.waitForURL((url) => url.href.startsWith(spa.origin)), page.click('#kc-login')]);
}

/** A page of a fresh browser context (no session), signed in through login-required. */
async function signedIn(context: BrowserContext, iframe: string, extra: Record<string, string> = {}): Promise<Page> {
  const page = await context.newPage();
  await page.goto(appUrl({ onLoad: 'login-required', iframe, ...extra }));
  await signInOnLoginPage(page);
  expect(await outcome(page)).toEqual({ authenticated: true });
  return page;
}

const kcEval = <T>(page: Page, body: string): Promise<T> => page.evaluate(`(async (keycloak) => { ${body} })(window.keycloak)`) as Promise<T>;

describe.each(['on', 'off'])('keycloak-js with checkLoginIframe %s', (iframe) => {
  it('login-required, updateToken, loadUserInfo, loadUserProfile, hasRealmRole/hasResourceRole', async () => {
    const context = await browser.newContext();
    // Checks every 0.2 s (keycloak-js takes seconds, fractions too), so two of them pass in well under a second.
    const page = await signedIn(context, iframe, { interval: '0.2' });
    const before = await kcEval<string>(page, 'return keycloak.token;');
    expect(await kcEval(page, 'return await keycloak.updateToken(-1);')).toBe(true);
    expect(await kcEval<string>(page, 'return keycloak.token;')).not.toBe(before);
    expect(await kcEval(page, 'return await keycloak.updateToken(30);')).toBe(false);
    expect(await kcEval(page, 'return await keycloak.loadUserInfo();')).toMatchObject({ preferred_username: USER.username, email: USER.email });
    expect(await kcEval(page, 'return await keycloak.loadUserProfile();')).toMatchObject({ username: USER.username, email: USER.email, firstName: USER.firstName, lastName: USER.lastName, emailVerified: true });
    expect(await kcEval(page, "return [keycloak.hasRealmRole('reader'), keycloak.hasRealmRole('admin'), keycloak.hasResourceRole('manage-account', 'account'), keycloak.hasResourceRole('manage-account')];")).toEqual([true, false, true, false]);
    if (iframe === 'on') {
      // The session-status frame is there and keeps the session: two more checks answered "unchanged" (counted, not
      // waited for by the clock), and the token is still held.
      expect(await page.locator('iframe[title="keycloak-session-iframe"]').count()).toBe(1);
      const answers = () => page.evaluate(() => (window as unknown as { statusAnswers: string[] }).statusAnswers);
      const seen = (await answers()).length;
      await page.waitForFunction((n) => (window as unknown as { statusAnswers: string[] }).statusAnswers.length >= n + 2, seen);
      expect((await answers()).slice(seen, seen + 2)).toEqual(['unchanged', 'unchanged']);
      expect(await kcEval(page, 'return keycloak.authenticated;')).toBe(true);
    }
    await context.close();
  });

  it('check-sso by redirect and with the silent iframe: not signed in, then signed in', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(appUrl({ onLoad: 'check-sso', iframe }));
    expect(await outcome(page)).toEqual({ authenticated: false });
    await page.goto(appUrl({ onLoad: 'check-sso', iframe, silent: 'on' }));
    expect(await outcome(page)).toEqual({ authenticated: false });
    await page.goto(appUrl({ onLoad: 'login-required', iframe }));
    await signInOnLoginPage(page);
    expect(await outcome(page)).toEqual({ authenticated: true });
    for (const silent of ['off', 'on']) {
      const other = await context.newPage();
      await other.goto(appUrl({ onLoad: 'check-sso', iframe, silent }));
      expect(await outcome(other), `silent ${silent}`).toEqual({ authenticated: true });
      expect(await kcEval(other, 'return keycloak.tokenParsed.preferred_username;')).toBe(USER.username);
      await other.close();
    }
    await context.close();
  });

  it('accountManagement opens the account console signed in, with a link back to the application', async () => {
    await buildAccountConsole({ quiet: true });
    const context = await browser.newContext();
    const page = await signedIn(context, iframe);
    await Promise.all([page.waitForURL(/\/realms\/spa\/account/), kcEval(page, 'keycloak.accountManagement();')]);
    // The console signs in through account-console on the SSO session (no form) and shows the personal-info page.
    await page.waitForSelector('#email', { timeout: 30_000 });
    expect(await page.locator('[data-testid="page-heading"]').textContent()).toBe('Personal info');
    expect(await page.locator('[data-testid="referrer-link"]').getAttribute('href')).toMatch(new RegExp(`^${spa.origin}/app\\.html`));
    await context.close();
  });

  for (const logoutMethod of ['GET', 'POST']) {
    it(`logout by ${logoutMethod} ends the session and comes back to the app`, async () => {
      const context = await browser.newContext();
      const page = await signedIn(context, iframe);
      const sid = await kcEval<string>(page, 'return keycloak.sessionId;');
      await Promise.all([page.waitForURL((url) => url.href.startsWith(`${spa.origin}/app.html`) && !url.href.includes('onLoad=login-required')), kcEval(page, `keycloak.logout({ logoutMethod: '${logoutMethod}', redirectUri: location.origin + '/app.html?onLoad=check-sso&iframe=${iframe}' });`)]);
      expect(await outcome(page)).toEqual({ authenticated: false });
      expect(await t.server.context.storage.sessions.byId(sid)).toBeNull();
      await context.close();
    });
  }
});

describe('the session-status frame', () => {
  it('tells keycloak-js when the session ends elsewhere: a login-required app signs in again', async () => {
    const context = await browser.newContext();
    const page = await signedIn(context, 'on');
    const sid = await kcEval<string>(page, 'return keycloak.sessionId;');
    await t.server.context.storage.sessions.delete(sid);
    // keycloak-js drops the token and, the app being login-required, sends the browser to sign in again.
    await page.waitForURL(/\/realms\/spa\/protocol\/openid-connect\/auth\?/, { timeout: 10_000 });
    expect(await page.locator('#username').count()).toBe(1);
    await context.close();
  });

  it('the third-party cookie check answers "supported" to an app of the same site', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${spa.origin}/silent-check-sso.html`);
    const answer = await page.evaluate(`new Promise((resolve) => {
      const frame = document.createElement('iframe');
      window.addEventListener('message', (event) => { if (event.source === frame.contentWindow) resolve(event.data); });
      frame.src = ${JSON.stringify(`${t.url}/realms/${REALM}/protocol/openid-connect/3p-cookies/step1.html`)};
      document.body.appendChild(frame);
    })`);
    expect(answer).toBe('supported');
    await context.close();
  });

  it('init answers 204 for an origin the client allows, 403 otherwise; the pages carry no inline script', async () => {
    const init = (query: Record<string, string>) => fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/login-status-iframe.html/init?${new URLSearchParams(query)}`);
    expect((await init({ client_id: CLIENT, origin: spa.origin })).status).toBe(204);
    expect((await init({ client_id: CLIENT, origin: 'http://evil.example' })).status).toBe(403);
    expect((await init({ client_id: 'nobody', origin: spa.origin })).status).toBe(403);
    // The server's own origin, for any client of the realm (Keycloak's preCheck adds it): the account console's page.
    expect((await init({ client_id: 'account-console', origin: new URL(t.url).origin })).status).toBe(204);
    expect((await init({ client_id: 'nobody', origin: new URL(t.url).origin })).status).toBe(403);
    expect((await init({ client_id: CLIENT })).status).toBe(400);
    for (const path of ['login-status-iframe.html', '3p-cookies/step1.html', '3p-cookies/step2.html']) {
      const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(response.headers.get('x-frame-options')).toBeNull();
      expect(await response.text()).toMatch(/<script src="[^"]+\.js"><\/script>/);
    }
    expect((await fetch(`${t.url}/realms/nowhere/protocol/openid-connect/login-status-iframe.html`)).status).toBe(404);
  });
});
