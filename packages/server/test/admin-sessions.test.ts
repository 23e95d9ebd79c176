import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/** Issue 16, point 5: a user's sessions, signing a user out, a client's sessions and their count, with the official admin client. */
describe.each(httpDatabases)('sessions in the admin API (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let userId: string;
  let appId: string;
  const signIn = (scope = 'openid') =>
    tokenRequest(t.url, 'sessions', { grant_type: 'password', client_id: 'app', username: 'sam', password: 'Sessions-pass-1', scope });

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'sessions', enabled: true, adminEventsEnabled: true });
    kc.setConfig({ realmName: 'sessions' });
    appId = (await kc.clients.create({ clientId: 'app', publicClient: true, directAccessGrantsEnabled: true })).id;
    userId = (await kc.users.create({ username: 'sam', enabled: true, credentials: [{ type: 'password', value: 'Sessions-pass-1', temporary: false }] })).id;
    const offlineRole = await kc.roles.findOneByName({ name: 'offline_access' });
    await kc.users.addRealmRoleMappings({ id: userId, roles: [{ id: offlineRole!.id!, name: 'offline_access' }] });
  });
  afterAll(() => t?.close());

  it("lists a user's sessions and a client's, counts them, and signs the user out of all", async () => {
    const first = await signIn();
    const second = await signIn();
    const offline = await signIn('openid offline_access');
    expect([first.status, second.status, offline.status]).toEqual([200, 200, 200]);

    // Every password grant opens an SSO session; the offline one opens an offline session besides (as Keycloak).
    const sessions = await kc.users.listSessions({ id: userId });
    expect(sessions).toHaveLength(3);
    expect(sessions[0]).toMatchObject({ username: 'sam', userId, clients: { [appId]: 'app' }, start: expect.any(Number), lastAccess: expect.any(Number) });
    expect(await kc.clients.getSessionCount({ id: appId })).toEqual({ count: 3 });
    expect((await kc.clients.listSessions({ id: appId })).map((s) => s.id).sort()).toEqual(sessions.map((s) => s.id).sort());
    expect(await kc.clients.listSessions({ id: appId, first: 1, max: 5 })).toHaveLength(2);
    expect(await kc.clients.getOfflineSessionCount({ id: appId })).toEqual({ count: 1 });

    await kc.users.logout({ id: userId });
    expect(await kc.users.listSessions({ id: userId })).toEqual([]);
    expect(await kc.clients.getSessionCount({ id: appId })).toEqual({ count: 0 });
    expect(await kc.clients.getOfflineSessionCount({ id: appId })).toEqual({ count: 0 });
    // The tokens of those sessions no longer refresh, the offline one included.
    for (const tokens of [first, offline]) {
      const refreshed = await tokenRequest(t.url, 'sessions', { grant_type: 'refresh_token', client_id: 'app', refresh_token: tokens.body.refresh_token as string });
      expect(refreshed.status).toBe(400);
    }
    const events = await kc.realms.findAdminEvents({ realm: 'sessions', operationTypes: 'ACTION' } as never);
    expect(events.some((e) => e.resourcePath === `users/${userId}/logout`)).toBe(true);
  });

  it('answers 404 for an unknown user or client', async () => {
    await expect(kc.users.listSessions({ id: 'no-such-user' })).rejects.toMatchObject({ response: { status: 404 } });
    await expect(kc.users.logout({ id: 'no-such-user' })).rejects.toMatchObject({ response: { status: 404 } });
    await expect(kc.clients.getSessionCount({ id: 'no-such-client' })).rejects.toMatchObject({ response: { status: 404 } });
  });
});
