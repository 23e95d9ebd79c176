/**
 * Keycloak's admin console (the npm package) in headless Chromium on the Required actions tab of a realm imported
 * with Keycloak 26.7.3's whole list of required actions: the three this server does not carry out are listed with
 * the others, in the file's order, each named as not carried out; making one a default action is refused with the server's
 * reason shown in the console's alert and nothing changes; switching one off is saved. Every request is recorded
 * (support/admin-console.ts): any other 4xx/5xx, failed request or console error fails the test.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleSession } from './support/admin-console.js';
import { screenshot } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

const REALM = 'kept';
const FILE = join(import.meta.dirname, 'fixtures/keycloak-exports/keycloak-26.7.3-full-export.json');
const fileActions = (JSON.parse(readFileSync(FILE, 'utf8')) as { requiredActions: { alias: string; name: string; enabled: boolean }[] }).requiredActions;
const OWN = new Set(['CONFIGURE_TOTP', 'UPDATE_PASSWORD', 'UPDATE_PROFILE', 'VERIFY_EMAIL', 'TERMS_AND_CONDITIONS', 'update_user_locale', 'delete_account', 'UPDATE_EMAIL', 'webauthn-register', 'webauthn-register-passwordless', 'CONFIGURE_RECOVERY_AUTHN_CODES', 'idp_link']);
const shown = (a: { alias: string; name: string }) => (OWN.has(a.alias) ? a.name : `${a.name} (not carried out by this server)`);

let t: TestServer;
let session: ConsoleSession;
let kc: KcAdminClient;

beforeAll(async () => {
  t = await startServer();
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: REALM, enabled: true, requiredActions: fileActions });
  kc.setConfig({ realmName: REALM });
  // The refusal below is the answer meant.
  session = await ConsoleSession.start(t, [`PUT /admin/realms/${REALM}/authentication/required-actions/delete_credential 400`]);
  await session.signIn();
}, 300_000);
afterAll(async () => {
  await session?.close();
  await t?.close();
});

const page = () => session.page;
const visible = (text: string) => (p: Page) => p.getByText(text, { exact: true }).first().waitFor({ timeout: 30_000 });
/** A row's first switch is "Enabled", its second "Set as default action" (the toggles are what one clicks). */
const switches = (name: string) => page().locator('tr').filter({ has: page().getByText(name, { exact: true }) }).locator('.pf-v5-c-switch__toggle');
const put = (alias: string) => page().waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname.endsWith(`/required-actions/${alias}`), { timeout: 30_000 });

describe("the console's Required actions tab with actions kept as data", () => {
  it('lists all fourteen in the file’s order, those kept as data named as not carried out', async () => {
    expect(await session.open(`${REALM}/authentication/required-actions`, 'required-actions-kept', visible(shown(fileActions[0])))).toEqual([]);
    await screenshot(page(), 'required-actions-kept-list');
    // One row each, in the order the file has them (by priority).
    const rows = await page().locator('tbody tr').allInnerTexts();
    expect(rows).toHaveLength(fileActions.length);
    expect(fileActions.map((a) => rows.findIndex((r) => r.includes(shown(a))))).toEqual(fileActions.map((_, i) => i));
  });

  it('making Delete Credential a default action is refused and the console shows why; switching webauthn-register off is saved', async () => {
    const kept = fileActions.find((a) => a.alias === 'delete_credential')!;
    const [refused] = await Promise.all([put('delete_credential'), switches(shown(kept)).nth(1).click()]);
    expect(refused.status()).toBe(400);
    const alert = page().locator('.pf-v5-c-alert.pf-m-danger').first();
    await alert.waitFor({ timeout: 30_000 });
    await screenshot(page(), 'required-actions-kept-enable-refused');
    expect(await alert.innerText()).toContain('cannot be a default action here');
    await session.settled();
    expect(await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'delete_credential' })).toMatchObject({ enabled: true, defaultAction: false });

    const webauthn = fileActions.find((a) => a.alias === 'webauthn-register')!;
    const [off] = await Promise.all([put('webauthn-register'), switches(shown(webauthn)).first().click()]);
    expect(off.status()).toBe(204);
    await session.ready('required-actions-kept-after', visible('Updated required action successfully'));
    expect(await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'webauthn-register' })).toMatchObject({ name: 'Webauthn Register', enabled: false, priority: 80 });
    expect(session.problems).toEqual([]);
  });
});
