import KcAdminClient from '@keycloak/keycloak-admin-client';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement as realmManagementOf } from './support/admin-client.js';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 16: Keycloak's partial import (`POST …/partialImport`, the admin client's `realms.partialImport`), on SQLite
 * (issue 36): what it writes, skips, overwrites and rolls back is compared between SQLite and PostgreSQL by
 * storage-import-export.test.ts.
 */

const wirtshaus = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/wirtshaus-demo.json'), 'utf8'));

describe.each(httpDatabases)('partial import (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
  }, 60_000);
  afterAll(() => t?.close());

  const signIn = (username: string, password: string) => tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username, password });

  it("a real export's roles, clients and users into an existing realm, skipping what exists; its users sign in", async () => {
    const { roles, clients, users } = wirtshaus;
    const result = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', roles, clients, users } as never });
    const names = (type: string, action: string) => result.results.filter((r) => r.resourceType === type && r.action === action).map((r) => r.resourceName);
    expect(names('REALM_ROLE', 'ADDED')).toContain('user-is-manager');
    expect(names('REALM_ROLE', 'SKIPPED')).toEqual(expect.arrayContaining(['offline_access', 'uma_authorization', 'default-roles-demo']));
    expect(names('CLIENT', 'ADDED')).toEqual(expect.arrayContaining(['backend', 'instaff-ios']));
    expect(names('CLIENT', 'SKIPPED')).toEqual(expect.arrayContaining(['admin-cli', 'account', 'realm-management']));
    expect(names('USER', 'ADDED')).toEqual(['admin']);
    expect(result.added + result.skipped + result.overwritten).toBe(result.results.length);
    expect(result.overwritten).toBe(0);
    expect((await signIn('admin', 'admin')).status).toBe(200);
  });

  it('OVERWRITE never replaces a client that signs administrators in, broker from a realm file included', async () => {
    await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', clients: [{ clientId: 'broker', redirectUris: ['https://app.example/*'] }] } as never });
    const attacker = ['https://attacker.example/*'];
    const rep = { ifResourceExists: 'OVERWRITE', clients: ['broker', 'security-admin-console', 'account-console'].map((clientId) => ({ clientId, redirectUris: attacker })) };
    const result = await kc.realms.partialImport({ realm: 'demo', rep: rep as never });
    expect(result.results.map((r) => `${r.resourceName} ${r.action}`).sort()).toEqual(['account-console SKIPPED', 'broker SKIPPED', 'security-admin-console SKIPPED']);
    kc.setConfig({ realmName: 'demo' });
    try {
      for (const clientId of ['broker', 'security-admin-console', 'account-console']) {
        const [client] = await kc.clients.find({ clientId });
        expect(client.redirectUris).not.toContain(attacker[0]);
      }
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('FAIL refuses an existing resource with 409 naming it, and writes nothing of the file', async () => {
    const rep = { ifResourceExists: 'FAIL', roles: { realm: [{ name: 'brand-new-role' }, { name: 'user-is-manager' }] } };
    await expect(kc.realms.partialImport({ realm: 'demo', rep: rep as never })).rejects.toMatchObject({
      response: { status: 409 },
      responseData: { errorMessage: "Role 'user-is-manager' already exists" },
    });
    kc.setConfig({ realmName: 'demo' });
    try {
      expect(await kc.roles.findOneByName({ name: 'brand-new-role' })).toBeFalsy();
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('OVERWRITE replaces a user (a new password) and a role (its description and composites)', async () => {
    const rep = {
      ifResourceExists: 'OVERWRITE',
      roles: { realm: [{ name: 'user-is-manager', description: 'managers', composites: { realm: ['offline_access'] } }] },
      users: [{ username: 'admin', enabled: true, credentials: [{ type: 'password', value: 'Changed-pass-1' }], realmRoles: ['user-is-manager'] }],
    };
    const result = await kc.realms.partialImport({ realm: 'demo', rep: rep as never });
    expect(result.results.map((r) => [r.resourceType, r.resourceName, r.action])).toEqual([
      ['REALM_ROLE', 'user-is-manager', 'OVERWRITTEN'],
      ['USER', 'admin', 'OVERWRITTEN'],
    ]);
    expect((await signIn('admin', 'admin')).status).toBe(400);
    expect((await signIn('admin', 'Changed-pass-1')).status).toBe(200);
    kc.setConfig({ realmName: 'demo' });
    try {
      const role = await kc.roles.findOneByName({ name: 'user-is-manager' });
      expect(role?.description).toBe('managers');
      expect((await kc.roles.getCompositeRoles({ id: role!.id! })).map((r) => r.name)).toEqual(['offline_access']);
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('a limited administrator cannot give anyone an administrative role through it', async () => {
    kc.setConfig({ realmName: 'demo' });
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    const { id } = await kc.users.create({ username: 'importer', enabled: true, credentials: [{ type: 'password', value: 'Importer-pass-1', temporary: false }] });
    const roles = await Promise.all(['manage-realm', 'manage-users'].map((name) => kc.clients.findRole({ id: management.id!, roleName: name })));
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: roles as never });
    kc.setConfig({ realmName: 'master' });
    const limited = new KcAdminClient({ baseUrl: t.url, realmName: 'demo' });
    await limited.auth({ grantType: 'password', clientId: 'admin-cli', username: 'importer', password: 'Importer-pass-1' });
    const attempts = [
      // A new user holding realm-admin, and the importer itself overwritten with it.
      { ifResourceExists: 'SKIP', users: [{ username: 'sleeper', enabled: true, clientRoles: { 'realm-management': ['realm-admin'] } }] },
      { ifResourceExists: 'OVERWRITE', users: [{ username: 'importer', enabled: true, credentials: [{ type: 'password', value: 'Importer-pass-1' }], clientRoles: { 'realm-management': ['realm-admin'] } }] },
      // The default roles, which every new user gets, made to hold realm-admin.
      { ifResourceExists: 'OVERWRITE', roles: { realm: [{ name: 'default-roles-demo', composites: { client: { 'realm-management': ['realm-admin'] } } }] } },
      // A new role composed of manage-clients, then granted.
      { ifResourceExists: 'SKIP', roles: { realm: [{ name: 'escalate', composites: { client: { 'realm-management': ['manage-clients'] } } }] } },
    ];
    for (const rep of attempts) {
      await expect(limited.realms.partialImport({ realm: 'demo', rep: rep as never }), JSON.stringify(rep)).rejects.toMatchObject({ response: { status: 403 } });
    }
    kc.setConfig({ realmName: 'demo' });
    try {
      expect(await kc.users.find({ username: 'sleeper', exact: true })).toEqual([]);
      expect(await kc.roles.findOneByName({ name: 'escalate' })).toBeFalsy();
      const [importer] = await kc.users.find({ username: 'importer', exact: true });
      expect(importer.id).toBe(id);
      const held = (await kc.users.listCompositeClientRoleMappings({ id, clientUniqueId: management.id! })).map((r) => r.name);
      expect(held).not.toContain('realm-admin');
      expect(held).not.toContain('manage-clients');
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
    // Without manage-realm the route itself is closed.
    await expect(new KcAdminClient({ baseUrl: t.url, realmName: 'demo' }).realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP' } as never })).rejects.toMatchObject({ response: { status: 401 } });
  });

  it('groups (with subgroups, attributes and roles) and users joining them, new groups and existing ones; SKIP and OVERWRITE', async () => {
    kc.setConfig({ realmName: 'demo' });
    try {
      await kc.roles.create({ name: 'auditor' });
      const { id: existing } = await kc.groups.create({ name: 'existing' });
      const rep = {
        ifResourceExists: 'FAIL',
        groups: [{ name: 'staff', attributes: { floor: ['2'] }, realmRoles: ['auditor'], subGroups: [{ name: 'clerks', subGroups: [] }] }],
        users: [
          { username: 'gina', enabled: true, groups: ['/staff/clerks', '/existing'], credentials: [{ type: 'password', value: 'Gina-pass-1' }] },
        ],
      };
      const result = await kc.realms.partialImport({ realm: 'demo', rep: rep as never });
      expect(result.results.map((r) => [r.resourceType, r.resourceName, r.action])).toEqual([['USER', 'gina', 'ADDED'], ['GROUP', 'staff', 'ADDED']]);
      expect((result as unknown as { notImported: string[] }).notImported).toEqual([]);
      const [gina] = await kc.users.find({ username: 'gina', exact: true });
      expect((await kc.users.listGroups({ id: gina.id! })).map((g) => g.path).sort()).toEqual(['/existing', '/staff/clerks']);
      const [staff] = await kc.groups.find({ search: 'staff' });
      expect((await kc.groups.findOne({ id: staff.id! }))?.attributes).toEqual({ floor: ['2'] });
      // Through the parent group, gina holds auditor: her token says so.
      const token = (await signIn('gina', 'Gina-pass-1')).body.access_token as string;
      expect(JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).realm_access.roles).toContain('auditor');

      // FAIL on an existing group: 409 naming it, nothing written (the new user of the same file neither).
      await expect(kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'FAIL', groups: [{ name: 'staff' }], users: [{ username: 'hal', enabled: true }] } as never })).rejects.toMatchObject({
        response: { status: 409 },
        responseData: { errorMessage: "Group 'staff' already exists" },
      });
      expect(await kc.users.find({ username: 'hal', exact: true })).toEqual([]);
      // SKIP leaves it; OVERWRITE makes it again from the file (its subgroups and members go with the old one).
      const skipped = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', groups: [{ name: 'staff', attributes: { floor: ['9'] } }] } as never });
      expect(skipped.results).toEqual([{ action: 'SKIPPED', resourceType: 'GROUP', resourceName: 'staff', id: staff.id }]);
      const overwritten = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'OVERWRITE', groups: [{ name: 'staff', attributes: { floor: ['9'] } }] } as never });
      expect(overwritten.results.map((r) => [r.resourceType, r.resourceName, r.action])).toEqual([['GROUP', 'staff', 'OVERWRITTEN']]);
      const [again] = await kc.groups.find({ search: 'staff' });
      expect((await kc.groups.findOne({ id: again.id! }))?.attributes).toEqual({ floor: ['9'] });
      expect((await kc.users.listGroups({ id: gina.id! })).map((g) => g.path)).toEqual(['/existing']);
      // A user naming a group neither the file nor the realm has: 400 with its path, nothing written.
      await expect(kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', users: [{ username: 'ivy', enabled: true, groups: ['/nowhere'] }] } as never })).rejects.toMatchObject({
        response: { status: 400 },
        responseData: { errorMessage: expect.stringContaining('groups[0]: group "/nowhere" does not exist') },
      });
      expect(await kc.users.find({ username: 'ivy', exact: true })).toEqual([]);
      expect(existing).toBeTruthy();
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('a limited administrator cannot escalate through groups: a group carrying realm-admin, joining one that does, overwriting an administrators\' group', async () => {
    kc.setConfig({ realmName: 'demo' });
    const { management, roles } = await realmManagementOf(kc);
    const { id: board } = await kc.groups.create({ name: 'board' });
    await kc.groups.addClientRoleMappings({ id: board, clientUniqueId: management, roles: [roles.get('realm-admin')!] });
    const { id } = await kc.users.create({ username: 'group-importer', enabled: true, credentials: [{ type: 'password', value: 'Importer-pass-1', temporary: false }] });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get('manage-realm')!, roles.get('manage-users')!] });
    kc.setConfig({ realmName: 'master' });
    const limited = new KcAdminClient({ baseUrl: t.url, realmName: 'demo' });
    await limited.auth({ grantType: 'password', clientId: 'admin-cli', username: 'group-importer', password: 'Importer-pass-1' });
    const attempts = [
      { ifResourceExists: 'SKIP', groups: [{ name: 'backdoor', clientRoles: { 'realm-management': ['realm-admin'] } }], users: [{ username: 'mole', enabled: true, groups: ['/backdoor'] }] },
      { ifResourceExists: 'SKIP', users: [{ username: 'mole', enabled: true, groups: ['/board'] }] },
      { ifResourceExists: 'OVERWRITE', groups: [{ name: 'board' }] },
    ];
    for (const rep of attempts) {
      await expect(limited.realms.partialImport({ realm: 'demo', rep: rep as never }), JSON.stringify(rep)).rejects.toMatchObject({ response: { status: 403 } });
    }
    kc.setConfig({ realmName: 'demo' });
    try {
      expect(await kc.users.find({ username: 'mole', exact: true })).toEqual([]);
      expect((await kc.groups.find({ search: 'backdoor' })).length).toBe(0);
      expect((await kc.groups.listClientRoleMappings({ id: board, clientUniqueId: management })).map((r) => r.name)).toEqual(['realm-admin']);
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('identity providers and their mappers are kept as data: added, skipped, overwritten, reported as not used for sign-in', async () => {
    const cqen = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/cqen-example.json'), 'utf8'));
    const { identityProviders, identityProviderMappers } = cqen;
    const added = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'FAIL', identityProviders, identityProviderMappers } as never });
    expect(added.results.map((r) => [r.resourceType, r.resourceName, r.action])).toEqual([['IDP', 'github', 'ADDED']]);
    expect((added as unknown as { keptAsData: string[] }).keptAsData).toEqual(['realm.identityProviders', 'realm.identityProviderMappers']);
    expect(t.logs.filter((l) => l.msg === 'realm import: parts of the file are kept as data, not used for sign-in' && l.realm === 'demo').at(-1)?.keptAsData).toEqual(['realm.identityProviders', 'realm.identityProviderMappers']);
    kc.setConfig({ realmName: 'demo' });
    try {
      expect((await kc.identityProviders.findOne({ alias: 'github' }))?.config).toEqual({ syncMode: 'IMPORT', clientSecret: '**********', clientId: '?GITHUBID?', useJwksUrl: 'true' });
      expect((await kc.identityProviders.findMappers({ alias: 'github' })).map((m) => m.name)).toEqual(['idp-alias']);
      // FAIL: 409 naming it, nothing written; SKIP leaves it; OVERWRITE replaces it (and its mappers).
      await expect(kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'FAIL', identityProviders } as never })).rejects.toMatchObject({
        response: { status: 409 },
        responseData: { errorMessage: "Identity Provider 'github' already exists" },
      });
      const skipped = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', identityProviders: [{ ...identityProviders[0], displayName: 'skipped' }] } as never });
      expect(skipped.results.map((r) => r.action)).toEqual(['SKIPPED']);
      expect((await kc.identityProviders.findOne({ alias: 'github' }))?.displayName).toBeUndefined();
      const overwritten = await kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'OVERWRITE', identityProviders: [{ ...identityProviders[0], displayName: 'GitHub' }] } as never });
      expect(overwritten.results.map((r) => r.action)).toEqual(['OVERWRITTEN']);
      expect((await kc.identityProviders.findOne({ alias: 'github' }))?.displayName).toBe('GitHub');
      expect(await kc.identityProviders.findMappers({ alias: 'github' })).toEqual([]);
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('identity providers need manage-identity-providers besides manage-realm', async () => {
    kc.setConfig({ realmName: 'demo' });
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    const { id } = await kc.users.create({ username: 'realm-only', enabled: true, credentials: [{ type: 'password', value: 'Realm-only-pass-1', temporary: false }] });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: [(await kc.clients.findRole({ id: management.id!, roleName: 'manage-realm' }))!] as never });
    kc.setConfig({ realmName: 'master' });
    const limited = new KcAdminClient({ baseUrl: t.url, realmName: 'demo' });
    await limited.auth({ grantType: 'password', clientId: 'admin-cli', username: 'realm-only', password: 'Realm-only-pass-1' });
    await expect(limited.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'SKIP', identityProviders: [{ alias: 'sneaky', providerId: 'oidc' }] } as never })).rejects.toMatchObject({ response: { status: 403 } });
    kc.setConfig({ realmName: 'demo' });
    try {
      expect(await kc.identityProviders.findOne({ alias: 'sneaky' })).toBeFalsy();
    } finally {
      kc.setConfig({ realmName: 'master' });
    }
  });

  it('refuses a bad policy or shape with 400 naming it', async () => {
    await expect(kc.realms.partialImport({ realm: 'demo', rep: { ifResourceExists: 'MERGE' } as never })).rejects.toMatchObject({ response: { status: 400 }, responseData: { errorMessage: expect.stringContaining('ifResourceExists') } });
    await expect(kc.realms.partialImport({ realm: 'demo', rep: { users: 'x' } as never })).rejects.toMatchObject({ response: { status: 400 } });
  });
});
