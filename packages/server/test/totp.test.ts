import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { textOf } from './support/forms.js';
import { eventErrors, newOtpRealm, newOtpUser, ok, OTP_CALLBACK, OTP_USER_PASSWORD, passwordGrant, passwordStep, withOtp as withOtpApp, type Realmed } from './support/otp-users.js';
import { adminToken, api, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';
import { CodeSource, fromBase32 } from './support/totp.js';

/**
 * Issue 17, point 3, without a browser: the realm's OTP policy, brute-force detection through the OTP step, bad
 * input, the account and admin credential APIs, required actions set by an admin, a used code refused by another
 * server on the same Redis, and realms from before OTP getting the conditional subflows at start-up.
 */

const PASSWORD = OTP_USER_PASSWORD;
const callback = OTP_CALLBACK;
const newRealm = newOtpRealm;
const newUser = newOtpUser;
const grant = passwordGrant;
const loginErrors = (r: Realmed, userId: string) => eventErrors(r, userId);

/** Sets an authenticator app up for the user through CONFIGURE_TOTP (set by the admin API); the codes of its key. */
const withOtp = async (r: Realmed, user: { id: string; username: string }): Promise<CodeSource> => (await withOtpApp(r, user)).codes;

describe('TOTP (sqlite, memory store)', () => {
  let t: TestServer;
  let token: string;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
    token = await adminToken(t.url);
  });
  afterAll(async () => {
    await t?.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("realm otpPolicy fields: Keycloak's defaults; hotp and 7 digits refused; a new credential follows SHA512, 8 digits, 60 s", async () => {
    const r = await newRealm(t, token, { otpPolicyLookAheadWindow: undefined });
    const realmRep = (await api(t.url, 'GET', `/admin/realms/${r.realm}`, token)).body;
    expect(realmRep).toMatchObject({
      otpPolicyType: 'totp',
      otpPolicyAlgorithm: 'HmacSHA1',
      otpPolicyDigits: 6,
      otpPolicyPeriod: 30,
      otpPolicyLookAheadWindow: 1,
      otpPolicyCodeReusable: false,
      otpPolicyInitialCounter: 0,
    });
    for (const [field, value] of [
      ['otpPolicyType', 'hotp'],
      ['otpPolicyDigits', 7],
      ['otpPolicyAlgorithm', 'HmacMD5'],
      ['otpPolicyPeriod', 0],
      ['otpPolicyLookAheadWindow', -1],
    ] as const) {
      const refused = await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { [field]: value });
      expect(refused.status, field).toBe(400);
      expect(String(refused.body.errorMessage ?? refused.body.error_description)).toContain(field);
    }
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { otpPolicyAlgorithm: 'HmacSHA512', otpPolicyDigits: 8, otpPolicyPeriod: 60, otpPolicyLookAheadWindow: 3 }));
    const user = await newUser(r);
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}/users/${user.id}`, token, { requiredActions: ['CONFIGURE_TOTP'] }));
    const { page, post } = await passwordStep(r, user.username);
    expect(textOf(page.text, 'kc-totp-settings')).toContain('SHA512, 8 digits, every 60 seconds');
    const key = fromBase32(textOf(page.text, 'kc-totp-secret-key')!);
    // A SHA1 six-digit code of the key is not the code the app shows with these settings.
    const wrongKind = new CodeSource(key, { window: 3 }).next();
    expect((await post('config-totp', { totp: wrongKind })).status).toBe(400);
    const codes = new CodeSource(key, { window: 3, algorithm: 'sha512', digits: 8, period: 60 });
    expect((await post('config-totp', { totp: codes.next() })).status).toBe(302);
    const credentials = (await api(t.url, 'GET', `/admin/realms/${r.realm}/users/${user.id}/credentials`, token)).body;
    expect(JSON.parse(credentials[1].credentialData)).toEqual({ subType: 'totp', digits: 8, period: 60, algorithm: 'HmacSHA512', counter: 0 });
    // The credential keeps its settings when the realm's change.
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { otpPolicyAlgorithm: 'HmacSHA1', otpPolicyDigits: 6 }));
    expect((await grant(r, user.username, { totp: codes.next() })).status).toBe(200);
  });

  it('with otpPolicyCodeReusable a code works twice; without it, once', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const code = codes.next();
    expect((await grant(r, user.username, { totp: code })).status).toBe(200);
    expect((await grant(r, user.username, { totp: code })).status).toBe(400);
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}`, token, { otpPolicyCodeReusable: true }));
    const again = codes.next();
    expect((await grant(r, user.username, { totp: again })).status).toBe(200);
    expect((await grant(r, user.username, { totp: again })).status).toBe(200);
  });

  it('fake time: a code outside the look-ahead window is refused, and an OTP page left open 10 minutes has expired', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const { page, post } = await passwordStep(r, user.username);
    expect(page.status).toBe(200);
    const code = codes.next();
    // Date only: the server's timers and the store's TTLs keep real time.
    vi.useFakeTimers({ toFake: ['Date'] });
    // Ten steps on: past the realm's look-ahead window of three steps, whichever step of it the code was.
    vi.setSystemTime(Date.now() + 10 * 30_000);
    expect((await grant(r, user.username, { totp: code })).status).toBe(400);
    vi.setSystemTime(Date.now() + 10 * 60_000);
    const late = await post('login-otp', { otp: code });
    expect(late.status).toBe(400);
    expect(textOf(late.text, 'page-message')).toContain('expired');
  });

  it('brute-force detection counts wrong codes, and a right password does not reset them; a locked user is told as a wrong code', async () => {
    const r = await newRealm(t, token, { bruteForceProtected: true, failureFactor: 3, quickLoginCheckMilliSeconds: 0 });
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const status = async () => (await api(t.url, 'GET', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token)).body;

    const first = await passwordStep(r, user.username);
    expect(textOf(first.page.text, 'page-title')).toContain('one-time code');
    for (const code of ['000000', '12345678']) {
      const wrong = await first.post('login-otp', { otp: code });
      expect(wrong.status).toBe(401);
      expect(textOf(wrong.text, 'input-error-otp')).toBe('Invalid one-time code.');
    }
    expect(await status()).toMatchObject({ numFailures: 2, disabled: false });
    // The right password again: the failures of the OTP step still count.
    const second = await passwordStep(r, user.username);
    expect(second.page.status).toBe(200);
    expect(await status()).toMatchObject({ numFailures: 2 });
    expect((await second.post('login-otp', { otp: '000000' })).status).toBe(401);
    expect(await status()).toMatchObject({ numFailures: 3, disabled: true });
    // Locked: the right code gets the wrong code's answer, and so does the password grant.
    const locked = await second.post('login-otp', { otp: codes.next() });
    expect(locked.status).toBe(401);
    expect(textOf(locked.text, 'input-error-otp')).toBe('Invalid one-time code.');
    expect((await grant(r, user.username, { totp: codes.next() })).status).toBe(400);
    expect(await loginErrors(r, user.id)).toEqual(['invalid_user_credentials', 'invalid_user_credentials', 'invalid_user_credentials', 'user_temporarily_disabled', 'user_temporarily_disabled']);


    // Unlocked by an admin: password and code sign in, and the whole login forgets the failures.
    ok(await api(t.url, 'DELETE', `/admin/realms/${r.realm}/attack-detection/brute-force/users/${user.id}`, token));
    expect((await second.post('login-otp', { otp: '000000' })).status).toBe(401);
    expect(await status()).toMatchObject({ numFailures: 1 });
    const third = await passwordStep(r, user.username);
    const done = await third.post('login-otp', { otp: codes.next() });
    expect(done.status).toBe(302);
    expect(await status()).toMatchObject({ numFailures: 0, disabled: false });
  });

  it('bad input: codes of the wrong length, non-digits, 10,000 characters, a forged or missing key: refused, never a crash', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const { post } = await passwordStep(r, user.username);
    for (const otp of ['', '1', '12345', '1234567', '123456789', 'abcdef', '12 345', '１２３４５６', '9'.repeat(10_000), '<script>']) {
      // Each on a page of its own: one page takes five codes (second-factor-limits.test.ts).
      const answer = await (await passwordStep(r, user.username)).post('login-otp', { otp });
      expect(answer.status, otp.slice(0, 10)).toBe(401);
      expect(textOf(answer.text, 'input-error-otp')).toBe('Invalid one-time code.');
    }
    const forged = await post('login-otp', { otp: codes.next(), key: 'x'.repeat(10_000) });
    expect(forged.status).toBe(400);
    expect(textOf(forged.text, 'page-message')).toContain('expired');
    expect((await post('login-otp', { otp: codes.next(), key: '' })).status).toBe(400);
    expect((await post('login-otp', { otp: codes.next(), session_code: 'forged' })).status).toBe(400);
    for (const totp of ['', 'abcdef', '9'.repeat(10_000)]) {
      expect(await grant(r, user.username, { totp })).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    }
    // A 10,000-character device name is refused on the setup page.
    const other = await newUser(r, { requiredActions: ['CONFIGURE_TOTP'] });
    const setup = await passwordStep(r, other.username);
    const setupCodes = new CodeSource(fromBase32(textOf(setup.page.text, 'kc-totp-secret-key')!), { window: 3 });
    const long = await setup.post('config-totp', { totp: setupCodes.next(), userLabel: 'x'.repeat(10_000) });
    expect(long.status).toBe(400);
    expect(textOf(long.text, 'input-error-userLabel')).toContain('at most 255');
  });

  it('the account API lists the OTP credential without its secret and removes it; then no code is asked', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const tokens = await grant(r, user.username, { totp: codes.next() });
    expect(tokens.status).toBe(200);
    const bearer = tokens.body.access_token as string;
    const listed = await api(t.url, 'GET', `/realms/${r.realm}/account/credentials`, bearer);
    expect(listed.status).toBe(200);
    const otp = listed.body.find((c: { type: string }) => c.type === 'otp');
    expect(otp).toMatchObject({ category: 'two-factor', createAction: 'CONFIGURE_TOTP', removeable: true, userCredentialMetadatas: [{ credential: { type: 'otp', userLabel: 'phone', createdDate: expect.any(Number) } }] });
    expect(JSON.stringify(listed.body)).not.toMatch(/secret|value/i);
    const id = otp.userCredentialMetadatas[0].credential.id as string;
    const password = listed.body[0].userCredentialMetadatas[0].credential.id as string;
    expect((await api(t.url, 'DELETE', `/realms/${r.realm}/account/credentials/${password}`, bearer)).status).toBe(400);
    expect((await api(t.url, 'DELETE', `/realms/${r.realm}/account/credentials/${id}`, bearer)).status).toBe(204);
    expect((await api(t.url, 'DELETE', `/realms/${r.realm}/account/credentials/${id}`, bearer)).status).toBe(404);
    expect((await api(t.url, 'GET', `/realms/${r.realm}/account/credentials?type=otp`, bearer)).body[0].userCredentialMetadatas).toEqual([]);
    expect((await grant(r, user.username)).status).toBe(200);
    const { page } = await passwordStep(r, user.username);
    expect(page.status).toBe(302);
  });

  it('the admin API lists (view-users) and removes (manage-users) credentials; requiredActions are kept, enforced, and unknown ones refused', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    await withOtp(r, user);
    const path = `/admin/realms/${r.realm}/users/${user.id}`;
    expect((await api(t.url, 'GET', path, token)).body).toMatchObject({ totp: true, requiredActions: [], disableableCredentialTypes: ['otp'] });
    const listed = (await api(t.url, 'GET', `${path}/credentials`, token)).body as { id: string; type: string }[];
    expect(listed.map((c) => c.type)).toEqual(['password', 'otp']);
    expect(JSON.stringify(listed)).not.toContain('secretData');

    // A user administrator with view-users only may list but not remove.
    const viewer = await newUser({ ...r, realm: 'master' });
    const management = (await api(t.url, 'GET', '/admin/realms/master/clients?clientId=' + encodeURIComponent(`${r.realm}-realm`), token)).body[0];
    const viewRole = (await api(t.url, 'GET', `/admin/realms/master/clients/${management.id}/roles/view-users`, token)).body;
    ok(await api(t.url, 'POST', `/admin/realms/master/users/${viewer.id}/role-mappings/clients/${management.id}`, token, [viewRole]));
    const viewerToken = (await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: viewer.username, password: PASSWORD })).body.access_token as string;
    expect((await api(t.url, 'GET', `${path}/credentials`, viewerToken)).status).toBe(200);
    expect((await api(t.url, 'DELETE', `${path}/credentials/${listed[1].id}`, viewerToken)).status).toBe(403);

    expect((await api(t.url, 'DELETE', `${path}/credentials/${listed[1].id}`, token)).status).toBe(204);
    expect((await api(t.url, 'DELETE', `${path}/credentials/${listed[1].id}`, token)).status).toBe(404);
    expect((await api(t.url, 'GET', path, token)).body).toMatchObject({ totp: false });
    expect((await grant(r, user.username)).status).toBe(200);
    // The password can be removed too, as Keycloak's: no password sign-in until reset-password sets one.
    expect((await api(t.url, 'DELETE', `${path}/credentials/${listed[0].id}`, token)).status).toBe(204);
    expect((await api(t.url, 'GET', `${path}/credentials`, token)).body).toEqual([]);
    expect((await grant(r, user.username)).status).toBe(400);
    ok(await api(t.url, 'PUT', `${path}/reset-password`, token, { type: 'password', value: PASSWORD, temporary: false }));
    expect((await grant(r, user.username)).status).toBe(200);

    const refused = await api(t.url, 'PUT', path, token, { requiredActions: ['delete_credential'] });
    expect(refused.status).toBe(400);
    expect(refused.body.errorMessage).toContain('requiredActions');
    // UPDATE_PASSWORD set by an admin: the password grant refuses, the browser asks for a new password first.
    ok(await api(t.url, 'PUT', path, token, { requiredActions: ['UPDATE_PASSWORD'] }));
    expect((await api(t.url, 'GET', path, token)).body.requiredActions).toEqual(['UPDATE_PASSWORD']);
    expect((await grant(r, user.username)).body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });
    const { page } = await passwordStep(r, user.username);
    expect(textOf(page.text, 'page-title')).toBe('Choose a new password');
  });

  it('a required action set while the user has an SSO session sends the next authorization request to the login page', async () => {
    const r = await newRealm(t, token);
    const user = await newUser(r);
    const { page, client, authPath } = await passwordStep(r, user.username);
    expect(page.status).toBe(302);
    expect((await client.get(authPath)).status).toBe(302);
    ok(await api(t.url, 'PUT', `/admin/realms/${r.realm}/users/${user.id}`, token, { requiredActions: ['CONFIGURE_TOTP'] }));
    const again = await client.get(authPath);
    expect(again.status).toBe(200);
    expect(textOf(again.text, 'page-title')).toContain('Sign in');
  });

  it("a Keycloak realm export whose own browser flow carries OTP: imported without warnings, and the flows it binds decide", async () => {
    const realm = `otp-import-${randomUUID().slice(0, 8)}`;
    const execution = (authenticator: string, requirement: string, priority: number) => ({ authenticator, authenticatorFlow: false, requirement, priority, userSetupAllowed: false });
    const subflow = (flowAlias: string, requirement: string, priority: number) => ({ flowAlias, authenticatorFlow: true, requirement, priority, userSetupAllowed: false });
    const flow = (alias: string, topLevel: boolean, authenticationExecutions: unknown[]) => ({ alias, description: '', providerId: 'basic-flow', topLevel, builtIn: false, authenticationExecutions });
    const imported = await api(t.url, 'POST', '/admin/realms', token, {
      realm,
      enabled: true,
      browserFlow: 'my browser',
      otpPolicyLookAheadWindow: 3,
      clients: [{ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }],
      users: [{ username: 'imported', enabled: true, requiredActions: ['CONFIGURE_TOTP'], credentials: [{ type: 'password', value: PASSWORD }] }],
      authenticationFlows: [
        flow('my browser', true, [execution('auth-cookie', 'ALTERNATIVE', 10), subflow('my forms', 'ALTERNATIVE', 20)]),
        flow('my forms', false, [execution('auth-username-password-form', 'REQUIRED', 10), subflow('my otp', 'CONDITIONAL', 20)]),
        flow('my otp', false, [execution('conditional-user-configured', 'REQUIRED', 10), execution('auth-otp-form', 'REQUIRED', 20)]),
        flow('always otp', true, [execution('auth-username-password-form', 'REQUIRED', 10), execution('auth-otp-form', 'REQUIRED', 20)]),
      ],
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(201);
    const otpProviders = ['auth-otp-form', 'conditional-user-configured'];
    expect(t.logs.filter((l) => otpProviders.includes(String(l.provider)) && /not installed|unknown flow condition/.test(String(l.msg)))).toEqual([]);
    const r = { t, token, realm };
    // An imported user's required action is carried out at its first login.
    expect(textOf((await passwordStep(r, 'imported')).page.text, 'page-title')).toBe('Set up an authenticator app');
    const user = await newUser(r);
    // No credential: the conditional subflow does not run.
    expect((await passwordStep(r, user.username)).page.status).toBe(302);
    const codes = await withOtp(r, user);
    const { page, post } = await passwordStep(r, user.username);
    expect(textOf(page.text, 'page-title')).toContain('one-time code');
    expect((await post('login-otp', { otp: codes.next() })).status).toBe(302);
    // Bound to a flow whose OTP form is REQUIRED outright, a user without a credential must set one up.
    ok(await api(t.url, 'PUT', `/admin/realms/${realm}`, token, { browserFlow: 'always otp' }));
    const other = await newUser(r);
    expect(textOf((await passwordStep(r, other.username)).page.text, 'page-title')).toBe('Set up an authenticator app');
    // The direct grant's OTP subflow made REQUIRED: a user without a credential is refused (the flow cannot pass:
    // Keycloak's CREDENTIAL_SETUP_REQUIRED, answered 400); the code may come as `otp` (Keycloak's name) or `totp`.
    const direct = (await api(t.url, 'GET', `/admin/realms/${realm}/authentication/flows/direct%20grant/executions`, token)).body as { displayName: string; requirement: string }[];
    const otpSubflow = direct.find((e) => e.displayName === 'Direct Grant - Conditional OTP')!;
    ok(await api(t.url, 'PUT', `/admin/realms/${realm}/authentication/flows/direct%20grant/executions`, token, { ...otpSubflow, requirement: 'REQUIRED' }));
    expect(await grant(r, other.username)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    expect((await grant(r, user.username, { otp: codes.next() })).status).toBe(200);
    expect((await grant(r, user.username, { totp: codes.next() })).status).toBe(200);
    // The OTP form DISABLED inside its conditional sub-flow: the sub-flow cannot pass, so nobody gets in (Keycloak's
    // answer: its condition holds, with nothing left to check); the whole sub-flow DISABLED asks nothing.
    ok(await api(t.url, 'PUT', `/admin/realms/${realm}`, token, { browserFlow: 'my browser' }));
    const executions = async () => (await api(t.url, 'GET', `/admin/realms/${realm}/authentication/flows/my%20browser/executions`, token)).body as { id: string; providerId?: string; displayName: string; requirement: string; level: number; index: number }[];
    const otpForm = (await executions()).find((e) => e.providerId === 'auth-otp-form')!;
    ok(await api(t.url, 'PUT', `/admin/realms/${realm}/authentication/flows/my%20browser/executions`, token, { ...otpForm, requirement: 'DISABLED' }));
    expect((await passwordStep(r, user.username)).page.status).toBe(400);
    const otpSubflow2 = (await executions()).find((e) => e.displayName === 'my otp')!;
    ok(await api(t.url, 'PUT', `/admin/realms/${realm}/authentication/flows/my%20browser/executions`, token, { ...otpSubflow2, requirement: 'DISABLED' }));
    expect((await passwordStep(r, user.username)).page.status).toBe(302);
  });

  it("a Keycloak export's otp credentials (raw and BASE32 secrets) keep working after import, and export back so Keycloak reads them alike", async () => {
    const realm = `otp-cred-${randomUUID().slice(0, 8)}`;
    // Keycloak's own secrets are printable strings whose UTF-8 bytes are the key; secretEncoding BASE32 marks a
    // base32 one (what tools that import a known secret write).
    const raw = 'kX8rQ2mZ7vL4pN9wT3yB';
    const base32 = 'JBSWY3DPEHPK3PXP';
    const otp = (value: string, data: Record<string, unknown>) => ({
      type: 'otp',
      userLabel: 'phone',
      createdDate: 1700000000000,
      secretData: JSON.stringify({ value }),
      credentialData: JSON.stringify({ subType: 'totp', digits: 6, counter: 0, period: 30, algorithm: 'HmacSHA1', ...data }),
    });
    const password = { type: 'password', value: PASSWORD };
    const imported = await api(t.url, 'POST', '/admin/realms', token, {
      realm,
      enabled: true,
      otpPolicyLookAheadWindow: 3,
      clients: [{ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }],
      users: [
        { username: 'raw', enabled: true, credentials: [password, otp(raw, {})] },
        { username: 'b32', enabled: true, credentials: [password, otp(base32, { secretEncoding: 'BASE32', algorithm: 'HmacSHA256', digits: 8 })] },
      ],
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(201);
    const r = { t, token, realm };
    const rawCodes = new CodeSource(Buffer.from(raw, 'utf8'), { window: 3 });
    const b32Codes = new CodeSource(fromBase32(base32), { window: 3, algorithm: 'sha256', digits: 8 });
    // The direct grant asks for the code of a user with a credential (the conditional OTP subflow).
    expect((await grant(r, 'raw')).status).toBe(400);
    expect((await grant(r, 'raw', { totp: rawCodes.next() })).status).toBe(200);
    expect((await grant(r, 'b32', { totp: b32Codes.next() })).status).toBe(200);
    // The browser asks for it too.
    const { page, post } = await passwordStep(r, 'raw');
    expect(textOf(page.text, 'page-title')).toContain('one-time code');
    expect((await post('login-otp', { otp: rawCodes.next() })).status).toBe(302);

    // Exported with secretEncoding BASE32: Keycloak decodes the value as this server stores it.
    const { realmExporter } = await import('../src/services/realm-export.js');
    const stored = (await t.server.context.storage.realms.byName(realm))!;
    const { users } = await (await realmExporter(t.server.context, stored)).users(null, 10);
    const document = { users } as { users: { username: string; credentials: { type: string; secretData: string; credentialData: string; userLabel?: string }[] }[] };
    const rawOtp = document.users.find((u) => u.username === 'raw')!.credentials.find((c) => c.type === 'otp')!;
    expect(rawOtp.userLabel).toBe('phone');
    expect(JSON.parse(rawOtp.credentialData)).toMatchObject({ subType: 'totp', secretEncoding: 'BASE32', algorithm: 'HmacSHA1', digits: 6, period: 30 });
    expect(fromBase32(JSON.parse(rawOtp.secretData).value).toString('utf8')).toBe(raw);

    // Re-imported elsewhere from that export, the same app's codes work.
    const again = `${realm}-again`;
    const reimport = await api(t.url, 'POST', '/admin/realms', token, { realm: again, enabled: true, otpPolicyLookAheadWindow: 3, clients: [{ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] }], users: [{ username: 'raw', enabled: true, credentials: [password, rawOtp] }] });
    expect(reimport.status, JSON.stringify(reimport.body)).toBe(201);
    expect((await grant({ t, token, realm: again }, 'raw', { totp: rawCodes.next() })).status).toBe(200);

    // What cannot be honoured is refused, naming it: HOTP, an unknown encoding, bad base32, 7 digits.
    for (const [credential, problem] of [
      [otp(raw, { subType: 'hotp' }), 'subType "hotp" is not supported'],
      [otp(raw, { secretEncoding: 'HEX' }), 'secretEncoding "HEX" is not supported'],
      [otp('not base32!', { secretEncoding: 'BASE32' }), 'not valid base32'],
      [otp(raw, { digits: 7 }), 'digits must be 6 or 8'],
      [{ ...otp(raw, {}), secretData: '{' }, 'must be JSON strings'],
    ] as const) {
      const refused = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, { username: `bad${randomUUID().slice(0, 6)}`, enabled: true, credentials: [credential] });
      expect(refused.status).toBe(400);
      expect((refused.body as { errorMessage: string }).errorMessage).toContain(problem);
    }
    // The admin API refuses such a realm, naming the path; a realm file (--import-realm) is imported without the
    // credential, which its notImported list names.
    const file = { realm: `${realm}-hotp`, enabled: true, users: [{ username: 'h', enabled: true, credentials: [password, otp(raw, { subType: 'hotp' })] }] };
    const withHotp = await api(t.url, 'POST', '/admin/realms', token, file);
    expect(withHotp.status).toBe(400);
    expect((withHotp.body as { errorMessage: string }).errorMessage).toContain('realm.users[0].credentials[1]');
    const { parseRealmImport } = await import('../src/services/realm-import/index.js');
    const parsed = parseRealmImport(file, () => false, () => {});
    expect(parsed.notImported).toEqual([expect.stringContaining('realm.users[0].credentials[1] (credentialData.subType "hotp" is not supported')]);
  });

  it('a realm created before OTP gets the conditional OTP subflows at start-up (the browser one asks for codes again)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'realmgate-otp-upgrade-'));
    const config = { REALMGATE_DB_URL: `sqlite:${join(root, 'realmgate.db')}` };
    let s = await startServer({ config });
    let sToken = await adminToken(s.url);
    const r = await newRealm(s, sToken);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    try {
      // As a realm of an older version: neither built-in flow has its conditional OTP subflow.
      const db = s.server.context.storage.db;
      const realmId = (await s.server.context.storage.realms.byName(r.realm))!.id;
      const subflows = await db.selectFrom('auth_flow').select('id').where('realm_id', '=', realmId).where('alias', 'in', ['Browser - Conditional OTP', 'Direct Grant - Conditional OTP']).execute();
      expect(subflows).toHaveLength(2);
      const ids = subflows.map((f) => f.id);
      await db.deleteFrom('auth_execution').where((eb) => eb.or([eb('sub_flow_id', 'in', ids), eb('parent_flow_id', 'in', ids)])).execute();
      await db.deleteFrom('auth_flow').where('id', 'in', ids).execute();
      expect((await grant(r, user.username)).status).toBe(200);
    } finally {
      await s.close().catch(() => undefined);
    }
    s = await startServer({ config });
    try {
      sToken = await adminToken(s.url);
      const again = { ...r, t: s, token: sToken };
      expect(s.logs.some((l) => l.msg === 'conditional OTP subflows added to existing built-in flows' && l.added === 2)).toBe(true);
      expect((await grant(again, user.username)).status).toBe(400);
      expect((await grant(again, user.username, { totp: codes.next() })).status).toBe(200);
      const executions = (await api(s.url, 'GET', `/admin/realms/${r.realm}/authentication/flows/browser/executions`, sToken)).body as { level: number; displayName: string; providerId?: string }[];
      expect(executions.map((e) => `${e.level}:${e.providerId ?? e.displayName}`)).toEqual(
        expect.arrayContaining(['1:auth-username-password-form', '2:conditional-user-configured', '2:auth-otp-form']),
      );
    } finally {
      await s.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('two servers on one Redis and one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  let pair: Awaited<ReturnType<typeof startServerPair>> | undefined;
  let token: string;

  beforeAll(async () => {
    pair = await startServerPair();
    ({ a, b } = pair);
    token = await adminToken(a.url);
  });
  afterAll(async () => {
    await pair?.close();
  });

  it('a code used on one server is refused on the other; concurrent uses of one code: exactly one succeeds', async () => {
    const r = await newRealm(a, token);
    const user = await newUser(r);
    const codes = await withOtp(r, user);
    const code = codes.next();
    expect((await grant(r, user.username, { totp: code }, a.url)).status).toBe(200);
    expect((await grant(r, user.username, { totp: code }, b.url)).status).toBe(400);
    const racing = codes.next();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => grant(r, user.username, { totp: racing }, i % 2 ? a.url : b.url)));
    expect(answers.filter((x) => x.status === 200)).toHaveLength(1);
  });
});
