/**
 * A realm's required actions through Keycloak's admin API (the official admin client): listed with Keycloak's
 * names and priorities, enabled or disabled, made default actions, reordered; and the effect of each over the
 * wire: a default action is given to every new user, a disabled one is not asked for at sign-in. A user holding
 * only view-realm (or no role) tries the writes and is refused, nothing changed. On SQLite (HTTP behaviour, issue 36).
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRealmImport } from '../src/services/realm-import/index.js';
import { masterAdminClient, realmManagement } from './support/admin-client.js';
import { api, httpDatabases, startServer, tokenRequest, type TestServer, errorText } from './support/server.js';

const PASSWORD = 'Secret-pass-1';
const R = '/admin/realms/demo/authentication';

describe.each(httpDatabases)('required actions (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const token = async (username: string) => {
    const response = await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.access_token as string;
  };
  const order = async () => (await kc.authenticationManagement.getRequiredActions()).map((a) => a.alias);

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
    kc.setConfig({ realmName: 'demo' });
    const { management, roles } = await realmManagement(kc);
    for (const [username, role] of [['viewer', 'view-realm'], ['nobody', null]] as const) {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      if (role) await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get(role)!] });
    }
  });
  afterAll(() => t?.close());

  it('lists the registry’s actions with Keycloak 26.7.3’s names, priorities and switches; none left to register', async () => {
    // As a new realm of a Keycloak 26.7.3 lists them (less the providers this server has not: VERIFY_PROFILE, delete_credential).
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual([
      { alias: 'TERMS_AND_CONDITIONS', name: 'Terms and Conditions', providerId: 'TERMS_AND_CONDITIONS', enabled: false, defaultAction: false, priority: 20, config: {} },
      { alias: 'UPDATE_PROFILE', name: 'Update Profile', providerId: 'UPDATE_PROFILE', enabled: true, defaultAction: false, priority: 40, config: {} },
      { alias: 'VERIFY_EMAIL', name: 'Verify Email', providerId: 'VERIFY_EMAIL', enabled: true, defaultAction: false, priority: 50, config: {} },
      { alias: 'CONFIGURE_TOTP', name: 'Configure OTP', providerId: 'CONFIGURE_TOTP', enabled: true, defaultAction: false, priority: 54, config: {} },
      { alias: 'UPDATE_PASSWORD', name: 'Update Password', providerId: 'UPDATE_PASSWORD', enabled: true, defaultAction: false, priority: 57, config: {} },
      { alias: 'delete_account', name: 'Delete Account', providerId: 'delete_account', enabled: false, defaultAction: false, priority: 60, config: {} },
      { alias: 'UPDATE_EMAIL', name: 'Update Email', providerId: 'UPDATE_EMAIL', enabled: false, defaultAction: false, priority: 70, config: {} },
      { alias: 'webauthn-register', name: 'Webauthn Register', providerId: 'webauthn-register', enabled: true, defaultAction: false, priority: 80, config: {} },
      { alias: 'webauthn-register-passwordless', name: 'Webauthn Register Passwordless', providerId: 'webauthn-register-passwordless', enabled: true, defaultAction: false, priority: 90, config: {} },
      { alias: 'idp_link', name: 'Linking Identity Provider', providerId: 'idp_link', enabled: true, defaultAction: false, priority: 120, config: {} },
      { alias: 'CONFIGURE_RECOVERY_AUTHN_CODES', name: 'Recovery Authentication Codes', providerId: 'CONFIGURE_RECOVERY_AUTHN_CODES', enabled: true, defaultAction: false, priority: 130, config: {} },
      { alias: 'update_user_locale', name: 'Update User Locale', providerId: 'update_user_locale', enabled: true, defaultAction: false, priority: 1000, config: {} },
    ]);
    expect(await kc.authenticationManagement.getUnregisteredRequiredActions()).toEqual([]);
    expect(await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_PROFILE' })).toMatchObject({ name: 'Update Profile' });
    expect((await api(t.url, 'GET', `${R}/required-actions/VERIFY_PROFILE`, (await kc.getAccessToken())!)).status).toBe(404);
  });

  it('a default action is given to every new user; turned off, new users get none', async () => {
    const action = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_PROFILE' });
    await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_PROFILE' }, { ...action, defaultAction: true });
    const { id } = await kc.users.create({ username: 'fresh', enabled: true });
    expect((await kc.users.findOne({ id }))?.requiredActions).toEqual(['UPDATE_PROFILE']);
    await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_PROFILE' }, { ...action, defaultAction: false });
    const later = await kc.users.create({ username: 'later', enabled: true });
    expect((await kc.users.findOne({ id: later.id }))?.requiredActions).toEqual([]);
  });

  it('a disabled action is not asked for at sign-in (nor a default action), and is asked for again once enabled', async () => {
    const { id } = await kc.users.create({ username: 'pending', enabled: true, requiredActions: ['CONFIGURE_TOTP'], credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    const grant = () => tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username: 'pending', password: PASSWORD });
    expect((await grant()).body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });

    const totp = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'CONFIGURE_TOTP' });
    await kc.authenticationManagement.updateRequiredAction({ alias: 'CONFIGURE_TOTP' }, { ...totp, enabled: false, defaultAction: true });
    expect(await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'CONFIGURE_TOTP' })).toMatchObject({ enabled: false, defaultAction: false });
    expect((await grant()).status).toBe(200);
    // Kept on the user, as in Keycloak: enabled again, it is asked for again.
    expect((await kc.users.findOne({ id }))?.requiredActions).toEqual(['CONFIGURE_TOTP']);
    await kc.authenticationManagement.updateRequiredAction({ alias: 'CONFIGURE_TOTP' }, { ...totp, enabled: true });
    expect((await grant()).status).toBe(400);
  });

  it('raise and lower priority swap neighbours; at either end they change nothing', async () => {
    const tail = ['delete_account', 'UPDATE_EMAIL', 'webauthn-register', 'webauthn-register-passwordless', 'idp_link', 'CONFIGURE_RECOVERY_AUTHN_CODES', 'update_user_locale'];
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'VERIFY_EMAIL' });
    expect(await order()).toEqual(['TERMS_AND_CONDITIONS', 'VERIFY_EMAIL', 'UPDATE_PROFILE', 'CONFIGURE_TOTP', 'UPDATE_PASSWORD', ...tail]);
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'CONFIGURE_TOTP' });
    expect(await order()).toEqual(['TERMS_AND_CONDITIONS', 'VERIFY_EMAIL', 'UPDATE_PROFILE', 'UPDATE_PASSWORD', 'CONFIGURE_TOTP', ...tail]);
    await kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'TERMS_AND_CONDITIONS' });
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'update_user_locale' });
    expect(await order()).toEqual(['TERMS_AND_CONDITIONS', 'VERIFY_EMAIL', 'UPDATE_PROFILE', 'UPDATE_PASSWORD', 'CONFIGURE_TOTP', ...tail]);
    // Back to Keycloak's order for the tests that follow.
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'UPDATE_PASSWORD' });
    await kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'VERIFY_EMAIL' });
    expect(await order()).toEqual(['TERMS_AND_CONDITIONS', 'UPDATE_PROFILE', 'VERIFY_EMAIL', 'CONFIGURE_TOTP', 'UPDATE_PASSWORD', ...tail]);
  });

  it('a realm export carries the settings and a realm import restores them; imported users keep their own list', async () => {
    const profile = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_PROFILE' });
    await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_PROFILE' }, { ...profile, defaultAction: true });
    const admin = (await kc.getAccessToken())!;
    const exported = (await api(t.url, 'POST', '/admin/realms/demo/partial-export', admin)).body;
    const settings = await kc.authenticationManagement.getRequiredActions();
    expect(exported.requiredActions).toEqual(settings);
    const keycloakOnly = [
      { alias: 'VERIFY_PROFILE', name: 'Verify Profile', providerId: 'VERIFY_PROFILE', enabled: false, defaultAction: false, priority: 100, config: {} },
      { alias: 'delete_credential', name: 'Delete Credential', providerId: 'delete_credential', enabled: true, defaultAction: false, priority: 110, config: {} },
    ];
    const created = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'copy', enabled: true, requiredActions: [...exported.requiredActions, ...keycloakOnly], users: [{ username: 'imported', enabled: true, requiredActions: [] }] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Keycloak's own actions are kept as data, each named once by its JSON path; listed with the others by priority.
    expect(created.body).toEqual({ notImported: [], keptAsData: [`realm.requiredActions[${settings.length}] ("VERIFY_PROFILE" is not carried out here)`, `realm.requiredActions[${settings.length + 1}] ("delete_credential" is not carried out here)`] });
    kc.setConfig({ realmName: 'copy' });
    try {
      expect(await kc.authenticationManagement.getRequiredActions()).toEqual([...settings, ...keycloakOnly].sort((a, b) => a.priority! - b.priority!));
      const [imported] = await kc.users.find({ username: 'imported', exact: true });
      expect(imported.requiredActions).toEqual([]);
      const { id } = await kc.users.create({ username: 'made-after', enabled: true });
      expect((await kc.users.findOne({ id }))?.requiredActions).toEqual(['UPDATE_PROFILE']);
    } finally {
      kc.setConfig({ realmName: 'demo' });
      await kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_PROFILE' }, { ...profile, defaultAction: false });
    }
    // Enabled or not, they are data: kept and named, never as not imported.
    const parsed = parseRealmImport({ realm: 'x', requiredActions: keycloakOnly }, () => true);
    expect(parsed.notImported).toEqual([]);
    expect(parsed.keptAsData).toEqual(['realm.requiredActions[0] ("VERIFY_PROFILE" is not carried out here)', 'realm.requiredActions[1] ("delete_credential" is not carried out here)']);
    const bad = await api(t.url, 'POST', '/admin/realms', admin, { realm: 'bad-copy', requiredActions: [{ alias: 'UPDATE_PROFILE', enabled: 'yes' }] });
    expect(bad.status).toBe(400);
    expect(errorText(bad.body)).toContain('realm.requiredActions[0].enabled');
  });

  it('settings, unknown fields and unknown actions are refused, naming the field; nothing is written', async () => {
    const admin = (await kc.getAccessToken())!;
    const before = await kc.authenticationManagement.getRequiredActions();
    const withConfig = await api(t.url, 'PUT', `${R}/required-actions/UPDATE_PROFILE`, admin, { enabled: false, config: { max_auth_age: '60', foo: '1' } });
    expect(withConfig.status).toBe(400);
    expect(errorText(withConfig.body)).toContain('foo');
    const badAge = await api(t.url, 'PUT', `${R}/required-actions/UPDATE_PROFILE`, admin, { enabled: false, config: { max_auth_age: 'soon' } });
    expect([badAge.status, errorText(badAge.body).includes('max_auth_age')]).toEqual([400, true]);
    expect((await api(t.url, 'PUT', `${R}/required-actions/UPDATE_PROFILE`, admin, { enabled: 'no' })).status).toBe(400);
    expect((await api(t.url, 'PUT', `${R}/required-actions/NO_SUCH_ACTION`, admin, { enabled: false })).status).toBe(404);
    expect((await api(t.url, 'POST', `${R}/required-actions/NO_SUCH_ACTION/raise-priority`, admin)).status).toBe(404);
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
  });

  it('a user holding only view-realm reads them but changes nothing; a user with no role does neither', async () => {
    const before = await kc.authenticationManagement.getRequiredActions();
    const viewer = await token('viewer');
    expect((await api(t.url, 'GET', `${R}/required-actions`, viewer)).status).toBe(200);
    expect((await api(t.url, 'GET', '/admin/realms/demo/ui-ext/authentication-management/required-actions', viewer)).status).toBe(200);
    for (const [method, path, body] of [
      ['PUT', `${R}/required-actions/UPDATE_PASSWORD`, { enabled: true, defaultAction: true }],
      ['PUT', `${R}/required-actions/CONFIGURE_TOTP`, { enabled: false }],
      ['POST', `${R}/required-actions/VERIFY_EMAIL/raise-priority`, undefined],
    ] as const) {
      expect((await api(t.url, method, path, viewer, body)).status, `${method} ${path}`).toBe(403);
    }
    const nobody = await token('nobody');
    expect((await api(t.url, 'GET', `${R}/required-actions`, nobody)).status).toBe(403);
    expect((await api(t.url, 'GET', '/admin/realms/demo/ui-ext/authentication-management/required-actions', nobody)).status).toBe(403);
    expect((await api(t.url, 'PUT', `${R}/required-actions/UPDATE_PASSWORD`, nobody, { defaultAction: true })).status).toBe(403);
    expect(await kc.authenticationManagement.getRequiredActions()).toEqual(before);
  });
});
