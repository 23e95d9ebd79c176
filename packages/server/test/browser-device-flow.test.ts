import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 40, item 1, end to end: openid-client is the device (it starts the flow and polls as RFC 8628 says), headless
 * Chromium is the user on the verification page: the code, the realm's sign-in page, the consent page.
 */

const REALM = 'living-room';
const PASSWORD = 'Living-room-pass-4';
const insecure = { execute: [oidc.allowInsecureRequests] };

let t: TestServer;
let browser: Browser;
let userId: string;

beforeAll(async () => {
  t = await startServer();
  const token = await adminToken(t.url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true, displayName: 'Living Room' }));
  // A one-second interval so the device's polls (openid-client waits the interval between them) keep the test short.
  const device = { 'oauth2.device.authorization.grant.enabled': 'true', 'oauth2.device.polling.interval': '1' };
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'tv-app', name: 'TV App', publicClient: true, attributes: device }));
  const user = await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'carl', email: 'carl@example.com', emailVerified: true, firstName: 'Carl', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
  ok(user);
  userId = user.headers.get('location')!.split('/').pop()!;
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const device = () => oidc.discovery(new URL(`${t.url}/realms/${REALM}`), 'tv-app', undefined, oidc.None(), insecure);

/** The user types the code on the verification page and signs in; the consent page is then open. */
async function signInWithCode(page: Page, verificationUri: string, userCode: string, name: string): Promise<void> {
  await page.goto(verificationUri);
  expect(await page.locator('h1').textContent()).toContain('Device Login');
  await screenshot(page, `${name}-1-code`);
  await page.fill('#device_user_code', userCode);
  await page.click('#kc-login');
  expect(await page.locator('h1').textContent()).toContain('Sign in');
  await page.fill('#username', 'carl');
  await page.fill('#password', PASSWORD);
  await page.click('#kc-login');
  expect(await page.locator('h1').textContent()).toContain('Grant Access to TV App');
  await screenshot(page, `${name}-2-consent`);
}

describe('the device flow with openid-client and Chromium', () => {
  it('the user approves on another screen; the polling device gets tokens for that user', async () => {
    const config = await device();
    const started = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    expect(started.interval).toBe(1);
    const tokens = oidc.pollDeviceAuthorizationGrant(config, started);
    const page = await browser.newPage();
    await signInWithCode(page, started.verification_uri, started.user_code, 'device-approve');
    await page.click('#kc-login');
    expect(await page.locator('h1').textContent()).toContain('Device Login Successful');
    await screenshot(page, 'device-approve-3-done');
    const granted = await tokens;
    expect(granted.claims()?.sub).toBe(userId);
    expect(granted.claims()?.azp).toBe('tv-app');
    const info = await oidc.fetchUserInfo(config, granted.access_token, userId);
    expect(info.preferred_username).toBe('carl');
    await page.close();
  });

  it('the user says No: the device hears access_denied', async () => {
    const config = await device();
    const started = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    const tokens = oidc.pollDeviceAuthorizationGrant(config, started).then(
      () => null,
      (error: unknown) => error,
    );
    const page = await browser.newPage();
    await signInWithCode(page, started.verification_uri, started.user_code, 'device-deny');
    await page.click('#kc-cancel');
    expect(await page.locator('h1').textContent()).toContain('Device Login Failed');
    expect(await page.locator('main').textContent()).toContain('Consent denied');
    const refused = (await tokens) as oidc.ResponseBodyError | null;
    expect(refused).toBeInstanceOf(oidc.ResponseBodyError);
    expect(refused?.error).toBe('access_denied');
    await page.close();
  });

  it('verification_uri_complete in a browser already signed in: straight to the consent page', async () => {
    const config = await device();
    const page = await browser.newPage();
    const first = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    const firstTokens = oidc.pollDeviceAuthorizationGrant(config, first);
    await signInWithCode(page, first.verification_uri, first.user_code, 'device-sso');
    await page.click('#kc-login');
    await firstTokens;
    const second = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    await page.goto(second.verification_uri_complete!);
    expect(await page.locator('h1').textContent()).toContain('Grant Access to TV App');
    await page.click('#kc-login');
    expect((await oidc.pollDeviceAuthorizationGrant(config, second)).claims()?.sub).toBe(userId);
    await page.close();
  });
});
