import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realmExporter } from '../src/services/realm-export.js';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { adminToken, api, errorText, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 16: users' `clientConsents` of a realm file are kept: `GET …/users/{id}/consents` lists them beside the
 * clients holding an offline token (one entry per client, Keycloak's shape), `DELETE …/consents/{clientId}` revokes
 * both, they go with their user and their client, and the CLI export's users carry them again. A consent naming a
 * client or client scope the realm lacks refuses the file, by JSON path.
 */

const PASSWORD = 'Consent-pass-1';
const CREATED = 1_700_000_000_000;

const user = (username: string, clientConsents: unknown[]) => ({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }], clientConsents });
const realmFile = (realm: string, users: unknown[]) => ({
  realm,
  enabled: true,
  clients: [
    { clientId: 'shop', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['http://127.0.0.1:9/cb'] },
    { clientId: 'blog', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] },
  ],
  users,
});

describe.each(httpDatabases)('users\' client consents (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;
  const userId = async (username: string) => (await kc.users.find({ username, exact: true }))[0].id!;

  beforeAll(async () => {
    t = await startServer({ database });
    token = await adminToken(t.url);
    const created = await api(t.url, 'POST', '/admin/realms', token, realmFile('consent', [
      user('carol', [
        { clientId: 'shop', grantedClientScopes: ['profile', 'email'], createdDate: CREATED, lastUpdatedDate: CREATED + 1000 },
        { clientId: 'blog', grantedClientScopes: [] },
      ]),
      user('dave', [{ clientId: 'blog', grantedClientScopes: ['profile'], createdDate: CREATED }]),
    ]));
    expect(created.status).toBe(201);
    // Nothing of it is reported: consents are kept.
    expect(JSON.stringify(created.body ?? {})).not.toContain('clientConsents');
    kc = await masterAdminClient(t.url, 'consent');
  });

  afterAll(async () => {
    await t?.close();
  });

  it('lists a user\'s consents with the clients holding an offline token, one entry per client', async () => {
    const offline = await tokenRequest(t.url, 'consent', { grant_type: 'password', client_id: 'shop', username: 'carol', password: PASSWORD, scope: 'openid offline_access' });
    expect(offline.status).toBe(200);
    const consents = await kc.users.listConsents({ id: await userId('carol') });
    expect(consents).toEqual([
      { clientId: 'blog', grantedClientScopes: [], createdDate: null, lastUpdatedDate: null, additionalGrants: [] },
      {
        clientId: 'shop',
        grantedClientScopes: ['profile', 'email'],
        createdDate: CREATED,
        lastUpdatedDate: CREATED + 1000,
        additionalGrants: [{ client: (await kc.clients.find({ clientId: 'shop' }))[0].id, key: 'Offline Token' }],
      },
    ]);
  });

  it('the CLI export writes them back on their users', async () => {
    const { storage } = t.server.context;
    const realm = (await storage.realms.byName('consent'))!;
    const { users } = await (await realmExporter(t.server.context, realm)).users(null, 100);
    expect(users.find((u) => u.username === 'dave')!.clientConsents).toEqual([{ clientId: 'blog', grantedClientScopes: ['profile'], createdDate: CREATED }]);
    expect(users.find((u) => u.username === 'carol')!.clientConsents).toEqual([
      { clientId: 'blog', grantedClientScopes: [] },
      { clientId: 'shop', grantedClientScopes: ['profile', 'email'], createdDate: CREATED, lastUpdatedDate: CREATED + 1000 },
    ]);
  });

  it('revoking removes the consent and the offline token; a second revoke is 404', async () => {
    const id = await userId('carol');
    await kc.users.revokeConsent({ id, clientId: 'shop' });
    expect((await kc.users.listConsents({ id })).map((c) => c.clientId)).toEqual(['blog']);
    await rejects(kc.users.revokeConsent({ id, clientId: 'shop' }), 404);
    // A consent alone (no offline token) is revoked too.
    await kc.users.revokeConsent({ id, clientId: 'blog' });
    expect(await kc.users.listConsents({ id })).toEqual([]);
  });

  it('a consent goes with its client and with its user', async () => {
    const { db } = t.server.context.storage;
    const count = async () => Number((await db.selectFrom('user_consent').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const api2 = await api(t.url, 'POST', '/admin/realms', token, realmFile('consent-gone', [user('erin', [{ clientId: 'shop', grantedClientScopes: ['email'] }]), user('fred', [{ clientId: 'blog', grantedClientScopes: ['email'] }])]));
    expect(api2.status).toBe(201);
    const before = await count();
    kc.setConfig({ realmName: 'consent-gone' });
    try {
      await kc.clients.del({ id: (await kc.clients.find({ clientId: 'shop' }))[0].id! });
      expect(await count()).toBe(before - 1);
      await kc.users.del({ id: await userId('fred') });
      expect(await count()).toBe(before - 2);
    } finally {
      kc.setConfig({ realmName: 'consent' });
    }
  });

  it('refuses a file whose consent names a client or client scope the realm lacks, or a client twice, by JSON path', async () => {
    const refused = async (consents: unknown[]) => {
      const answer = await api(t.url, 'POST', '/admin/realms', token, realmFile('consent-bad', [user('gina', consents)]));
      expect(answer.status).toBe(400);
      expect(await kc.realms.findOne({ realm: 'consent-bad' })).toBeFalsy();
      return errorText(answer.body);
    };
    expect(await refused([{ clientId: 'nowhere' }])).toContain('realm.users[0].clientConsents[0].clientId: client "nowhere" does not exist');
    expect(await refused([{ clientId: 'shop', grantedClientScopes: ['no-such-scope'] }])).toContain('realm.users[0].clientConsents[0].grantedClientScopes[0]: client scope "no-such-scope" does not exist');
    expect(await refused([{ clientId: 'shop' }, { clientId: 'shop' }])).toContain('realm.users[0].clientConsents[1].clientId');
    expect(await refused([{ clientId: 'shop', grantedClientScopes: 'email' }])).toContain('realm.users[0].clientConsents[0].grantedClientScopes');
    expect(await refused([{ clientId: 'shop', createdDate: 'yesterday' }])).toContain('realm.users[0].clientConsents[0].createdDate');
    await refused([{ clientId: 'shop', unknownField: 1 }]);
  });

  it('needs view-users to list and manage-users to revoke', async () => {
    kc.setConfig({ realmName: 'consent' });
    const viewerToken = await tokenOfUserWithRoles(kc, t.url, 'viewer', ['view-users']);
    const dave = await userId('dave');
    expect((await api(t.url, 'GET', `/admin/realms/consent/users/${dave}/consents`, viewerToken)).status).toBe(200);
    expect((await api(t.url, 'DELETE', `/admin/realms/consent/users/${dave}/consents/blog`, viewerToken)).status).toBe(403);
    expect((await kc.users.listConsents({ id: dave })).map((c) => c.clientId)).toEqual(['blog']);
  });
});
