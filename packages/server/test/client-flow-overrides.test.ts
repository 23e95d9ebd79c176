import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects } from './support/admin-client.js';
import { FormClient, pkce } from './support/forms.js';
import { api, adminToken, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 16: a client's `authenticationFlowBindingOverrides` are kept and honoured. `browser` replaces the realm's
 * browser flow on the login pages, `direct_grant` the built-in direct grant flow of the password grant, for that
 * client only; the admin API refuses an override naming no flow of the realm (or one that cannot run), a key other
 * than those two, and deleting a flow a client uses; a realm file's override is taken by the file's flow id and one
 * that cannot be taken is named in `notImported`.
 */

const CALLBACK = 'http://127.0.0.1:9/cb';
const PASSWORD = 'Olga-pass-123';

/** A form protector that installs itself nowhere: only a flow an administrator puts it in shows it. */
const MARK_PROVIDER = `export const providers = [{
  kind: 'form-protector', id: 'override-mark', displayName: 'Override Mark', requirementChoices: ['REQUIRED', 'DISABLED'], installOn: [],
  create: () => ({
    render: () => '<input type="hidden" name="override-mark" value="1">',
    verify: () => ({ ok: true }),
  }),
}];`;

function providersDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-override-providers-'));
  mkdirSync(join(dir, 'override-mark'));
  writeFileSync(join(dir, 'override-mark', 'package.json'), JSON.stringify({ name: '@realmgate-test/override-mark', version: '1.0.0', type: 'module', main: 'index.js' }));
  writeFileSync(join(dir, 'override-mark', 'index.js'), MARK_PROVIDER);
  return dir;
}

const PASSWORD_CLIENT = { publicClient: true, standardFlowEnabled: true, directAccessGrantsEnabled: true, redirectUris: [CALLBACK] };

describe.each(httpDatabases)('client authentication flow overrides (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let dir: string;
  const flowId = async (alias: string) => (await kc.authenticationManagement.getFlows()).find((f) => f.alias === alias)!.id!;
  const clientUuid = async (clientId: string) => (await kc.clients.find({ clientId }))[0].id!;
  const passwordGrant = (clientId: string, password = PASSWORD) => tokenRequest(t.url, 'ovr', { grant_type: 'password', client_id: clientId, username: 'olga', password });
  const loginPage = async (clientId: string) => {
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    return new FormClient(t.url).get(`/realms/ovr/protocol/openid-connect/auth?${query}`);
  };

  beforeAll(async () => {
    dir = providersDir();
    t = await startServer({ database, providersDir: dir });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'ovr', enabled: true });
    await kc.realms.create({ realm: 'elsewhere', enabled: true });
    kc.setConfig({ realmName: 'ovr' });
    await kc.users.create({ username: 'olga', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    for (const clientId of ['plain', 'strict', 'marked']) await kc.clients.create({ clientId, ...PASSWORD_CLIENT });
    // A copy of the direct grant flow whose OTP sub-flow is REQUIRED: a one-time code for every user.
    await kc.authenticationManagement.copyFlow({ flow: 'direct grant', newName: 'otp direct grant' });
    const otpSubflow = (await kc.authenticationManagement.getExecutions({ flow: 'otp direct grant' })).find((e) => e.authenticationFlow && e.level === 0)!;
    await kc.authenticationManagement.updateExecution({ flow: 'otp direct grant' }, { ...otpSubflow, requirement: 'REQUIRED' });
    // A copy of the browser flow whose forms carry the marking protector.
    await kc.authenticationManagement.copyFlow({ flow: 'browser', newName: 'marked browser' });
    await kc.authenticationManagement.addExecutionToFlow({ flow: 'marked browser forms', provider: 'override-mark' });
    const mark = (await kc.authenticationManagement.getExecutions({ flow: 'marked browser' })).find((e) => e.providerId === 'override-mark')!;
    await kc.authenticationManagement.updateExecution({ flow: 'marked browser' }, { ...mark, requirement: 'REQUIRED' });
  });

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a direct_grant override runs for its client only, and GET answers it', async () => {
    const otpFlow = await flowId('otp direct grant');
    const id = await clientUuid('strict');
    await kc.clients.update({ id }, { clientId: 'strict', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { direct_grant: otpFlow } });
    expect((await kc.clients.findOne({ id }))!.authenticationFlowBindingOverrides).toEqual({ direct_grant: otpFlow });
    // Olga has no one-time code set up: the override's required OTP refuses her (the flow cannot pass:
    // Keycloak's CREDENTIAL_SETUP_REQUIRED), 400 invalid_grant as Keycloak answers a grant its flow refuses.
    const refused = await passwordGrant('strict');
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_grant' });
    // The realm's direct grant (its OTP conditional) still lets her in through every other client.
    expect((await passwordGrant('plain')).status).toBe(200);
    // The password is checked whatever the flow: a copy cannot switch its password step off.
    const password = (await kc.authenticationManagement.getExecutions({ flow: 'otp direct grant' })).find((e) => e.providerId === 'direct-grant-validate-password')!;
    await rejects(kc.authenticationManagement.updateExecution({ flow: 'otp direct grant' }, { ...password, requirement: 'DISABLED' }), 400);
    // An empty value removes the override (Keycloak's console clears one so).
    await kc.clients.update({ id }, { clientId: 'strict', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { direct_grant: '' } });
    expect((await kc.clients.findOne({ id }))!.authenticationFlowBindingOverrides).toEqual({});
    expect((await passwordGrant('strict')).status).toBe(200);
  });

  it('a browser override changes the login form of its client only', async () => {
    const marked = await flowId('marked browser');
    await kc.clients.create({ clientId: 'marked-new', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { browser: marked } });
    await kc.clients.update({ id: await clientUuid('marked') }, { clientId: 'marked', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { browser: marked } });
    for (const clientId of ['marked', 'marked-new']) {
      const page = await loginPage(clientId);
      expect(page.status).toBe(200);
      expect(page.text).toContain('name="override-mark"');
    }
    const plain = await loginPage('plain');
    expect(plain.status).toBe(200);
    expect(plain.text).not.toContain('override-mark');
    // The console's flow list says which clients use it.
    const token = await adminToken(t.url);
    const listed = (await api(t.url, 'GET', '/admin/realms/ovr/ui-ext/authentication-management/flows', token)).body as { alias: string; usedBy?: { type: string; values: string[] } }[];
    expect(listed.find((f) => f.alias === 'marked browser')!.usedBy).toEqual({ type: 'SPECIFIC_CLIENTS', values: ['marked', 'marked-new'] });
  });

  it('refuses overrides that name nothing of the realm, another key, a non-object, or a sub-flow; and deleting a used flow', async () => {
    const id = await clientUuid('plain');
    const update = (overrides: unknown) => kc.clients.update({ id }, { clientId: 'plain', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: overrides as Record<string, string> });
    expect(await rejects(update({ browser: '00000000-0000-4000-8000-000000000000' }), 400)).toContain('no flow with id');
    kc.setConfig({ realmName: 'elsewhere' });
    const foreign = await flowId('browser');
    kc.setConfig({ realmName: 'ovr' });
    expect(await rejects(update({ browser: foreign }), 400)).toContain('no flow with id');
    expect(await rejects(update({ registration: await flowId('registration') }), 400)).toContain('"browser" or "direct_grant"');
    await rejects(update('browser'), 400);
    await rejects(update({ browser: 42 }), 400);
    const subflow = (await kc.authenticationManagement.getExecutions({ flow: 'browser' })).find((e) => e.authenticationFlow)!.flowId!;
    expect(await rejects(update({ browser: subflow }), 400)).toContain('subflow');
    expect(await rejects(kc.clients.create({ clientId: 'never', authenticationFlowBindingOverrides: { direct_grant: foreign } }), 400)).toContain('no flow with id');
    expect(await kc.clients.find({ clientId: 'never' })).toEqual([]);
    expect((await kc.clients.findOne({ id }))!.authenticationFlowBindingOverrides).toEqual({});
    // A flow a client overrides with is in use: not deleted (Keycloak refuses it too).
    expect(await rejects(kc.authenticationManagement.deleteFlow({ flowId: await flowId('marked browser') }), 400)).toContain('client "marked" (browser)');
  });

  it('a realm file takes overrides by its flow ids and names those it cannot take', async () => {
    const file = {
      realm: 'ovr-file',
      enabled: true,
      users: [{ username: 'olga', enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] }],
      authenticationFlows: [
        {
          id: 'a1b2c3d4-0000-4000-8000-000000000001', alias: 'strict grant', providerId: 'basic-flow', topLevel: true, builtIn: false,
          authenticationExecutions: [
            { authenticator: 'direct-grant-validate-username', requirement: 'REQUIRED', priority: 10, authenticatorFlow: false },
            { authenticator: 'direct-grant-validate-password', requirement: 'REQUIRED', priority: 20, authenticatorFlow: false },
            { authenticator: 'direct-grant-validate-otp', requirement: 'REQUIRED', priority: 30, authenticatorFlow: false },
          ],
        },
        {
          id: 'a1b2c3d4-0000-4000-8000-000000000002', alias: 'custom browser', providerId: 'basic-flow', topLevel: true, builtIn: false,
          authenticationExecutions: [{ authenticator: 'custom-mfa', requirement: 'REQUIRED', priority: 10, authenticatorFlow: false }],
        },
      ],
      clients: [
        { clientId: 'strict', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { direct_grant: 'a1b2c3d4-0000-4000-8000-000000000001' } },
        { clientId: 'fragile', ...PASSWORD_CLIENT, authenticationFlowBindingOverrides: { browser: 'a1b2c3d4-0000-4000-8000-000000000002', direct_grant: 'nope', docker: 'x' } },
      ],
    };
    const token = await adminToken(t.url);
    const created = await api(t.url, 'POST', '/admin/realms', token, file);
    expect(created.status).toBe(201);
    const { notImported } = created.body as { notImported: string[] };
    expect(notImported).toEqual(expect.arrayContaining([
      expect.stringMatching(/^realm\.clients\[1\]\.authenticationFlowBindingOverrides\.browser: "custom browser" cannot run: authenticator "custom-mfa"/),
      expect.stringMatching(/^realm\.clients\[1\]\.authenticationFlowBindingOverrides\.direct_grant: no flow "nope"/),
      expect.stringMatching(/^realm\.clients\[1\]\.authenticationFlowBindingOverrides\.docker: not a flow binding/),
    ]));
    expect(notImported.filter((p) => p.startsWith('realm.clients[0]'))).toEqual([]);
    kc.setConfig({ realmName: 'ovr-file' });
    try {
      const strict = (await kc.clients.find({ clientId: 'strict' }))[0];
      expect(strict.authenticationFlowBindingOverrides).toEqual({ direct_grant: await flowId('strict grant') });
      expect((await kc.clients.find({ clientId: 'fragile' }))[0].authenticationFlowBindingOverrides).toEqual({});
      const grant = (clientId: string) => tokenRequest(t.url, 'ovr-file', { grant_type: 'password', client_id: clientId, username: 'olga', password: PASSWORD });
      expect((await grant('strict')).status).toBe(400);
      expect((await grant('fragile')).status).toBe(200);
      // The export names the flow by alias (it carries no flow ids); importing it again gives the same overrides.
      const exported = await kc.realms.export({ realm: 'ovr-file', exportClients: true });
      expect(exported.clients!.find((c) => c.clientId === 'strict')!.authenticationFlowBindingOverrides).toEqual({ direct_grant: 'strict grant' });
      const again = await api(t.url, 'POST', '/admin/realms', token, { ...exported, realm: 'ovr-copy' });
      expect(again.status).toBe(201);
      const copy = await kc.realms.export({ realm: 'ovr-copy', exportClients: true });
      expect(copy.clients!.find((c) => c.clientId === 'strict')!.authenticationFlowBindingOverrides).toEqual({ direct_grant: 'strict grant' });
    } finally {
      kc.setConfig({ realmName: 'ovr' });
    }
  });
});
