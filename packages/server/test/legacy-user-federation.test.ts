import { startAdminServer } from './support/admin-client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, httpDatabases } from './support/server.js';

/**
 * Issue 16: Keycloak 1–3's `userFederationProviders` / `userFederationMappers` are converted as Keycloak 26's import
 * converts them (LegacyExportImportManager): an ldap or kerberos provider becomes a UserStorageProvider component, an
 * LDAP provider's mappers its LDAPStorageMapper sub-components; kept as data like every component. What Keycloak
 * drops is named in `notImported`.
 */

const USER_STORAGE = 'org.keycloak.storage.UserStorageProvider';
const LDAP_MAPPER = 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper';

const legacyFile = (realm: string) => ({
  realm,
  enabled: true,
  userFederationProviders: [
    { id: 'f1', displayName: 'corp-ldap', providerName: 'ldap', priority: 1, fullSyncPeriod: -1, changedSyncPeriod: 3600, lastSync: 0, config: { connectionUrl: 'ldap://127.0.0.1:1', bindCredential: 'legacy-bind-secret', editMode: 'READ_ONLY' } },
    { id: 'f2', displayName: 'corp-kerberos', providerName: 'kerberos', priority: 2, config: { kerberosRealm: 'CORP.EXAMPLE' } },
    { id: 'f3', displayName: 'corp-custom', providerName: 'custom-store', config: {} },
  ],
  userFederationMappers: [
    { id: 'm1', name: 'email', federationProviderDisplayName: 'corp-ldap', federationMapperType: 'user-attribute-ldap-mapper', config: { 'ldap.attribute': 'mail', 'user.model.attribute': 'email' } },
    { id: 'm2', name: 'orphan', federationProviderDisplayName: 'corp-custom', federationMapperType: 'user-attribute-ldap-mapper', config: {} },
  ],
});

describe.each(httpDatabases)('legacy user federation of old realm files (%s)', (database) => {
  let server: Awaited<ReturnType<typeof startAdminServer>>;
  beforeAll(async () => {
    server = await startAdminServer(database);
  });
  afterAll(() => server?.t.close());

  it('becomes user-storage components with their mapper, kept as data, and says what Keycloak drops', async () => {
    const created = await api(server.t.url, 'POST', '/admin/realms', server.token, legacyFile('legacy'));
    expect(created.status).toBe(201);
    expect(created.body.notImported).toEqual([
      'realm.userFederationProviders[2] (provider "custom-store": Keycloak 26 converts only ldap and kerberos)',
      'realm.userFederationMappers[1] (no ldap provider "corp-custom" among realm.userFederationProviders)',
    ]);
    expect(created.body.keptAsData).toEqual(['realm.userFederationProviders (as components of type org.keycloak.storage.UserStorageProvider)', 'realm.userFederationMappers (as their sub-components)']);
    server.kc.setConfig({ realmName: 'legacy' });
    const storage = await server.kc.components.find({ type: USER_STORAGE });
    expect(storage.map((c) => [c.name, c.providerId]).sort()).toEqual([['corp-kerberos', 'kerberos'], ['corp-ldap', 'ldap']]);
    const ldap = storage.find((c) => c.name === 'corp-ldap')!;
    expect(ldap.config).toEqual({ connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: ['**********'], editMode: ['READ_ONLY'], priority: ['1'], fullSyncPeriod: ['-1'], changedSyncPeriod: ['3600'], lastSync: ['0'] });
    expect(storage.find((c) => c.name === 'corp-kerberos')!.config).toMatchObject({ kerberosRealm: ['CORP.EXAMPLE'], priority: ['2'], fullSyncPeriod: ['0'] });
    const mappers = await server.kc.components.find({ parent: ldap.id, type: LDAP_MAPPER });
    expect(mappers).toEqual([expect.objectContaining({ name: 'email', providerId: 'user-attribute-ldap-mapper', config: { 'ldap.attribute': ['mail'], 'user.model.attribute': ['email'] } })]);
    // The export writes them as Keycloak 26 does: components, no legacy lists.
    const exported = await server.kc.realms.export({ realm: 'legacy' });
    expect(exported).not.toHaveProperty('userFederationProviders');
    expect((exported.components as Record<string, { name: string; subComponents: Record<string, unknown[]> }[]>)[USER_STORAGE].find((c) => c.name === 'corp-ldap')!.subComponents[LDAP_MAPPER]).toHaveLength(1);
    const again = await api(server.t.url, 'POST', '/admin/realms', server.token, { ...exported, realm: 'legacy-copy' });
    expect(again.status).toBe(201);
    expect(await server.kc.realms.export({ realm: 'legacy-copy' })).toEqual({ ...exported, realm: 'legacy-copy', displayName: exported.displayName });
  });

  it('refuses a provider without providerName or a mapper without a type, by JSON path', async () => {
    const noName = await api(server.t.url, 'POST', '/admin/realms', server.token, { realm: 'legacy-bad', userFederationProviders: [{ displayName: 'x' }] });
    expect(noName.status).toBe(400);
    expect(noName.body.errorMessage).toContain('realm.userFederationProviders[0].providerName');
    const noType = await api(server.t.url, 'POST', '/admin/realms', server.token, { realm: 'legacy-bad', userFederationMappers: [{ name: 'x', federationProviderDisplayName: 'y' }] });
    expect(noType.status).toBe(400);
    expect(noType.body.errorMessage).toContain('realm.userFederationMappers[0].federationMapperType');
  });
});
