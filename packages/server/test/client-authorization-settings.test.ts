import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejects, startAdminServer } from './support/admin-client.js';
import { api, httpDatabases } from './support/server.js';

/**
 * Issue 16: a client's `authorizationSettings` (Keycloak's authorization services: resources, policies, permissions)
 * are kept as data from realm files and written back by the export, never evaluated. `authorizationServicesEnabled:
 * true` stays named in `notImported` by an import and refused by the admin API; the admin API neither shows the
 * settings nor loses them on a client PUT.
 */

const SETTINGS = {
  allowRemoteResourceManagement: true,
  policyEnforcementMode: 'ENFORCING',
  resources: [{ name: 'Default Resource', type: 'urn:api:resources:default', ownerManagedAccess: false, uris: ['/*'] }],
  policies: [{ name: 'Default Policy', type: 'js', logic: 'POSITIVE', decisionStrategy: 'AFFIRMATIVE', config: { code: '$evaluation.grant();' } }],
  scopes: [],
  decisionStrategy: 'UNANIMOUS',
};

describe.each(httpDatabases)('clients\' authorization settings, kept as data (%s)', (database) => {
  let server: Awaited<ReturnType<typeof startAdminServer>>;
  beforeAll(async () => {
    server = await startAdminServer(database);
  });
  afterAll(() => server?.t.close());

  it('are imported as data, named in keptAsData, kept through a client PUT and exported back', async () => {
    const created = await api(server.t.url, 'POST', '/admin/realms', server.token, {
      realm: 'authz',
      enabled: true,
      clients: [
        { clientId: 'plain', publicClient: true },
        { clientId: 'guarded', secret: 'guarded-secret-1', serviceAccountsEnabled: true, authorizationServicesEnabled: true, authorizationSettings: SETTINGS },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body.keptAsData).toContain('realm.clients[1].authorizationSettings');
    expect(created.body.notImported).toEqual(['realm.clients[1].authorizationServicesEnabled']);
    server.kc.setConfig({ realmName: 'authz' });
    const guarded = (await server.kc.clients.find({ clientId: 'guarded' }))[0];
    // Keycloak's client representation does not carry them either.
    expect(guarded).not.toHaveProperty('authorizationSettings');
    await server.kc.clients.update({ id: guarded.id! }, { ...guarded, description: 'still guarded', authorizationSettings: { resources: [] } as never });
    await rejects(server.kc.clients.update({ id: guarded.id! }, { ...guarded, authorizationServicesEnabled: true }), 400);
    const exported = await server.kc.realms.export({ realm: 'authz', exportClients: true });
    const client = exported.clients!.find((c) => c.clientId === 'guarded')!;
    expect(client.authorizationSettings).toEqual(SETTINGS);
    expect(client.description).toBe('still guarded');
    expect(exported.clients!.find((c) => c.clientId === 'plain')).not.toHaveProperty('authorizationSettings');
    // The export imported again keeps them: the same document.
    const again = await api(server.t.url, 'POST', '/admin/realms', server.token, { ...exported, realm: 'authz-copy' });
    expect(again.status).toBe(201);
    const copy = await server.kc.realms.export({ realm: 'authz-copy', exportClients: true });
    expect(copy.clients!.find((c) => c.clientId === 'guarded')!.authorizationSettings).toEqual(SETTINGS);
  });

  it('keeps those of a real export (BaSyx, Keycloak 22) as they are', async () => {
    const file = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/basyx-kc22.json'), 'utf8')) as { clients: { clientId: string; authorizationSettings?: object }[] };
    const guarded = file.clients.filter((c) => c.authorizationSettings).map((c) => ({ clientId: c.clientId, publicClient: true, authorizationSettings: c.authorizationSettings }));
    expect((await api(server.t.url, 'POST', '/admin/realms', server.token, { realm: 'authz-basyx', clients: guarded })).status).toBe(201);
    const exported = await server.kc.realms.export({ realm: 'authz-basyx', exportClients: true });
    for (const c of guarded) expect(exported.clients!.find((e) => e.clientId === c.clientId)!.authorizationSettings).toEqual(c.authorizationSettings);
  });

  it('refuses settings that are not an object, by JSON path', async () => {
    const refused = await api(server.t.url, 'POST', '/admin/realms', server.token, { realm: 'authz-bad', clients: [{ clientId: 'x', authorizationSettings: ['policy'] }] });
    expect(refused.status).toBe(400);
    expect(refused.body.errorMessage).toContain('realm.clients[0].authorizationSettings: must be an object');
  });
});
