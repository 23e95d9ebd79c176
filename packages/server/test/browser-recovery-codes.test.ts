import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { flow, step, subflow } from './support/flow-files.js';
import { createHash } from 'node:crypto';
import { realmExporter } from '../src/services/realm-export.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

/**
 * Issue 38, recovery codes in Chromium: CONFIGURE_RECOVERY_AUTHN_CODES shows 12 codes once and stores only their
 * hashes; `auth-recovery-authn-code-form` asks for the next one after the password; a code works once; a wrong
 * code is refused and counted; few codes left gives a warning; the last one used asks for new codes.
 */

const PASSWORD = 'Recovery-pass-1';
let t: TestServer;
let token: string;
let browser: Browser;
let app: Server;
let callback: string;

beforeAll(async () => {
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  t = await startServer();
  token = await adminToken(t.url);
  const realm = {
    ...codesRealm('codes'),
    users: [{ username: 'ivy', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }],
  };
  expect((await api(t.url, 'POST', '/admin/realms', token, realm)).status).toBe(201);
  browser = await launchBrowser();
});

const codesRealm = (name: string) => ({
    realm: name,
    enabled: true,
    browserFlow: 'codes browser',
    authenticationFlows: [
      flow('codes browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('codes forms', 'ALTERNATIVE', 20)]),
      flow('codes forms', false, [step('auth-username-password-form', 'REQUIRED', 10), step('auth-recovery-authn-code-form', 'REQUIRED', 20)]),
    ],
    clients: [{ clientId: 'web', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] }],
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  app?.close();
});

async function signIn(page: Page, realm = 'codes'): Promise<void> {
  await page.context().clearCookies();
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' });
  await page.goto(`${t.url}/realms/${realm}/protocol/openid-connect/auth?${query}`);
  await page.fill('#username', 'ivy');
  await page.fill('#password', PASSWORD);
  await page.click('#kc-login');
}

async function enterCode(page: Page, code: string): Promise<number> {
  await page.fill('#recoveryCodeInput', code);
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('login-recovery-authn-code')), page.click('#kc-login')]);
  return response.status();
}

describe('recovery authentication codes', () => {
  let page: Page;
  let codes: string[];

  it('asks a user without codes to save 12 after the password; stores only their hashes', async () => {
    page = await (await browser.newContext()).newPage();
    await signIn(page);
    await page.waitForSelector('#kc-recovery-codes-list');
    codes = (await page.locator('#kc-recovery-codes-list code').allTextContents()).map((c) => c.trim());
    expect(codes).toHaveLength(12);
    expect(new Set(codes).size).toBe(12);
    for (const code of codes) expect(code).toMatch(/^[A-NP-Z1-9]{4}-[A-NP-Z1-9]{4}-[A-NP-Z1-9]{4}$/);
    // Not confirmed: refused, and the codes shown are never stored.
    await page.click('#saveRecoveryAuthnCodesBtn');
    await page.waitForSelector('#page-message');
    codes = (await page.locator('#kc-recovery-codes-list code').allTextContents()).map((c) => c.trim());
    await page.check('#kcRecoveryCodesConfirmationCheck');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#saveRecoveryAuthnCodesBtn')]);

    const [user] = (await api(t.url, 'GET', '/admin/realms/codes/users?username=ivy&exact=true', token)).body as { id: string }[];
    const credentials = (await api(t.url, 'GET', `/admin/realms/codes/users/${user.id}/credentials`, token)).body as Record<string, string>[];
    const stored = credentials.find((c) => c.type === 'recovery-authn-codes')!;
    expect(JSON.parse(stored.credentialData)).toMatchObject({ totalCodes: 12, remainingCodes: 12 });
    const [row] = await t.server.context.storage.credentials.ofUser(user.id, 'recovery-authn-codes');
    const secret = JSON.stringify(row.secretData);
    for (const code of codes) {
      expect(secret).not.toContain(code);
      expect(secret).not.toContain(code.replace(/-/g, ''));
    }
  });

  it('the account API lists the codes as Keycloak’s account console reads them (the hashes never answered)', async () => {
    const grant = await fetch(`${t.url}/realms/codes/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: 'ivy', password: PASSWORD }),
    });
    const { access_token } = (await grant.json()) as { access_token: string };
    const listed = await api(t.url, 'GET', '/realms/codes/account/credentials?type=recovery-authn-codes', access_token);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject([{ type: 'recovery-authn-codes', category: 'two-factor', createAction: 'CONFIGURE_RECOVERY_AUTHN_CODES', removeable: true }]);
    expect(JSON.stringify(listed.body)).not.toContain('encodedHashedValue');
  });

  it('signs in with the next code once; the same code again is refused; a wrong code is refused', async () => {
    await signIn(page);
    await page.waitForSelector('#recoveryCodeInput');
    expect(await page.textContent('#kc-recovery-code-number')).toBe('1');
    expect(await enterCode(page, codes[0])).toBe(302);
    await page.waitForURL((u) => u.href.startsWith(callback));

    await signIn(page);
    await page.waitForSelector('#recoveryCodeInput');
    expect(await page.textContent('#kc-recovery-code-number')).toBe('2');
    expect(await enterCode(page, codes[0])).toBe(401);
    expect(await enterCode(page, 'AAAA-BBBB-CCCC')).toBe(401);
    expect(page.url().startsWith(callback)).toBe(false);
    expect(await enterCode(page, codes[1].toLowerCase())).toBe(302);
    await page.waitForURL((u) => u.href.startsWith(callback));
  });

  it('warns when few codes are left, and asks for new ones once the last is used', async () => {
    for (let i = 2; i < 12; i++) {
      await signIn(page);
      await page.waitForSelector('#recoveryCodeInput');
      if (12 - i <= 3) expect(await page.textContent('#page-message')).toContain(`${12 - i} recovery code`);
      else expect(await page.locator('#page-message').count()).toBe(0);
      expect(await enterCode(page, codes[i])).toBe(i === 11 ? 200 : 302);
    }
    // The last one used: new codes are asked for before the application gets its code.
    await page.waitForSelector('#kc-recovery-codes-list');
  });

  it('imports recovery codes in Keycloak’s export format (hashes only); the saved codes work there, and the export writes them back', async () => {
    // Keycloak's RecoveryAuthnCodesCredentialModel: the Base64 of each code's SHA-512, in order.
    const saved = ['ABCDEFGHIJKL', 'MNPQRSTUVWXY', 'Z12345678912'];
    const secretData = JSON.stringify({ codes: saved.map((code, i) => ({ number: i + 1, encodedHashedValue: createHash('sha512').update(code).digest('base64') })) });
    const credentialData = JSON.stringify({ hashIterations: 1, algorithm: 'RS512', totalCodes: 12, remainingCodes: 3 });
    const file = { ...codesRealm('codes-import'), users: [{ username: 'ivy', enabled: true, credentials: [{ type: 'password', value: PASSWORD }, { type: 'recovery-authn-codes', createdDate: 1700000000000, secretData, credentialData }] }] };
    expect((await api(t.url, 'POST', '/admin/realms', token, file)).status).toBe(201);
    const imported = await (await browser.newContext()).newPage();
    await signIn(imported, 'codes-import');
    await imported.waitForSelector('#recoveryCodeInput');
    expect(await imported.textContent('#page-message')).toContain('3 recovery codes');
    expect(await enterCode(imported, 'ABCD-EFGH-IJKL')).toBe(302);
    const realm = (await t.server.context.storage.realms.byName('codes-import'))!;
    const { users } = await (await realmExporter(t.server.context, realm)).users(null, 10);
    const back = (users[0] as { credentials: Record<string, unknown>[] }).credentials.find((c) => c.type === 'recovery-authn-codes')!;
    expect(JSON.parse(back.secretData as string)).toEqual({ codes: JSON.parse(secretData).codes.slice(1) });
    expect(JSON.parse(back.credentialData as string)).toMatchObject({ algorithm: 'RS512', totalCodes: 12, remainingCodes: 2 });
  });
});
