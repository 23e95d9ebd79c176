import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient } from './support/admin-client.js';
import { AccountConsoleSession } from './support/account-console.js';
import { screenshot } from './support/browser.js';
import { CodeSource, fromBase32 } from './support/totp.js';
import { adminToken, REPO_ROOT, startServer, type TestServer } from './support/server.js';

/**
 * Keycloak's account console (issue 42) in headless Chromium, signed in as a user of realm `acme` through the
 * realm's account-console client: every page it shows works against the account REST API with no failed request,
 * no 4xx/5xx and no page or console error (AccountConsoleSession records them all); screenshots of each page.
 */
let t: TestServer;
let kc: KcAdminClient;
let s: AccountConsoleSession;

let scratch: string;

beforeAll(async () => {
  // The disposable-e-mail blocker, whose form action judges an e-mail change in the realm's registration flow.
  scratch = mkdtempSync(join(tmpdir(), 'account-console-'));
  mkdirSync(join(scratch, 'providers'));
  symlinkSync(join(REPO_ROOT, 'packages', 'disposable-email'), join(scratch, 'providers', 'disposable-email'));
  t = await startServer({ providersDir: join(scratch, 'providers') });
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'acme', enabled: true, eventsEnabled: true, organizationsEnabled: true });
  kc.setConfig({ realmName: 'acme' });
  await kc.users.create({ username: 'dana', email: 'dana@example.com', emailVerified: true, firstName: 'Dana', lastName: 'Scully', enabled: true, credentials: [{ type: 'password', value: 'dana-pass-1' }] });
  s = await AccountConsoleSession.start(t, 'acme');
});
afterAll(async () => {
  await s?.close();
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('account console', () => {
  it('signs in through account-console and shows personal info', async () => {
    await s.signIn('dana', 'dana-pass-1');
    expect(s.page.url()).toMatch(/\/realms\/acme\/account\/$/);
    await s.page.waitForSelector('#email', { timeout: 30_000 });
    expect(await s.page.inputValue('#email')).toBe('dana@example.com');
    expect(await s.page.inputValue('#lastName')).toBe('Scully');
    expect(s.requests).toContain('POST /realms/acme/protocol/openid-connect/token 200');
    expect(s.problems).toEqual([]);
  });

  it('saves personal info through the account API', async () => {
    s.reset();
    await s.page.fill('#lastName', 'Mulder');
    await s.page.click('[data-testid="save"]');
    await s.page.waitForSelector('.pf-v5-c-alert.pf-m-success', { timeout: 30_000 });
    await s.settled();
    expect(s.requests).toContain('POST /realms/acme/account/ 204');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect(dana.lastName).toBe('Mulder');
    expect(s.problems).toEqual([]);
  });

  it("refuses a disposable e-mail address with the realm's registration rules, naming the field", async () => {
    await kc.authenticationManagement.copyFlow({ flow: 'registration', newName: 'guarded registration' });
    await kc.authenticationManagement.addExecutionToFlow({ flow: 'guarded registration registration form', provider: 'ext-email-domain-validation' });
    const execution = (await kc.authenticationManagement.getExecutions({ flow: 'guarded registration' })).find((e) => e.providerId === 'ext-email-domain-validation')!;
    await kc.authenticationManagement.updateExecution({ flow: 'guarded registration' }, { ...execution, requirement: 'REQUIRED' });
    await kc.realms.update({ realm: 'acme' }, { registrationFlow: 'guarded registration' });
    await s.open('', 'personal-info-disposable', (p) => p.waitForSelector('#email', { timeout: 30_000 }));
    s.intended = ['POST /realms/acme/account/ 400'];
    await s.page.fill('#email', 'dana@mailinator.com');
    await s.page.click('[data-testid="save"]');
    await s.ready('personal-info-disposable-refused', (p) => p.waitForSelector('text=Disposable e-mail addresses are not accepted', { timeout: 30_000 }));
    s.intended = [];
    expect(s.requests).toContain('POST /realms/acme/account/ 400');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect(dana.email).toBe('dana@example.com');
    expect(s.problems).toEqual([]);
    await kc.realms.update({ realm: 'acme' }, { registrationFlow: 'registration' });
  });

  it('changes the e-mail address through UPDATE_EMAIL when the realm enables it (read-only in the form, "Update email" beside it)', async () => {
    const action = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_EMAIL' });
    await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_EMAIL' }, { ...action, enabled: true });
    // A new document: the console reads whether the realm enables UPDATE_EMAIL from its page when it loads.
    const problems = await s.open('', 'personal-info-update-email', (p) => p.waitForSelector('#update-email-btn', { timeout: 30_000 }), { fresh: true });
    expect(problems).toEqual([]);
    expect(await s.page.isEditable('#email')).toBe(false);
    // The account API keeps the address read-only too: a change is refused, naming the field, nothing saved.
    const direct = await fetch(`${t.url}/realms/acme/account/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.accessToken}`, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'dana', email: 'dana@elsewhere.example', firstName: 'Dana', lastName: 'Mulder' }),
    });
    expect(direct.status).toBe(400);
    // One error: Keycloak's answer has it at the top level as well as in `errors` (account-api.keycloak.ts).
    const refusal = { field: 'email', errorMessage: 'updateReadOnlyAttributesRejectedMessage', params: ['email'] };
    expect(await direct.json()).toEqual({ ...refusal, errors: [refusal] });
    s.reset();
    // The console's button is an application-initiated UPDATE_EMAIL through the account-console client.
    await Promise.all([s.page.waitForSelector('#kc-update-email-form', { timeout: 30_000 }), s.page.click('#update-email-btn')]);
    await screenshot(s.page, 'account-console-update-email');
    await s.page.fill('#email', 'dana.scully@example.com');
    await s.page.locator('#kc-update-email-form button[type=submit]').first().click();
    await s.ready('personal-info-email-updated', (p) => p.waitForFunction(() => (document.querySelector('#email') as HTMLInputElement | null)?.value === 'dana.scully@example.com', undefined, { timeout: 30_000 }));
    expect(s.page.url()).toMatch(/\/realms\/acme\/account\/(\?|#|$)/);
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect(dana.email).toBe('dana.scully@example.com');
    const [event] = await kc.realms.findEvents({ realm: 'acme', type: 'UPDATE_EMAIL' as never });
    expect(event).toMatchObject({ clientId: 'account-console', details: { previous_email: 'dana@example.com', updated_email: 'dana.scully@example.com' } });
    expect(s.problems).toEqual([]);
    // Switched off again: the address is a plain field and no button is offered.
    await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_EMAIL' }, { ...action, enabled: false });
    await s.open('', 'personal-info-email-editable', (p) => p.waitForSelector('#email', { timeout: 30_000 }), { fresh: true });
    expect(await s.page.isEditable('#email')).toBe(true);
    expect(await s.page.locator('#update-email-btn').count()).toBe(0);
  });

  it('lists the password on the signing-in page', async () => {
    const problems = await s.open('account-security/signing-in', 'signing-in', (p) => p.waitForSelector('[data-testid="password/credential-list"], [id*="password"]', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/credentials 200');
    expect(await s.page.textContent('body')).toContain('My password');
    expect(problems).toEqual([]);
  });

  it('sets up an authenticator app from the signing-in page (CONFIGURE_TOTP) and lists it', async () => {
    s.reset();
    await Promise.all([s.page.waitForSelector('#kc-totp-secret-key', { timeout: 30_000 }), s.page.click('text=Set up Authenticator application')]);
    await screenshot(s.page, 'account-console-otp-setup');
    const key = (await s.page.locator('#kc-totp-secret-key').textContent())!.replace(/\s/g, '');
    await s.page.fill('#totp', new CodeSource(fromBase32(key), { window: 1 }).next());
    await s.page.fill('#userLabel', 'Dana phone');
    await s.page.click('#saveTOTPBtn');
    // Back on the console's signing-in page (keycloak-js reads kc_action_status), the new credential listed.
    await s.ready('signing-in-otp', (p) => p.waitForSelector('text=Dana phone', { timeout: 30_000 }));
    expect(s.page.url()).toContain('/realms/acme/account/account-security/signing-in');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect((await kc.users.getCredentials({ id: dana.id! })).map((c) => c.type)).toEqual(['password', 'otp']);
    expect(s.problems).toEqual([]);
  });

  it('removes the authenticator app from the signing-in page (delete_credential)', async () => {
    s.reset();
    await Promise.all([s.page.waitForSelector('#kc-delete-credential-confirm', { timeout: 30_000 }), s.page.locator('button:has-text("Delete")').first().click()]);
    expect(await s.page.textContent('#kc-delete-credential-text')).toContain('Dana phone');
    await screenshot(s.page, 'account-console-delete-credential');
    await s.page.click('#kc-delete-credential-confirm');
    await s.ready('signing-in-otp-removed', (p) => p.waitForSelector('text=Dana phone', { state: 'detached', timeout: 30_000 }).then(() => p.waitForSelector('text=My password', { timeout: 30_000 })));
    expect(s.page.url()).toContain('/realms/acme/account/account-security/signing-in');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect((await kc.users.getCredentials({ id: dana.id! })).map((c) => c.type)).toEqual(['password']);
    const [removed] = await kc.realms.findEvents({ realm: 'acme', type: 'REMOVE_CREDENTIAL' as never });
    expect(removed).toMatchObject({ clientId: 'account-console', details: { credential_type: 'otp', credential_user_label: 'Dana phone' } });
    expect(s.problems).toEqual([]);
  });

  it('changes the password from the signing-in page (UPDATE_PASSWORD)', async () => {
    s.reset();
    await Promise.all([s.page.waitForSelector('#password-new', { timeout: 30_000 }), s.page.locator('button:has-text("Update")').first().click()]);
    await screenshot(s.page, 'account-console-update-password');
    await s.page.fill('#password-new', 'dana-pass-2');
    await s.page.fill('#password-confirm', 'dana-pass-2');
    await s.page.locator('form button[type=submit]').first().click();
    await s.ready('signing-in-password-updated', (p) => p.waitForSelector('text=My password', { timeout: 30_000 }));
    expect(s.page.url()).toContain('/realms/acme/account/account-security/signing-in');
    const updated = await kc.realms.findEvents({ realm: 'acme', type: 'UPDATE_PASSWORD' as never });
    expect(updated.length).toBe(1);
    expect(s.problems).toEqual([]);
  });

  it('lists the session on the device-activity page', async () => {
    const problems = await s.open('account-security/device-activity', 'device-activity', (p) => p.waitForSelector('text=Current session', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/sessions/devices 200');
    // The built-in client's name is its message key; the console shows the text (packages/account-console/build.ts).
    expect(await s.page.textContent('body')).toContain('Account Console');
    expect(problems).toEqual([]);
  });

  it('lists the applications and the groups', async () => {
    let problems = await s.open('applications', 'applications', (p) => p.waitForSelector('text=Account Console', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/applications 200');
    expect(problems).toEqual([]);
    const group = await kc.groups.create({ name: 'agents' });
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    await kc.users.addToGroup({ id: dana.id!, groupId: group.id });
    problems = await s.open('groups', 'groups', (p) => p.waitForSelector('text=/agents', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/groups 200');
    expect(problems).toEqual([]);
  });

  it('lists the organizations the user belongs to', async () => {
    const created = await kc.organizations.create({ name: 'Bureau', alias: 'bureau', domains: [{ name: 'bureau.example' }] });
    const orgId = (created as { id: string }).id;
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    await kc.organizations.addMember({ orgId, userId: dana.id! });
    const problems = await s.open('organizations', 'organizations', (p) => p.waitForSelector('text=Bureau', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/organizations 200');
    expect(problems).toEqual([]);
  });
  it('lists the realm\'s identity providers on the linked-accounts page', async () => {
    await kc.identityProviders.create({ alias: 'github', providerId: 'github', enabled: true, config: { clientId: 'acme-app', clientSecret: 'not-used', syncMode: 'IMPORT' } });
    const problems = await s.open('account-security/linked-accounts', 'linked-accounts', (p) => p.waitForSelector('text=GitHub', { timeout: 30_000 }));
    expect(s.requests.filter((line) => line.startsWith('GET /realms/acme/account/linked-accounts ')).every((line) => line.endsWith(' 200'))).toBe(true);
    expect(s.requests.some((line) => line.startsWith('GET /realms/acme/account/linked-accounts '))).toBe(true);
    expect(problems).toEqual([]);
  });
});

/**
 * What the console's API calls cannot do with another token (issue 42's security tests): the console's own token of
 * one user reads that user only and cannot end or remove another user's sessions or credentials; a token of another
 * realm, or of a client of the realm whose tokens carry no account role, reads nothing; and the console's sign-in
 * (the account-console client) is refused for any redirect URI outside the realm's account console.
 */
describe('account console: tokens of others', () => {
  let eve: AccountConsoleSession;
  let elsewhere: AccountConsoleSession;
  const account = (token: string, method: string, path: string, realm = 'acme') =>
    fetch(`${t.url}/realms/${realm}/account${path}`, { method, headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' } });

  beforeAll(async () => {
    await kc.users.create({ username: 'eve', email: 'eve@example.com', emailVerified: true, firstName: 'Eve', lastName: 'Spy', enabled: true, credentials: [{ type: 'password', value: 'eve-pass-1' }] });
    await kc.clients.create({ clientId: 'narrow', publicClient: true, directAccessGrantsEnabled: true, fullScopeAllowed: false });
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({ realm: 'elsewhere', enabled: true });
    kc.setConfig({ realmName: 'elsewhere' });
    await kc.users.create({ username: 'dana', email: 'dana@example.com', emailVerified: true, firstName: 'Other', lastName: 'Dana', enabled: true, credentials: [{ type: 'password', value: 'dana-pass-1' }] });
    kc.setConfig({ realmName: 'acme' });
    eve = await AccountConsoleSession.start(t, 'acme', s.browser);
    await eve.signIn('eve', 'eve-pass-1');
    elsewhere = await AccountConsoleSession.start(t, 'elsewhere', s.browser);
    await elsewhere.signIn('dana', 'dana-pass-1');
    expect(eve.problems).toEqual([]);
    expect(elsewhere.problems).toEqual([]);
  });
  afterAll(async () => {
    await eve?.close();
    await elsewhere?.close();
  });

  it("one user's console token reads that user only and cannot end or remove the other's sessions or credentials", async () => {
    const eveToken = eve.accessToken!;
    const danaToken = s.accessToken!;
    expect(((await (await account(eveToken, 'GET', '/')).json()) as { username: string }).username).toBe('eve');
    expect(((await (await account(danaToken, 'GET', '/')).json()) as { username: string }).username).toBe('dana');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    const danaSessions = (await (await account(danaToken, 'GET', '/sessions')).json()) as { id: string }[];
    expect(danaSessions.length).toBeGreaterThan(0);
    for (const { id } of danaSessions) expect((await account(eveToken, 'DELETE', `/sessions/${id}`)).status).toBe(204);
    expect(((await (await account(danaToken, 'GET', '/sessions')).json()) as unknown[]).length).toBe(danaSessions.length);
    const [danaPassword] = await kc.users.getCredentials({ id: dana.id! });
    expect((await account(eveToken, 'DELETE', `/credentials/${danaPassword.id}`)).status).toBe(404);
    expect((await kc.users.getCredentials({ id: dana.id! })).map((c) => c.id)).toContain(danaPassword.id);
    // Eve's own sessions list holds none of Dana's.
    const eveSessions = (await (await account(eveToken, 'GET', '/sessions')).json()) as { id: string }[];
    expect(eveSessions.map((x) => x.id).filter((id) => danaSessions.some((d) => d.id === id))).toEqual([]);
  });

  it("delete_credential cannot remove another user's credential, nor a password", async () => {
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    const [eveUser] = await kc.users.find({ username: 'eve', exact: true });
    const [danaPassword] = await kc.users.getCredentials({ id: dana.id! });
    const [evePassword] = await kc.users.getCredentials({ id: eveUser.id! });
    for (const id of [danaPassword.id!, evePassword.id!]) {
      const query = new URLSearchParams({ client_id: 'account-console', redirect_uri: `${t.url}/realms/acme/account/`, response_type: 'code', scope: 'openid', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256', kc_action: `delete_credential:${id}` });
      await eve.page.goto(`${t.url}/realms/acme/protocol/openid-connect/auth?${query}`);
      await eve.page.waitForURL(/kc_action_status=error/, { timeout: 30_000 });
    }
    expect((await kc.users.getCredentials({ id: dana.id! })).map((c) => c.id)).toEqual([danaPassword.id]);
    expect((await kc.users.getCredentials({ id: eveUser.id! })).map((c) => c.id)).toEqual([evePassword.id]);
  });

  it("another realm's console token and a token of a client without account roles read nothing", async () => {
    const foreign = elsewhere.accessToken!;
    expect((await account(foreign, 'GET', '/')).status).toBe(401);
    expect((await account(foreign, 'GET', '/sessions/devices')).status).toBe(401);
    expect((await account(foreign, 'GET', '/credentials')).status).toBe(401);
    const narrow = (await (
      await fetch(`${t.url}/realms/acme/protocol/openid-connect/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', client_id: 'narrow', username: 'eve', password: 'eve-pass-1' }) })
    ).json()) as { access_token: string };
    // Without the account audience, Keycloak 26.7.3's 401 (account-api.keycloak.ts compares it).
    for (const path of ['/', '/credentials', '/sessions/devices', '/groups', '/organizations', '/supportedLocales']) expect((await account(narrow.access_token, 'GET', path)).status, path).toBe(401);
  });

  it("the console's sign-in is refused for a redirect URI outside the realm's account console", async () => {
    const authorize = (redirectUri: string, extra: Record<string, string> = {}) =>
      fetch(`${t.url}/realms/acme/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'account-console', redirect_uri: redirectUri, response_type: 'code', scope: 'openid', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256', ...extra })}`, { redirect: 'manual' });
    expect((await authorize(`${t.url}/realms/acme/account/`)).status).toBe(200);
    expect((await authorize(`${t.url}/realms/acme/account/account-security/signing-in`)).status).toBe(200);
    for (const outside of [
      `${t.url}/realms/elsewhere/account/`,
      `${t.url}/realms/acme/protocol/openid-connect/auth`,
      `${t.url}/admin/acme/console/`,
      `${t.url}/realms/acme/account/../../elsewhere/account/`,
      'https://evil.example/realms/acme/account/',
      `http://evil.example@127.0.0.1/realms/acme/account/`,
    ]) {
      const answer = await authorize(outside);
      expect(answer.status, outside).toBe(400);
      expect(answer.headers.get('location'), outside).toBeNull();
      expect(await answer.text(), outside).toContain('Invalid parameter: redirect_uri');
    }
    // Without PKCE S256 the client's sign-in is refused too (back to its own page, with the error).
    const plain = await authorize(`${t.url}/realms/acme/account/`, { code_challenge_method: 'plain' });
    expect(plain.status).toBe(302);
    expect(plain.headers.get('location')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/realms\/acme\/account\/\?error=invalid_request/);
  });
});

describe('account console: device activity and deleting the account', () => {
  let fox: AccountConsoleSession;
  let foxElsewhere: AccountConsoleSession;

  beforeAll(async () => {
    kc.setConfig({ realmName: 'acme' });
    await kc.users.create({ username: 'fox', email: 'fox@example.com', emailVerified: true, firstName: 'Fox', lastName: 'Mulder', enabled: true, credentials: [{ type: 'password', value: 'fox-pass-1' }] });
    fox = await AccountConsoleSession.start(t, 'acme', s.browser);
    foxElsewhere = await AccountConsoleSession.start(t, 'acme', s.browser);
    await fox.signIn('fox', 'fox-pass-1');
    await foxElsewhere.signIn('fox', 'fox-pass-1');
  });
  afterAll(async () => {
    await fox?.close();
    await foxElsewhere?.close();
  });

  it('lists both sessions and signs the other one out', async () => {
    const problems = await fox.open('account-security/device-activity', 'device-activity-two', (p) => p.waitForSelector('text=Current session', { timeout: 30_000 }));
    expect(problems).toEqual([]);
    const [user] = await kc.users.find({ username: 'fox', exact: true });
    expect(await kc.users.listSessions({ id: user.id! })).toHaveLength(2);
    fox.reset();
    await fox.page.click('button:has-text("Sign out"):not(:has-text("all"))');
    await fox.page.click('#modal-confirm');
    await fox.page.waitForSelector('button:has-text("Sign out"):not(:has-text("all"))', { state: 'detached', timeout: 30_000 });
    await fox.settled();
    expect(fox.requests.some((line) => /^DELETE \/realms\/acme\/account\/sessions\/[0-9a-f-]+ 204$/.test(line))).toBe(true);
    expect(await kc.users.listSessions({ id: user.id! })).toHaveLength(1);
    expect(fox.problems).toEqual([]);
  });

  it("removes an application's offline access from the applications page", async () => {
    await kc.clients.create({ clientId: 'reports', name: 'Reports', publicClient: true, directAccessGrantsEnabled: true });
    const grant = await fetch(`${t.url}/realms/acme/protocol/openid-connect/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', client_id: 'reports', username: 'fox', password: 'fox-pass-1', scope: 'openid offline_access' }) });
    expect(grant.status).toBe(200);
    const [user] = await kc.users.find({ username: 'fox', exact: true });
    const [reports] = await kc.clients.find({ clientId: 'reports' });
    expect(await kc.users.listOfflineSessions({ id: user.id!, clientId: reports.id! })).toHaveLength(1);
    const problems = await fox.open('applications', 'applications-offline', (p) => p.waitForSelector('text=Reports', { timeout: 30_000 }));
    expect(problems).toEqual([]);
    fox.reset();
    await fox.page.locator('[data-testid="applications-list-item"]', { hasText: 'Reports' }).locator('button').first().click();
    await screenshot(fox.page, 'account-console-applications-offline-expanded');
    await fox.page.click('button:has-text("Remove access")');
    await Promise.all([fox.page.waitForResponse((r) => r.url().endsWith('/account/applications/reports/consent'), { timeout: 30_000 }), fox.page.click('#modal-confirm')]);
    await fox.settled();
    expect(fox.requests).toContain('DELETE /realms/acme/account/applications/reports/consent 204');
    expect(await kc.users.listOfflineSessions({ id: user.id!, clientId: reports.id! })).toHaveLength(0);
    expect((await kc.realms.findEvents({ realm: 'acme', type: 'REVOKE_GRANT' as never }))[0]).toMatchObject({ clientId: 'account-console', details: { revoked_client: 'reports' } });
    expect(fox.problems).toEqual([]);
  });

  it('deletes the account through delete_account when the realm enables it', async () => {
    const action = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'delete_account' });
    await kc.authenticationManagement.updateRequiredAction({ alias: 'delete_account' }, { ...action, enabled: true });
    const [user] = await kc.users.find({ username: 'fox', exact: true });
    const [accountClient] = await kc.clients.find({ clientId: 'account' });
    const role = await kc.clients.findRole({ id: accountClient.id!, roleName: 'delete-account' });
    await kc.users.addClientRoleMappings({ id: user.id!, clientUniqueId: accountClient.id!, roles: [{ id: role!.id!, name: role!.name! }] });
    // A new document: the console reads whether the realm enables delete_account from its page when it loads.
    let problems = await fox.open('', 'personal-info-delete', (p) => p.waitForSelector('button:has-text("Delete account")', { timeout: 30_000 }), { fresh: true });
    expect(problems).toEqual([]);
    fox.reset();
    await fox.page.click('button:has-text("Delete account")');
    // delete_account's max_auth_age is 0, as Keycloak's: the password is asked again first.
    await Promise.all([fox.page.waitForSelector('#username', { timeout: 30_000 }), fox.page.click('#delete-account-btn')]);
    if (await fox.page.locator('#username').isEditable()) await fox.page.fill('#username', 'fox');
    await fox.page.fill('#password', 'fox-pass-1');
    await Promise.all([fox.page.waitForURL(/login-actions/), fox.page.click('#kc-login')]);
    await fox.ready('delete-account-confirm', (p) => p.waitForSelector('#kc-delete-account-confirm', { timeout: 10_000 }));
    await screenshot(fox.page, 'account-console-delete-account-confirm');
    // Confirmed: the user is gone, and the page says so.
    await Promise.all([fox.page.waitForSelector('text=Your account has been deleted', { timeout: 30_000 }), fox.page.click('#kc-delete-account-confirm')]);
    expect(await kc.users.find({ username: 'fox', exact: true })).toEqual([]);
    problems = fox.problems;
    expect(problems).toEqual([]);
  });
});

describe("account console: the applications page shows a consent's scopes", () => {
  let kim: AccountConsoleSession;
  const CREATED = 1_700_000_000_000;

  beforeAll(async () => {
    const token = await adminToken(t.url);
    // Consents from a realm file: a realm whose user consented to `shop`.
    const created = await fetch(`${t.url}/admin/realms`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        realm: 'consenting',
        enabled: true,
        clients: [{ clientId: 'shop', name: 'Shop', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'], baseUrl: 'https://shop.example/' }],
        users: [
          {
            username: 'kim',
            email: 'kim@example.com',
            emailVerified: true,
            firstName: 'Kim',
            lastName: 'Lee',
            enabled: true,
            credentials: [{ type: 'password', value: 'kim-pass-1', temporary: false }],
            clientConsents: [{ clientId: 'shop', grantedClientScopes: ['profile', 'email'], createdDate: CREATED, lastUpdatedDate: CREATED + 1000 }],
          },
          { username: 'lou', enabled: true, credentials: [{ type: 'password', value: 'lou-pass-1', temporary: false }] },
        ],
      }),
    });
    expect(created.status).toBe(201);
    kim = await AccountConsoleSession.start(t, 'consenting', s.browser);
    await kim.signIn('kim', 'kim-pass-1');
  });
  afterAll(async () => {
    await kim?.close();
  });

  it('lists the consented client with its granted scopes (account API shape) and shows them when expanded', async () => {
    const answer = await fetch(`${t.url}/realms/consenting/account/applications`, { headers: { authorization: `Bearer ${kim.accessToken}`, accept: 'application/json' } });
    expect(answer.status).toBe(200);
    const shop = ((await answer.json()) as { clientId: string; consent?: { grantedScopes: { id: string; name: string; displayText?: string }[]; createdDate?: number; lastUpdatedDate?: number }; inUse: boolean; offlineAccess: boolean }[]).find((c) => c.clientId === 'shop')!;
    expect(shop).toMatchObject({ inUse: false, offlineAccess: false, consent: { createdDate: CREATED, lastUpdatedDate: CREATED + 1000 } });
    expect(shop.consent!.grantedScopes.map(({ name, displayText }) => ({ name, displayText }))).toEqual([
      { name: '${profileScopeConsentText}', displayText: 'User profile' },
      { name: '${emailScopeConsentText}', displayText: 'Email address' },
    ]);
    expect(shop.consent!.grantedScopes.every((scope) => typeof scope.id === 'string' && scope.id.length > 0)).toBe(true);
    const problems = await kim.open('applications', 'applications-consent', (p) => p.waitForSelector('text=Shop', { timeout: 30_000 }));
    expect(problems).toEqual([]);
    await kim.page.locator('[data-testid="applications-list-item"]', { hasText: 'Shop' }).locator('button').first().click();
    await kim.page.waitForSelector('text=User profile', { timeout: 30_000 });
    await screenshot(kim.page, 'account-console-applications-consent');
    const body = await kim.page.textContent('body');
    expect(body).toContain('Email address');
    expect(kim.problems).toEqual([]);
  });

  it("another user of the realm sees none of it through the console's own token", async () => {
    const lou = await AccountConsoleSession.start(t, 'consenting', s.browser);
    try {
      await lou.signIn('lou', 'lou-pass-1');
      const answer = await fetch(`${t.url}/realms/consenting/account/applications`, { headers: { authorization: `Bearer ${lou.accessToken}`, accept: 'application/json' } });
      expect(answer.status).toBe(200);
      const listed = (await answer.json()) as { clientId: string; consent?: unknown }[];
      expect(listed.map((c) => c.clientId)).not.toContain('shop');
      expect(listed.filter((c) => c.consent !== undefined)).toEqual([]);
      expect(lou.problems).toEqual([]);
    } finally {
      await lou.close();
    }
  });
});
