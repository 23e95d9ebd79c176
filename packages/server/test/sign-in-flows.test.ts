import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOtpRealm, newOtpUser, ok, passwordGrant, passwordStep, withOtp, type App, type Realmed } from './support/otp-users.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';
import { textOf } from './support/forms.js';
import { CodeSource } from './support/totp.js';

/**
 * Issue 35, part 1: the flows Keycloak's console builds, run by the one flow runner for the password grant and the
 * login pages, with Keycloak's semantics (checked against Keycloak 26's DefaultAuthenticationFlow; deliberate
 * differences are in the server README, "Sign-in flows"). Users: `holder` has the role `needs-otp` and an
 * authenticator app, `plain` an app and no role, `fresh` the role and no app.
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

describe('sign-in flows as Keycloak runs them', () => {
  let t: TestServer;
  let r: Realmed;
  let holder: { id: string; username: string };
  let plain: { id: string; username: string };
  let fresh: { id: string; username: string };
  let holderApp: App;
  let plainApp: App;

  const path = (rest: string) => `/admin/realms/${r.realm}${rest}`;
  const call = (method: string, rest: string, body?: unknown) => api(t.url, method, path(rest), r.token, body);
  const executions = async (flow: string) => (await call('GET', `/authentication/flows/${encodeURIComponent(flow)}/executions`)).body as Execution[];
  const execution = async (flow: string, name: string) => (await executions(flow)).find((e) => e.displayName === name || e.providerId === name)!;
  const setRequirement = async (flow: string, name: string, requirement: string) =>
    ok(await call('PUT', `/authentication/flows/${encodeURIComponent(flow)}/executions`, { ...(await execution(flow, name)), requirement }));
  const addStep = (flow: string, provider: string) => call('POST', `/authentication/flows/${encodeURIComponent(flow)}/executions/execution`, { provider });
  const flowId = async (alias: string) => ((await call('GET', '/authentication/flows')).body as { id: string; alias: string }[]).find((f) => f.alias === alias)!.id;
  const copy = async (from: string, to: string) => ok(await call('POST', `/authentication/flows/${encodeURIComponent(from)}/copy`, { newName: to }));
  /** Adds `conditional-user-role` (role needs-otp) to a conditional sub-flow, in place of its conditional-user-configured. */
  const conditionByRole = async (subflow: string) => {
    ok(await addStep(subflow, 'conditional-user-role'));
    const role = await execution(subflow, 'conditional-user-role');
    await setRequirement(subflow, 'conditional-user-role', 'REQUIRED');
    ok(await call('POST', `/authentication/executions/${role.id}/config`, { alias: `${subflow} role`, config: { condUserRole: 'needs-otp' } }));
    await setRequirement(subflow, 'conditional-user-configured', 'DISABLED');
  };
  const overrideDirectGrant = async (flow: string | null) => {
    const web = ((await call('GET', '/clients?clientId=web')).body as { id: string }[])[0];
    ok(await call('PUT', `/clients/${web.id}`, { ...web, authenticationFlowBindingOverrides: { direct_grant: flow === null ? '' : await flowId(flow) } }));
  };

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_BRUTE_FORCE_IP_MAX_FAILURES: '100000' } });
    r = await newOtpRealm(t, await adminToken(t.url));
    ok(await call('POST', '/roles', { name: 'needs-otp' }));
    const role = (await call('GET', '/roles/needs-otp')).body;
    [holder, plain, fresh] = [await newOtpUser(r), await newOtpUser(r), await newOtpUser(r)];
    for (const user of [holder, fresh]) ok(await call('POST', `/users/${user.id}/role-mappings/realm`, [role]));
    holderApp = await withOtp(r, holder);
    plainApp = await withOtp(r, plain);

    // A direct-grant copy whose OTP sub-flow is entered by role (the console's "Condition - user role").
    await copy('direct grant', 'role grant');
    await conditionByRole('role grant Direct Grant - Conditional OTP');
    // A browser copy likewise, bound as the realm's browser flow.
    await copy('browser', 'role browser');
    await conditionByRole('role browser Browser - Conditional OTP');
    ok(await call('PUT', '', { browserFlow: 'role browser' }));
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('the password grant', () => {
    it('runs the client override: a conditional sub-flow by role asks the role holder for a code, not the others', async () => {
      // The realm's direct grant asks everyone with an app for a code.
      expect((await passwordGrant(r, plain.username)).status).toBe(400);
      await overrideDirectGrant('role grant');
      try {
        expect(await passwordGrant(r, holder.username)).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
        expect((await passwordGrant(r, holder.username, { otp: holderApp.wrongCode() })).status).toBe(400);
        expect((await passwordGrant(r, holder.username, { otp: holderApp.codes.next() })).status).toBe(200);
        expect((await passwordGrant(r, plain.username)).status).toBe(200);
        // The role holder without an app: the flow requires what the user has not set up (Keycloak's
        // CREDENTIAL_SETUP_REQUIRED), and a grant its flow refuses is a 400, as Keycloak's.
        expect(await passwordGrant(r, fresh.username)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
        // The password is still checked first, and answered as Keycloak's ValidatePassword answers it.
        expect((await passwordGrant(r, plain.username, { password: 'wrong' })).status).toBe(400);
      } finally {
        await overrideDirectGrant(null);
      }
    });

    it('honours DISABLED, and ignores an ALTERNATIVE sub-flow beside REQUIRED steps as Keycloak does', async () => {
      await overrideDirectGrant('role grant');
      const subflow = 'role grant Direct Grant - Conditional OTP';
      try {
        await setRequirement('role grant', subflow, 'DISABLED');
        expect((await passwordGrant(r, holder.username)).status).toBe(200);
        await setRequirement('role grant', subflow, 'ALTERNATIVE');
        expect((await passwordGrant(r, holder.username)).status).toBe(200);
        expect(t.logs.find((l) => String(l.msg).includes('the alternatives are ignored') && l.flow === 'role grant')).toMatchObject({ realm: r.realm });
        await setRequirement('role grant', subflow, 'REQUIRED');
        // REQUIRED outright: conditions do not count outside a CONDITIONAL sub-flow, so everyone is asked.
        expect((await passwordGrant(r, plain.username)).status).toBe(400);
        expect((await passwordGrant(r, plain.username, { otp: plainApp.codes.next() })).status).toBe(200);
      } finally {
        await setRequirement('role grant', subflow, 'CONDITIONAL');
        await overrideDirectGrant(null);
      }
    });

    it('refuses everyone when the OTP step of a conditional OTP sub-flow is DISABLED (the sub-flow cannot pass), as Keycloak does', async () => {
      await copy('direct grant', 'no-code grant');
      await setRequirement('no-code grant Direct Grant - Conditional OTP', 'direct-grant-validate-otp', 'DISABLED');
      await overrideDirectGrant('no-code grant');
      try {
        expect(await passwordGrant(r, plain.username, { otp: plainApp.codes.next() })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
        expect((await passwordGrant(r, fresh.username)).status).toBe(400);
      } finally {
        await overrideDirectGrant(null);
      }
    });
  });

  describe('the login pages', () => {
    it('a conditional sub-flow by role: the role holder is asked for a code, a user without the role is not', async () => {
      const asked = await passwordStep(r, holder.username);
      expect(asked.page.status, asked.page.text.slice(-1500)).toBe(200);
      expect(asked.page.text).toContain('name="otp"');
      expect((await asked.post('login-otp', { otp: holderApp.wrongCode() })).status).toBe(401);
      expect((await asked.post('login-otp', { otp: holderApp.codes.next() })).status).toBe(302);
      expect((await passwordStep(r, plain.username)).page.status).toBe(302);
      // The role holder without an app sets one up (the OTP form's setRequiredActions: CONFIGURE_TOTP).
      const setup = await passwordStep(r, fresh.username);
      expect(setup.page.status).toBe(200);
      expect(setup.page.text).toContain('kc-totp-secret-key');
      expect(((await call('GET', `/users/${fresh.id}`)).body as { requiredActions: string[] }).requiredActions).toContain('CONFIGURE_TOTP');
    });

    it("with CONFIGURE_TOTP disabled in the realm, a required code the user has not set up refuses the sign-in (Keycloak's areRequiredActionsEnabled)", async () => {
      const late = await newOtpUser(r);
      ok(await call('POST', `/users/${late.id}/role-mappings/realm`, [(await call('GET', '/roles/needs-otp')).body]));
      const action = (await call('GET', '/authentication/required-actions/CONFIGURE_TOTP')).body as Record<string, unknown>;
      ok(await call('PUT', '/authentication/required-actions/CONFIGURE_TOTP', { ...action, enabled: false }));
      try {
        const refused = await passwordStep(r, late.username);
        expect(refused.page.status).toBe(400);
        expect(refused.page.text).toContain('Cannot sign in');
        expect(((await call('GET', `/users/${late.id}`)).body as { requiredActions: string[] }).requiredActions).toEqual([]);
      } finally {
        ok(await call('PUT', '/authentication/required-actions/CONFIGURE_TOTP', { ...action, enabled: true }));
      }
    });

    it('a step set to DISABLED is not run, and an ALTERNATIVE one beside a REQUIRED step is ignored', async () => {
      const subflow = 'role browser Browser - Conditional OTP';
      try {
        await setRequirement('role browser forms', subflow, 'DISABLED');
        expect((await passwordStep(r, holder.username)).page.status).toBe(302);
        await setRequirement('role browser forms', subflow, 'ALTERNATIVE');
        expect((await passwordStep(r, holder.username)).page.status).toBe(302);
      } finally {
        await setRequirement('role browser forms', subflow, 'CONDITIONAL');
      }
      expect((await passwordStep(r, holder.username)).page.status).toBe(200);
    });

    it('the SSO session is auth-cookie: taken where the flow has it enabled, not where it is DISABLED', async () => {
      const signedIn = await passwordStep(r, plain.username);
      expect(signedIn.page.status).toBe(302);
      expect((await signedIn.client.get(signedIn.authPath)).status).toBe(302);
      await setRequirement('role browser', 'auth-cookie', 'DISABLED');
      try {
        const again = await signedIn.client.get(signedIn.authPath);
        expect(again.status).toBe(200);
        expect(again.text).toContain('name="password"');
      } finally {
        await setRequirement('role browser', 'auth-cookie', 'ALTERNATIVE');
      }
      expect((await signedIn.client.get(signedIn.authPath)).status).toBe(302);
    });

    it('an ALTERNATIVE pair: the first alternative that passes is enough (the password, then no code)', async () => {
      // Keycloak's console: a browser flow naming the user first, then a sub-flow of two alternatives.
      ok(await call('POST', '/authentication/flows', { alias: 'pair browser', providerId: 'basic-flow', topLevel: true, builtIn: false, description: '' }));
      ok(await addStep('pair browser', 'auth-username-form'));
      await setRequirement('pair browser', 'auth-username-form', 'REQUIRED');
      ok(await call('POST', '/authentication/flows/pair%20browser/executions/flow', { alias: 'password or code', type: 'basic-flow', provider: 'registration-page-form', description: '' }));
      await setRequirement('pair browser', 'password or code', 'REQUIRED');
      for (const provider of ['auth-password-form', 'auth-otp-form']) {
        ok(await addStep('password or code', provider));
        await setRequirement('password or code', provider, 'ALTERNATIVE');
      }
      ok(await call('PUT', '', { browserFlow: 'pair browser' }));
      try {
        expect((await passwordStep(r, holder.username)).page.status).toBe(302);
        expect((await passwordStep(r, holder.username, 'wrong')).page.status).toBe(401);
        expect((await passwordStep(r, 'nobody-here', 'wrong')).page.status).toBe(401);
      } finally {
        ok(await call('PUT', '', { browserFlow: 'role browser' }));
      }
    });

    it('refuses the sign-in when the OTP form of the conditional OTP sub-flow is DISABLED, as Keycloak does', async () => {
      await copy('browser', 'no-code browser');
      await setRequirement('no-code browser Browser - Conditional OTP', 'auth-otp-form', 'DISABLED');
      ok(await call('PUT', '', { browserFlow: 'no-code browser' }));
      try {
        const refused = await passwordStep(r, plain.username);
        expect(refused.page.status).toBe(400);
        expect(refused.page.text).toContain('Cannot sign in');
      } finally {
        ok(await call('PUT', '', { browserFlow: 'role browser' }));
      }
    });
  });

  describe('bad input in flow editing: 400 naming the problem, nothing written', () => {
    it('an unknown provider id', async () => {
      const before = await executions('role browser');
      const refused = await addStep('role browser forms', 'no-such-authenticator');
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('no-such-authenticator');
      expect(await executions('role browser')).toEqual(before);
    });

    it('a condition outside a conditional sub-flow', async () => {
      const before = await executions('role browser');
      for (const flow of ['role browser', 'role browser forms']) {
        const refused = await addStep(flow, 'conditional-user-role');
        expect(refused.status).toBe(400);
        expect(JSON.stringify(refused.body)).toContain('conditional-user-role');
        expect(JSON.stringify(refused.body)).toContain(flow);
      }
      expect(await executions('role browser')).toEqual(before);
    });

    it('a config on a step that takes none', async () => {
      const cookie = await execution('role browser', 'auth-cookie');
      const refused = await call('POST', `/authentication/executions/${cookie.id}/config`, { alias: 'cookie settings', config: { x: '1' } });
      expect(refused.status).toBe(400);
      expect((refused.body as { errorMessage: string }).errorMessage).toBe('config: "auth-cookie" takes no configuration');
      expect((await execution('role browser', 'auth-cookie')).authenticationConfig).toBeUndefined();
      expect((await call('GET', '/authentication/config/cookie%20settings')).status).not.toBe(200);
    });

    it('a flow that loops into itself (a realm file)', async () => {
      const realm = `loop-${Date.now()}`;
      const step = (flowAlias: string, priority: number) => ({ authenticatorFlow: true, flowAlias, requirement: 'REQUIRED', priority, userSetupAllowed: false });
      const refused = await api(t.url, 'POST', '/admin/realms', r.token, {
        realm,
        enabled: true,
        authenticationFlows: [
          { alias: 'top', providerId: 'basic-flow', topLevel: true, builtIn: false, authenticationExecutions: [step('one', 10)] },
          { alias: 'one', providerId: 'basic-flow', topLevel: false, builtIn: false, authenticationExecutions: [step('two', 10)] },
          { alias: 'two', providerId: 'basic-flow', topLevel: false, builtIn: false, authenticationExecutions: [step('one', 10)] },
        ],
      });
      expect(refused.status).toBe(400);
      expect(JSON.stringify(refused.body)).toContain('loop into itself');
      expect((await api(t.url, 'GET', `/admin/realms/${realm}`, r.token)).status).toBe(404);
    });
  });

  describe('the same copies imported from a realm file (as Keycloak exports them)', () => {
    it('a browser copy bound to the realm and a direct-grant copy bound as a client override, both by role', async () => {
      const realm = `role-file-${Date.now()}`;
      const secret = 'kX8rQ2mZ7vL4pN9wT3yB';
      const otp = {
        type: 'otp',
        userLabel: 'phone',
        secretData: JSON.stringify({ value: secret }),
        credentialData: JSON.stringify({ subType: 'totp', digits: 6, counter: 0, period: 30, algorithm: 'HmacSHA1' }),
      };
      const credentials = [{ type: 'password', value: 'Otp-user-password-7' }, otp];
      const step = (authenticator: string, requirement: string, priority: number, config?: string) => ({
        authenticator,
        authenticatorFlow: false,
        requirement,
        priority,
        userSetupAllowed: false,
        ...(config ? { authenticatorConfig: config } : {}),
      });
      const sub = (flowAlias: string, requirement: string, priority: number) => ({ authenticatorFlow: true, flowAlias, requirement, priority, userSetupAllowed: false });
      const flow = (id: string, alias: string, topLevel: boolean, authenticationExecutions: unknown[]) => ({ id, alias, description: '', providerId: 'basic-flow', topLevel, builtIn: false, authenticationExecutions });
      const imported = await api(t.url, 'POST', '/admin/realms', r.token, {
        realm,
        enabled: true,
        otpPolicyLookAheadWindow: 3,
        browserFlow: 'file browser',
        roles: { realm: [{ name: 'needs-otp' }] },
        authenticationFlows: [
          flow('f1', 'file browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), sub('file forms', 'ALTERNATIVE', 20)]),
          flow('f2', 'file forms', false, [step('auth-username-password-form', 'REQUIRED', 10), sub('file browser otp', 'CONDITIONAL', 20)]),
          flow('f3', 'file browser otp', false, [step('conditional-user-role', 'REQUIRED', 10, 'needs otp'), step('auth-otp-form', 'REQUIRED', 20)]),
          flow('f4', 'file grant', true, [step('direct-grant-validate-username', 'REQUIRED', 10), step('direct-grant-validate-password', 'REQUIRED', 20), sub('file grant otp', 'CONDITIONAL', 30)]),
          flow('f5', 'file grant otp', false, [step('conditional-user-role', 'REQUIRED', 10, 'needs otp grant'), step('direct-grant-validate-otp', 'REQUIRED', 20)]),
        ],
        authenticatorConfig: [
          { alias: 'needs otp', config: { condUserRole: 'needs-otp', negate: 'false' } },
          { alias: 'needs otp grant', config: { condUserRole: 'needs-otp' } },
        ],
        clients: [{ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['http://127.0.0.1:9/cb'], authenticationFlowBindingOverrides: { direct_grant: 'f4' } }],
        users: [
          { username: 'holder', enabled: true, realmRoles: ['needs-otp'], credentials },
          { username: 'plain', enabled: true, credentials },
        ],
      });
      expect(imported.status, JSON.stringify(imported.body)).toBe(201);
      const fileRealm = { t, token: r.token, realm };
      const codes = new CodeSource(Buffer.from(secret, 'utf8'), { window: 3 });
      expect((await passwordGrant(fileRealm, 'holder')).status).toBe(400);
      expect((await passwordGrant(fileRealm, 'holder', { otp: codes.next() })).status).toBe(200);
      expect((await passwordGrant(fileRealm, 'plain')).status).toBe(200);
      const asked = await passwordStep(fileRealm, 'holder');
      expect(textOf(asked.page.text, 'page-title')).toContain('one-time code');
      expect((await asked.post('login-otp', { otp: codes.next() })).status).toBe(302);
      expect((await passwordStep(fileRealm, 'plain')).page.status).toBe(302);
    });
  });
});
