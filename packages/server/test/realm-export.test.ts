import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 16, point 4: Keycloak's partial export (`POST …/partial-export`, the admin client's `realms.export`), and
 * its round trip: exported, imported into an empty server, exported again, the same document.
 */



/**
 * Identity providers (a secret in the config), a mapper, an LDAP user-storage component with a mapper under it
 * (a bind credential) and a client registration policy: kept as data and exported back (issue 16, point 2).
 */
async function addFederationData(kc: KcAdminClient, realmId: string, secret: string) {
  await kc.identityProviders.create({ alias: 'corp-oidc', providerId: 'oidc', displayName: 'Corp', trustEmail: true, config: { clientId: 'rg', clientSecret: secret, authorizationUrl: 'https://idp.example/auth' } });
  await kc.identityProviders.createMapper({ alias: 'corp-oidc', identityProviderMapper: { name: 'dept', identityProviderMapper: 'hardcoded-attribute-idp-mapper', identityProviderAlias: 'corp-oidc', config: { attribute: 'dept', 'attribute.value': 'sales' } } });
  const ldap = await kc.components.create({ name: 'corp-ldap', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', parentId: realmId, config: { connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: [`${secret}-ldap`], enabled: ['true'] } });
  await kc.components.create({ name: 'email', providerId: 'user-attribute-ldap-mapper', providerType: 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper', parentId: ldap.id, config: { 'ldap.attribute': ['mail'], 'user.model.attribute': ['email'] } });
  await kc.components.create({ name: 'Max Clients Limit', providerId: 'max-clients', providerType: 'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy', subType: 'anonymous', parentId: realmId, config: { 'max-clients': ['200'] } });
}

describe.each(httpDatabases)('realm partial export (%s)', (database) => {
  let source: TestServer;
  let target: TestServer;
  let kc: KcAdminClient;

  beforeAll(async () => {
    [source, target] = await Promise.all([startServer({ database }), startServer({ database })]);
    kc = await masterAdminClient(source.url);
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
    const staff = await kc.groups.create({ name: 'staff', attributes: { floor: ['2'] } });
    const clerks = await kc.groups.createChildGroup({ id: staff.id }, { name: 'clerks' });
    await kc.groups.addRealmRoleMappings({ id: clerks.id, roles: [(await kc.roles.findOneByName({ name: 'clerk' })) as never] });
    await kc.realms.addDefaultGroup({ realm: 'shop', id: staff.id });
    await addFederationData(kc, (await kc.realms.findOne({ realm: 'shop' }))!.id!, 'idp-secret-1');
  }, 60_000);
  afterAll(async () => {
    await source?.close();
    await target?.close();
  });

  it('exports settings and flows only, unless clients and roles are asked for', async () => {
    const bare = (await kc.realms.export({ realm: 'shop' })) as Record<string, unknown>;
    // GET answers the same document as the console's POST (it changes nothing).
    const got = await fetch(`${source.url}/admin/realms/shop/partial-export?exportClients=true`, { headers: { authorization: `Bearer ${await kc.getAccessToken()}` } });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual(await kc.realms.export({ realm: 'shop', exportClients: true }));
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
    expect(exported.groups).toEqual([
      expect.objectContaining({ name: 'staff', path: '/staff', attributes: { floor: ['2'] }, subGroups: [expect.objectContaining({ name: 'clerks', path: '/staff/clerks', realmRoles: ['clerk'] })] }),
    ]);
    expect(exported.defaultGroups).toEqual(['/staff']);
    // Identity providers, their mappers and components come along, secrets masked, ids left out.
    expect(JSON.stringify(exported)).not.toContain('idp-secret-1');
    expect(exported.identityProviders).toEqual([expect.objectContaining({ alias: 'corp-oidc', providerId: 'oidc', displayName: 'Corp', trustEmail: true, config: { clientId: 'rg', clientSecret: '**********', authorizationUrl: 'https://idp.example/auth' } })]);
    expect(exported.identityProviders[0]).not.toHaveProperty('internalId');
    expect(exported.identityProviderMappers).toEqual([{ name: 'dept', identityProviderAlias: 'corp-oidc', identityProviderMapper: 'hardcoded-attribute-idp-mapper', config: { attribute: 'dept', 'attribute.value': 'sales' } }]);
    expect(exported.components['org.keycloak.storage.UserStorageProvider']).toEqual([
      {
        name: 'corp-ldap',
        providerId: 'ldap',
        config: { connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: ['**********'], enabled: ['true'] },
        subComponents: { 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper': [{ name: 'email', providerId: 'user-attribute-ldap-mapper', config: { 'ldap.attribute': ['mail'], 'user.model.attribute': ['email'] }, subComponents: {} }] },
      },
    ]);
    // The realm's default policies (README: dynamic client registration) and the one added.
    expect(exported.components['org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy']).toContainEqual({ name: 'Max Clients Limit', providerId: 'max-clients', subType: 'anonymous', config: { 'max-clients': ['200'] }, subComponents: {} });
    expect(exported.components['org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy']).toHaveLength(9);
    // The realm's keys as key providers, without their key material, as Keycloak's partial export writes them.
    expect(exported.components['org.keycloak.keys.KeyProvider']).toEqual([{ name: 'rsa-generated', providerId: 'rsa-generated', subComponents: {}, config: { priority: ['100'], enabled: ['true'], active: ['true'], algorithm: ['RS256'], keySize: ['2048'] } }]);

    const other = await masterAdminClient(target.url);
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

describe.each(httpDatabases)('realmgate export, then --import-realm on an empty server (%s)', (database) => {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-export-'));
  let source: TestServer;
  let kc: KcAdminClient;
  beforeAll(async () => {
    source = await startServer({ database });
    kc = await masterAdminClient(source.url);
    await kc.realms.create({ realm: 'crm', enabled: true, passwordPolicy: 'length(10)' });
    kc.setConfig({ realmName: 'crm' });
    const api = await kc.clients.create({ clientId: 'crm-api', secret: 'crm-secret-value-1', serviceAccountsEnabled: true, directAccessGrantsEnabled: true });
    await kc.roles.create({ name: 'sales' });
    const sales = await kc.roles.findOneByName({ name: 'sales' });
    const { id } = await kc.users.create({ username: 'carla', email: 'carla@example.test', enabled: true, firstName: 'Carla', credentials: [{ type: 'password', value: 'Carla-secret-1', temporary: false }] });
    await kc.users.addRealmRoleMappings({ id, roles: [sales!] as never });
    // The console labels a password it sets; an export keeps the label, as Keycloak's.
    const [password] = await kc.users.getCredentials({ id });
    await kc.users.updateCredentialLabel({ id, credentialId: password.id! }, 'My password');
    const team = await kc.groups.create({ name: 'team' });
    await kc.users.addToGroup({ id, groupId: team.id });
    await kc.users.create({ username: 'dora', enabled: true, requiredActions: ['UPDATE_PASSWORD'], credentials: [{ type: 'password', value: 'Dora-secret-12', temporary: false }] });
    const serviceAccount = await kc.clients.getServiceAccountUser({ id: api.id });
    await kc.users.addRealmRoleMappings({ id: serviceAccount.id!, roles: [sales!] as never });
    await addFederationData(kc, (await kc.realms.findOne({ realm: 'crm' }))!.id!, 'crm-idp-secret');
    await kc.users.addToFederatedIdentity({ id, federatedIdentityId: 'corp-oidc', federatedIdentity: { userId: 'corp-4711', userName: 'carla@corp' } });
  }, 60_000);
  afterAll(async () => {
    await source?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the whole realm with secrets and password hashes, and the import restores it: users sign in, secrets work', async () => {
    const file = join(dir, `crm-${database}.json`);
    const cli = spawnSync(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', 'export', '--realm', 'crm', '--file', file, '--db-url', source.server.context.config.dbUrl, '--providers-dir', source.server.context.config.providersDir], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REALMGATE_LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stderr).toContain('crm: 3 users');
    const exported = JSON.parse(readFileSync(file, 'utf8'));
    const carla = exported.users.find((u: { username: string }) => u.username === 'carla');
    expect(carla.credentials[0]).toMatchObject({ type: 'password', userLabel: 'My password', createdDate: expect.any(Number), secretData: expect.any(String), credentialData: expect.stringContaining('"algorithm":"argon2"') });
    expect(JSON.stringify(exported)).not.toContain('Carla-secret-1');
    expect(carla.groups).toEqual(['/team']);
    expect(carla.federatedIdentities).toEqual([{ identityProvider: 'corp-oidc', userId: 'corp-4711', userName: 'carla@corp' }]);
    expect(exported.users.find((u: { username: string }) => u.username === 'dora').requiredActions).toEqual(['UPDATE_PASSWORD']);
    expect(exported.clients.find((c: { clientId: string }) => c.clientId === 'crm-api').secret).toBe('crm-secret-value-1');
    expect(exported.users.find((u: { serviceAccountClientId?: string }) => u.serviceAccountClientId === 'crm-api').realmRoles).toContain('sales');
    // The full export keeps the secrets of identity providers and components, so the import restores them.
    expect(exported.identityProviders[0].config.clientSecret).toBe('crm-idp-secret');
    expect(exported.components['org.keycloak.storage.UserStorageProvider'][0].config.bindCredential).toEqual(['crm-idp-secret-ldap']);

    const importDir = join(dir, `import-${database}`);
    mkdirSync(importDir);
    writeFileSync(join(importDir, 'crm.json'), readFileSync(file));
    const target = await startServer({ database, config: { REALMGATE_IMPORT_REALM: importDir } });
    try {
      const signIn = await tokenRequest(target.url, 'crm', { grant_type: 'password', client_id: 'crm-api', client_secret: 'crm-secret-value-1', username: 'carla', password: 'Carla-secret-1' });
      expect(signIn.status).toBe(200);
      const service = await tokenRequest(target.url, 'crm', { grant_type: 'client_credentials', client_id: 'crm-api', client_secret: 'crm-secret-value-1' });
      expect(service.status).toBe(200);
      expect((decodeJwt(service.body.access_token as string) as { realm_access?: { roles: string[] } }).realm_access?.roles).toContain('sales');
      const other = await masterAdminClient(target.url);
      const options = { realm: 'crm', exportClients: true, exportGroupsAndRoles: true };
      expect(await other.realms.export(options)).toEqual(await kc.realms.export(options));
      // The secrets were restored as they were.
      const stored = await target.server.context.storage.federation.providers((await target.server.context.storage.realms.byName('crm'))!.id);
      expect(stored.map((p) => p.config.clientSecret)).toEqual(['crm-idp-secret']);
      // Carla's link to the identity provider came back with her.
      other.setConfig({ realmName: 'crm' });
      const [restored] = await other.users.find({ username: 'carla', exact: true });
      expect(await other.users.listFederatedIdentities({ id: restored.id! })).toEqual([{ identityProvider: 'corp-oidc', userId: 'corp-4711', userName: 'carla@corp' }]);
      expect(target.logs.find((l) => l.msg === 'realm import: parts of the file are kept as data, not used for sign-in')?.keptAsData).toEqual([
        'realm.identityProviders',
        'realm.identityProviderMappers',
        'realm.users[*].federatedIdentities',
        'realm.components["org.keycloak.storage.UserStorageProvider"]',
      ]);
    } finally {
      await target.close();
    }
  }, 120_000);

  it('round trip of the whole file: --dir exports every realm; imported into an empty server, its export is the same document (ids aside)', async () => {
    const runCli = (server: TestServer, args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', 'export', ...args, '--db-url', server.server.context.config.dbUrl, '--providers-dir', server.server.context.config.providersDir], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REALMGATE_LOG_LEVEL: 'warn' },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const first = join(dir, `dir-first-${database}`);
    mkdirSync(first);
    const cli = runCli(source, ['--dir', first]);
    expect(cli.status, cli.stderr).toBe(0);
    // Every realm, one <realm>-realm.json each, as kc.sh export --dir writes them.
    expect(readdirSync(first).sort()).toEqual(['crm-realm.json', 'master-realm.json']);

    const importDir = join(dir, `dir-import-${database}`);
    mkdirSync(importDir);
    copyFileSync(join(first, 'crm-realm.json'), join(importDir, 'crm-realm.json'));
    const target = await startServer({ database, config: { REALMGATE_IMPORT_REALM: importDir } });
    try {
      const second = join(dir, `dir-second-${database}`);
      mkdirSync(second);
      const again = runCli(target, ['--dir', second, '--realm', 'crm']);
      expect(again.status, again.stderr).toBe(0);
      // This server makes new ids at an import (Keycloak keeps the file's): everything else is the same, the users'
      // and their passwords' creation times and the password's label included.
      const withoutIds = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(withoutIds);
        if (typeof value !== 'object' || value === null) return value;
        return Object.fromEntries(Object.entries(value).filter(([k]) => !['id', 'containerId', 'internalId'].includes(k)).map(([k, v]) => [k, withoutIds(v)]));
      };
      const before = JSON.parse(readFileSync(join(first, 'crm-realm.json'), 'utf8'));
      const after = JSON.parse(readFileSync(join(second, 'crm-realm.json'), 'utf8'));
      expect(withoutIds(after)).toEqual(withoutIds(before));
      // The password hashes are the file's, not new ones: carla signs in on the second server with her password.
      expect((await tokenRequest(target.url, 'crm', { grant_type: 'password', client_id: 'crm-api', client_secret: 'crm-secret-value-1', username: 'carla', password: 'Carla-secret-1' })).status).toBe(200);
    } finally {
      await target.close();
    }
  }, 180_000);

  it('refuses an unknown realm and leaves no file', () => {
    const file = join(dir, 'none.json');
    const cli = spawnSync(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts', 'export', '--realm', 'nope', '--file', file, '--db-url', source.server.context.config.dbUrl, '--providers-dir', source.server.context.config.providersDir], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REALMGATE_LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain('realm "nope" does not exist');
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.partial`)).toBe(false);
  }, 60_000);
});
