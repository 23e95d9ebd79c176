/**
 * The admin console's role-mapping tabs with inherited roles shown and Unassign, a user's Consents and Identity
 * provider links tabs, and a client's Keys and Advanced tabs, in Chromium against a real server (issue 18). Each
 * page is opened by its route in the loaded console and must load with no failed request and no console error; the
 * actions are done by clicks and their effect checked over the admin REST API.
 * Screenshots: test-results/screenshots/admin-console-tabs-*.png.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import forge from 'node-forge';
import type { Page } from 'playwright-core';
import { selfSignedCertificate } from '../src/keys/certificate.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, consoleOnRealm, type ConsoleSession } from './support/admin-console.js';
import { tokenRequest, type TestServer } from './support/server.js';

const REALM = 'tabs';
let t: TestServer;
let session: ConsoleSession;
let kc: KcAdminClient;
let appId: string;
let bobId: string;

beforeAll(async () => {
  ({ t, kc, session } = await consoleOnRealm(REALM, async (kc) => {
    appId = (await kc.clients.create({ clientId: 'tabs-app', publicClient: false, directAccessGrantsEnabled: true, secret: 'tabs-secret', redirectUris: ['http://127.0.0.1/cb'] })).id;
    bobId = (await kc.users.create({ username: 'bob', enabled: true, email: 'bob@example.com', firstName: 'Bob', lastName: 'B', credentials: [{ type: 'password', value: 'bob-pass-1', temporary: false }] })).id;
    for (const name of ['auditor', 'editor', 'reader']) await kc.roles.create({ name });
    const role = async (name: string) => (await kc.roles.findOneByName({ name }))!;
    await kc.roles.createComposite({ roleId: (await role('editor')).id! }, [await role('reader')]);
    await kc.users.addRealmRoleMappings({ id: bobId, roles: [await role('auditor'), await role('editor')].map((r) => ({ id: r.id!, name: r.name! })) });
    // An identity provider kept as data, and a link of bob's to it.
    await kc.identityProviders.create({ alias: 'github', providerId: 'github', enabled: true, config: { clientId: 'gh', clientSecret: 'gh-secret' } });
    await kc.users.addToFederatedIdentity({ id: bobId, federatedIdentityId: 'github', federatedIdentity: { identityProvider: 'github', userId: '4242', userName: 'bob-gh' } });
  }));
}, 300_000);
afterAll(() => closeConsole({ t, session }));

const wait = { timeout: 30_000 };
const open = (route: string, name: string, ready: (p: Page) => Promise<unknown>) => session.open(route, `tabs-${name}`, ready);
const clickFor = (selector: string, method: string, path: RegExp) => session.clickFor(selector, method, path);
const assigned = (p: Page) => p.getByTestId('assigned-roles');

describe('role mapping', () => {
  it('"Hide inherited roles" unticked lists the roles a user has through composites and the default role', async () => {
    const { page } = session;
    expect(await open(`${REALM}/users/${bobId}/role-mapping`, 'user-roles', (p) => assigned(p).getByText('auditor').first().waitFor(wait))).toEqual([]);
    await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === `/admin/realms/${REALM}/ui-ext/effective-roles-all/users/${bobId}`, wait),
      page.getByTestId('hideInheritedRoles').uncheck(),
    ]);
    // reader comes through editor, offline_access through default-roles-tabs: rows the direct list does not have.
    await session.ready('tabs-user-roles-inherited', (p) => assigned(p).getByText('offline_access').first().waitFor(wait));
    await expect.poll(() => assigned(page).getByText('reader', { exact: true }).count(), wait).toBeGreaterThan(0);
    expect(session.problems).toEqual([]);
  });

  it('Unassign removes a directly mapped role', async () => {
    const { page } = session;
    expect(await open(`${REALM}/users/${bobId}/role-mapping`, 'user-unassign', (p) => assigned(p).getByText('auditor').first().waitFor(wait))).toEqual([]);
    await assigned(page).getByRole('row', { name: /auditor/ }).getByRole('checkbox').check();
    await page.getByTestId('unAssignRole').click();
    await clickFor('[role="dialog"] [data-testid="confirm"]', 'POST', new RegExp(`/ui-ext/role-mapping-delete/users/${bobId}$`));
    await session.ready('tabs-user-unassigned', (p) => p.getByText('auditor').waitFor({ state: 'detached', ...wait }));
    expect(session.problems).toEqual([]);
    expect((await kc.users.listRealmRoleMappings({ id: bobId })).map((r) => r.name).sort()).toEqual([`default-roles-${REALM}`, 'editor']);
  });

  it("a role's Associated roles tab: Unassign takes a composite's child away", async () => {
    const { page } = session;
    const editor = (await kc.roles.findOneByName({ name: 'editor' }))!;
    expect(await open(`${REALM}/roles/${editor.id}/associated-roles`, 'role-associated', (p) => assigned(p).getByText('reader').first().waitFor(wait))).toEqual([]);
    await assigned(page).getByRole('row', { name: /reader/ }).getByRole('checkbox').check();
    await page.getByTestId('unAssignRole').click();
    await clickFor('[role="dialog"] [data-testid="confirm"]', 'POST', new RegExp(`/ui-ext/role-mapping-delete/roles/${editor.id}$`));
    await session.ready('tabs-role-unassigned', async () => {});
    expect(session.problems).toEqual([]);
    expect(await kc.roles.getCompositeRoles({ id: editor.id! })).toEqual([]);
  });
});

describe('user tabs', () => {
  it('Consents lists the client holding an offline token, and Revoke ends it', async () => {
    const { page } = session;
    const grant = await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'tabs-app', client_secret: 'tabs-secret', username: 'bob', password: 'bob-pass-1', scope: 'openid offline_access' });
    expect(grant.status).toBe(200);
    expect(await open(`${REALM}/users/${bobId}/consents`, 'user-consents', (p) => p.getByText('tabs-app').first().waitFor(wait))).toEqual([]);
    await page.getByRole('row', { name: /tabs-app/ }).getByRole('button', { name: /Kebab toggle|Actions/ }).click();
    await page.getByRole('menuitem', { name: 'Revoke' }).click();
    await clickFor('[role="dialog"] [data-testid="confirm"]', 'DELETE', new RegExp(`/users/${bobId}/consents/tabs-app$`));
    await session.ready('tabs-user-consent-revoked', (p) => p.getByText('tabs-app').waitFor({ state: 'detached', ...wait }));
    expect(session.problems).toEqual([]);
    expect(await kc.users.listConsents({ id: bobId })).toEqual([]);
    const refresh = await tokenRequest(t.url, REALM, { grant_type: 'refresh_token', client_id: 'tabs-app', client_secret: 'tabs-secret', refresh_token: grant.body.refresh_token as string });
    expect(refresh.status).toBe(400);
  });

  it('Identity provider links lists the link kept as data, and Unlink removes it', async () => {
    const { page } = session;
    expect(await open(`${REALM}/users/${bobId}/identity-provider-links`, 'user-idp-links', (p) => p.getByText('bob-gh').first().waitFor(wait))).toEqual([]);
    await page.getByRole('button', { name: 'Unlink account' }).first().click();
    await clickFor('[role="dialog"] [data-testid="confirm"]', 'DELETE', new RegExp(`/users/${bobId}/federated-identity/github$`));
    await session.ready('tabs-user-idp-unlinked', (p) => p.getByText('bob-gh').waitFor({ state: 'detached', ...wait }));
    expect(session.problems).toEqual([]);
    expect(await kc.users.listFederatedIdentities({ id: bobId })).toEqual([]);
  });
});

describe('client tabs', () => {
  it('Keys and Advanced open with no failed request and no console error', async () => {
    const problems: Record<string, string[]> = {};
    const tabs: [string, (p: Page) => Promise<unknown>][] = [
      ['keys', (p) => p.getByTestId('generate').waitFor(wait)],
      ['advanced', (p) => p.getByText('Fine grain OpenID Connect configuration').first().waitFor(wait)],
    ];
    for (const [tab, ready] of tabs) {
      const found = await open(`${REALM}/clients/${appId}/${tab}`, `client-${tab}`, ready);
      if (found.length) problems[tab] = found;
    }
    expect(problems).toEqual({});
  });

  it('Keys → Generate new keys downloads a PKCS#12 keystore that opens with the password given; Import key takes a certificate PEM', async () => {
    const { page } = session;
    const jwtId = (await kc.clients.create({ clientId: 'tabs-jwt', clientAuthenticatorType: 'client-jwt', serviceAccountsEnabled: true, standardFlowEnabled: false })).id;
    expect(await open(`${REALM}/clients/${jwtId}/keys`, 'client-keys-generate', (p) => p.getByTestId('generate').waitFor(wait))).toEqual([]);
    await page.getByTestId('generate').click();
    await page.locator('input[name="keyPassword"]').fill('console-pass');
    await page.locator('input[name="storePassword"]').fill('console-pass');
    const [download] = await Promise.all([page.waitForEvent('download', wait), page.getByTestId('confirm').click()]);
    expect(download.suggestedFilename()).toBe('keystore.p12');
    const bytes = readFileSync((await download.path())!);
    const p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(forge.util.createBuffer(bytes.toString('binary'))), 'console-pass');
    const [cert] = p12.getBags({ bagType: forge.pki.oids.certBag })[forge.pki.oids.certBag]!;
    const stored = await kc.clients.getKeyInfo({ id: jwtId, attr: 'jwt.credential' });
    expect(Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(cert.cert!)).getBytes(), 'binary').toString('base64')).toBe(stored.certificate);

    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const der = selfSignedCertificate(pair.privateKey, pair.publicKey, 'tabs-jwt');
    await page.getByTestId('import').click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('button', { hasText: 'PKCS12' }).click();
    await page.getByRole('option', { name: 'Certificate PEM' }).click();
    await dialog.locator('input[type="file"]').setInputFiles({ name: 'client.pem', mimeType: 'application/x-pem-file', buffer: Buffer.from(`-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`) });
    await clickFor('[data-testid="confirm"]', 'POST', new RegExp(`/clients/${jwtId}/certificates/jwt.credential/upload-certificate$`));
    await session.ready('tabs-client-keys-imported', async () => {});
    expect(session.problems).toEqual([]);
    expect((await kc.clients.getKeyInfo({ id: jwtId, attr: 'jwt.credential' })).certificate).toBe(der.toString('base64'));
  });

  it('Settings → Capability config: the OAuth 2.0 Device Authorization Grant switch saves the client attribute (issue 40)', async () => {
    const { page } = session;
    expect(await open(`${REALM}/clients/${appId}/settings`, 'client-device-grant', (p) => p.locator('#kc-oauth-device-authorization-grant').waitFor(wait))).toEqual([]);
    await page.locator('#kc-oauth-device-authorization-grant').check();
    await clickFor('[data-testid="settings-save"]', 'PUT', new RegExp(`/admin/realms/${REALM}/clients/${appId}$`));
    await session.ready('tabs-client-device-grant-saved', async () => {});
    expect(session.problems).toEqual([]);
    expect((await kc.clients.findOne({ id: appId }))?.attributes?.['oauth2.device.authorization.grant.enabled']).toBe('true');
  });

  it('Advanced → Authentication flow overrides: a copy of "direct grant" chosen and saved is the client\'s, and is used', async () => {
    const { page } = session;
    await kc.authenticationManagement.copyFlow({ flow: 'direct grant', newName: 'strict grant' });
    const strict = (await kc.authenticationManagement.getFlows()).find((f) => f.alias === 'strict grant')!;
    // The copy asks every user for a code: its conditional OTP sub-flow made REQUIRED, its condition step disabled.
    const steps = await kc.authenticationManagement.getExecutions({ flow: 'strict grant' });
    const conditional = steps.find((e) => e.authenticationFlow && e.level === 0)!;
    await kc.authenticationManagement.updateExecution({ flow: 'strict grant' }, { ...conditional, requirement: 'REQUIRED' });
    const condition = steps.find((e) => e.providerId === 'conditional-user-configured')!;
    await kc.authenticationManagement.updateExecution({ flow: 'strict grant' }, { ...condition, requirement: 'DISABLED' });
    const password = { grant_type: 'password', client_id: 'tabs-app', client_secret: 'tabs-secret', username: 'bob', password: 'bob-pass-1' };
    expect((await tokenRequest(t.url, REALM, password)).status).toBe(200);

    expect(await open(`${REALM}/clients/${appId}/advanced`, 'client-flow-overrides', (p) => p.locator('[id="authenticationFlowBindingOverrides.direct_grant"]').waitFor(wait))).toEqual([]);
    await page.locator('[id="authenticationFlowBindingOverrides.direct_grant"]').click();
    await page.getByRole('option', { name: 'strict grant', exact: true }).click();
    await clickFor('[data-testid="OIDCAuthFlowOverrideSave"]', 'PUT', new RegExp(`/admin/realms/${REALM}/clients/${appId}$`));
    await session.ready('tabs-client-flow-overrides-saved', async () => {});
    expect(session.problems).toEqual([]);
    expect((await kc.clients.findOne({ id: appId }))?.authenticationFlowBindingOverrides).toEqual({ direct_grant: strict.id });
    // bob has no code: the client's grant now refuses him (400, the flow itself cannot pass, as Keycloak answers);
    // the realm's flow still lets him in through another client.
    expect(await tokenRequest(t.url, REALM, password)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'bob', password: 'bob-pass-1' })).status).toBe(200);
  });
});
