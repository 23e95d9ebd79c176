import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let browser: Browser;
let app: Server;
let callback: string;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let kc: KcAdminClient;

beforeAll(async () => {
  t = await startServer();
  smtp = await startSmtp();
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  kc = await masterAdminClient(t.url);
  await kc.realms.create({
    realm: 'club',
    enabled: true,
    registrationAllowed: true,
    resetPasswordAllowed: true,
    eventsEnabled: true,
    smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@club.example', fromDisplayName: 'Club' },
  });
  kc.setConfig({ realmName: 'club' });
  await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [callback] });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
  app?.close();
});

async function openRegistration(page: Page) {
  const config = await oidc.discovery(new URL(`${t.url}/realms/club`), 'web', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  const verifier = oidc.randomPKCECodeVerifier();
  const url = new URL(`${t.url}/realms/club/protocol/openid-connect/registrations`);
  url.search = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).toString();
  await page.goto(url.href);
  return { config, verifier };
}

describe('registration, e-mail and password reset in a real browser', () => {
  it('registers: field errors next to fields, values kept (never passwords), script escaped, then logged in', async () => {
    const page = await browser.newPage();
    const { config, verifier } = await openRegistration(page);
    expect(await page.locator('h1').textContent()).toBe('Register');
    await screenshot(page, 'register');
    await page.fill('#firstName', '<script>alert(1)</script>');
    await page.fill('#lastName', 'Hatter');
    await page.fill('#email', 'not-an-email');
    await page.fill('#username', 'hatter');
    await page.fill('#password', 'tea-party-1');
    await page.fill('#password-confirm', 'different');
    await page.click('button[type=submit]');
    expect(await page.locator('#input-error-email').count()).toBe(1);
    expect(await page.locator('#input-error-password-confirm').count()).toBe(1);
    expect(await page.getAttribute('#email', 'aria-invalid')).toBe('true');
    expect(await page.inputValue('#lastName')).toBe('Hatter');
    expect(await page.inputValue('#password')).toBe('');
    await screenshot(page, 'register-errors');
    const html = await page.content();
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(await page.locator('#input-error-firstName').count() + (await page.inputValue('#firstName')).length).toBeGreaterThan(0);
    expect((await kc.users.find({ username: 'hatter', exact: true })).length).toBe(0);
    await eventually(async () => (await kc.realms.findEvents({ realm: 'club', type: 'REGISTER_ERROR' })).length > 0);
    const [registerError] = await kc.realms.findEvents({ realm: 'club', type: 'REGISTER_ERROR' });
    expect(registerError.details).toMatchObject({ email: 'not-an-email', last_name: 'Hatter', username: 'hatter' });

    await page.fill('#firstName', 'Mad');
    await page.fill('#email', 'hatter@example.com');
    await page.fill('#password', 'tea-party-1');
    await page.fill('#password-confirm', 'tea-party-1');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('button[type=submit]')]);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: oidc.skipStateCheck });
    expect(tokens.claims()?.preferred_username).toBe('hatter');
    const [user] = await kc.users.find({ username: 'hatter', exact: true });
    expect(user).toMatchObject({ firstName: 'Mad', lastName: 'Hatter', email: 'hatter@example.com' });
    const types = (await kc.realms.findEvents({ realm: 'club' })).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['REGISTER', 'LOGIN']));
    await page.close();
  });

  it('refuses a duplicate username with an error on the username field and REGISTER_ERROR', async () => {
    const page = await browser.newPage();
    await openRegistration(page);
    await page.fill('#email', 'other@example.com');
    await page.fill('#username', 'hatter');
    await page.fill('#password', 'x-password-1');
    await page.fill('#password-confirm', 'x-password-1');
    await page.click('button[type=submit]');
    expect(await page.locator('#input-error-username').textContent()).toMatch(/exists/i);
    await page.close();
  });

  it('resets a password through the e-mailed single-use link', async () => {
    const page = await browser.newPage();
    await openRegistration(page);
    await page.goto(`${t.url}/realms/club/login-actions/reset-credentials`);
    await screenshot(page, 'reset-request');
    await page.fill('#username', 'hatter@example.com');
    await page.click('button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('receive an e-mail');
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('hatter@example.com')));
    expect(mail.raw).toContain('reset the password of your account hatter');
    const link = linkIn(mail);
    await page.goto(link);
    await screenshot(page, 'update-password');
    await page.fill('#password-new', 'new-tea-2');
    await page.fill('#password-confirm', 'new-tea-2');
    await page.click('button[type=submit]');
    expect(await page.locator('h1').textContent()).toContain('password has been updated');
    const login = (password: string) => tokenRequest(t.url, 'club', { grant_type: 'password', client_id: 'admin-cli', username: 'hatter', password });
    expect((await login('new-tea-2')).status).toBe(200);
    expect((await login('tea-party-1')).status).toBe(400);
    const types = (await kc.realms.findEvents({ realm: 'club' })).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['SEND_RESET_PASSWORD', 'RESET_PASSWORD']));
    // The link works once.
    await page.goto(link);
    expect(await page.locator('#error-text').textContent()).toMatch(/expired|already been used/);
    await page.close();
  });
});
