import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { httpDatabases, startServer, type TestServer } from './support/server.js';

/**
 * `PUT …/users/{id}/credentials/{credentialId}/userLabel` (a text/plain body, as Keycloak's): the admin console
 * labels a password it has just set ("My password"), and an administrator renames an authenticator app. Only
 * manage-users may; a password reset keeps the credential (its id) and clears its label, as Keycloak's.
 */
describe.each(httpDatabases)('credential labels (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let userId: string;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'labels', enabled: true });
    kc.setConfig({ realmName: 'labels' });
    ({ id: userId } = await kc.users.create({
      username: 'dana',
      enabled: true,
      credentials: [
        { type: 'password', value: 'Dana-pass-1', temporary: false },
        { type: 'otp', userLabel: 'old phone', secretData: JSON.stringify({ value: 'JBSWY3DPEHPK3PXPJBSWY3DP' }), credentialData: JSON.stringify({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1', secretEncoding: 'BASE32' }) },
      ],
    }));
  }, 60_000);
  afterAll(() => t?.close());

  const credential = async (type: string) => (await kc.users.getCredentials({ id: userId })).find((c) => c.type === type)!;

  it('labels the password and renames the OTP credential, through the official admin client', async () => {
    await kc.users.updateCredentialLabel({ id: userId, credentialId: (await credential('password')).id! }, 'My password');
    expect((await credential('password')).userLabel).toBe('My password');
    await kc.users.updateCredentialLabel({ id: userId, credentialId: (await credential('otp')).id! }, '  new phone ');
    expect((await credential('otp')).userLabel).toBe('new phone');
    // As Keycloak's PasswordCredentialProvider: a reset updates the credential in place, its id kept, its creation
    // date new and its label cleared (the new credential model has none); the old id still names it.
    const before = await credential('password');
    await new Promise((done) => setTimeout(done, 5));
    await kc.users.resetPassword({ id: userId, credential: { type: 'password', value: 'Dana-pass-2', temporary: false } });
    const after = await credential('password');
    expect(after.id).toBe(before.id);
    expect(after.createdDate!).toBeGreaterThan(before.createdDate!);
    expect(after.userLabel).toBeUndefined();
    await kc.users.updateCredentialLabel({ id: userId, credentialId: before.id! }, 'My password');
    expect((await credential('password')).userLabel).toBe('My password');
    // Also through a password in the user representation, and again by reset: the same credential each time.
    await kc.users.update({ id: userId }, { credentials: [{ type: 'password', value: 'Dana-pass-3', temporary: false }] });
    expect((await credential('password')).id).toBe(before.id);
    // Removed, then set again: a new credential (Keycloak creates one when the user has no password).
    await kc.users.deleteCredential({ id: userId, credentialId: before.id! });
    expect(await credential('password')).toBeUndefined();
    await kc.users.resetPassword({ id: userId, credential: { type: 'password', value: 'Dana-pass-4', temporary: false } });
    const fresh = await credential('password');
    expect(fresh.id).not.toBe(before.id);
    await kc.users.resetPassword({ id: userId, credential: { type: 'password', value: 'Dana-pass-5', temporary: false } });
    expect((await credential('password')).id).toBe(fresh.id);
  });

  it('refuses a label that is too long, has control characters, or is not text/plain; an unknown credential is 404', async () => {
    const id = (await credential('otp')).id!;
    await rejects(kc.users.updateCredentialLabel({ id: userId, credentialId: id }, 'x'.repeat(256)), 400, /at most 255/);
    await rejects(kc.users.updateCredentialLabel({ id: userId, credentialId: id }, 'a\u0000b'), 400, /control characters/);
    await rejects(kc.users.updateCredentialLabel({ id: userId, credentialId: '00000000-0000-4000-8000-000000000000' }, 'x'), 404);
    const token = (await kc.getAccessToken())!;
    const json = await fetch(`${t.url}/admin/realms/labels/users/${userId}/credentials/${id}/userLabel`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify('json label'),
    });
    expect(json.status).toBe(415);
    expect((await credential('otp')).userLabel).toBe('new phone');
  });

  it('a holder of view-users only cannot label, nor give itself manage-users', async () => {
    const { management, roles } = await realmManagement(kc);
    const { id } = await kc.users.create({ username: 'viewer', enabled: true, credentials: [{ type: 'password', value: 'Viewer-pass-1', temporary: false }] });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get('view-users')!] });
    const viewer = new KcAdminClient({ baseUrl: t.url, realmName: 'labels' });
    await viewer.auth({ grantType: 'password', clientId: 'admin-cli', username: 'viewer', password: 'Viewer-pass-1' });
    const otp = (await credential('otp')).id!;
    // It may read the credentials, not change them.
    expect((await viewer.users.getCredentials({ id: userId })).map((c) => c.type).sort()).toEqual(['otp', 'password']);
    await rejects(viewer.users.updateCredentialLabel({ id: userId, credentialId: otp }, 'owned'), 403);
    await rejects(viewer.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get('manage-users')!] }), 403);
    expect((await credential('otp')).userLabel).toBe('new phone');
  });
});
