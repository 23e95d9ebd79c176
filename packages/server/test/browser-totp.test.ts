import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { startServer, tokenRequest, type TestServer } from './support/server.js';
import { CodeSource, fromBase32 } from './support/totp.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 17, point 3, in Chromium: an administrator sets CONFIGURE_TOTP on a user; at the next login the page shows a
 * QR code and the key, the test reads the key and computes the codes itself (support/totp.ts), sets the app up,
 * then signs in with password and code; a wrong code and a code used before are refused.
 */

let t: TestServer;
let browser: Browser;
let app: Server;
let callback: string;
let kc: KcAdminClient;
let userId: string;
const PASSWORD = 'second-factor-42';

beforeAll(async () => {
  t = await startServer();
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'otp', enabled: true, displayName: 'OTP Shop', otpPolicyLookAheadWindow: 3 });
  kc.setConfig({ realmName: 'otp' });
  await kc.clients.create({ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] });
  ({ id: userId } = await kc.users.create({ username: 'carol', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  app?.close();
});

const discover = () => oidc.discovery(new URL(`${t.url}/realms/otp`), 'web', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });

/** A new browser context (no SSO cookie) on the login page of an authorization request; the verifier to redeem the code. */
async function openLogin(config: oidc.Configuration): Promise<{ page: Page; verifier: string }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: callback, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  const page = await (await browser.newContext()).newPage();
  await page.goto(url.href);
  await page.fill('#username', 'carol');
  await page.fill('#password', PASSWORD);
  await page.click('#kc-login');
  return { page, verifier };
}

async function submitAndReachApp(page: Page, submit: string): Promise<void> {
  await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click(submit)]);
}

describe('TOTP in a real browser', () => {
  it('CONFIGURE_TOTP set by an admin, then password + code; wrong and reused codes are refused', async () => {
    await kc.users.update({ id: userId }, { requiredActions: ['CONFIGURE_TOTP'] });
    expect((await kc.users.findOne({ id: userId }))!.requiredActions).toEqual(['CONFIGURE_TOTP']);
    // The password grant cannot carry out a required action.
    const pending = await tokenRequest(t.url, 'otp', { grant_type: 'password', client_id: 'web', username: 'carol', password: PASSWORD });
    expect(pending).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Account is not fully set up' } });

    const config = await discover();
    const first = await openLogin(config);
    expect(await first.page.locator('h1').textContent()).toContain('Set up an authenticator app');
    expect(await first.page.locator('#kc-totp-qr svg path').count()).toBe(1);
    const key = (await first.page.locator('#kc-totp-secret-key').textContent())!.replace(/\s/g, '');
    expect(key).toMatch(/^[A-Z2-7]{32}$/);
    expect(await first.page.locator('#kc-totp-settings').textContent()).toContain('SHA1, 6 digits, every 30 seconds');
    await screenshot(first.page, 'config-totp');
    const codes = new CodeSource(fromBase32(key), { window: 3 });

    await first.page.fill('#totp', '000000');
    await first.page.click('#saveTOTPBtn');
    expect(await first.page.locator('#input-error-totp').textContent()).toContain('Invalid one-time code');
    // The key stays the same after a wrong code.
    expect((await first.page.locator('#kc-totp-secret-key').textContent())!.replace(/\s/g, '')).toBe(key);
    await first.page.fill('#totp', codes.next());
    await first.page.fill('#userLabel', 'Carol’s phone');
    await submitAndReachApp(first.page, '#saveTOTPBtn');
    const tokens = await oidc.authorizationCodeGrant(config, new URL(first.page.url()), { pkceCodeVerifier: first.verifier });
    expect(tokens.claims()?.sub).toBe(userId);

    const user = (await kc.users.findOne({ id: userId }))!;
    expect(user).toMatchObject({ totp: true, requiredActions: [] });
    const credentials = await kc.users.getCredentials({ id: userId });
    expect(credentials.map((c) => c.type)).toEqual(['password', 'otp']);
    expect(credentials[1]).toMatchObject({ userLabel: 'Carol’s phone', createdDate: expect.any(Number) });
    expect(JSON.parse(credentials[1].credentialData!)).toMatchObject({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1' });
    expect(JSON.stringify(credentials)).not.toContain(key);

    // Next login: the password, then the code.
    const second = await openLogin(config);
    expect(await second.page.locator('h1').textContent()).toContain('one-time code');
    await screenshot(second.page, 'login-otp');
    await second.page.fill('#otp', '12345x');
    await second.page.click('#kc-login');
    expect(await second.page.locator('#input-error-otp').textContent()).toContain('Invalid one-time code');
    const code = codes.next();
    await second.page.fill('#otp', code);
    await submitAndReachApp(second.page, '#kc-login');
    expect((await oidc.authorizationCodeGrant(config, new URL(second.page.url()), { pkceCodeVerifier: second.verifier })).claims()?.sub).toBe(userId);

    // The same code again, in another login: refused.
    const third = await openLogin(config);
    await third.page.fill('#otp', code);
    await third.page.click('#kc-login');
    expect(await third.page.locator('#input-error-otp').textContent()).toContain('Invalid one-time code');
    await third.page.fill('#otp', codes.next());
    await submitAndReachApp(third.page, '#kc-login');

    // The password grant: without totp, with a wrong one, with a used one, then with a fresh one.
    const grant = (extra: Record<string, string>) => tokenRequest(t.url, 'otp', { grant_type: 'password', client_id: 'web', username: 'carol', password: PASSWORD, ...extra });
    expect(await grant({})).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    expect(await grant({ totp: '000000' })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await grant({ totp: code })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await grant({ totp: codes.next() })).status).toBe(200);
  });
});
