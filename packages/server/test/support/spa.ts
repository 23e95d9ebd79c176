import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from './browser.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, REPO_ROOT, startServer, type TestServer } from './server.js';

/** A library file from node_modules, served unchanged. */
export const libraryFile = (path: string) => readFileSync(join(REPO_ROOT, 'node_modules', path), 'utf8');

/**
 * A single-page app's origin for browser tests: a second loopback port (another origin than the server's, the
 * same site, as an app and its identity server on sibling hosts), serving fixed files by path.
 */
export async function startSpa(files: Record<string, string>): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://spa').pathname;
    const body = files[path];
    if (body === undefined) return void response.writeHead(404).end();
    const type = path.endsWith('.js') ? 'text/javascript' : 'text/html';
    response.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A realm with a public client for the app (PKCE, redirects and post-logout redirects under the app's origin,
 * web origins `+`) and one user; returns the admin client, set to that realm.
 */
export async function spaRealm(
  serverUrl: string,
  options: { realm: string; clientId: string; appOrigin: string; user: { username: string; password: string; email: string; firstName?: string; lastName?: string } },
): Promise<KcAdminClient> {
  const kc = new KcAdminClient({ baseUrl: serverUrl, realmName: 'master' });
  await kc.auth({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD, grantType: 'password', clientId: 'admin-cli' });
  await kc.realms.create({ realm: options.realm, enabled: true, eventsEnabled: true });
  kc.setConfig({ realmName: options.realm });
  await kc.clients.create({
    clientId: options.clientId,
    publicClient: true,
    redirectUris: [`${options.appOrigin}/*`],
    webOrigins: ['+'],
    attributes: { 'pkce.code.challenge.method': 'S256', 'post.logout.redirect.uris': '+' },
  });
  const { password, ...profile } = options.user;
  await kc.users.create({ ...profile, emailVerified: true, enabled: true, credentials: [{ type: 'password', value: password }] });
  return kc;
}

/** The app: finishes a sign-in or sign-out redirect when it comes back with one, then exposes its UserManager. */
const APP_SCRIPT = `const manager = new oidc.UserManager(window.settings);
window.manager = manager;
(async () => {
  const query = new URLSearchParams(location.search);
  if (query.has('code') || query.has('error')) {
    const user = await manager.signinCallback();
    window.outcome = { signedIn: user.profile.preferred_username };
  } else if (query.has('signed-out')) {
    await manager.signoutCallback();
    window.outcome = { signedOut: true };
  } else window.outcome = { ready: true };
})().catch((error) => { window.outcome = { error: String(error) }; });`;

const page_ = (scripts: string[]) => `<!doctype html><html><head><meta charset="utf-8"><title>app</title></head><body>${scripts.map((s) => `<script src="${s}"></script>`).join('')}</body></html>`;

/**
 * oidc-client-ts, unchanged from npm, as an app's files: its page and silent-renew page, the library, the app's
 * script above, and the UserManager's settings (shared by both pages) for `authority` and `clientId`, with
 * `overrides` (monitorSession, …) over the defaults, and `script` (JavaScript run after them, for settings that are
 * objects of the library, such as a DPoP store).
 */
export function oidcClientTsApp(authority: string, clientId: string, overrides: Record<string, unknown> = {}, script = ''): Record<string, string> {
  const settings = `window.settings = Object.assign({
  authority: ${JSON.stringify(authority)},
  client_id: ${JSON.stringify(clientId)},
  redirect_uri: location.origin + '/app.html',
  silent_redirect_uri: location.origin + '/silent.html',
  post_logout_redirect_uri: location.origin + '/app.html?signed-out',
  scope: 'openid profile email',
  automaticSilentRenew: false,
  monitorSession: false,
}, ${JSON.stringify(overrides)});
${script}`;
  return {
    '/app.html': page_(['/oidc-client-ts.js', '/settings.js', '/app.js']),
    '/silent.html': page_(['/oidc-client-ts.js', '/settings.js', '/silent.js']),
    '/oidc-client-ts.js': libraryFile('oidc-client-ts/dist/browser/oidc-client-ts.js'),
    '/settings.js': settings,
    '/app.js': APP_SCRIPT,
    '/silent.js': 'new oidc.UserManager(window.settings).signinCallback();',
  };
}

/** What the oidc-client-ts app's script says it did on this page load. */
export type AppOutcome = { ready?: boolean; signedIn?: string; signedOut?: boolean; error?: string };

export async function appOutcome(page: Page): Promise<AppOutcome> {
  await page.waitForFunction(() => (window as unknown as { outcome?: unknown }).outcome !== undefined, undefined, { timeout: 15_000 });
  return page.evaluate(() => (window as unknown as { outcome: AppOutcome }).outcome);
}

/** Runs `body` in the app's page with its UserManager as `manager`; what it returns. */
export const inApp = <T>(page: Page, body: string): Promise<T> => page.evaluate(`(async (manager) => { ${body} })(window.manager)`) as Promise<T>;

/**
 * The app's sign-in by redirect in `page`: the app page, signinRedirect, the login form, back to the app with a
 * code. Returns the app's outcome before (`ready` expected) and after (`signedIn` expected).
 */
export async function signInThroughApp(page: Page, appOrigin: string, user: { username: string; password: string }): Promise<{ before: AppOutcome; after: AppOutcome }> {
  await page.goto(`${appOrigin}/app.html`);
  const before = await appOutcome(page);
  await Promise.all([page.waitForSelector('#username'), inApp(page, 'manager.signinRedirect();')]);
  await page.fill('#username', user.username);
  await page.fill('#password', user.password);
  await Promise.all([page.waitForURL((url) => url.href.startsWith(`${appOrigin}/app.html?`)), page.click('#kc-login')]);
  return { before, after: await appOutcome(page) };
}

/** A server, an oidc-client-ts app on another origin for one realm and client (spaRealm), and a page in Chromium. */
export interface AppHarness {
  t: TestServer;
  appOrigin: string;
  page: Page;
  close(): Promise<void>;
}

export async function startOidcClientTsHarness(options: {
  realm: string;
  clientId: string;
  user: { username: string; password: string; email: string };
  overrides?: Record<string, unknown>;
  script?: string;
}): Promise<AppHarness> {
  const t = await startServer();
  let spa: Awaited<ReturnType<typeof startSpa>> | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await spa?.close();
    await t.close();
  };
  try {
    spa = await startSpa(oidcClientTsApp(`${t.url}/realms/${options.realm}`, options.clientId, options.overrides, options.script));
    await spaRealm(t.url, { realm: options.realm, clientId: options.clientId, appOrigin: spa.origin, user: options.user });
    browser = await launchBrowser();
    const page = await (await browser.newContext()).newPage();
    return { t, appOrigin: spa.origin, page, close };
  } catch (error) {
    await close();
    throw error;
  }
}
