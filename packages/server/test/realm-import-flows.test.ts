import KcAdminClient from '@keycloak/keycloak-admin-client';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { step, subflow, type Execution } from './support/flow-files.js';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';
import type { Realm, User } from '../src/model/types.js';

/**
 * Issue 16: a realm file's flows are kept as the file defines them; a step whose provider this server lacks is
 * imported and shown as such, and never skipped where the flow needs it. A binding to a flow that cannot run is not
 * taken (the built-in flow stays bound, the report says so by JSON path), the admin API refuses to bind one, and a
 * sign-in through one that ends up bound anyway is refused. Keycloak's built-in flows in the file give the realm's
 * own what can be kept (requirements, configs) and the rest is named.
 */

const PASSWORD = 'Ursula-pass-1';
/** Never contacted: the tests read where the server redirects and do not follow. */
const CALLBACK = 'http://127.0.0.1:9/cb';
const NOT_IMPORTED = 'realm import: parts of the file are not imported';
const KEPT_AS_DATA = 'realm import: parts of the file are kept as data, not used for sign-in';

const flow = (alias: string, topLevel: boolean, builtIn: boolean, authenticationExecutions: Execution[]) => ({ alias, description: `${alias} of the file`, providerId: 'basic-flow', topLevel, builtIn, authenticationExecutions });

/** A realm file as Keycloak exports one: two flows of its own that use providers Realmgate does not have, and Keycloak's built-in flows as an administrator edited them. */
function realmFile(realm: string, bindings: Record<string, string>) {
  return {
    realm,
    enabled: true,
    registrationFlow: 'registration',
    resetCredentialsFlow: 'reset credentials',
    clientAuthenticationFlow: 'clients',
    dockerAuthenticationFlow: 'docker auth',
    firstBrokerLoginFlow: 'first broker login',
    directGrantFlow: 'direct grant',
    ...bindings,
    clients: [{ clientId: 'web', publicClient: true, standardFlowEnabled: true, directAccessGrantsEnabled: true, redirectUris: [CALLBACK] }],
    users: [{ username: 'ursula', enabled: true, email: 'ursula@example.com', emailVerified: true, firstName: 'Ursula', lastName: 'U', credentials: [{ type: 'password', value: PASSWORD, temporary: false }] }],
    authenticationFlows: [
      // [0], [1]: a browser flow whose forms REQUIRE a custom MFA authenticator (a Keycloak extension).
      flow('mfa browser', true, false, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('mfa browser forms', 'ALTERNATIVE', 20)]),
      flow('mfa browser forms', false, false, [step('auth-username-password-form', 'REQUIRED', 10), step('custom-mfa', 'REQUIRED', 20, { authenticatorConfig: 'custom mfa settings' })]),
      // [2], [3]: a browser flow with an identity-provider picker as one ALTERNATIVE beside the forms.
      flow('picker browser', true, false, [step('auth-cookie', 'ALTERNATIVE', 10), step('custom-idp-picker', 'ALTERNATIVE', 20), subflow('picker browser forms', 'ALTERNATIVE', 30)]),
      flow('picker browser forms', false, false, [step('auth-username-password-form', 'REQUIRED', 10)]),
      // [4]…[10]: Keycloak's built-in flows: the direct grant's OTP switched off, a config on the OTP form.
      flow('browser', true, true, [step('auth-cookie', 'ALTERNATIVE', 10), step('auth-spnego', 'DISABLED', 20), step('identity-provider-redirector', 'ALTERNATIVE', 25), subflow('forms', 'ALTERNATIVE', 30)]),
      flow('forms', false, true, [step('auth-username-password-form', 'REQUIRED', 10), subflow('Browser - Conditional OTP', 'CONDITIONAL', 20)]),
      flow('Browser - Conditional OTP', false, true, [step('conditional-user-configured', 'REQUIRED', 10), step('auth-otp-form', 'REQUIRED', 20, { authenticatorConfig: 'otp form settings' })]),
      flow('direct grant', true, true, [step('direct-grant-validate-username', 'REQUIRED', 10), step('direct-grant-validate-password', 'REQUIRED', 20), subflow('Direct Grant - Conditional OTP', 'DISABLED', 30)]),
      flow('Direct Grant - Conditional OTP', false, true, [step('conditional-user-configured', 'REQUIRED', 10), step('direct-grant-validate-otp', 'REQUIRED', 20)]),
      flow('first broker login', true, true, [step('idp-review-profile', 'REQUIRED', 10, { authenticatorConfig: 'review profile config' }), subflow('User creation or linking', 'REQUIRED', 20)]),
      flow('User creation or linking', false, true, [step('idp-create-user-if-unique', 'ALTERNATIVE', 10)]),
    ],
    authenticatorConfig: [
      { alias: 'custom mfa settings', config: { 'mfa.channel': 'sms' } },
      { alias: 'otp form settings', config: { note: 'kept' } },
      { alias: 'review profile config', config: { 'update.profile.on.first.login': 'missing' } },
      { alias: 'left over', config: {} },
    ],
  };
}

/** What both files' imports name about Keycloak's built-in flows and the configs, before their bindings. */
const BUILT_IN_REPORT = [
  `realm.authenticationFlows[4].authenticationExecutions[1] (authenticator "auth-spnego", DISABLED): not in Realmgate's built-in "browser" flow`,
  `realm.authenticatorConfig[3] ("left over"): no execution of the file uses it`,
];
const MISSING_STEPS = [
  'realm.authenticationFlows[1].authenticationExecutions[1] (authenticator "custom-mfa", REQUIRED, is not installed: kept, not run; a flow that needs it cannot run)',
  'realm.authenticationFlows[2].authenticationExecutions[1] (authenticator "custom-idp-picker", ALTERNATIVE, is not installed: kept, not run; a flow that needs it cannot run)',
];
const MFA_BINDING =
  'realm.browserFlow: "mfa browser" cannot run (realm.authenticationFlows[1].authenticationExecutions[1]: authenticator "custom-mfa" is not installed); the built-in "browser" binding was kept';

/** The code flow over the login form, as a browser without JavaScript: the page, the password, the code, the tokens. */
async function formLogin(t: TestServer, realm: string, username: string, password = PASSWORD) {
  const client = new FormClient(t.url);
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'st' });
  const page = await client.get(`/realms/${realm}/protocol/openid-connect/auth?${query}`);
  if (page.status !== 200) return { status: page.status, step: 'page' as const };
  const done = await client.post(`/realms/${realm}/login-actions/authenticate`, { username, password, session_code: inputValue(page.text, 'session_code')! });
  if (done.status !== 302) return { status: done.status, step: 'password' as const };
  const code = new URL(done.location!).searchParams.get('code');
  const tokens = await tokenRequest(t.url, realm, { grant_type: 'authorization_code', client_id: 'web', code: code!, redirect_uri: CALLBACK, code_verifier: verifier });
  return { status: tokens.status, step: 'tokens' as const, tokens: tokens.body };
}

const layout = async (kc: KcAdminClient, flowAlias: string) =>
  (await kc.authenticationManagement.getExecutions({ flow: flowAlias })).map((e) => `${e.level}:${e.authenticationFlow ? e.displayName : e.providerId}:${e.requirement}`);

const reportOf = (t: TestServer, message: string, realm: string) => t.logs.filter((l) => l.msg === message && l.realm === realm);

describe.each(httpDatabases)('realm import of flows with providers Realmgate lacks (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const inRealm = async <T>(realm: string, work: () => Promise<T>): Promise<T> => {
    kc.setConfig({ realmName: realm });
    try {
      return await work();
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create(realmFile('fortress', { browserFlow: 'mfa browser' }));
    await kc.realms.create(realmFile('meadow', { browserFlow: 'picker browser', directGrantFlow: 'picker browser' }));
  }, 60_000);
  afterAll(() => t?.close());

  it('keeps a flow as the file defines it, the missing step shown as not installed; its binding is not taken, and the report says so once', async () => {
    expect((await kc.realms.findOne({ realm: 'fortress' }))!.browserFlow).toBe('browser');
    expect(reportOf(t, NOT_IMPORTED, 'fortress').map((l) => l.notImported)).toEqual([[...BUILT_IN_REPORT, MFA_BINDING]]);
    expect(reportOf(t, KEPT_AS_DATA, 'fortress').map((l) => l.keptAsData)).toEqual([MISSING_STEPS]);
    await inRealm('fortress', async () => {
      expect(await layout(kc, 'mfa browser')).toEqual(['0:auth-cookie:ALTERNATIVE', '0:mfa browser forms:ALTERNATIVE', '1:auth-username-password-form:REQUIRED', '1:custom-mfa:REQUIRED']);
      const missing = (await kc.authenticationManagement.getExecutions({ flow: 'mfa browser' })).find((e) => e.providerId === 'custom-mfa')!;
      // The admin console shows the provider id as the step's name, and what its absence does.
      expect(missing).toMatchObject({ displayName: 'custom-mfa', requirement: 'REQUIRED', requirementChoices: ['REQUIRED', 'DISABLED'], configurable: false, level: 1, index: 1 });
      expect(missing.description).toMatch(/not installed.*sign-ins through it are refused/);
      const config = await kc.authenticationManagement.getConfig({ id: missing.authenticationConfig! });
      expect(config).toMatchObject({ alias: 'custom mfa settings', config: { 'mfa.channel': 'sms' } });
      // The console's flow list: the flow is there, used by nothing.
      const flows = await kc.authenticationManagement.getFlows();
      expect(flows.find((f) => f.alias === 'mfa browser')).toMatchObject({ builtIn: false, topLevel: true, description: 'mfa browser of the file' });
    });
  });

  it('lets the realm’s users sign in through the built-in browser flow (form login), and those a partial import adds', async () => {
    const signedIn = await formLogin(t, 'fortress', 'ursula');
    expect(signedIn, JSON.stringify(signedIn)).toMatchObject({ step: 'tokens', status: 200 });
    const result = await kc.realms.partialImport({
      realm: 'fortress',
      rep: { ifResourceExists: 'FAIL', users: [{ username: 'petra', enabled: true, email: 'petra@example.com', emailVerified: true, firstName: 'Petra', lastName: 'P', credentials: [{ type: 'password', value: 'Petra-pass-1', temporary: false }] }] } as never,
    });
    expect(result).toMatchObject({ added: 1, notImported: [] });
    expect(await formLogin(t, 'fortress', 'petra', 'Petra-pass-1')).toMatchObject({ step: 'tokens', status: 200 });
    // The partial import leaves the realm's flows and bindings as they are.
    expect((await kc.realms.findOne({ realm: 'fortress' }))!.browserFlow).toBe('browser');
  });

  it('refuses to bind a flow that cannot run through the admin API, a copy of it too, naming the missing step', async () => {
    const refusal = 'realm.browserFlow: "mfa browser" cannot run: authenticator "custom-mfa" (REQUIRED, in flow "mfa browser forms") is not installed';
    await expect(kc.realms.update({ realm: 'fortress' }, { browserFlow: 'mfa browser' })).rejects.toThrow(refusal);
    await expect(kc.realms.update({ realm: 'fortress' }, { browserFlow: 'mfa browser' })).rejects.toMatchObject({ response: { status: 400 } });
    await inRealm('fortress', () => kc.authenticationManagement.copyFlow({ flow: 'mfa browser', newName: 'mfa copy' }));
    await expect(kc.realms.update({ realm: 'fortress' }, { browserFlow: 'mfa copy' })).rejects.toThrow(/"mfa copy" cannot run: authenticator "custom-mfa"/);
    await expect(kc.realms.update({ realm: 'fortress' }, { registrationFlow: 'mfa copy' })).rejects.toMatchObject({ response: { status: 400 } });
    expect((await kc.realms.findOne({ realm: 'fortress' }))!.browserFlow).toBe('browser');
    // The realm's other settings still save; a flow that runs without the missing step (another alternative) binds.
    await kc.realms.update({ realm: 'fortress' }, { displayName: 'Fortress' });
    await kc.realms.update({ realm: 'fortress' }, { browserFlow: 'picker browser' });
    expect((await kc.realms.findOne({ realm: 'fortress' }))!).toMatchObject({ displayName: 'Fortress', browserFlow: 'picker browser' });
    await kc.realms.update({ realm: 'fortress' }, { browserFlow: 'browser' });
    // The administrator switches the missing step off, knowingly: then the copy runs, and binds.
    await inRealm('fortress', async () => {
      const copyStep = (await kc.authenticationManagement.getExecutions({ flow: 'mfa copy' })).find((e) => e.providerId === 'custom-mfa')!;
      await kc.authenticationManagement.updateExecution({ flow: 'mfa copy' }, { ...copyStep, requirement: 'DISABLED' });
      expect(await layout(kc, 'mfa copy')).toContain('1:custom-mfa:DISABLED');
    });
    await kc.realms.update({ realm: 'fortress' }, { browserFlow: 'mfa copy' });
    expect(await formLogin(t, 'fortress', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
    await kc.realms.update({ realm: 'fortress' }, { browserFlow: 'browser' });
  });

  it('a bound flow cannot be edited into one that cannot run', async () => {
    await inRealm('meadow', async () => {
      // meadow binds "picker browser": taking away its forms would leave the picker, which is not installed.
      const forms = (await kc.authenticationManagement.getExecutions({ flow: 'picker browser' })).find((e) => e.displayName === 'picker browser forms')!;
      await expect(kc.authenticationManagement.updateExecution({ flow: 'picker browser' }, { ...forms, requirement: 'DISABLED' })).rejects.toThrow(
        `this change would leave the realm's browserFlow "picker browser" unable to run: authenticator "custom-idp-picker" (ALTERNATIVE, in flow "picker browser") is not installed`,
      );
      expect(await layout(kc, 'picker browser')).toContain('0:picker browser forms:ALTERNATIVE');
      // The same change in a flow nobody binds is the administrator's to make.
      await kc.authenticationManagement.copyFlow({ flow: 'picker browser', newName: 'picker copy' });
      const copyForms = (await kc.authenticationManagement.getExecutions({ flow: 'picker copy' })).find((e) => e.displayName === 'picker copy picker browser forms')!;
      await kc.authenticationManagement.updateExecution({ flow: 'picker copy' }, { ...copyForms, requirement: 'DISABLED' });
      await expect(kc.realms.update({ realm: 'meadow' }, { browserFlow: 'picker copy' })).rejects.toMatchObject({ response: { status: 400 } });
    });
  });

  it('attacker angle: bound behind the API’s back, the flow refuses the sign-in instead of skipping the missing step', async () => {
    const { storage } = t.server.context;
    // The page is shown while the built-in flow is bound; then the binding changes under it (a database edit, an
    // import tool, a package removed from a flow that was bound when it ran).
    const client = new FormClient(t.url);
    const { challenge } = pkce();
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' });
    const page = await client.get(`/realms/fortress/protocol/openid-connect/auth?${query}`);
    expect(page.status).toBe(200);
    const realm = (await storage.realms.byName('fortress'))!;
    await storage.realms.update({ ...realm, browserFlow: 'mfa browser' });
    try {
      const posted = await client.post('/realms/fortress/login-actions/authenticate', { username: 'ursula', password: PASSWORD, session_code: inputValue(page.text, 'session_code')! });
      expect(posted.status).toBe(500);
      expect(posted.location).toBeNull();
      expect(posted.text).not.toContain('custom-mfa');
      // A new login does not get past the page either, and the password grant's own flow is not this one.
      expect(await formLogin(t, 'fortress', 'ursula')).toMatchObject({ step: 'page', status: 500 });
      // A browser opening the sign-in page gets a page saying so, not JSON.
      const opened = await fetch(`${t.url}/realms/fortress/protocol/openid-connect/auth?${query}`, { headers: { accept: 'text/html,application/xhtml+xml' } });
      expect(opened.status).toBe(500);
      expect(opened.headers.get('content-type')).toContain('text/html');
      expect(await opened.text()).toContain('contact the administrator');
      const logged = t.logs.filter((l) => l.msg === 'authentication flow cannot run: a step it requires is not installed; sign-ins through it are refused' && l.realm === 'fortress');
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ level: 50, binding: 'browserFlow', flow: 'mfa browser', subflow: 'mfa browser forms', provider: 'custom-mfa', requirement: 'REQUIRED' });
    } finally {
      await storage.realms.update(realm);
    }
    expect(await formLogin(t, 'fortress', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
  });

  it('binds a flow whose missing step is an ALTERNATIVE beside one that runs: the sign-in takes the other one, and the report names the step', async () => {
    expect((await kc.realms.findOne({ realm: 'meadow' }))!.browserFlow).toBe('picker browser');
    expect(reportOf(t, NOT_IMPORTED, 'meadow').map((l) => l.notImported)).toEqual([
      [...BUILT_IN_REPORT, `realm.directGrantFlow: "picker browser" is not bound (the password grant runs Realmgate's built-in "direct grant" flow); the built-in "direct grant" binding was kept`],
    ]);
    expect(reportOf(t, KEPT_AS_DATA, 'meadow').map((l) => l.keptAsData)).toEqual([MISSING_STEPS]);
    expect(await formLogin(t, 'meadow', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
    const skipped = t.logs.find((l) => l.msg === 'authentication execution skipped: its provider is not installed' && l.realm === 'meadow');
    expect(skipped).toMatchObject({ flow: 'picker browser', provider: 'custom-idp-picker', requirement: 'ALTERNATIVE' });
  });

  /** The steps the flow runner reaches for a user who is set up for everything (every step passes, every condition holds). */
  const stepsRun = async (realm: Realm, entry: 'browser' | 'direct_grant') => {
    const ran: string[] = [];
    const user = { id: 'u', username: 'u' } as User;
    await t.server.context.flows.runSignIn(realm, entry, null, {
      env: null,
      // No SSO session, no identity provider asked for: the cookie and the redirector are attempted, as at a first sign-in.
      authenticator: (id) => ({ id, requiresUser: false, authenticate: async () => (ran.push(id), { status: id === 'auth-cookie' || id === 'identity-provider-redirector' ? 'attempted' : 'success', user }) }),
      condition: (id) => ({ id, matches: async () => true }),
    });
    return ran;
  };

  it("keeps what the file changed in Keycloak's built-in flows where the step exists here: requirements and configs", async () => {
    await inRealm('fortress', async () => {
      expect(await layout(kc, 'direct grant')).toEqual([
        '0:direct-grant-validate-username:REQUIRED',
        '0:direct-grant-validate-password:REQUIRED',
        '0:Direct Grant - Conditional OTP:DISABLED',
        '1:conditional-user-configured:REQUIRED',
        '1:direct-grant-validate-otp:REQUIRED',
      ]);
      const otpForm = (await kc.authenticationManagement.getExecutions({ flow: 'browser' })).find((e) => e.providerId === 'auth-otp-form')!;
      expect(await kc.authenticationManagement.getConfig({ id: otpForm.authenticationConfig! })).toMatchObject({ alias: 'otp form settings', config: { note: 'kept' } });
      expect(await layout(kc, 'browser')).toEqual(['0:auth-cookie:ALTERNATIVE', '0:identity-provider-redirector:ALTERNATIVE', '0:forms:ALTERNATIVE', '1:auth-username-password-form:REQUIRED', '1:Browser - Conditional OTP:CONDITIONAL', '2:conditional-user-configured:REQUIRED', '2:auth-otp-form:REQUIRED']);
      const aliases = (await kc.authenticationManagement.getFlows()).map((f) => f.alias);
      expect(aliases).toEqual(expect.arrayContaining(['browser', 'clients', 'direct grant', 'first broker login', 'registration', 'reset credentials', 'mfa browser', 'picker browser']));
      // The file's first broker login merged into the realm's built-in one (its provisioned config took the file's values).
      const review = (await kc.authenticationManagement.getExecutions({ flow: 'first broker login' })).find((e) => e.providerId === 'idp-review-profile')!;
      expect(await kc.authenticationManagement.getConfig({ id: review.authenticationConfig! })).toMatchObject({ alias: 'review profile config', config: { 'update.profile.on.first.login': 'missing' } });
    });
    // The direct grant no longer asks a user with an authenticator app for a code, as the file says.
    const realm = (await t.server.context.storage.realms.byName('fortress'))!;
    expect(await stepsRun(realm, 'direct_grant')).toEqual(['direct-grant-validate-username', 'direct-grant-validate-password']);
    expect(await stepsRun(realm, 'browser')).toEqual(['auth-cookie', 'identity-provider-redirector', 'auth-username-password-form', 'auth-otp-form']);
  });

  it("maps a Keycloak 26 export's built-in flows onto the realm's own and names the rest", async () => {
    const file = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/keycloak-26.7.3-full-export.json'), 'utf8'));
    await kc.realms.create(file);
    const [report] = reportOf(t, NOT_IMPORTED, 'kc26-full').map((l) => l.notImported as string[]);
    const flows = report.filter((p) => p.startsWith('realm.authenticationFlows'));
    // Keycloak 26's first broker login is the realm's built-in one; only its organization sub-flow is not (Realmgate has none).
    expect(flows.filter((p) => p.startsWith('realm.authenticationFlows[20]'))).toEqual([
      `realm.authenticationFlows[20].authenticationExecutions[2] (sub-flow "First Broker Login - Conditional Organization", CONDITIONAL): not in Realmgate's built-in "first broker login" flow, so it does not run here`,
    ]);
    expect(flows).toContain(`realm.authenticationFlows[11].authenticationExecutions[3] (sub-flow "Organization", ALTERNATIVE): not in Realmgate's built-in "browser" flow, so it does not run here`);
    // Keycloak 26's "Browser - Conditional 2FA" is Realmgate's "Browser - Conditional OTP": its OTP form is taken as the file has it.
    expect(flows).toContain(
      `realm.authenticationFlows[1].authenticationExecutions[1] (authenticator "conditional-credential", REQUIRED, config "browser-conditional-credential"): not in Realmgate's built-in "Browser - Conditional OTP" flow; the flow's other conditions decide`,
    );
    // Sub-flows of what is not kept are named with it, not each on its own.
    expect(flows.some((p) => p.startsWith('realm.authenticationFlows[7] ') || p.startsWith('realm.authenticationFlows[2] '))).toBe(false);
    expect(report.filter((p) => /^realm\.[a-zA-Z]+Flow:/.test(p))).toEqual([]);
    await inRealm('kc26-full', async () => {
      expect(await layout(kc, 'Browser - Conditional OTP')).toEqual(['0:conditional-user-configured:REQUIRED', '0:auth-otp-form:ALTERNATIVE']);
      // Its own copy of the browser flow runs (the missing providers are alternatives and a condition) and is kept whole.
      expect((await layout(kc, 'browser with otp')).filter((l) => l.includes('identity-provider-redirector') || l.includes('organization'))).toEqual([
        '0:identity-provider-redirector:ALTERNATIVE',
        '2:organization:ALTERNATIVE',
      ]);
    });
    await kc.realms.update({ realm: 'kc26-full' }, { browserFlow: 'browser with otp' });
    await kc.realms.update({ realm: 'kc26-full' }, { browserFlow: 'browser' });
  });
});

describe.each(httpDatabases)('--import-realm of a file binding a flow that cannot run (%s)', (database) => {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-import-flows-'));
  let t: TestServer;
  beforeAll(async () => {
    writeFileSync(join(dir, 'fortress.json'), JSON.stringify(realmFile('fortress', { browserFlow: 'mfa browser' })));
    writeFileSync(join(dir, 'meadow.json'), JSON.stringify(realmFile('meadow', { browserFlow: 'picker browser' })));
    t = await startServer({ database, config: { REALMGATE_IMPORT_REALM: dir } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports the realm with the built-in browser flow bound, says which binding was kept, and its users sign in', async () => {
    const [line] = reportOf(t, NOT_IMPORTED, 'fortress');
    expect(String(line.file)).toMatch(/fortress\.json$/);
    expect(line.notImported).toEqual([...BUILT_IN_REPORT, MFA_BINDING]);
    expect(reportOf(t, NOT_IMPORTED, 'meadow').map((l) => l.notImported)).toEqual([BUILT_IN_REPORT]);
    expect(t.logs.filter((l) => l.msg === 'realm imported').map((l) => l.realm).sort()).toEqual(['fortress', 'meadow']);
    const { storage } = t.server.context;
    expect((await storage.realms.byName('fortress'))!.browserFlow).toBe('browser');
    expect((await storage.realms.byName('meadow'))!.browserFlow).toBe('picker browser');
    expect(await formLogin(t, 'fortress', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
    expect(await formLogin(t, 'meadow', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
  });
});

describe('a provider package removed while a bound flow requires its step (sqlite)', () => {
  const root = mkdtempSync(join(tmpdir(), 'realmgate-removed-guard-'));
  const dbConfig = { REALMGATE_DB_URL: `sqlite:${join(root, 'realmgate.db')}` };
  const withGuard = join(root, 'with-guard');
  const withoutGuard = join(root, 'without-guard');
  beforeAll(() => {
    mkdirSync(join(withGuard, 'gone-guard'), { recursive: true });
    mkdirSync(withoutGuard);
    writeFileSync(join(withGuard, 'gone-guard', 'package.json'), JSON.stringify({ name: '@realmgate-test/gone-guard', version: '1.0.0', type: 'module', main: 'index.js' }));
    writeFileSync(
      join(withGuard, 'gone-guard', 'index.js'),
      `export const providers = [{
        kind: 'form-protector', id: 'gone-guard', displayName: 'Gone Guard', requirementChoices: ['REQUIRED', 'DISABLED'], installOn: ['login'],
        create: () => ({ render: () => '<input type="hidden" name="guard" value="1">', verify: ({ submitted }) => (submitted.guard === '1' ? { ok: true } : { ok: false, reason: 'missing', error: 'guard_failed' }) }),
      }];`,
    );
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('refuses sign-ins through it (never skips the step), says so at start-up, and runs again once the administrator disables the step', async () => {
    let t = await startServer({ providersDir: withGuard, config: dbConfig });
    try {
      const kc = await masterAdminClient(t.url);
      await kc.realms.create({ realm: 'old', enabled: true, clients: [{ clientId: 'web', publicClient: true, redirectUris: [CALLBACK] }], users: [{ username: 'ursula', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }] });
    } finally {
      await t.close();
    }
    t = await startServer({ providersDir: withoutGuard, config: dbConfig });
    try {
      const lines = t.logs.filter((l) => l.msg === 'bound authentication flow cannot run: a step it requires is not installed; its sign-ins are refused until the provider is installed or the step disabled');
      expect(lines.map((l) => `${l.realm} ${l.binding} ${l.flow} ${l.subflow} ${l.provider}`).sort()).toEqual(['master browserFlow browser forms gone-guard', 'old browserFlow browser forms gone-guard']);
      expect(await formLogin(t, 'old', 'ursula')).toMatchObject({ step: 'page', status: 500 });
      // The password grant runs its own flow: the administrator still gets in, and switches the step off.
      const kc = await masterAdminClient(t.url, 'old');
      const guard = (await kc.authenticationManagement.getExecutions({ flow: 'browser' })).find((e) => e.providerId === 'gone-guard')!;
      expect(guard).toMatchObject({ displayName: 'gone-guard', requirement: 'REQUIRED', requirementChoices: ['REQUIRED', 'DISABLED'] });
      await kc.authenticationManagement.updateExecution({ flow: 'browser' }, { ...guard, requirement: 'DISABLED' });
      expect(await formLogin(t, 'old', 'ursula')).toMatchObject({ step: 'tokens', status: 200 });
    } finally {
      await t.close();
    }
  });
});
