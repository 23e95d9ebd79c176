import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, ADMIN_USERNAME, databases, startServer, type TestServer } from './support/server.js';

/**
 * Issue 16, point 4: Keycloak's partial export (`POST …/partial-export`, the admin client's `realms.export`), and
 * its round trip: exported, imported into an empty server, exported again, the same document.
 */

async function adminClient(t: TestServer) {
  const kc = new KcAdminClient({ baseUrl: t.url, realmName: 'master' });
  await kc.auth({ grantType: 'password', clientId: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
  return kc;
}

describe.each(databases)('realm partial export (%s)', (database) => {
  let source: TestServer;
  let target: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    [source, target] = await Promise.all([startServer({ database }), startServer({ database })]);
    kc = await adminClient(source);
    await kc.realms.create({ realm: 'shop', enabled: true, displayName: 'Shop', passwordPolicy: 'length(10) and digits(1)', bruteForceProtected: true, failureFactor: 5 });
    kc.setConfig({ realmName: 'shop' });
    const api = await kc.clients.create({ clientId: 'orders-api', secret: 'orders-secret-1', serviceAccountsEnabled: true });
    await kc.clients.createRole({ id: api.id, name: 'orders:read' });
    await kc.clients.createRole({ id: api.id, name: 'orders:write' });
    const web = await kc.clients.create({ clientId: 'shop-web', publicClient: true, redirectUris: ['https://shop.example/*'], webOrigins: ['+'], fullScopeAllowed: false });
    await kc.roles.create({ name: 'customer', description: 'buys things' });
    await kc.roles.create({ name: 'clerk' });
    const customer = await kc.roles.findOneByName({ name: 'customer' });
    const read = await kc.clients.findRole({ id: api.id, roleName: 'orders:read' });
    await kc.roles.createComposite({ roleId: (await kc.roles.findOneByName({ name: 'clerk' }))!.id! }, [customer!, read!]);
    await kc.clients.addRealmScopeMappings({ id: web.id }, [customer!] as never);
    await kc.clients.addClientScopeMappings({ id: web.id, client: api.id }, [read!] as never);
    await kc.authenticationManagement.copyFlow({ flow: 'browser', newName: 'shop browser' });
  }, 60_000);
  afterAll(async () => {
    await source?.close();
    await target?.close();
  });

  it('exports settings and flows only, unless clients and roles are asked for', async () => {
    const bare = (await kc.realms.export({ realm: 'shop' })) as Record<string, unknown>;
    expect(bare).toMatchObject({ realm: 'shop', displayName: 'Shop', passwordPolicy: 'length(10) and digits(1)', failureFactor: 5 });
    expect(bare).not.toHaveProperty('clients');
    expect(bare).not.toHaveProperty('roles');
    expect((bare.authenticationFlows as { alias: string }[]).map((f) => f.alias)).toContain('shop browser');
  });

  it('masks client secrets, and an import of the export exports the same document', async () => {
    const exported = (await kc.realms.export({ realm: 'shop', exportClients: true, exportGroupsAndRoles: true })) as Record<string, any>;
    const api = exported.clients.find((c: { clientId: string }) => c.clientId === 'orders-api');
    expect(api.secret).toBe('**********');
    expect(JSON.stringify(exported)).not.toContain('orders-secret-1');
    const clerk = exported.roles.realm.find((r: { name: string }) => r.name === 'clerk');
    expect(clerk.composites).toEqual({ realm: ['customer'], client: { 'orders-api': ['orders:read'] } });
    expect(exported.scopeMappings).toContainEqual({ client: 'shop-web', roles: ['customer'] });
    expect(exported.clientScopeMappings['orders-api']).toContainEqual({ client: 'shop-web', roles: ['orders:read'] });

    const other = await adminClient(target);
    await other.realms.create(exported);
    const again = (await other.realms.export({ realm: 'shop', exportClients: true, exportGroupsAndRoles: true })) as Record<string, unknown>;
    expect(again).toEqual(exported);
  });

  it('refuses a caller who may not view the realm, or its clients when they are asked for', async () => {
    kc.setConfig({ realmName: 'shop' });
    const [realmManagement] = await kc.clients.find({ clientId: 'realm-management' });
    const grant = async (username: string, role: string) => {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: 'Export-pass-123', temporary: false }] });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: realmManagement.id!, roles: [(await kc.clients.findRole({ id: realmManagement.id!, roleName: role }))!] as never });
      const limited = new KcAdminClient({ baseUrl: source.url, realmName: 'shop' });
      await limited.auth({ grantType: 'password', clientId: 'admin-cli', username, password: 'Export-pass-123' });
      return limited;
    };
    const usersOnly = await grant('users-admin', 'manage-users');
    await expect(usersOnly.realms.export({ realm: 'shop' })).rejects.toMatchObject({ response: { status: 403 } });
    const realmViewer = await grant('realm-viewer', 'view-realm');
    expect(await realmViewer.realms.export({ realm: 'shop' })).toMatchObject({ realm: 'shop' });
    await expect(realmViewer.realms.export({ realm: 'shop', exportClients: true })).rejects.toMatchObject({ response: { status: 403 } });
  });
});
