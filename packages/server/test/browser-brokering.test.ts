import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { pkce } from './support/forms.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 37 in Chromium: the login page's "Upstream" button, the upstream realm's own login page, back to the
 * application with a code; then an upstream user whose e-mail is a local user's meets the "Account already exists"
 * page and must give the local password.
 */

let t: TestServer;
let browser: Browser;
let app: Server;
let callback: string;

beforeAll(async () => {
  t = await startServer();
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  const token = await adminToken(t.url);
  const realm = (body: unknown) => api(t.url, 'POST', '/admin/realms', token, body);
  expect(
    (
      await realm({
        realm: 'upstream',
        enabled: true,
        clients: [{ clientId: 'broker', enabled: true, publicClient: false, secret: 'b-secret', redirectUris: [`${t.url}/realms/shop/broker/upstream/endpoint`] }],
        users: [
          { username: 'ann', enabled: true, email: 'ann@example.com', firstName: 'Ann', lastName: 'Up', credentials: [{ type: 'password', value: 'ann-pass-42' }] },
          { username: 'eve', enabled: true, email: 'bob@example.com', firstName: 'Eve', lastName: 'Up', credentials: [{ type: 'password', value: 'eve-pass-42' }] },
        ],
      })
    ).status,
  ).toBe(201);
  const base = `${t.url}/realms/upstream/protocol/openid-connect`;
  expect(
    (
      await realm({
        realm: 'shop',
        enabled: true,
        clients: [{ clientId: 'web', enabled: true, publicClient: true, redirectUris: [callback] }],
        users: [{ username: 'bob', enabled: true, email: 'bob@example.com', firstName: 'Bob', lastName: 'Local', credentials: [{ type: 'password', value: 'bob-pass-42' }] }],
        identityProviders: [
          {
            alias: 'upstream',
            displayName: 'Upstream',
            providerId: 'keycloak-oidc',
            enabled: true,
            config: { clientId: 'broker', clientSecret: 'b-secret', clientAuthMethod: 'client_secret_basic', authorizationUrl: `${base}/auth`, tokenUrl: `${base}/token`, userInfoUrl: `${base}/userinfo`, jwksUrl: `${base}/certs`, issuer: `${t.url}/realms/upstream`, validateSignature: 'true', useJwksUrl: 'true', pkceEnabled: 'true' },
          },
        ],
      })
    ).status,
  ).toBe(201);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  app?.close();
});

const authUrl = () => {
  const { challenge } = pkce();
  return `${t.url}/realms/shop/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' })}`;
};

describe('signing in through another identity provider in a real browser', () => {
  it('the button, the upstream login, back to the application', async () => {
    const page = await browser.newPage();
    await page.goto(authUrl());
    await screenshot(page, 'broker-login-buttons');
    await page.click('#social-upstream');
    await page.waitForURL(/\/realms\/upstream\//);
    await page.fill('#username', 'ann');
    await page.fill('#password', 'ann-pass-42');
    await page.click('#kc-login');
    await page.waitForURL(/\/cb\?/);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.close();
  });

  it('an upstream account with a local user’s e-mail must give the local password', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(authUrl());
    await page.click('#social-upstream');
    await page.fill('#username', 'eve');
    await page.fill('#password', 'eve-pass-42');
    await page.click('#kc-login');
    await page.waitForSelector('#linkAccount');
    expect(await page.locator('h1').textContent()).toContain('Account already exists');
    await screenshot(page, 'broker-confirm-link');
    await page.click('#linkAccount');
    await page.fill('#password', 'eve-pass-42');
    await page.click('#kc-login');
    expect(await page.locator('#input-error-password').textContent()).toContain('Invalid');
    await page.fill('#password', 'bob-pass-42');
    await page.click('#kc-login');
    await page.waitForURL(/\/cb\?/);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await context.close();
  });
});
