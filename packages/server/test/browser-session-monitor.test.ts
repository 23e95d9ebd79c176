/**
 * OIDC Session Management (issue 40, item 6): oidc-client-ts with `monitorSession`, unchanged from npm, in headless
 * Chromium from an app on another origin, finds `check_session_iframe` in discovery, loads the frame, polls it, and
 * hears of the session's end (here an administrator's) as a `userSignedOut` event.
 */
import type { Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api } from './support/server.js';
import { inApp, signInThroughApp, startOidcClientTsHarness, type AppHarness } from './support/spa.js';

const REALM = 'monitor';
const CLIENT = 'monitored-app';
const USER = { username: 'mona', password: 'mona-pass-1', email: 'mona@example.com' };

let h: AppHarness;

beforeAll(async () => {
  h = await startOidcClientTsHarness({ realm: REALM, clientId: CLIENT, user: USER, overrides: { monitorSession: true, checkSessionIntervalInSeconds: 1 } });
});
afterAll(() => h?.close());

const run = <T>(body: string) => inApp<T>(h.page, body);

describe('oidc-client-ts monitorSession', () => {
  it('polls check_session_iframe while the session lives ("unchanged"), and signs out when it ends', async () => {
    const { t, page, appOrigin } = h;
    const statusAnswers: string[] = [];
    page.on('response', (response) => {
      if (response.url().endsWith('/login-status-iframe.html/status')) void response.json().then((body: { status: string }) => statusAnswers.push(body.status), () => {});
    });
    const initRequests: Request[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/login-status-iframe.html/init')) initRequests.push(request);
    });
    expect(await signInThroughApp(page, appOrigin, USER)).toEqual({ before: { ready: true }, after: { signedIn: USER.username } });
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
    expect(new URL(initRequests[0].url()).searchParams.get('origin')).toBe(appOrigin);

    // An administrator ends the session: the next poll says "changed", the library checks with prompt=none and
    // finds no session: userSignedOut.
    const sid = await run<string>('return (await manager.getUser()).profile.sid;');
    const token = await adminToken(t.url);
    expect((await api(t.url, 'DELETE', `/admin/realms/${REALM}/sessions/${sid}`, token)).status).toBe(204);
    await page.waitForFunction(() => (window as unknown as { sessionEvents: string[] }).sessionEvents.includes('signed-out'), undefined, { timeout: 15_000 });
    // The frame's answer that set it off (read by the test after the page got it).
    await expect.poll(() => statusAnswers.includes('changed'), { timeout: 15_000 }).toBe(true);
  });
});
