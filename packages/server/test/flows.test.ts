import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { FormActionContext } from '@realmgate/spi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Realm } from '../src/model/types.js';
import { api, adminToken, httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/** Provider packages written as an operator installs them: one directory each, with a package.json. */
const packages = {
  // A form action whose field name comes from its execution's config, so a test sees the config reach it.
  'flows-test-action': `export const providers = [{
    kind: 'form-action', id: 'test-terms', displayName: 'Test Terms', helpText: 'Requires the terms field.',
    requirementChoices: ['REQUIRED', 'DISABLED'],
    configProperties: [{ name: 'field', label: 'Field', type: 'String', defaultValue: 'accept' }],
    create: () => ({
      validate: ({ form, config }) => {
        const field = config.field ?? 'accept';
        return form[field] === 'yes' ? { ok: true } : { ok: false, error: 'terms_not_accepted', fieldErrors: [{ field, message: 'Accept the terms.' }] };
      },
    }),
  }];`,
  'flows-test-guard': `export const providers = [{
    kind: 'form-protector', id: 'test-guard', displayName: 'Test Guard', requirementChoices: ['REQUIRED', 'DISABLED'],
    installOn: ['login', 'registration', 'reset-credentials'],
    create: () => ({
      render: () => '<input type="hidden" name="guard" value="1">',
      verify: ({ submitted }) => (submitted.guard === '1' ? { ok: true } : { ok: false, reason: 'missing', error: 'guard_failed' }),
    }),
  }];`,
};

function providersDir(names: (keyof typeof packages)[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-flow-providers-'));
  for (const name of names) {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'package.json'), JSON.stringify({ name: `@realmgate-test/${name}`, version: '1.0.0', type: 'module', main: 'index.js' }));
    writeFileSync(join(dir, name, 'index.js'), packages[name]);
  }
  return dir;
}

/** The executions of a flow as `level:provider-or-subflow:requirement`, which shows order and nesting at once. */
async function layout(kc: KcAdminClient, flow: string): Promise<string[]> {
  const executions = await kc.authenticationManagement.getExecutions({ flow });
  return executions.map((e) => `${e.level}:${e.authenticationFlow ? e.displayName : e.providerId}:${e.requirement}`);
}

const formContext = (form: Record<string, string>, config: Record<string, string> = {}): FormActionContext => ({
  realm: { id: 'r', name: 'acme', displayName: null, enabled: true },
  clientId: null,
  form,
  config,
  request: { ipAddress: '127.0.0.1', remoteAddress: '127.0.0.1', forwardedFor: null, realIp: null, userAgent: null },
});

/** On SQLite (issue 36): the flow tables' writes, cascades and unique aliases are checked on both databases by storage-flows.test.ts. */
describe.each(httpDatabases)('authentication flows through the official admin client (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let dir: string;

  const realm = async (): Promise<Realm> => (await t.server.context.storage.realms.byName('acme'))!;
  const ids = (steps: { id: string }[]) => steps.map((s) => s.id);
  const executionOf = async (flow: string, providerId: string) => (await kc.authenticationManagement.getExecutions({ flow })).find((e) => e.providerId === providerId)!;

  beforeAll(async () => {
    dir = providersDir(['flows-test-action', 'flows-test-guard']);
    t = await startServer({ database, providersDir: dir });
    kc = await masterAdminClient(t.url, 'acme');
    await kc.realms.create({ realm: 'acme', enabled: true, adminEventsEnabled: true });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists the realm's built-in top-level flows with Keycloak's names and export representations", async () => {
    const flows = await kc.authenticationManagement.getFlows();
    expect(flows.map((f) => f.alias).sort()).toEqual(['browser', 'clients', 'direct grant', 'first broker login', 'registration', 'reset credentials']);
    expect(flows.every((f) => f.builtIn && f.topLevel)).toBe(true);
    const registration = flows.find((f) => f.alias === 'registration')!;
    expect(registration).toMatchObject({ providerId: 'basic-flow', description: 'Registration flow' });
    expect(registration.authenticationExecutions).toEqual([
      { authenticator: 'registration-page-form', authenticatorFlow: true, autheticatorFlow: true, flowAlias: 'registration form', requirement: 'REQUIRED', priority: 10, userSetupAllowed: false },
    ]);
    const one = await kc.authenticationManagement.getFlow({ flowId: registration.id! });
    expect(one).toEqual(registration);
  });

  it('puts an installed protector, REQUIRED, before the form in the three built-in flows of a new realm', async () => {
    expect(await layout(kc, 'browser')).toEqual([
      '0:auth-cookie:ALTERNATIVE',
      '0:identity-provider-redirector:ALTERNATIVE',
      '0:forms:ALTERNATIVE',
      '1:test-guard:REQUIRED',
      '1:auth-username-password-form:REQUIRED',
      '1:Browser - Conditional OTP:CONDITIONAL',
      '2:conditional-user-configured:REQUIRED',
      '2:auth-otp-form:REQUIRED',
    ]);
    expect(await layout(kc, 'registration')).toEqual([
      '0:registration form:REQUIRED',
      '1:test-guard:REQUIRED',
      '1:registration-user-creation:REQUIRED',
      '1:registration-password-action:REQUIRED',
      '1:registration-recaptcha-action:DISABLED',
      '1:registration-terms-and-conditions:DISABLED',
    ]);
    expect(await layout(kc, 'reset credentials')).toEqual([
      '0:test-guard:REQUIRED',
      '0:reset-credentials-choose-user:REQUIRED',
      '0:reset-credential-email:REQUIRED',
      '0:reset-password:REQUIRED',
      '0:Reset - Conditional OTP:CONDITIONAL',
      '1:conditional-user-configured:REQUIRED',
      '1:reset-otp:REQUIRED',
    ]);
    const { flows } = t.server.context;
    expect(ids((await flows.loginSteps(await realm(), null)).protectors)).toEqual(['test-guard']);
    expect(ids((await flows.resetSteps(await realm())).protectors)).toEqual(['test-guard']);
    const registration = await flows.registrationSteps(await realm());
    expect(ids(registration.protectors)).toEqual(['test-guard']);
    expect(ids(registration.formActions)).toEqual(['registration-user-creation', 'registration-password-action']);
  });

  it('copies a flow deeply, its subflow and configs included, under Keycloak names', async () => {
    const guard = await executionOf('registration', 'test-guard');
    await kc.authenticationManagement.createConfig({ id: guard.id!, alias: 'guard-settings', config: { level: '2' } });
    await kc.authenticationManagement.copyFlow({ flow: 'registration', newName: 'my reg' });

    const executions = await kc.authenticationManagement.getExecutions({ flow: 'my reg' });
    expect(executions.map((e) => [e.level, e.index, e.displayName])).toEqual([
      [0, 0, 'my reg registration form'],
      [1, 0, 'Test Guard'],
      [1, 1, 'Registration User Profile Creation'],
      [1, 2, 'Password Validation'],
      [1, 3, 'reCAPTCHA'],
      [1, 4, 'Terms and conditions'],
    ]);
    expect(executions[0]).toMatchObject({ authenticationFlow: true, providerId: 'registration-page-form', requirementChoices: ['REQUIRED', 'DISABLED'] });
    const copiedGuard = executions[1];
    expect(copiedGuard.authenticationConfig).toBeDefined();
    expect(copiedGuard.authenticationConfig).not.toBe(guard.authenticationConfig);
    expect(await kc.authenticationManagement.getConfig({ id: copiedGuard.authenticationConfig! })).toEqual({
      id: copiedGuard.authenticationConfig,
      alias: 'my reg guard-settings',
      config: { level: '2' },
    });
    const copy = (await kc.authenticationManagement.getFlows()).find((f) => f.alias === 'my reg')!;
    expect(copy).toMatchObject({ builtIn: false, topLevel: true, providerId: 'basic-flow' });

    await expect(kc.authenticationManagement.copyFlow({ flow: 'registration', newName: 'my reg' })).rejects.toMatchObject({ response: { status: 409 } });
    await expect(kc.authenticationManagement.copyFlow({ flow: 'no such flow', newName: 'x' })).rejects.toMatchObject({ response: { status: 404 } });
  });

  it("binds the copy as the realm's registration flow and refuses a binding to a flow that does not exist", async () => {
    await expect(kc.realms.update({ realm: 'acme' }, { registrationFlow: 'nope' })).rejects.toThrow('realm.registrationFlow: no flow "nope" in this realm');
    await expect(kc.realms.update({ realm: 'acme' }, { browserFlow: 'forms' })).rejects.toMatchObject({ response: { status: 400 } });
    await kc.realms.update({ realm: 'acme' }, { registrationFlow: 'my reg' });
    expect((await kc.realms.findOne({ realm: 'acme' }))!.registrationFlow).toBe('my reg');

    const flows = await kc.authenticationManagement.getFlows();
    const bound = flows.find((f) => f.alias === 'my reg')!;
    await expect(kc.authenticationManagement.deleteFlow({ flowId: bound.id! })).rejects.toMatchObject({ response: { status: 400 } });
    const builtIn = flows.find((f) => f.alias === 'browser')!;
    await expect(kc.authenticationManagement.deleteFlow({ flowId: builtIn.id! })).rejects.toMatchObject({ response: { status: 400 } });
  });

  it('adds a provider form action to the copy; the runner follows its requirement, config, priority and deletion', async () => {
    const { flows } = t.server.context;
    const actions = async () => (await flows.registrationSteps(await realm())).formActions;
    const { id } = await kc.authenticationManagement.addExecutionToFlow({ flow: 'my reg registration form', provider: 'test-terms' });
    let execution = await executionOf('my reg', 'test-terms');
    expect(execution).toMatchObject({ id, level: 1, index: 5, requirement: 'DISABLED', requirementChoices: ['REQUIRED', 'DISABLED'], configurable: true, displayName: 'Test Terms' });
    expect(ids(await actions())).toEqual(['registration-user-creation', 'registration-password-action']);

    await kc.authenticationManagement.updateExecution({ flow: 'my reg' }, { ...execution, requirement: 'REQUIRED' });
    expect(ids(await actions())).toEqual(['registration-user-creation', 'registration-password-action', 'test-terms']);
    await expect(kc.authenticationManagement.updateExecution({ flow: 'my reg' }, { ...execution, requirement: 'ALTERNATIVE' })).rejects.toThrow(/requirement: ALTERNATIVE is not one of REQUIRED, DISABLED/);

    const { id: configId } = await kc.authenticationManagement.createConfig({ id, alias: 'terms', config: { field: 'tos' } });
    expect(await kc.authenticationManagement.getConfig({ id: configId! })).toEqual({ id: configId, alias: 'terms', config: { field: 'tos' } });
    await kc.authenticationManagement.updateConfig({ id: configId!, alias: 'terms', config: { field: 'agree' } });
    const terms = (await actions()).find((a) => a.id === 'test-terms')!;
    expect(terms).toMatchObject({ executionId: id, config: { field: 'agree' } });
    expect(await terms.instance.validate(formContext({ agree: 'no' }, terms.config))).toEqual({
      ok: false,
      error: 'terms_not_accepted',
      fieldErrors: [{ field: 'agree', message: 'Accept the terms.' }],
    });
    execution = await executionOf('my reg', 'test-terms');
    expect(execution).toMatchObject({ authenticationConfig: configId, alias: 'terms' });

    await kc.authenticationManagement.raisePriorityExecution({ id: id! });
    expect(ids(await actions())).toEqual(['registration-user-creation', 'registration-password-action', 'test-terms']);
    await kc.authenticationManagement.raisePriorityExecution({ id: id! });
    await kc.authenticationManagement.raisePriorityExecution({ id: id! });
    expect(ids(await actions())).toEqual(['registration-user-creation', 'test-terms', 'registration-password-action']);
    await kc.authenticationManagement.lowerPriorityExecution({ id: id! });
    expect(ids(await actions())).toEqual(['registration-user-creation', 'registration-password-action', 'test-terms']);

    await kc.authenticationManagement.updateExecution({ flow: 'my reg' }, { ...execution, requirement: 'DISABLED' });
    expect(ids(await actions())).not.toContain('test-terms');

    await kc.authenticationManagement.delExecution({ id: id! });
    await expect(kc.authenticationManagement.getConfig({ id: configId! })).rejects.toMatchObject({ response: { status: 404 } });
    expect((await api(t.url, 'GET', `/admin/realms/acme/authentication/executions/${id}`, await adminToken(t.url))).status).toBe(404);
    expect((await layout(kc, 'my reg')).some((line) => line.includes('test-terms'))).toBe(false);
  });

  it('skips a protector whose execution is DISABLED, in a copy and in a built-in flow', async () => {
    const { flows } = t.server.context;
    await kc.authenticationManagement.updateExecution({ flow: 'my reg' }, { ...(await executionOf('my reg', 'test-guard')), requirement: 'DISABLED' });
    const registration = await flows.registrationSteps(await realm());
    expect(registration.protectors).toEqual([]);
    expect(ids(registration.formActions)).toEqual(['registration-user-creation', 'registration-password-action']);

    await kc.authenticationManagement.updateExecution({ flow: 'browser' }, { ...(await executionOf('browser', 'test-guard')), requirement: 'DISABLED' });
    expect((await flows.loginSteps(await realm(), null)).protectors).toEqual([]);
    expect(ids((await flows.resetSteps(await realm())).protectors)).toEqual(['test-guard']);
  });

  it("validates registration with the built-in form actions, with Keycloak's errors", async () => {
    await kc.users.create({ username: 'taken', email: 'taken@example.com', enabled: true });
    const [userCreation, password] = (await t.server.context.flows.registrationSteps(await realm())).formActions;
    const valid = { firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', username: 'ada' };
    expect(await userCreation.instance.validate(formContext(valid))).toEqual({ ok: true });
    expect(await userCreation.instance.validate(formContext({ ...valid, email: 'Taken@example.com', username: 'TAKEN' }))).toEqual({
      ok: false,
      error: 'email_in_use',
      fieldErrors: [
        { field: 'email', message: 'Email already exists.' },
        { field: 'username', message: 'Username already exists.' },
      ],
    });
    expect(await userCreation.instance.validate(formContext({ ...valid, username: 'taken' }))).toMatchObject({ error: 'username_in_use' });
    expect(await userCreation.instance.validate(formContext({ firstName: '', lastName: 'x'.repeat(256), email: 'not-an-address', username: 'a\u0001' }))).toEqual({
      ok: false,
      error: 'invalid_registration',
      fieldErrors: [
        { field: 'firstName', message: 'Please specify first name.' },
        { field: 'lastName', message: 'Must be at most 255 characters.' },
        { field: 'email', message: 'Invalid email address.' },
        { field: 'username', message: 'Contains characters that are not allowed.' },
      ],
    });
    expect(await password.instance.validate(formContext({ password: 'pw-1', 'password-confirm': 'pw-1' }))).toEqual({ ok: true });
    expect(await password.instance.validate(formContext({ password: 'pw-1', 'password-confirm': 'pw-2' }))).toEqual({
      ok: false,
      error: 'invalid_registration',
      fieldErrors: [{ field: 'password-confirm', message: "Password confirmation doesn't match." }],
    });
    await kc.realms.update({ realm: 'acme' }, { duplicateEmailsAllowed: true });
    const [relaxed] = (await t.server.context.flows.registrationSteps(await realm())).formActions;
    expect(await relaxed.instance.validate(formContext({ ...valid, email: 'taken@example.com' }))).toEqual({ ok: true });
  });

  it('refuses what Keycloak refuses, with 400s that name the problem and 404s for unknown ids', async () => {
    const am = kc.authenticationManagement;
    await expect(am.addExecutionToFlow({ flow: 'my reg', provider: 'test-terms' })).rejects.toThrow(/form-action and cannot be added to a basic-flow/);
    await expect(am.addExecutionToFlow({ flow: 'my reg registration form', provider: 'no-such-provider' })).rejects.toThrow('No authentication provider found for id: no-such-provider');
    await expect(am.addExecutionToFlow({ flow: 'registration form', provider: 'test-terms' })).rejects.toThrow('It is illegal to add execution to a built in flow');
    await expect(am.delExecution({ id: (await executionOf('browser', 'auth-cookie')).id! })).rejects.toMatchObject({ response: { status: 400 } });
    await expect(am.updateExecution({ flow: 'browser' }, { ...(await executionOf('browser', 'auth-username-password-form')), requirement: 'DISABLED' })).rejects.toMatchObject({
      response: { status: 400 },
    });
    await expect(am.createFlow({ description: 'no alias' })).rejects.toThrow('flow.alias: is required');
    await expect(am.createFlow({ alias: 'browser', providerId: 'basic-flow', topLevel: true })).rejects.toMatchObject({ response: { status: 409 } });
    const missing = '00000000-0000-4000-8000-000000000000';
    await expect(am.getFlow({ flowId: missing })).rejects.toMatchObject({ response: { status: 404 } });
    await expect(am.getConfig({ id: missing })).rejects.toMatchObject({ response: { status: 404 } });
    await expect(am.delExecution({ id: 'not-a-uuid' })).rejects.toMatchObject({ response: { status: 404 } });
    await expect(am.getExecutions({ flow: 'no such flow' })).rejects.toMatchObject({ response: { status: 404 } });

    const token = await adminToken(t.url);
    const raw = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms/acme/authentication${path}`, token, body);
    // A field of the wrong type or unknown is Keycloak's JSON reader's failure: {error: "unknown_error", error_description}.
    expect((await raw('POST', '/flows', { alias: 42 })).body).toEqual({ error: 'unknown_error', error_description: 'flow.alias: must be a string' });
    expect((await raw('POST', '/flows', { alias: 'a<b' })).status).toBe(400);
    expect((await raw('POST', '/flows', { alias: 'x', unknownField: 1 })).body.error_description).toContain('unknownField');
    expect((await raw('POST', '/flows/my%20reg/executions/execution', { provider: 'auth-cookie', priority: 2 ** 40 })).body.errorMessage).toContain('priority');
    expect((await raw('PUT', '/flows/my%20reg/executions', { id: missing, requirement: 'SOMETIMES' })).body.errorMessage).toContain('requirement');
    expect((await raw('PUT', '/flows/my%20reg/executions', { id: missing, requirement: 'REQUIRED' })).status).toBe(404);
    expect((await raw('POST', '/flows/my%20reg/copy', [])).status).toBe(400);
    // The console's "Authenticator Reference" fields (ACR step-up) are refused, not stored without effect; left empty they are dropped.
    const cookie = (await executionOf('browser', 'auth-cookie')).id!;
    const reference = await raw('POST', `/executions/${cookie}/config`, { alias: 'with-reference', config: { 'default.reference.value': 'gold' } });
    expect(reference.body).toEqual({ errorMessage: expect.stringContaining('default.reference.value') });
    expect((await raw('POST', `/executions/${cookie}/config`, { alias: 'empty-reference', config: { 'default.reference.value': '', 'default.reference.maxAge': '' } })).status).toBe(201);
    expect((await executionOf('browser', 'auth-cookie')).authenticationConfig).toBeDefined();
  });

  it('creates, renames, extends and deletes a top-level flow; a rename carries its binding along', async () => {
    const am = kc.authenticationManagement;
    const { id } = await am.createFlow({ alias: 'my login', description: 'mine', providerId: 'basic-flow', topLevel: true, builtIn: false });
    await am.addExecutionToFlow({ flow: 'my login', provider: 'auth-username-password-form' });
    const { id: subflowId } = await am.addFlowToFlow({ flow: 'my login', alias: 'extra checks', type: 'basic-flow', provider: 'registration-page-form', description: 'more' });
    await am.addExecutionToFlow({ flow: 'extra checks', provider: 'test-guard' });
    expect(await layout(kc, 'my login')).toEqual(['0:auth-username-password-form:REQUIRED', '0:extra checks:DISABLED', '1:test-guard:DISABLED']);
    expect((await am.getFlow({ flowId: subflowId! })).alias).toBe('extra checks');

    await kc.realms.update({ realm: 'acme' }, { browserFlow: 'my login' });
    await am.updateFlow({ flowId: id! }, { alias: 'my login 2', description: 'renamed' });
    expect((await kc.realms.findOne({ realm: 'acme' }))!.browserFlow).toBe('my login 2');
    await kc.realms.update({ realm: 'acme' }, { browserFlow: 'browser' });
    await am.deleteFlow({ flowId: id! });
    expect((await am.getFlows()).map((f) => f.alias)).not.toContain('my login 2');
    await expect(am.getFlow({ flowId: subflowId! })).rejects.toMatchObject({ response: { status: 404 } });
  });

  it('lists providers and config descriptions, and records admin events of every write', async () => {
    const am = kc.authenticationManagement;
    expect((await am.getFormActionProviders()).map((p) => p.id)).toEqual(expect.arrayContaining(['registration-user-creation', 'registration-password-action', 'test-terms', 'test-guard']));
    expect((await am.getAuthenticatorProviders()).map((p) => p.id)).toEqual(expect.arrayContaining(['auth-cookie', 'auth-username-password-form', 'test-guard']));
    expect(await am.getFormProviders()).toEqual([{ id: 'registration-page-form', displayName: 'Registration Page', description: 'This is the controller for the registration page' }]);
    expect((await am.getClientAuthenticatorProviders()).map((p) => p.id)).toEqual(['client-secret', 'client-jwt', 'client-secret-jwt', 'client-x509']);
    expect(await am.getConfigDescription({ providerId: 'test-terms' })).toEqual({
      providerId: 'test-terms',
      name: 'Test Terms',
      helpText: 'Requires the terms field.',
      properties: [{ name: 'field', label: 'Field', type: 'String', defaultValue: 'accept', secret: false }],
    });
    const types = new Set((await kc.realms.findAdminEvents({ realm: 'acme', max: 200 })).map((e) => e.resourceType));
    expect([...types]).toEqual(expect.arrayContaining(['AUTH_FLOW', 'AUTH_EXECUTION', 'AUTH_EXECUTION_FLOW', 'AUTHENTICATOR_CONFIG']));
  });

  it('takes flows, executions and configs along when the realm is deleted', async () => {
    const id = (await realm()).id;
    await kc.realms.del({ realm: 'acme' });
    const { db } = t.server.context.storage;
    for (const table of ['auth_flow', 'auth_execution', 'authenticator_config'] as const) {
      expect(await db.selectFrom(table).select('id').where('realm_id', '=', id).execute()).toEqual([]);
    }
  });
});

describe('protectors installed after realms exist (sqlite)', () => {
  const root = mkdtempSync(join(tmpdir(), 'realmgate-flow-restart-'));
  const dbConfig = { REALMGATE_DB_URL: `sqlite:${join(root, 'realmgate.db')}` };
  const withoutGuard = providersDir(['flows-test-action']);
  const withGuard = providersDir(['flows-test-action', 'flows-test-guard']);
  afterAll(() => {
    for (const dir of [root, withoutGuard, withGuard]) rmSync(dir, { recursive: true, force: true });
  });

  it('adds them to the built-in flows of existing realms at start-up; once uninstalled, sign-ins through them are refused, never let past the step', async () => {
    let t = await startServer({ providersDir: withoutGuard, config: dbConfig });
    try {
      const kc = await masterAdminClient(t.url, 'old');
      await kc.realms.create({ realm: 'old', enabled: true });
      expect(await layout(kc, 'browser')).toEqual(['0:auth-cookie:ALTERNATIVE', '0:identity-provider-redirector:ALTERNATIVE', '0:forms:ALTERNATIVE', '1:auth-username-password-form:REQUIRED', '1:Browser - Conditional OTP:CONDITIONAL', '2:conditional-user-configured:REQUIRED', '2:auth-otp-form:REQUIRED']);
    } finally {
      await t.close();
    }

    t = await startServer({ providersDir: withGuard, config: dbConfig });
    try {
      const kc = await masterAdminClient(t.url, 'old');
      expect(await layout(kc, 'browser')).toEqual(['0:auth-cookie:ALTERNATIVE', '0:identity-provider-redirector:ALTERNATIVE', '0:forms:ALTERNATIVE', '1:test-guard:REQUIRED', '1:auth-username-password-form:REQUIRED', '1:Browser - Conditional OTP:CONDITIONAL', '2:conditional-user-configured:REQUIRED', '2:auth-otp-form:REQUIRED']);
      expect((await layout(kc, 'registration')).slice(0, 3)).toEqual(['0:registration form:REQUIRED', '1:test-guard:REQUIRED', '1:registration-user-creation:REQUIRED']);
      expect((await layout(kc, 'reset credentials')).slice(0, 2)).toEqual(['0:test-guard:REQUIRED', '0:reset-credentials-choose-user:REQUIRED']);
      // The master realm was there before too.
      kc.setConfig({ realmName: 'master' });
      expect((await layout(kc, 'forms'))[0]).toBe('0:test-guard:REQUIRED');
      expect(t.logs.some((l) => l.msg === 'form protector executions added to existing built-in flows' && l.added === 6)).toBe(true);
    } finally {
      await t.close();
    }

    t = await startServer({ providersDir: withoutGuard, config: dbConfig });
    try {
      const old = (await t.server.context.storage.realms.byName('old'))!;
      // A REQUIRED step whose provider is gone: the flow cannot run, so nobody signs in past it without the step.
      await expect(t.server.context.flows.loginSteps(old, null)).rejects.toMatchObject({ name: 'FlowCannotRunError' });
      const errors = t.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('bound authentication flow cannot run') && l.realm === 'old' && l.provider === 'test-guard');
      expect(errors.map((l) => l.binding).sort()).toEqual(['browserFlow', 'registrationFlow', 'resetCredentialsFlow']);
    } finally {
      await t.close();
    }
  });
});
