/**
 * oidc-client-ts 3, unchanged from npm, in headless Chromium against a real server, from an app on a second
 * loopback port (another origin: discovery, token, revocation are CORS calls). One server, one browser.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';
import { appOutcome, inApp, oidcClientTsApp, spaRealm, startSpa } from './support/spa.js';

const REALM = 'oidc';
const CLIENT = 'oidc-app';
const USER = { username: 'noor', password: 'noor-pass-1', email: 'noor@example.com' };

let t: TestServer;
let spa: Awaited<ReturnType<typeof startSpa>>;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  t = await startServer();
  spa = await startSpa(oidcClientTsApp(`${t.url}/realms/${REALM}`, CLIENT));
  await spaRealm(t.url, { realm: REALM, clientId: CLIENT, appOrigin: spa.origin, user: USER });
  browser = await launchBrowser();
  context = await browser.newContext();
  page = await context.newPage();
});
afterAll(async () => {
  await browser?.close();
  await spa?.close();
  await t?.close();
});

const outcome = () => appOutcome(page);
const run = <T>(body: string) => inApp<T>(page, body);
const userinfo = (token: string) => fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${token}` } });

async function signInByRedirect(): Promise<void> {
  await page.goto(`${spa.origin}/app.html`);
  expect(await outcome()).toEqual({ ready: true });
  await Promise.all([page.waitForSelector('#username'), run('manager.signinRedirect();')]);
  await page.fill('#username', USER.username);
  await page.fill('#password', USER.password);
  await Promise.all([page.waitForURL((url) => url.href.startsWith(`${spa.origin}/app.html?`)), page.click('#kc-login')]);
  expect(await outcome()).toEqual({ signedIn: USER.username });
}

describe('oidc-client-ts', () => {
  it('signinRedirect and signinCallback', async () => {
    await signInByRedirect();
    const user = await run<{ token_type: string; profile: { sub: string; sid: string } }>('return await manager.getUser();');
    expect(user.token_type).toBe('Bearer');
  });

  it('signinSilent, with the refresh token and through the hidden frame', async () => {
    const first = await run<string>('return (await manager.getUser()).access_token;');
    const refreshed = await run<string>('return (await manager.signinSilent()).access_token;');
    expect(refreshed).not.toBe(first);
    // Without a refresh token the library asks the authorization endpoint with prompt=none in a hidden frame.
    await run('await manager.removeUser();');
    const framed = await run<{ access_token: string; profile: { preferred_username: string } }>('return await manager.signinSilent();');
    expect(framed.profile.preferred_username).toBe(USER.username);
    expect((await userinfo(framed.access_token)).status).toBe(200);
  });

  it('querySessionStatus', async () => {
    const user = await run<{ profile: { sub: string } }>('return await manager.getUser();');
    const status = await run<{ session_state: string; sub: string }>('return await manager.querySessionStatus();');
    expect(status.sub).toBe(user.profile.sub);
    expect(await t.server.context.storage.sessions.byId(status.session_state)).not.toBeNull();
  });

  it('revokeTokens: the access token stops working', async () => {
    const token = await run<string>('return (await manager.getUser()).access_token;');
    expect((await userinfo(token)).status).toBe(200);
    await run('await manager.revokeTokens();');
    expect((await userinfo(token)).status).toBe(401);
  });

  it('signoutRedirect ends the session and comes back to the app', async () => {
    // Revoking the refresh token ended that sign-in's session (the revocation endpoint's rule): sign in again.
    await signInByRedirect();
    const sid = await run<string>('return (await manager.getUser()).profile.sid;');
    expect(await t.server.context.storage.sessions.byId(sid)).not.toBeNull();
    await Promise.all([page.waitForURL((url) => url.href.startsWith(`${spa.origin}/app.html?signed-out`)), run('manager.signoutRedirect();')]);
    expect(await outcome()).toEqual({ signedOut: true });
    expect(await t.server.context.storage.sessions.byId(sid)).toBeNull();
    expect(await run('return await manager.getUser();')).toBeNull();
  });
});
