/**
 * OIDC Session Management (issue 40, item 6): oidc-client-ts with `monitorSession`, unchanged from npm, in headless
 * Chromium from an app on another origin, finds `check_session_iframe` in discovery, loads the frame, polls it, and
 * hears of the session's end (here an administrator's) as a `userSignedOut` event.
 */
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';
import { inApp, oidcClientTsApp, signInThroughApp, spaRealm, startSpa } from './support/spa.js';

const REALM = 'monitor';
const CLIENT = 'monitored-app';
const USER = { username: 'mona', password: 'mona-pass-1', email: 'mona@example.com' };

let t: TestServer;
let spa: Awaited<ReturnType<typeof startSpa>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  t = await startServer();
  spa = await startSpa(oidcClientTsApp(`${t.url}/realms/${REALM}`, CLIENT, { monitorSession: true, checkSessionIntervalInSeconds: 1 }));
  await spaRealm(t.url, { realm: REALM, clientId: CLIENT, appOrigin: spa.origin, user: USER });
  browser = await launchBrowser();
  page = await (await browser.newContext()).newPage();
});
afterAll(async () => {
  await browser?.close();
  await spa?.close();
  await t?.close();
});

const run = <T>(body: string) => inApp<T>(page, body);

describe('oidc-client-ts monitorSession', () => {
  it('polls check_session_iframe while the session lives ("unchanged"), and signs out when it ends', async () => {
    const statusAnswers: string[] = [];
    page.on('response', (response) => {
      if (response.url().endsWith('/login-status-iframe.html/status')) void response.json().then((body: { status: string }) => statusAnswers.push(body.status), () => {});
    });
    const initRequests: Request[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/login-status-iframe.html/init')) initRequests.push(request);
    });
    expect(await signInThroughApp(page, spa.origin, USER)).toEqual({ before: { ready: true }, after: { signedIn: USER.username } });
    await run(`window.sessionEvents = [];
      manager.events.addUserSignedOut(() => window.sessionEvents.push('signed-out'));
      manager.events.addUserSessionChanged(() => window.sessionEvents.push('session-changed'));`);

    // The library found the frame in discovery and loads it from the server.
    const frameUrl = `${t.url}/realms/${REALM}/protocol/openid-connect/login-status-iframe.html`;
    await page.waitForFunction((url) => [...document.querySelectorAll('iframe')].some((f) => f.src === url), frameUrl, { timeout: 15_000 });
    // Two answers at least, each "unchanged", and no event: the frame told the app its session is the browser's.
    await expect.poll(() => statusAnswers.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(2);
    expect(new Set(statusAnswers)).toEqual(new Set(['unchanged']));
    expect(await page.evaluate(() => (window as unknown as { sessionEvents: string[] }).sessionEvents)).toEqual([]);
    expect(new URL(initRequests[0].url()).searchParams.get('origin')).toBe(spa.origin);

    // An administrator ends the session: the next poll says "changed", the library checks with prompt=none and
    // finds no session: userSignedOut.
    const sid = await run<string>('return (await manager.getUser()).profile.sid;');
    const token = await adminToken(t.url);
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/sessions/${sid}`, token)).status).toBe(204);
    await page.waitForFunction(() => (window as unknown as { sessionEvents: string[] }).sessionEvents.includes('signed-out'), undefined, { timeout: 15_000 });
    expect(statusAnswers).toContain('changed');
  });
});
