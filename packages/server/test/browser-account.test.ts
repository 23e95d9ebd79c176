import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let browser: Browser;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let kc: KcAdminClient;

beforeAll(async () => {
  t = await startServer();
  smtp = await startSmtp();
  kc = await masterAdminClient(t.url);
  await kc.realms.create({
    realm: 'acct',
    enabled: true,
    eventsEnabled: true,
    verifyEmail: true,
    attributes: { deleteAccountAllowed: 'true' },
    smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@acct.example' },
  });
  kc.setConfig({ realmName: 'acct' });
  await kc.users.create({ username: 'carol', email: 'carol@example.com', emailVerified: true, firstName: 'Carol', enabled: true, credentials: [{ type: 'password', value: 'carol-pass-1' }] });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await smtp?.close();
});

// The admin client types `type` as its own union of Keycloak's event names.
const events = async (type: string) => kc.realms.findEvents({ realm: 'acct', type: type as never });

async function signIn(page: Page) {
  await page.goto(`${t.url}/realms/acct/account/profile`);
  await page.fill('#username', 'carol');
  await page.fill('#password', 'carol-pass-1');
  await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
}

describe('account pages', () => {
  it('updates names, changes the e-mail through a verification link, changes the password, deletes the account', async () => {
    const page = await browser.newPage();
    await signIn(page);
    expect(await page.locator('h1').textContent()).toBe('Your account');
    await screenshot(page, 'account-profile');
    await page.fill('#lastName', 'Jones');
    await page.click('#account-profile button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('updated');
    await eventually(async () => (await events('UPDATE_PROFILE')).length === 1);

    await page.fill('#email', 'carol.new@example.com');
    await page.click('#account-profile button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('carol.new@example.com');
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('carol.new@example.com')));
    await page.goto(linkIn(mail));
    expect(await page.locator('h1').textContent()).toContain('verified');
    const [user] = await kc.users.find({ username: 'carol', exact: true });
    expect(user).toMatchObject({ email: 'carol.new@example.com', emailVerified: true, lastName: 'Jones' });
    expect((await events('UPDATE_EMAIL'))[0].details).toMatchObject({ previous_email: 'carol@example.com', updated_email: 'carol.new@example.com' });
    expect((await events('VERIFY_EMAIL')).length).toBe(1);

    await page.goto(`${t.url}/realms/acct/account/password`);
    await page.fill('#password', 'wrong');
    await page.fill('#password-new', 'carol-pass-2');
    await page.fill('#password-confirm', 'carol-pass-2');
    await page.click('#account-password button[type=submit]');
    expect(await page.locator('#input-error-password').count()).toBe(1);
    await page.fill('#password', 'carol-pass-1');
    await page.fill('#password-new', 'carol-pass-2');
    await page.fill('#password-confirm', 'carol-pass-2');
    await page.click('#account-password button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('password has been updated');
    expect((await tokenRequest(t.url, 'acct', { grant_type: 'password', client_id: 'admin-cli', username: 'carol', password: 'carol-pass-2' })).status).toBe(200);

    await page.goto(`${t.url}/realms/acct/account/delete`);
    await screenshot(page, 'account-delete');
    await page.click('#account-delete button[type=submit]');
    expect(await page.locator('h1').textContent()).toContain('deleted');
    expect(await kc.users.find({ username: 'carol', exact: true })).toEqual([]);
    const [deleted] = await eventually(async () => {
      const list = await events('DELETE_ACCOUNT');
      return list.length ? list : null;
    });
    expect(deleted.userId).toBe(user.id);
    await page.close();
  });

  it('refuses an account form posted without its CSRF token', async () => {
    await kc.users.create({ username: 'dave', email: 'dave@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: 'dave-pass-1' }] });
    const page = await browser.newPage();
    await page.goto(`${t.url}/realms/acct/account/profile`);
    await page.fill('#username', 'dave');
    await page.fill('#password', 'dave-pass-1');
    await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
    const status = await page.evaluate(async () => (await fetch('/realms/acct/account/delete', { method: 'POST', body: new URLSearchParams({ confirm: 'yes', session_code: 'nope' }) })).status);
    expect(status).toBe(400);
    expect((await kc.users.find({ username: 'dave', exact: true })).length).toBe(1);
    await page.close();
  });
});
