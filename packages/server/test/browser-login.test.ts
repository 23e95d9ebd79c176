import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let browser: Browser;
let app: Server;
let callback: string;
let userId: string;

beforeAll(async () => {
  t = await startServer();
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  const kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'shop', enabled: true, displayName: 'Shop', registrationAllowed: true, resetPasswordAllowed: true });
  kc.setConfig({ realmName: 'shop' });
  await kc.clients.create({
    clientId: 'web',
    publicClient: true,
    redirectUris: [callback],
    attributes: { 'post.logout.redirect.uris': `${callback}?logged-out` },
  });
  ({ id: userId } = await kc.users.create({ username: 'alice', email: 'alice@example.com', firstName: 'Alice', enabled: true, credentials: [{ type: 'password', value: 'wonderland-42' }] }));
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  app?.close();
});

const discover = () => oidc.discovery(new URL(`${t.url}/realms/shop`), 'web', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });

describe('authorization code flow in a real browser', () => {
  it('logs in with PKCE, then userinfo, refresh and RP-initiated logout', async () => {
    const config = await discover();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const authUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const page = await browser.newPage();
    await page.goto(authUrl.href);
    expect(await page.locator('h1').textContent()).toContain('Sign in');
    expect(await page.locator('label[for=username]').count()).toBe(1);
    await screenshot(page, 'login');

    await page.fill('#username', 'alice');
    await page.fill('#password', 'wrong');
    await page.click('#kc-login');
    expect(await page.locator('#input-error-username').textContent()).toContain('Invalid username or password');
    expect(await page.inputValue('#username')).toBe('alice');
    expect(await page.inputValue('#password')).toBe('');
    expect(await page.getAttribute('#username', 'aria-describedby')).toBe('input-error-username');
    await screenshot(page, 'login-error');

    await page.fill('#password', 'wonderland-42');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#kc-login')]);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.claims()?.sub).toBe(userId);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, userId);
    expect(info.preferred_username).toBe('alice');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    // SSO: a second authorization request goes straight back without the login page.
    const again = oidc.buildAuthorizationUrl(config, { redirect_uri: callback, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    await page.goto(again.href);
    expect(page.url().startsWith(callback)).toBe(true);
    // prompt=login shows the form even with a session.
    await page.goto(`${again.href}&prompt=login`);
    expect(await page.locator('#kc-form-login').count()).toBe(1);

    const logoutUrl = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${callback}?logged-out`, state: 'bye' });
    await page.goto(logoutUrl.href);
    expect(page.url()).toBe(`${callback}?logged-out=&state=bye`);
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await page.close();
  });

  it('shows an error page (never a redirect) for an unregistered redirect_uri', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${t.url}/realms/shop/protocol/openid-connect/auth?client_id=web&response_type=code&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`);
    expect(response?.status()).toBe(400);
    expect(page.url()).toContain(t.url);
    expect(await page.locator('#error-text').textContent()).toContain('redirect_uri');
    await screenshot(page, 'error');
    await page.close();
  });

  it('sends a public client without PKCE back with an error', async () => {
    const response = await fetch(`${t.url}/realms/shop/protocol/openid-connect/auth?client_id=web&response_type=code&redirect_uri=${encodeURIComponent(callback)}&state=s1`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('s1');
  });

  it('refuses a login form posted without the page CSRF token, and a replayed code', async () => {
    const page = await browser.newPage();
    const config = await discover();
    const verifier = oidc.randomPKCECodeVerifier();
    await page.goto(oidc.buildAuthorizationUrl(config, { redirect_uri: callback, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).href);
    const status = await page.evaluate(async () => {
      const body = new URLSearchParams({ username: 'alice', password: 'wonderland-42', session_code: 'forged' });
      return (await fetch(location.pathname.replace(/protocol.*/, 'login-actions/authenticate'), { method: 'POST', body })).status;
    });
    expect(status).toBe(400);
    await page.fill('#username', 'alice');
    await page.fill('#password', 'wonderland-42');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#kc-login')]);
    const url = new URL(page.url());
    await oidc.authorizationCodeGrant(config, url, { pkceCodeVerifier: verifier, expectedState: oidc.skipStateCheck });
    await expect(oidc.authorizationCodeGrant(config, url, { pkceCodeVerifier: verifier, expectedState: oidc.skipStateCheck })).rejects.toMatchObject({ error: 'invalid_grant' });
    await page.close();
  });
});
