import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { FormClient, inputValue, pkce, textOf } from './support/forms.js';
import { api, httpDatabases, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

const REALM = 'temp';
const R = `/realms/${REALM}`;
const CALLBACK = 'http://127.0.0.1:9/cb';

/**
 * Issue 16, users as Keycloak: a password an administrator sets as temporary (`temporary: true` of reset-password,
 * as the admin console sends by default, or of a credential given at creation) adds the UPDATE_PASSWORD required
 * action: the password grant is refused until the user has chosen a new password at the next browser sign-in.
 * And the password credential can be deleted, as in Keycloak's Credentials tab: the user then has no password.
 */
describe.each(httpDatabases)('temporary passwords and removing the password (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    // The password credential's data names Keycloak's Argon2id parameters: hashed at production cost.
    t = await startServer({ database, passwordHashing: 'production' });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    await kc.realms.updateConfigEvents({ realm: REALM }, { adminEventsEnabled: true });
    kc.setConfig({ realmName: REALM });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [CALLBACK] });
  }, 60_000);
  afterAll(() => t?.close());

  const grant = (username: string, password: string) => tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password });
  const actionsOf = async (id: string) => (await kc.users.findOne({ id }))!.requiredActions;
  const newUser = async (username: string, credential: { value: string; temporary?: boolean }) =>
    (await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', ...credential }] })).id;

  /** A browser sign-in at the login form (no JavaScript): the page the password leads to, and how to post the next one. */
  const signIn = async (username: string, password: string) => {
    const client = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const login = await client.get(`${R}/protocol/openid-connect/auth?${query}`);
    const csrf = inputValue(login.text, 'session_code')!;
    const page = await client.post(`${R}/login-actions/authenticate`, { username, password, session_code: csrf });
    const newPassword = (password: string, confirm = password) =>
      client.post(`${R}/login-actions/update-password`, { 'password-new': password, 'password-confirm': confirm, session_code: csrf, key: inputValue(page.text, 'key') ?? '' });
    return { page, newPassword };
  };

  const notSetUp = { status: 400, body: { error: 'invalid_grant', error_description: 'Account is not fully set up' } };
  const badCredentials = { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } };

  it('reset-password with temporary: true adds UPDATE_PASSWORD; the grant is refused until the new password is chosen at the login page', async () => {
    const id = await newUser('tina', { value: 'Tina-pass-1', temporary: false });
    expect(await actionsOf(id)).toEqual([]);
    const passwordId = async () => (await kc.users.getCredentials({ id })).find((c) => c.type === 'password')!.id;
    const credentialId = await passwordId();
    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Tina-temp-1', temporary: true } });
    // Keycloak updates the password credential in place: the administrator's reset keeps its id.
    expect(await passwordId()).toBe(credentialId);
    expect(await actionsOf(id)).toEqual(['UPDATE_PASSWORD']);
    expect(await grant('tina', 'Tina-temp-1')).toMatchObject(notSetUp);
    // The temporary password replaced the old one.
    expect(await grant('tina', 'Tina-pass-1')).toMatchObject(badCredentials);

    const { page, newPassword } = await signIn('tina', 'Tina-temp-1');
    expect(page.status).toBe(200);
    expect(textOf(page.text, 'page-title')).toBe('Choose a new password');
    expect(textOf(page.text, 'page-message')).toBe('You need to choose a new password to continue.');
    expect(textOf((await newPassword('Tina-new-1', 'Tina-other-1')).text, 'input-error-password-confirm')).toBeTruthy();
    expect(await actionsOf(id)).toEqual(['UPDATE_PASSWORD']);
    const done = await newPassword('Tina-new-1');
    expect(done.status).toBe(302);
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);

    expect(await actionsOf(id)).toEqual([]);
    // So does the user's own change at the login page.
    expect(await passwordId()).toBe(credentialId);
    expect((await grant('tina', 'Tina-new-1')).status).toBe(200);
    expect(await grant('tina', 'Tina-temp-1')).toMatchObject(badCredentials);
  });

  it('users.create with a temporary password credential adds UPDATE_PASSWORD; temporary false, null or absent adds nothing', async () => {
    const temporary = await newUser('carl', { value: 'Carl-temp-1', temporary: true });
    expect(await actionsOf(temporary)).toEqual(['UPDATE_PASSWORD']);
    expect(await grant('carl', 'Carl-temp-1')).toMatchObject(notSetUp);
    const { page, newPassword } = await signIn('carl', 'Carl-temp-1');
    expect(textOf(page.text, 'page-title')).toBe('Choose a new password');
    expect((await newPassword('Carl-new-1')).status).toBe(302);
    expect(await actionsOf(temporary)).toEqual([]);
    expect((await grant('carl', 'Carl-new-1')).status).toBe(200);

    // With the representation's own required actions, the temporary password's is added to them.
    const both = (await kc.users.create({ username: 'cleo', enabled: true, requiredActions: ['UPDATE_PROFILE'], credentials: [{ type: 'password', value: 'Cleo-temp-1', temporary: true }] })).id;
    expect((await actionsOf(both))!.sort()).toEqual(['UPDATE_PASSWORD', 'UPDATE_PROFILE']);

    const permanent = await newUser('pete', { value: 'Pete-pass-1', temporary: false });
    expect(await actionsOf(permanent)).toEqual([]);
    expect((await grant('pete', 'Pete-pass-1')).status).toBe(200);
    const absent = await newUser('abel', { value: 'Abel-pass-1' });
    expect(await actionsOf(absent)).toEqual([]);
    expect((await grant('abel', 'Abel-pass-1')).status).toBe(200);
    // Keycloak's `temporary` is a Boolean: null is false; anything else is refused.
    const token = (await kc.getAccessToken())!;
    const nulled = await api(t.url, 'POST', `/admin${R}/users`, token, { username: 'nora', enabled: true, credentials: [{ type: 'password', value: 'Nora-pass-1', temporary: null }] });
    expect(nulled.status).toBe(201);
    expect((await grant('nora', 'Nora-pass-1')).status).toBe(200);
    const refused = await api(t.url, 'POST', `/admin${R}/users`, token, { username: 'otto', enabled: true, credentials: [{ type: 'password', value: 'Otto-pass-1', temporary: 'yes' }] });
    expect(refused.status).toBe(400);
    expect(await kc.users.find({ username: 'otto', exact: true })).toEqual([]);
  });

  it('reset-password with temporary false or absent adds nothing and, as Keycloak, takes a pending UPDATE_PASSWORD away', async () => {
    const id = await newUser('fred', { value: 'Fred-temp-1', temporary: true });
    expect(await actionsOf(id)).toEqual(['UPDATE_PASSWORD']);
    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Fred-pass-2', temporary: false } });
    expect(await actionsOf(id)).toEqual([]);
    expect((await grant('fred', 'Fred-pass-2')).status).toBe(200);

    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Fred-temp-3', temporary: true } });
    expect(await actionsOf(id)).toEqual(['UPDATE_PASSWORD']);
    const token = (await kc.getAccessToken())!;
    expect((await api(t.url, 'PUT', `/admin${R}/users/${id}/reset-password`, token, { type: 'password', value: 'Fred-pass-4' })).status).toBe(204);
    expect(await actionsOf(id)).toEqual([]);
    expect((await grant('fred', 'Fred-pass-4')).status).toBe(200);
    // A password the policy refuses changes nothing, the required actions included.
    await kc.realms.update({ realm: REALM }, { passwordPolicy: 'length(12)' });
    try {
      await rejects(kc.users.resetPassword({ id, credential: { type: 'password', value: 'Short-1', temporary: true } }), 400);
      expect(await actionsOf(id)).toEqual([]);
      expect((await grant('fred', 'Fred-pass-4')).status).toBe(200);
    } finally {
      await kc.realms.update({ realm: REALM }, { passwordPolicy: '' });
    }
  });

  it('PUT of the user with a temporary password credential adds UPDATE_PASSWORD, as Keycloak', async () => {
    const id = await newUser('uma', { value: 'Uma-pass-1', temporary: false });
    await kc.users.update({ id }, { requiredActions: [], credentials: [{ type: 'password', value: 'Uma-temp-2', temporary: true }] });
    expect(await actionsOf(id)).toEqual(['UPDATE_PASSWORD']);
    expect(await grant('uma', 'Uma-temp-2')).toMatchObject(notSetUp);
  });

  it('the password credential can be deleted: no password sign-in, no password listed, until reset-password sets one', async () => {
    const id = await newUser('dora', { value: 'Dora-pass-1', temporary: false });
    const [password] = await kc.users.getCredentials({ id });
    expect(password).toMatchObject({ type: 'password' });
    // Its data as Keycloak 26.7.3 answers it (the console's "Show data"): algorithm and parameters, never hash or salt.
    expect(JSON.parse(password.credentialData!)).toEqual({
      hashIterations: 5,
      algorithm: 'argon2',
      additionalParameters: { hashLength: ['32'], memory: ['7168'], type: ['id'], version: ['1.3'], parallelism: ['1'] },
    });
    expect(Object.keys(password)).not.toContain('secretData');
    await kc.users.deleteCredential({ id, credentialId: password.id! });
    expect(await kc.users.getCredentials({ id })).toEqual([]);
    await rejects(kc.users.deleteCredential({ id, credentialId: password.id! }), 404);

    // As a user without a password: the grant and the login form answer bad credentials.
    expect(await grant('dora', 'Dora-pass-1')).toEqual(badCredentials);
    expect(await grant('dora', '')).toMatchObject({ status: 400 });
    const { page } = await signIn('dora', 'Dora-pass-1');
    expect(page.status).toBe(401);
    expect(textOf(page.text, 'input-error-username')).toBe('Invalid username or password.');
    expect(await kc.users.findOne({ id })).toMatchObject({ username: 'dora', enabled: true });

    const event = await eventually(async () =>
      (await kc.realms.findAdminEvents({ realm: REALM, operationTypes: 'ACTION', resourceTypes: 'USER' } as never)).find((e) => e.resourcePath === `users/${id}/credentials/${password.id}`),
    );
    expect(event).toMatchObject({ operationType: 'ACTION', resourceType: 'USER' });

    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Dora-pass-2', temporary: false } });
    const [again] = await kc.users.getCredentials({ id });
    expect(again).toMatchObject({ type: 'password' });
    expect(again.id).not.toBe(password.id);
    expect((await grant('dora', 'Dora-pass-2')).status).toBe(200);
    expect((await signIn('dora', 'Dora-pass-2')).page.status).toBe(302);
  });

  it("an id read before a reset still names the password (Keycloak keeps it); the other credentials stay when it goes", async () => {
    const id = (
      await kc.users.create({
        username: 'olga',
        enabled: true,
        credentials: [
          { type: 'password', value: 'Olga-pass-1', temporary: false },
          { type: 'otp', userLabel: 'phone', secretData: JSON.stringify({ value: 'JBSWY3DPEHPK3PXPJBSWY3DP' }), credentialData: JSON.stringify({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1', secretEncoding: 'BASE32' }) },
        ],
      })
    ).id;
    const stale = (await kc.users.getCredentials({ id })).find((c) => c.type === 'password')!;
    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Olga-pass-2', temporary: false } });
    expect((await kc.users.getCredentials({ id })).find((c) => c.type === 'password')!.id).toBe(stale.id);
    await kc.users.deleteCredential({ id, credentialId: stale.id! });
    expect((await kc.users.getCredentials({ id })).map((c) => c.type)).toEqual(['otp']);
    expect(await grant('olga', 'Olga-pass-2')).toEqual(badCredentials);
    // Gone, it is gone: its id names nothing, and a password set again is a new credential.
    await rejects(kc.users.deleteCredential({ id, credentialId: stale.id! }), 404);
    await kc.users.resetPassword({ id, credential: { type: 'password', value: 'Olga-pass-3', temporary: false } });
    expect((await kc.users.getCredentials({ id })).find((c) => c.type === 'password')!.id).not.toBe(stale.id);
  });

  it('an administrator with view-users only gets 403 deleting a credential or resetting a password, and nothing changes', async () => {
    const victim = await newUser('vic', { value: 'Vic-pass-1', temporary: false });
    const { management, roles } = await realmManagement(kc);
    const viewerId = await newUser('viewer', { value: 'Viewer-pass-1', temporary: false });
    await kc.users.addClientRoleMappings({ id: viewerId, clientUniqueId: management, roles: [roles.get('view-users')!] });
    const viewer = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
    await viewer.auth({ grantType: 'password', clientId: 'admin-cli', username: 'viewer', password: 'Viewer-pass-1' });
    const [password] = await viewer.users.getCredentials({ id: victim });

    await rejects(viewer.users.deleteCredential({ id: victim, credentialId: password.id! }), 403);
    await rejects(viewer.users.resetPassword({ id: victim, credential: { type: 'password', value: 'Owned-pass-1', temporary: false } }), 403);
    await rejects(viewer.users.resetPassword({ id: victim, credential: { type: 'password', value: 'Owned-pass-1', temporary: true } }), 403);
    await rejects(viewer.users.update({ id: victim }, { credentials: [{ type: 'password', value: 'Owned-pass-1', temporary: true }] }), 403);
    // Nor may it reach its own account's password or credentials that way (it has no manage-users).
    await rejects(viewer.users.resetPassword({ id: viewerId, credential: { type: 'password', value: 'Viewer-pass-2', temporary: false } }), 403);

    expect(await kc.users.getCredentials({ id: victim })).toEqual([password]);
    expect(await actionsOf(victim)).toEqual([]);
    expect((await grant('vic', 'Vic-pass-1')).status).toBe(200);
    expect(await grant('vic', 'Owned-pass-1')).toEqual(badCredentials);

    // A user of the realm without any administrative role: 403 too.
    const nobody = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
    await nobody.auth({ grantType: 'password', clientId: 'admin-cli', username: 'vic', password: 'Vic-pass-1' });
    await rejects(nobody.users.deleteCredential({ id: victim, credentialId: password.id! }), 403);
    await rejects(nobody.users.resetPassword({ id: viewerId, credential: { type: 'password', value: 'Owned-pass-1', temporary: false } }), 403);
    expect((await grant('viewer', 'Viewer-pass-1')).status).toBe(200);
  });
});
