import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce, textOf, type FormResponse } from './support/forms.js';
import { newOtpRealm, newOtpUser, ok, OTP_CALLBACK, OTP_USER_PASSWORD, passwordGrant, withOtp, type Realmed } from './support/otp-users.js';
import { migrations } from '../src/storage/migrations.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';

/**
 * Issue 35, the rest of part 1: the reset-credentials flow run by the one flow runner (Keycloak 26's shape with its
 * `Reset - Conditional OTP` sub-flow), an operator's copy honoured as Keycloak runs it, Keycloak 26's built-in
 * `first broker login` flow in every realm, and `conditional-user-attribute` reading group attributes.
 */

interface Execution {
  id: string;
  displayName: string;
  providerId?: string;
  requirement: string;
  level: number;
  authenticationFlow?: boolean;
  authenticationConfig?: string;
}

describe('reset credentials and first broker login as Keycloak 26 builds them', () => {
  let t: TestServer;
  let r: Realmed;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  const path = (rest: string) => `/admin/realms/${r.realm}${rest}`;
  const call = (method: string, rest: string, body?: unknown) => api(t.url, method, path(rest), r.token, body);
  const executions = async (flow: string) => (await call('GET', `/authentication/flows/${encodeURIComponent(flow)}/executions`)).body as Execution[];
  const execution = async (flow: string, name: string) => (await executions(flow)).find((e) => e.displayName === name || e.providerId === name)!;
  const setRequirement = async (flow: string, name: string, requirement: string) =>
    ok(await call('PUT', `/authentication/flows/${encodeURIComponent(flow)}/executions`, { ...(await execution(flow, name)), requirement }));
  const copy = async (from: string, to: string) => ok(await call('POST', `/authentication/flows/${encodeURIComponent(from)}/copy`, { newName: to }));
  const layout = async (flow: string) => (await executions(flow)).map((e) => `${e.level}:${e.providerId ?? e.displayName}:${e.requirement}`);
  const R = () => `/realms/${r.realm}`;
  const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));
  const userWithMail = async () => {
    const user = await newOtpUser(r);
    const email = `${user.username}@example.com`;
    ok(await call('PUT', `/users/${user.id}`, { email, emailVerified: true }));
    return { ...user, email };
  };
  const requiredActions = async (id: string) => ((await call('GET', `/users/${id}`)).body as { requiredActions: string[] }).requiredActions;

  /** Opens the sign-in page and posts the reset-request form; the page it answers, and the browser. */
  async function requestReset(username: string): Promise<{ page: FormResponse; client: FormClient }> {
    const client = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: OTP_CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const login = await client.get(`${R()}/protocol/openid-connect/auth?${query}`);
    expect(login.status).toBe(200);
    const page = await client.post(`${R()}/login-actions/reset-credentials`, { username, session_code: inputValue(login.text, 'session_code')! });
    return { page, client };
  }
  const linkFor = async (email: string, count: number) => eventually(() => (mailsTo(email).length >= count ? linkIn(mailsTo(email).at(-1)!) : undefined));
  const keyOf = (link: string) => new URL(link).searchParams.get('key')!;
  const open = (client: FormClient, key: string) => client.get(`${R()}/login-actions/action-token?key=${encodeURIComponent(key)}`);
  const submit = (client: FormClient, key: string, password: string) => client.post(`${R()}/login-actions/reset-password`, { 'password-new': password, 'password-confirm': password, session_code: key });
  const grantWorks = async (username: string, password: string) => (await passwordGrant(r, username, { password })).status === 200;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
    smtp = await startSmtp();
    r = await newOtpRealm(t, await adminToken(t.url), { resetPasswordAllowed: true, smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@reset.example' } });
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it("gives every new realm Keycloak 26's reset credentials with its conditional OTP sub-flow, and first broker login with its sub-flows and configs", async () => {
    expect(await layout('reset credentials')).toEqual([
      '0:reset-credentials-choose-user:REQUIRED',
      '0:reset-credential-email:REQUIRED',
      '0:reset-password:REQUIRED',
      '0:Reset - Conditional OTP:CONDITIONAL',
      '1:conditional-user-configured:REQUIRED',
      '1:reset-otp:REQUIRED',
    ]);
    expect(await layout('first broker login')).toEqual([
      '0:idp-review-profile:REQUIRED',
      '0:User creation or linking:REQUIRED',
      '1:idp-create-user-if-unique:ALTERNATIVE',
      '1:Handle Existing Account:ALTERNATIVE',
      '2:idp-confirm-link:REQUIRED',
      '2:Account verification options:REQUIRED',
      '3:idp-email-verification:ALTERNATIVE',
      '3:Verify Existing Account by Re-authentication:ALTERNATIVE',
      '4:idp-username-password-form:REQUIRED',
      '4:First broker login - Conditional OTP:CONDITIONAL',
      '5:conditional-user-configured:REQUIRED',
      '5:auth-otp-form:REQUIRED',
    ]);
    const review = await execution('first broker login', 'idp-review-profile');
    const config = await call('GET', `/authentication/config/${review.authenticationConfig}`);
    expect(config.body).toMatchObject({ alias: 'review profile config', config: { 'update.profile.on.first.login': 'missing' } });
    const flows = (await call('GET', '/authentication/flows')).body as { alias: string; builtIn: boolean; topLevel: boolean }[];
    expect(flows.find((f) => f.alias === 'first broker login')).toMatchObject({ builtIn: true, topLevel: true });
    // The idp-* providers are known, so the console lists them and realm files can name them.
    const providers = ((await call('GET', '/authentication/authenticator-providers')).body as { id: string }[]).map((p) => p.id);
    expect(providers).toEqual(expect.arrayContaining(['idp-review-profile', 'idp-create-user-if-unique', 'idp-confirm-link', 'idp-email-verification', 'idp-username-password-form', 'reset-otp']));
    expect((await call('GET', '')).body).toMatchObject({ resetCredentialsFlow: 'reset credentials', firstBrokerLoginFlow: 'first broker login' });
  });

  it('tells nothing about an unknown user (the same page, no mail), and refuses a used link', async () => {
    const known = await userWithMail();
    const mailsBefore = smtp.mails.length;
    const unknown = await requestReset('nobody-at-all');
    const found = await requestReset(known.username);
    expect(unknown.page.status).toBe(found.page.status);
    expect(textOf(unknown.page.text, 'page-message')).toBe(textOf(found.page.text, 'page-message'));
    expect(textOf(found.page.text, 'page-message')).toContain('receive an e-mail');
    const link = await linkFor(known.email, 1);
    expect(smtp.mails.length).toBe(mailsBefore + 1);

    const browser = new FormClient(t.url);
    expect(textOf((await open(browser, keyOf(link))).text, 'page-title')).toBe('Choose a new password');
    expect(textOf((await submit(browser, keyOf(link), 'Reset-new-pass-1')).text, 'page-title')).toBe('Your password has been updated');
    const replay = await submit(new FormClient(t.url), keyOf(link), 'Attacker-pass-1');
    expect(replay.status).toBe(400);
    expect(textOf(replay.text, 'error-text')).toMatch(/already been used/);
    expect(await grantWorks(known.username, 'Reset-new-pass-1')).toBe(true);
    expect(await grantWorks(known.username, 'Attacker-pass-1')).toBe(false);
    // No OTP credential: the conditional OTP sub-flow did not run.
    expect(await requiredActions(known.id)).not.toContain('CONFIGURE_TOTP');
  });

  it('runs Reset - Conditional OTP for a user with an authenticator app: the app is set up again at the next sign-in', async () => {
    const user = await userWithMail();
    await withOtp(r, user);
    await requestReset(user.username);
    const key = keyOf(await linkFor(user.email, 1));
    const browser = new FormClient(t.url);
    await open(browser, key);
    expect(textOf((await submit(browser, key, 'Reset-otp-pass-1')).text, 'page-title')).toBe('Your password has been updated');
    expect(await requiredActions(user.id)).toContain('CONFIGURE_TOTP');
    // "Remove one OTP" (the default) keeps the old app.
    const credentials = (await call('GET', `/users/${user.id}/credentials`)).body as { type: string }[];
    expect(credentials.map((c) => c.type)).toContain('otp');
  });

  it("honours an operator's copy with reset-password DISABLED: the link confirms the account, changes no password, and works once", async () => {
    await copy('reset credentials', 'no new password');
    await setRequirement('no new password', 'reset-password', 'DISABLED');
    ok(await call('PUT', '', { resetCredentialsFlow: 'no new password' }));
    try {
      const user = await userWithMail();
      await requestReset(user.username);
      const key = keyOf(await linkFor(user.email, 1));
      const browser = new FormClient(t.url);
      const end = await open(browser, key);
      expect(textOf(end.text, 'page-title')).toBe('Your account is confirmed');
      expect(inputValue(end.text, 'password-new')).toBeNull();
      expect((await open(new FormClient(t.url), key)).status).toBe(400);
      expect((await submit(new FormClient(t.url), key, 'Sneaky-pass-1')).status).toBe(400);
      expect(await grantWorks(user.username, OTP_USER_PASSWORD)).toBe(true);
      expect(await grantWorks(user.username, 'Sneaky-pass-1')).toBe(false);
    } finally {
      ok(await call('PUT', '', { resetCredentialsFlow: 'reset credentials' }));
    }
  });

  it("honours a copy without the e-mail step: the new password's page follows the request at once, and an unknown user still gets the mailed answer", async () => {
    await copy('reset credentials', 'no mail');
    await setRequirement('no mail', 'reset-credential-email', 'DISABLED');
    ok(await call('PUT', '', { resetCredentialsFlow: 'no mail' }));
    try {
      const user = await userWithMail();
      const sent = mailsTo(user.email).length;
      const { page, client } = await requestReset(user.username);
      expect(textOf(page.text, 'page-title')).toBe('Choose a new password');
      const key = inputValue(page.text, 'session_code')!;
      expect(textOf((await submit(client, key, 'No-mail-pass-1')).text, 'page-title')).toBe('Your password has been updated');
      expect((await submit(client, key, 'No-mail-pass-2')).status).toBe(400);
      expect(await grantWorks(user.username, 'No-mail-pass-1')).toBe(true);
      expect(mailsTo(user.email).length).toBe(sent);
      const unknown = await requestReset('nobody-either');
      expect(textOf(unknown.page.text, 'page-message')).toContain('receive an e-mail');
    } finally {
      ok(await call('PUT', '', { resetCredentialsFlow: 'reset credentials' }));
    }
  });

  it("opens the reset page through the realm's reset flow: a copy without the choose-user step answers as its e-mail step does for no user (Keycloak's 'e-mail sent', back on the login page)", async () => {
    const resetPage = async () => {
      const client = new FormClient(t.url);
      const query = new URLSearchParams({ client_id: 'web', redirect_uri: OTP_CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
      await client.get(`${R()}/protocol/openid-connect/auth?${query}`);
      return client.get(`${R()}/login-actions/reset-credentials`);
    };
    const built = await resetPage();
    expect(built.status).toBe(200);
    const resetForm = /<form[^>]*action="[^"]*login-actions\/reset-credentials"/;
    expect(built.text).toMatch(resetForm);
    await copy('reset credentials', 'no choose user');
    ok(await call('DELETE', `/authentication/executions/${(await execution('no choose user', 'reset-credentials-choose-user')).id}`));
    ok(await call('PUT', '', { resetCredentialsFlow: 'no choose user' }));
    try {
      const page = await resetPage();
      expect(page.status).toBe(200);
      expect(textOf(page.text, 'page-message')).toContain('receive an e-mail');
      expect(page.text).not.toMatch(resetForm);
    } finally {
      ok(await call('PUT', '', { resetCredentialsFlow: 'reset credentials' }));
    }
  });

  describe('registration through the flow runner', () => {
    const register = async (fields: Record<string, string>) => {
      const client = new FormClient(t.url);
      const query = new URLSearchParams({ client_id: 'web', redirect_uri: OTP_CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
      const page = await client.get(`${R()}/protocol/openid-connect/registrations?${query}`);
      expect(page.status).toBe(200);
      return client.post(`${R()}/login-actions/registration`, { firstName: 'Reg', lastName: 'User', session_code: inputValue(page.text, 'session_code')!, ...fields });
    };
    const usersNamed = async (username: string) => (await call('GET', `/users?username=${username}&exact=true`)).body as { id: string }[];

    beforeAll(async () => ok(await call('PUT', '', { registrationAllowed: true })));

    it('refuses a duplicate username with nothing written, and shows every form action\'s errors of one post together', async () => {
      const first = await register({ username: 'twin', email: 'twin@example.com', password: 'Twin-pass-1', 'password-confirm': 'Twin-pass-1' });
      expect(first.status).toBe(302);
      const [twin] = await usersNamed('twin');
      const again = await register({ username: 'twin', email: 'twin2@example.com', password: 'Twin-pass-2', 'password-confirm': 'Twin-pass-2' });
      expect(again.status).toBe(400);
      expect(textOf(again.text, 'input-error-username')).toBe('Username already exists.');
      expect(await usersNamed('twin')).toEqual([twin]);
      expect(((await call('GET', '/users?email=twin2@example.com')).body as unknown[]).length).toBe(0);
      expect(await grantWorks('twin', 'Twin-pass-2')).toBe(false);
      // registration-user-creation and registration-password-action both refused the same post: both are shown.
      const both = await register({ username: 'twin', email: 'not-an-address', password: 'One-pass-1', 'password-confirm': 'Other-pass-1' });
      expect(both.status).toBe(400);
      expect(textOf(both.text, 'input-error-email')).toBe('Invalid email address.');
      expect(textOf(both.text, 'input-error-password-confirm')).toBeTruthy();
    });

    it("honours a copy whose password action is DISABLED: the user is registered without a password, as Keycloak's form does", async () => {
      await copy('registration', 'reg without password');
      await setRequirement('reg without password', 'registration-password-action', 'DISABLED');
      ok(await call('PUT', '', { registrationFlow: 'reg without password' }));
      try {
        const done = await register({ username: 'nopass', email: 'nopass@example.com', password: '', 'password-confirm': 'ignored' });
        expect(done.status).toBe(302);
        const [user] = await usersNamed('nopass');
        const credentials = (await call('GET', `/users/${user.id}/credentials`)).body as { type: string }[];
        expect(credentials.map((c) => c.type)).not.toContain('password');
      } finally {
        ok(await call('PUT', '', { registrationFlow: 'registration' }));
      }
      // The built-in flow asks for the password again.
      expect((await register({ username: 'nopass2', email: 'nopass2@example.com', password: '', 'password-confirm': '' })).status).toBe(400);
      expect(await usersNamed('nopass2')).toEqual([]);
    });
  });

  it('conditional-user-attribute with include_group_attributes reads the attribute from the groups above the user', async () => {
    const user = await newOtpUser(r);
    const app = await withOtp(r, user);
    ok(await call('POST', '/groups', { name: 'staff', attributes: { mfa: ['yes'] } }));
    const staff = ((await call('GET', '/groups?search=staff')).body as { id: string }[])[0];
    ok(await call('POST', `/groups/${staff.id}/children`, { name: 'ops' }));
    const ops = ((await call('GET', `/groups/${staff.id}/children`)).body as { id: string; name: string }[]).find((g) => g.name === 'ops')!;
    ok(await call('PUT', `/users/${user.id}/groups/${ops.id}`));

    await copy('direct grant', 'attr grant');
    const subflow = 'attr grant Direct Grant - Conditional OTP';
    ok(await call('POST', `/authentication/flows/${encodeURIComponent(subflow)}/executions/execution`, { provider: 'conditional-user-attribute' }));
    await setRequirement(subflow, 'conditional-user-attribute', 'REQUIRED');
    await setRequirement(subflow, 'conditional-user-configured', 'DISABLED');
    const condition = await execution(subflow, 'conditional-user-attribute');
    ok(await call('POST', `/authentication/executions/${condition.id}/config`, { alias: 'mfa by group', config: { attribute_name: 'mfa', attribute_expected_value: 'yes' } }));
    const web = ((await call('GET', '/clients?clientId=web')).body as { id: string }[])[0];
    const flowId = ((await call('GET', '/authentication/flows')).body as { id: string; alias: string }[]).find((f) => f.alias === 'attr grant')!.id;
    ok(await call('PUT', `/clients/${web.id}`, { ...web, authenticationFlowBindingOverrides: { direct_grant: flowId } }));
    try {
      // Without include_group_attributes the user's own attributes count only: no code asked.
      expect((await passwordGrant(r, user.username)).status).toBe(200);
      const config = (await call('GET', `/authentication/config/${(await execution(subflow, 'conditional-user-attribute')).authenticationConfig}`)).body as Record<string, unknown>;
      ok(await call('PUT', `/authentication/config/${(config as { id: string }).id}`, { ...config, config: { attribute_name: 'mfa', attribute_expected_value: 'yes', include_group_attributes: 'true' } }));
      expect((await passwordGrant(r, user.username)).status).toBe(400);
      expect((await passwordGrant(r, user.username, { otp: app.codes.next() })).status).toBe(200);
    } finally {
      ok(await call('PUT', `/clients/${web.id}`, { ...web, authenticationFlowBindingOverrides: {} }));
    }
  });
});

describe('realms created before reset-otp and first broker login existed (sqlite)', () => {
  const root = mkdtempSync(join(tmpdir(), 'realmgate-flow-migration-'));
  const dbConfig = { REALMGATE_DB_URL: `sqlite:${join(root, 'realmgate.db')}` };
  const added = ['first broker login', 'User creation or linking', 'Handle Existing Account', 'Account verification options', 'Verify Existing Account by Re-authentication', 'First broker login - Conditional OTP', 'Reset - Conditional OTP'];
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('get both at start-up, in Keycloak 26 shape, once', async () => {
    let t = await startServer({ config: dbConfig });
    let token = await adminToken(t.url);
    const aliases = async () => ((await api(t.url, 'GET', '/admin/realms/before/authentication/flows', token)).body as { alias: string }[]).map((f) => f.alias);
    try {
      ok(await api(t.url, 'POST', '/admin/realms', token, { realm: 'before', enabled: true }));
      // As a realm of an earlier version has them: without the new flows, the reset flow without its OTP sub-flow.
      const { db } = t.server.context.storage;
      const flows = await db.selectFrom('auth_flow').select('id').where('alias', 'in', added).execute();
      const ids = flows.map((f) => f.id);
      await db.deleteFrom('auth_execution').where((eb) => eb.or([eb('parent_flow_id', 'in', ids), eb('sub_flow_id', 'in', ids)])).execute();
      await db.deleteFrom('authenticator_config').where('alias', 'in', ['review profile config', 'create unique user config']).execute();
      await db.deleteFrom('auth_flow').where('id', 'in', ids).execute();
    } finally {
      await t.close();
    }
    t = await startServer({ config: dbConfig });
    try {
      token = await adminToken(t.url);
      expect(await aliases()).toContain('first broker login');
      const layout = async (flow: string) =>
        ((await api(t.url, 'GET', `/admin/realms/before/authentication/flows/${encodeURIComponent(flow)}/executions`, token)).body as Execution[]).map((e) => `${e.level}:${e.providerId ?? e.displayName}:${e.requirement}`);
      expect((await layout('reset credentials')).slice(3)).toEqual(['0:Reset - Conditional OTP:CONDITIONAL', '1:conditional-user-configured:REQUIRED', '1:reset-otp:REQUIRED']);
      expect(await layout('first broker login')).toHaveLength(12);
      expect(t.logs.some((l) => l.msg === 'built-in "first broker login" flow added to existing realms' && Number(l.realms) >= 2)).toBe(true);
      const count = (await aliases()).length;
      await t.close();
      t = await startServer({ config: dbConfig });
      token = await adminToken(t.url);
      expect((await aliases()).length).toBe(count);
    } finally {
      await t.close();
    }
  });
});

describe('realms created before the browser flow had identity-provider-redirector (sqlite)', () => {
  const root = mkdtempSync(join(tmpdir(), 'realmgate-redirector-migration-'));
  const dbConfig = { REALMGATE_DB_URL: `sqlite:${join(root, 'realmgate.db')}` };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('storage migration 0030 adds it between auth-cookie and the forms, only where the built-in flow is as it was built', async () => {
    let t = await startServer({ config: dbConfig });
    let token = await adminToken(t.url);
    const call = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);
    const executions = async (realm: string) => (await call('GET', `/${realm}/authentication/flows/browser/executions`)).body as Execution[];
    const topLevel = async (realm: string) => (await executions(realm)).filter((e) => e.level === 0).map((e) => `${e.providerId ?? e.displayName}:${e.requirement}`);
    try {
      for (const realm of ['asbuilt', 'changed']) ok(await call('POST', '', { realm, enabled: true }));
      expect(await topLevel('asbuilt')).toEqual(['auth-cookie:ALTERNATIVE', 'identity-provider-redirector:ALTERNATIVE', 'forms:ALTERNATIVE']);
      // As a realm of an earlier version has it (no redirector, the forms at 20), and the migration not yet run.
      const { db } = t.server.context.storage;
      const flows = (await db.selectFrom('auth_flow').innerJoin('realm', 'realm.id', 'auth_flow.realm_id').select(['auth_flow.id as id', 'realm.name as realm']).where('auth_flow.alias', '=', 'browser').execute()) as { id: string; realm: string }[];
      const ids = flows.map((f) => f.id);
      await db.deleteFrom('auth_execution').where('parent_flow_id', 'in', ids).where('authenticator', '=', 'identity-provider-redirector').execute();
      await db.updateTable('auth_execution').set({ priority: 20 }).where('parent_flow_id', 'in', ids).where('sub_flow_id', 'is not', null).execute();
      // An administrator's choice in one realm: the forms REQUIRED (the cookie then ignored), which the migration leaves.
      const forms = (await executions('changed')).find((e) => e.displayName === 'forms')!;
      ok(await call('PUT', '/changed/authentication/flows/browser/executions', { ...forms, requirement: 'REQUIRED' }));
      expect(await topLevel('changed')).toEqual(['auth-cookie:ALTERNATIVE', 'forms:REQUIRED']);
      // The migration as an upgrade runs it (once, on this database); the restart below reads what it wrote.
      await migrations['0030-browser-flow-idp-redirector'].up(db as never);
    } finally {
      await t.close();
    }
    t = await startServer({ config: dbConfig });
    try {
      token = await adminToken(t.url);
      expect(await topLevel('asbuilt')).toEqual(['auth-cookie:ALTERNATIVE', 'identity-provider-redirector:ALTERNATIVE', 'forms:ALTERNATIVE']);
      expect(await topLevel('master')).toEqual(['auth-cookie:ALTERNATIVE', 'identity-provider-redirector:ALTERNATIVE', 'forms:ALTERNATIVE']);
      expect(await topLevel('changed')).toEqual(['auth-cookie:ALTERNATIVE', 'forms:REQUIRED']);
      // It runs: the migrated realm's login page still shows (no hint, no default provider: the step is attempted).
      const page = await new FormClient(t.url).get(`/realms/asbuilt/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'account-console', redirect_uri: `${t.url}/realms/asbuilt/account/`, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`);
      expect(page.status).toBe(200);
      expect(page.text).toContain('kc-form-login');
    } finally {
      await t.close();
    }
  });
});
