import type KcAdminClient from '@keycloak/keycloak-admin-client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';
import { api, eventually, startServerPair, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 41: Keycloak's cache clears (`clear-realm-cache`, `clear-user-cache`, `clear-keys-cache`) drop the
 * configuration cache on every node, and `client-secret/rotated` answers as Keycloak's for a client without a
 * rotated secret (Realmgate rotates none).
 */
describe('cache clears across nodes, and the rotated secret', () => {
  let nodes: { a: TestServer; b: TestServer; close(): Promise<void> };
  let kc: KcAdminClient;
  let clientId: string;
  const REALM = 'caches';

  beforeAll(async () => {
    nodes = await startServerPair();
    kc = await masterAdminClient(nodes.a.url);
    await kc.realms.create({ realm: REALM, enabled: true, adminEventsEnabled: true });
    kc.setConfig({ realmName: REALM });
    ({ id: clientId } = await kc.clients.create({ clientId: 'svc', secret: 'svc-secret-one', serviceAccountsEnabled: true, publicClient: false }));
  }, 60_000);

  afterAll(async () => {
    await nodes?.close();
  });

  const grant = (node: TestServer, secret: string) => tokenRequest(node.url, REALM, { grant_type: 'client_credentials', client_id: 'svc', client_secret: secret }).then((r) => r.status);

  it('clear-realm-cache on one node makes the other read what the database holds now', async () => {
    // Node b reads the client once (cached), then the row changes behind both servers' backs.
    expect(await grant(nodes.b, 'svc-secret-one')).toBe(200);
    const db = new pg.Client({ connectionString: nodes.a.server.context.config.dbUrl });
    await db.connect();
    try {
      await db.query('update client set secret = $1 where id = $2', ['svc-secret-two', clientId]);
    } finally {
      await db.end();
    }
    // Still the cached client: no write went through a server.
    expect(await grant(nodes.b, 'svc-secret-one')).toBe(200);
    expect(await grant(nodes.b, 'svc-secret-two')).toBe(401);
    const answer = await api(nodes.a.url, 'POST', `/admin/realms/${REALM}/clear-realm-cache`, kc.accessToken!);
    expect(answer.status).toBe(204);
    await eventually(async () => (await grant(nodes.b, 'svc-secret-two')) === 200);
    expect(await grant(nodes.b, 'svc-secret-one')).toBe(401);
    const events = await kc.realms.findAdminEvents({ realm: REALM, resourcePath: 'clear-realm-cache' });
    expect(events[0]).toMatchObject({ operationType: 'ACTION', resourceType: 'REALM' });
  });

  it('clear-user-cache and clear-keys-cache answer 204 through the admin client; only manage-realm may', async () => {
    await kc.cache.clearUserCache({ realm: REALM });
    await kc.cache.clearKeysCache({ realm: REALM });
    await kc.cache.clearRealmCache({ realm: REALM });
    const viewer = await tokenOfUserWithRoles(kc, nodes.a.url, 'cache-viewer', ['view-realm', 'manage-users']);
    for (const path of ['clear-realm-cache', 'clear-user-cache', 'clear-keys-cache']) {
      expect((await api(nodes.a.url, 'POST', `/admin/realms/${REALM}/${path}`, viewer)).status).toBe(403);
    }
  });

  it('answers 404 for the rotated secret of a client that has none, and 204 to invalidate it', async () => {
    const rotated = `/admin/realms/${REALM}/clients/${clientId}/client-secret/rotated`;
    const none = await api(nodes.a.url, 'GET', rotated, kc.accessToken!);
    expect(none.status).toBe(404);
    expect(JSON.stringify(none.body)).toMatch(/rotated secret/);
    await kc.clients.invalidateSecret({ id: clientId });
    expect((await api(nodes.a.url, 'DELETE', rotated, kc.accessToken!)).status).toBe(204);
    await rejects(kc.clients.invalidateSecret({ id: '00000000-0000-4000-8000-000000000000' }), 404);
    const viewer = await tokenOfUserWithRoles(kc, nodes.a.url, 'secret-viewer', ['view-clients']);
    expect((await api(nodes.a.url, 'DELETE', rotated, viewer)).status).toBe(403);
    // The current secret is untouched.
    expect((await kc.clients.getClientSecret({ id: clientId })).value).toBe('svc-secret-two');
  });
});
