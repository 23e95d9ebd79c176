import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REALM_IMPORT_BODY_LIMIT } from '../src/http/index.js';
import { masterAdminClient, rejects } from './support/admin-client.js';
import { startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * A realm file of several MiB (a realm with a few thousand users is one) goes through `POST /admin/realms` as it
 * does into Keycloak, whose default body limit is 10 MiB; past that, 413 and nothing created.
 */
describe('realm files of several MiB through the admin API', () => {
  let t: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** A realm of `count` users, each with a 1,500-character attribute, and one who can sign in. */
  const realmFile = (realm: string, count: number) => ({
    realm,
    enabled: true,
    users: [
      { username: 'signs-in', enabled: true, credentials: [{ type: 'password', value: 'Signs-in-password-1', temporary: false }] },
      ...Array.from({ length: count }, (_, i) => ({ username: `user-${i}`, email: `user-${i}@example.test`, enabled: true, attributes: { bio: ['x'.repeat(1_500)] } })),
    ],
  });

  it('imports a 3 MiB file with its users, who sign in', async () => {
    const file = realmFile('large', 1_900);
    expect(JSON.stringify(file).length).toBeGreaterThan(2.5 * 1024 * 1024);
    await kc.realms.create(file);
    kc.setConfig({ realmName: 'large' });
    expect(await kc.users.count()).toBe(1_901);
    expect((await kc.users.find({ username: 'user-1899', exact: true }))[0].attributes?.bio?.[0]).toHaveLength(1_500);
    const grant = await tokenRequest(t.url, 'large', { grant_type: 'password', client_id: 'admin-cli', username: 'signs-in', password: 'Signs-in-password-1' });
    expect(grant.status).toBe(200);
    kc.setConfig({ realmName: 'master' });
  }, 120_000);

  it('refuses a file over 10 MiB with 413, creating nothing', async () => {
    const file = realmFile('too-large', 7_200);
    expect(JSON.stringify(file).length).toBeGreaterThan(REALM_IMPORT_BODY_LIMIT);
    // The answer says the limit and where a larger file goes.
    const message = await rejects(kc.realms.create(file), 413);
    expect(message).toContain('at most 10 MiB');
    expect(message).toContain('--import-realm');
    expect(message).toContain('32 MiB');
    expect((await kc.realms.find()).map((r) => r.realm)).not.toContain('too-large');
  }, 120_000);
});
