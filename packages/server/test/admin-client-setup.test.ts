import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * The description's configuration sequence, driven by Keycloak's own admin client: a service account with
 * manage-clients reads a client and writes its attributes back with a merged PUT.
 */
describe.each(httpDatabases)('original configuration sequence with the official admin client (%s)', (database) => {
  let t: TestServer;
  let master: KcAdminClient;
  let appId: string;
  let secret: string;

  beforeAll(async () => {
    t = await startServer({ database });
    master = await masterAdminClient(t.url);
  });
  afterAll(() => t?.close());

  it('creates a realm, a service-account client with manage-clients, and an application client', async () => {
    await master.realms.create({ realm: 'acme', enabled: true });
    master.setConfig({ realmName: 'acme' });
    const { id: saClientId } = await master.clients.create({
      clientId: 'webhook-config',
      publicClient: false,
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
    });
    const serviceAccount = await master.clients.getServiceAccountUser({ id: saClientId });
    expect(serviceAccount.username).toBe('service-account-webhook-config');
    const [management] = await master.clients.find({ clientId: 'realm-management' });
    const manageClients = await master.clients.findRole({ id: management.id!, roleName: 'manage-clients' });
    await master.users.addClientRoleMappings({
      id: serviceAccount.id!,
      clientUniqueId: management.id!,
      roles: [{ id: manageClients!.id!, name: manageClients!.name! }],
    });
    const mapped = await master.users.listClientRoleMappings({ id: serviceAccount.id!, clientUniqueId: management.id! });
    expect(mapped.map((r) => r.name)).toEqual(['manage-clients']);
    secret = (await master.clients.getClientSecret({ id: saClientId })).value!;
    expect(secret.length).toBeGreaterThan(16);
    ({ id: appId } = await master.clients.create({
      clientId: 'shop',
      redirectUris: ['https://shop.example/callback'],
      attributes: { 'pkce.code.challenge.method': 'S256' },
      description: 'the shop',
    }));
  });

  it('lets the service account GET the client by UUID and PUT it back with api.url and api.key merged', async () => {
    const sa = new KcAdminClient({ baseUrl: t.url, realmName: 'acme' });
    await sa.auth({ grantType: 'client_credentials', clientId: 'webhook-config', clientSecret: secret });
    const client = await sa.clients.findOne({ id: appId });
    expect(client?.clientId).toBe('shop');
    await sa.clients.update(
      { id: appId },
      { ...client, attributes: { ...client!.attributes, 'api.url': 'https://hooks.example/in', 'api.key': 'k-123' } },
    );
    const after = await sa.clients.findOne({ id: appId });
    expect(after?.attributes).toMatchObject({
      'api.url': 'https://hooks.example/in',
      'api.key': 'k-123',
      'pkce.code.challenge.method': 'S256',
    });
    expect(after?.description).toBe('the shop');
    expect(after?.redirectUris).toEqual(['https://shop.example/callback']);
  });

  it('replaces the whole client on a PUT with a partial body, as Keycloak does', async () => {
    const sa = new KcAdminClient({ baseUrl: t.url, realmName: 'acme' });
    await sa.auth({ grantType: 'client_credentials', clientId: 'webhook-config', clientSecret: secret });
    await sa.clients.update({ id: appId }, { attributes: { 'api.url': 'https://hooks.example/only' } });
    const after = await sa.clients.findOne({ id: appId });
    expect(after?.clientId).toBe('shop');
    expect(after?.attributes).toEqual({ 'api.url': 'https://hooks.example/only' });
    expect(after?.description).toBeUndefined();
    expect(after?.redirectUris).toEqual([]);
  });

  it('refuses the service account what manage-clients does not grant (403) and a missing token (401)', async () => {
    const sa = new KcAdminClient({ baseUrl: t.url, realmName: 'acme' });
    await sa.auth({ grantType: 'client_credentials', clientId: 'webhook-config', clientSecret: secret });
    await expect(sa.users.find({})).rejects.toMatchObject({ response: { status: 403 } });
    await expect(sa.realms.create({ realm: 'other' })).rejects.toMatchObject({ response: { status: 403 } });
    sa.setConfig({ realmName: 'master' });
    await expect(sa.clients.find({})).rejects.toMatchObject({ response: { status: 403 } });
    const anonymous = new KcAdminClient({ baseUrl: t.url, realmName: 'acme' });
    await expect(anonymous.clients.find({})).rejects.toMatchObject({ response: { status: 401 } });
  });
});
