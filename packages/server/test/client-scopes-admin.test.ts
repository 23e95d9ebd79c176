import KcAdminClient from '@keycloak/keycloak-admin-client';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientScopeSet, effectiveRoles } from '../src/services/index.js';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { api, httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Client scopes as Keycloak 26 has them, through the official admin client: the built-ins of a new realm, the
 * realm's and each client's default and optional scopes, CRUD of scopes and of the protocol mappers of scopes
 * and clients, role scope mappings of a scope, and what a `fullScopeAllowed: false` client's tokens may carry.
 */

const REALM = 'scoped';
const PASSWORD = 'Scope-pass-1';
const BUILTINS = ['acr', 'address', 'basic', 'email', 'microprofile-jwt', 'offline_access', 'organization', 'phone', 'profile', 'roles', 'service_account', 'web-origins'];
const DEFAULTS = ['acr', 'basic', 'email', 'profile', 'roles', 'web-origins'];
const OPTIONALS = ['address', 'microprofile-jwt', 'offline_access', 'organization', 'phone'];
const HARDCODED = 'oidc-hardcoded-claim-mapper';
const hardcoded = (name: string, value = 'v') => ({ name, protocol: 'openid-connect', protocolMapper: HARDCODED, config: { 'claim.name': name, 'claim.value': value, 'access.token.claim': 'true' } });

const names = (list: { name?: string }[]) => list.map((s) => s.name!).sort();

describe.each(httpDatabases)('client scopes through the official admin client (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const scopeId = async (name: string) => (await kc.clientScopes.findOneByName({ name }))!.id!;

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
  });
  afterAll(() => t?.close());

  it('a new realm has Keycloak 26 built-in scopes with their mappers, and its default and optional lists', async () => {
    const scopes = await kc.clientScopes.find();
    expect(names(scopes)).toEqual(BUILTINS);
    const profile = scopes.find((s) => s.name === 'profile')!;
    expect(profile).toMatchObject({ protocol: 'openid-connect', description: 'OpenID Connect built-in scope: profile', attributes: { 'include.in.token.scope': 'true' } });
    expect(profile.protocolMappers!.find((m) => m.name === 'username')).toMatchObject({
      protocolMapper: 'oidc-usermodel-attribute-mapper',
      config: { 'user.attribute': 'username', 'claim.name': 'preferred_username', 'jsonType.label': 'String' },
    });
    expect(scopes.find((s) => s.name === 'roles')!.protocolMappers!.map((m) => m.protocolMapper).sort()).toEqual(['oidc-audience-resolve-mapper', 'oidc-usermodel-client-role-mapper', 'oidc-usermodel-realm-role-mapper']);
    expect(scopes.find((s) => s.name === 'offline_access')!.protocolMappers).toBeUndefined();
    expect(names(await kc.clientScopes.listDefaultClientScopes())).toEqual(DEFAULTS);
    expect(names(await kc.clientScopes.listDefaultOptionalClientScopes())).toEqual(OPTIONALS);
    // As Keycloak: offline_access carries the realm role of that name in its scope mappings.
    expect(names(await kc.clientScopes.listRealmScopeMappings({ id: await scopeId('offline_access') }))).toEqual(['offline_access']);
    // The built-in clients have the defaults too.
    const [adminCli] = await kc.clients.find({ clientId: 'admin-cli' });
    expect([...adminCli.defaultClientScopes!].sort()).toEqual(DEFAULTS);
    expect([...adminCli.optionalClientScopes!].sort()).toEqual(OPTIONALS);
  });

  it("a new client gets the realm's lists, or the ones its representation names; service_account follows its service account", async () => {
    const { id } = await kc.clients.create({ clientId: 'plain' });
    const plain = (await kc.clients.findOne({ id }))!;
    expect([...plain.defaultClientScopes!].sort()).toEqual(DEFAULTS);
    expect([...plain.optionalClientScopes!].sort()).toEqual(OPTIONALS);
    expect(names(await kc.clients.listDefaultClientScopes({ id }))).toEqual(DEFAULTS);
    expect(names(await kc.clients.listOptionalClientScopes({ id }))).toEqual(OPTIONALS);

    const { id: chosen } = await kc.clients.create({ clientId: 'chosen', defaultClientScopes: ['email', 'no-such-scope'], optionalClientScopes: ['phone'] });
    expect(await kc.clients.findOne({ id: chosen })).toMatchObject({ defaultClientScopes: ['email'], optionalClientScopes: ['phone'] });
    const { id: onlyDefaults } = await kc.clients.create({ clientId: 'only-defaults', defaultClientScopes: ['profile'] });
    expect(await kc.clients.findOne({ id: onlyDefaults })).toMatchObject({ defaultClientScopes: ['profile'], optionalClientScopes: [] });

    const { id: service } = await kc.clients.create({ clientId: 'service', publicClient: false, serviceAccountsEnabled: true });
    expect((await kc.clients.findOne({ id: service }))!.defaultClientScopes).toContain('service_account');
    const current = (await kc.clients.findOne({ id: service }))!;
    await kc.clients.update({ id: service }, { ...current, serviceAccountsEnabled: false });
    expect((await kc.clients.findOne({ id: service }))!.defaultClientScopes).not.toContain('service_account');
    await kc.clients.update({ id: service }, { ...current, serviceAccountsEnabled: true });
    expect((await kc.clients.findOne({ id: service }))!.defaultClientScopes).toContain('service_account');
  });

  it('creates, reads, updates and deletes a client scope; 409 for a taken name, 400 for a bad one, 404 for an unknown id', async () => {
    const { id } = await kc.clientScopes.create({ name: 'api:read', description: '<script>alert(1)</script>', protocol: 'openid-connect', attributes: { 'include.in.token.scope': 'true', note: "' OR 1=1 --" } });
    const scope = (await kc.clientScopes.findOne({ id }))!;
    expect(scope).toMatchObject({ id, name: 'api:read', description: '<script>alert(1)</script>', protocol: 'openid-connect', attributes: { note: "' OR 1=1 --" } });
    expect(await kc.clientScopes.findOneByName({ name: 'api:read' })).toMatchObject({ id });
    await kc.clientScopes.update({ id }, { ...scope, name: 'api:write', description: 'Writes' });
    expect(await kc.clientScopes.findOne({ id })).toMatchObject({ name: 'api:write', description: 'Writes' });

    await rejects(kc.clientScopes.create({ name: 'profile', protocol: 'openid-connect' }), 409, /profile/);
    await rejects(kc.clientScopes.update({ id }, { name: 'email' }), 409);
    await rejects(kc.clientScopes.create({ name: 'two words', protocol: 'openid-connect' }), 400, /name/);
    await rejects(kc.clientScopes.create({ name: 'x', protocol: 'cas' }), 400, /protocol/);
    await rejects(kc.clientScopes.create({ name: 'x', protocolMappers: [{ name: 'm', protocol: 'openid-connect', protocolMapper: 'no-such-mapper' }] }), 400, /no-such-mapper/);
    expect(await kc.clientScopes.findOneByName({ name: 'x' })).toBeUndefined();
    // The admin client answers null for a 404.
    expect(await kc.clientScopes.findOne({ id: '00000000-0000-4000-8000-000000000000' })).toBeNull();
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/client-scopes/00000000-0000-4000-8000-000000000000`, (await kc.getAccessToken())!)).status).toBe(404);
    await rejects(kc.clientScopes.del({ id: '00000000-0000-4000-8000-000000000000' }), 404);
    // A SAML scope is kept as data; its name is a scope token too, as Keycloak's admin API requires.
    const { id: saml } = await kc.clientScopes.create({ name: 'role_list', protocol: 'saml' });
    expect(await kc.clientScopes.findOne({ id: saml })).toMatchObject({ protocol: 'saml' });
    await rejects(kc.clientScopes.create({ name: 'role list', protocol: 'saml' }), 400, /name/);

    await kc.clientScopes.del({ id });
    expect(await kc.clientScopes.findOne({ id })).toBeNull();
  });

  it('protocol mappers of a client scope: add one, add several, list, find, by protocol, update, delete', async () => {
    const { id } = await kc.clientScopes.create({ name: 'mapped', protocol: 'openid-connect', protocolMappers: [hardcoded('first')] });
    await kc.clientScopes.addProtocolMapper({ id }, hardcoded('second'));
    await kc.clientScopes.addMultipleProtocolMappers({ id }, [hardcoded('third'), { name: 'aud', protocol: 'openid-connect', protocolMapper: 'oidc-audience-mapper', config: { 'included.client.audience': 'plain', 'access.token.claim': 'true' } }]);
    const mappers = await kc.clientScopes.listProtocolMappers({ id });
    expect(mappers.map((m) => m.name)).toEqual(['first', 'second', 'third', 'aud']);
    expect(names(await kc.clientScopes.findProtocolMappersByProtocol({ id, protocol: 'openid-connect' }))).toHaveLength(4);
    expect(await kc.clientScopes.findProtocolMappersByProtocol({ id, protocol: 'saml' })).toEqual([]);
    const second = mappers.find((m) => m.name === 'second')!;
    expect(await kc.clientScopes.findProtocolMapper({ id, mapperId: second.id! })).toMatchObject({ name: 'second', protocolMapper: HARDCODED, config: { 'claim.value': 'v' } });
    await kc.clientScopes.updateProtocolMapper({ id, mapperId: second.id! }, { ...second, config: { ...second.config, 'claim.value': 'changed' } });
    expect((await kc.clientScopes.findProtocolMapper({ id, mapperId: second.id! }))!.config).toMatchObject({ 'claim.value': 'changed' });
    expect((await kc.clientScopes.findOne({ id }))!.protocolMappers).toHaveLength(4);

    await rejects(kc.clientScopes.addProtocolMapper({ id }, hardcoded('first')), 409);
    await rejects(kc.clientScopes.addProtocolMapper({ id }, { name: 'bad', protocol: 'openid-connect', protocolMapper: 'oidc-script-mapper' }), 400, /oidc-script-mapper/);
    // All or nothing: one bad mapper in a list adds none.
    await rejects(kc.clientScopes.addMultipleProtocolMappers({ id }, [hardcoded('fourth'), hardcoded('first')]), 409);
    await rejects(kc.clientScopes.addMultipleProtocolMappers({ id }, [hardcoded('fourth'), { name: 'fifth', protocol: 'openid-connect', protocolMapper: 'nope' }]), 400);
    expect((await kc.clientScopes.listProtocolMappers({ id })).map((m) => m.name)).toEqual(['first', 'second', 'third', 'aud']);
    await rejects(kc.clientScopes.updateProtocolMapper({ id, mapperId: second.id! }, { ...second, name: 'first' }), 409);
    expect(await kc.clientScopes.findProtocolMapper({ id, mapperId: '00000000-0000-4000-8000-000000000000' })).toBeNull();
    // A mapper of one scope is not found under another.
    const other = await api(t.url, 'GET', `/admin/realms/${REALM}/client-scopes/${await scopeId('email')}/protocol-mappers/models/${second.id}`, (await kc.getAccessToken())!);
    expect(other.status).toBe(404);

    await kc.clientScopes.delProtocolMapper({ id, mapperId: second.id! });
    expect((await kc.clientScopes.listProtocolMappers({ id })).map((m) => m.name)).toEqual(['first', 'third', 'aud']);
  });

  it("protocol mappers of a client, in the client's representation; accepted on create", async () => {
    const { id } = await kc.clients.create({ clientId: 'with-mappers', protocolMappers: [hardcoded('tenant', 'acme')] });
    expect((await kc.clients.findOne({ id }))!.protocolMappers).toMatchObject([{ name: 'tenant', protocolMapper: HARDCODED, config: { 'claim.value': 'acme' } }]);
    await kc.clients.addProtocolMapper({ id }, hardcoded('region', 'eu'));
    await kc.clients.addMultipleProtocolMappers({ id }, [hardcoded('tier', 'gold')]);
    const mappers = await kc.clients.listProtocolMappers({ id });
    expect(mappers.map((m) => m.name)).toEqual(['tenant', 'region', 'tier']);
    const region = mappers.find((m) => m.name === 'region')!;
    expect(await kc.clients.findProtocolMapperById({ id, mapperId: region.id! })).toMatchObject({ name: 'region' });
    expect(await kc.clients.findProtocolMappersByProtocol({ id, protocol: 'openid-connect' })).toHaveLength(3);
    await kc.clients.updateProtocolMapper({ id, mapperId: region.id! }, { ...region, config: { ...region.config, 'claim.value': 'us' } });
    expect((await kc.clients.findProtocolMapperById({ id, mapperId: region.id! }))!.config!['claim.value']).toBe('us');
    await rejects(kc.clients.addProtocolMapper({ id }, hardcoded('tenant')), 409);
    await rejects(kc.clients.addProtocolMapper({ id }, { name: 'x', protocol: 'openid-connect', protocolMapper: 'no-such' }), 400);
    await rejects(kc.clients.create({ clientId: 'bad-mappers', protocolMappers: [{ name: 'x', protocol: 'openid-connect', protocolMapper: 'no-such' }] }), 400);
    expect(await kc.clients.find({ clientId: 'bad-mappers' })).toEqual([]);
    await kc.clients.delProtocolMapper({ id, mapperId: region.id! });
    expect((await kc.clients.listProtocolMappers({ id })).map((m) => m.name)).toEqual(['tenant', 'tier']);

    // A PUT of the representation as read changes nothing; its `protocolMappers` become the client's (as Keycloak's
    // update: matched by name, kept with their ids, added, the others deleted); its scope lists are left alone.
    const before = (await kc.clients.findOne({ id }))!;
    await kc.clients.update({ id }, before);
    expect(await kc.clients.findOne({ id })).toEqual(before);
    const tenant = before.protocolMappers!.find((m) => m.name === 'tenant')!;
    await kc.clients.update({ id }, { ...before, defaultClientScopes: ['email'], protocolMappers: [{ ...tenant, config: { ...tenant.config, 'claim.value': 'globex' } }, hardcoded('plan', 'pro')] });
    const after = (await kc.clients.findOne({ id }))!;
    expect(after.protocolMappers!.map((m) => m.name)).toEqual(['tenant', 'plan']);
    expect(after.protocolMappers!.find((m) => m.name === 'tenant')).toMatchObject({ id: tenant.id, config: { 'claim.value': 'globex' } });
    expect(after.defaultClientScopes).toEqual(before.defaultClientScopes);
    await rejects(kc.clients.update({ id }, { ...before, protocolMappers: [{ name: 'x', protocol: 'openid-connect', protocolMapper: 'no-such' }] }), 400);
    expect((await kc.clients.findOne({ id }))!.protocolMappers!.map((m) => m.name)).toEqual(['tenant', 'plan']);
  });

  it("the realm's default and optional scopes, and a client's: add, move, remove; a deleted scope leaves every list", async () => {
    const { id: scope } = await kc.clientScopes.create({ name: 'extra', protocol: 'openid-connect' });
    await kc.clientScopes.addDefaultClientScope({ id: scope });
    expect(names(await kc.clientScopes.listDefaultClientScopes())).toContain('extra');
    await kc.clientScopes.addDefaultOptionalClientScope({ id: scope });
    expect(names(await kc.clientScopes.listDefaultClientScopes())).not.toContain('extra');
    expect(names(await kc.clientScopes.listDefaultOptionalClientScopes())).toContain('extra');
    // A client created now starts with it as optional.
    const { id: client } = await kc.clients.create({ clientId: 'later' });
    expect((await kc.clients.findOne({ id: client }))!.optionalClientScopes).toContain('extra');
    await kc.clientScopes.delDefaultOptionalClientScope({ id: scope });
    expect(names(await kc.clientScopes.listDefaultOptionalClientScopes())).toEqual(OPTIONALS);

    await kc.clients.addDefaultClientScope({ id: client, clientScopeId: scope });
    expect(names(await kc.clients.listDefaultClientScopes({ id: client }))).toContain('extra');
    expect(names(await kc.clients.listOptionalClientScopes({ id: client }))).not.toContain('extra');
    await kc.clients.delDefaultClientScope({ id: client, clientScopeId: await scopeId('email') });
    expect(names(await kc.clients.listDefaultClientScopes({ id: client }))).not.toContain('email');
    await kc.clients.addOptionalClientScope({ id: client, clientScopeId: await scopeId('email') });
    expect(names(await kc.clients.listOptionalClientScopes({ id: client }))).toContain('email');
    await rejects(kc.clients.addDefaultClientScope({ id: client, clientScopeId: '00000000-0000-4000-8000-000000000000' }), 404);
    const { id: saml } = await kc.clientScopes.create({ name: 'saml-only', protocol: 'saml' });
    await rejects(kc.clients.addDefaultClientScope({ id: client, clientScopeId: saml }), 400, /protocol/);

    await kc.clientScopes.addDefaultClientScope({ id: scope });
    await kc.clientScopes.del({ id: scope });
    expect(names(await kc.clients.listDefaultClientScopes({ id: client }))).not.toContain('extra');
    expect(names(await kc.clientScopes.listDefaultClientScopes())).toEqual(DEFAULTS);
    expect(await kc.clientScopes.listDefaultClientScopes()).toContainEqual({ id: await scopeId('email'), name: 'email', protocol: 'openid-connect' });
  });

  it("a realm keeps its last client scope (403, as Keycloak's)", async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({ realm: 'one-scope', enabled: true });
    kc.setConfig({ realmName: 'one-scope' });
    try {
      const scopes = await kc.clientScopes.find();
      for (const scope of scopes.slice(1)) await kc.clientScopes.del({ id: scope.id! });
      await rejects(kc.clientScopes.del({ id: scopes[0].id! }), 403, /all the client scopes/);
      expect(await kc.clientScopes.find()).toHaveLength(1);
    } finally {
      kc.setConfig({ realmName: REALM });
    }
  });

  it('role scope mappings of a client scope: realm and client roles, available, composite, all', async () => {
    const { id: scope } = await kc.clientScopes.create({ name: 'reporting', protocol: 'openid-connect' });
    await kc.roles.create({ name: 'report-reader' });
    await kc.roles.create({ name: 'report-boss' });
    const reader = (await kc.roles.findOneByName({ name: 'report-reader' }))!;
    const boss = (await kc.roles.findOneByName({ name: 'report-boss' }))!;
    await kc.roles.createComposite({ roleId: boss.id! }, [reader]);
    const { id: app } = await kc.clients.create({ clientId: 'reports-app' });
    await kc.clients.createRole({ id: app, name: 'export' });
    const exportRole = (await kc.clients.findRole({ id: app, roleName: 'export' }))!;

    await kc.clientScopes.addRealmScopeMappings({ id: scope }, [{ id: boss.id!, name: boss.name! }]);
    await kc.clientScopes.addClientScopeMappings({ id: scope, client: app }, [{ id: exportRole.id!, name: 'export' }]);
    expect(names(await kc.clientScopes.listRealmScopeMappings({ id: scope }))).toEqual(['report-boss']);
    expect(names(await kc.clientScopes.listCompositeRealmScopeMappings({ id: scope }))).toEqual(['report-boss', 'report-reader']);
    expect(names(await kc.clientScopes.listAvailableRealmScopeMappings({ id: scope }))).not.toContain('report-boss');
    expect(names(await kc.clientScopes.listClientScopeMappings({ id: scope, client: app }))).toEqual(['export']);
    expect(await kc.clientScopes.listAvailableClientScopeMappings({ id: scope, client: app })).toEqual([]);
    expect(names(await kc.clientScopes.listCompositeClientScopeMappings({ id: scope, client: app }))).toEqual(['export']);
    const all = await kc.clientScopes.listScopeMappings({ id: scope });
    expect(names(all.realmMappings!)).toEqual(['report-boss']);
    expect(all.clientMappings!['reports-app']).toMatchObject({ id: app, client: 'reports-app' });
    await kc.clientScopes.delClientScopeMappings({ id: scope, client: app }, [{ id: exportRole.id!, name: 'export' }]);
    expect(await kc.clientScopes.listClientScopeMappings({ id: scope, client: app })).toEqual([]);
  });

  it("fullScopeAllowed: false — a client scope's role scope mappings widen what the client's tokens may carry, when the scope applies", async () => {
    const storage = t.server.context.storage;
    const realm = (await storage.realms.byName(REALM))!;
    await kc.roles.create({ name: 'scoped-role' });
    await kc.roles.create({ name: 'unscoped-role' });
    const scopedRole = (await kc.roles.findOneByName({ name: 'scoped-role' }))!;
    const unscopedRole = (await kc.roles.findOneByName({ name: 'unscoped-role' }))!;
    const { id: scope } = await kc.clientScopes.create({ name: 'narrow', protocol: 'openid-connect' });
    await kc.clientScopes.addRealmScopeMappings({ id: scope }, [{ id: scopedRole.id!, name: 'scoped-role' }]);
    const { id: clientUuid } = await kc.clients.create({ clientId: 'narrow-app', fullScopeAllowed: false, defaultClientScopes: DEFAULTS, optionalClientScopes: ['narrow'] });
    const { id: userId } = await kc.users.create({ username: 'holder', enabled: true });
    await kc.users.addRealmRoleMappings({ id: userId, roles: [{ id: scopedRole.id!, name: 'scoped-role' }, { id: unscopedRole.id!, name: 'unscoped-role' }] });

    const client = (await storage.clients.byId(realm.id, clientUuid))!;
    expect((await effectiveRoles(storage, realm.id, userId, client)).realmRoles).toEqual([]);
    expect((await effectiveRoles(storage, realm.id, userId, client, [scope])).realmRoles).toEqual(['scoped-role']);
    // Without the client limit, everything the user holds.
    expect((await effectiveRoles(storage, realm.id, userId)).realmRoles).toEqual(expect.arrayContaining(['scoped-role', 'unscoped-role']));
    // A scope not linked to the client widens nothing.
    const { id: stray } = await kc.clientScopes.create({ name: 'stray', protocol: 'openid-connect' });
    await kc.clientScopes.addRealmScopeMappings({ id: stray }, [{ id: unscopedRole.id!, name: 'unscoped-role' }]);
    expect((await effectiveRoles(storage, realm.id, userId, client, [scope, stray])).realmRoles).toEqual(['scoped-role']);
    // A change of the scope's mappings is seen at once (the cache is invalidated).
    await kc.clientScopes.delRealmScopeMappings({ id: scope }, [{ id: scopedRole.id!, name: 'scoped-role' }]);
    expect((await effectiveRoles(storage, realm.id, userId, client, [scope])).realmRoles).toEqual([]);

    // The scope set the token side reads: the client's scopes with their mappers, and its own mappers.
    const set = await clientScopeSet(storage, client);
    expect(names(set.defaultScopes)).toEqual(DEFAULTS);
    expect(names(set.optionalScopes)).toEqual(['narrow']);
    expect(set.defaultScopes.find((s) => s.name === 'email')!.protocolMappers.map((m) => m.name).sort()).toEqual(['email', 'email verified']);
    await kc.clients.addProtocolMapper({ id: clientUuid }, hardcoded('own'));
    expect((await clientScopeSet(storage, client)).clientMappers.map((m) => m.name)).toEqual(['own']);
  });

  it('exports the scopes, the lists, the mappers and the scope mappings, and an import brings them back', async () => {
    const { id: scope } = await kc.clientScopes.create({ name: 'exported', protocol: 'openid-connect', protocolMappers: [hardcoded('exported')] });
    const role = (await kc.roles.findOneByName({ name: 'report-reader' }))!;
    await kc.clientScopes.addRealmScopeMappings({ id: scope }, [{ id: role.id!, name: role.name! }]);
    await kc.clientScopes.addDefaultOptionalClientScope({ id: scope });
    const exported = (await kc.realms.export({ realm: REALM, exportClients: true, exportGroupsAndRoles: true })) as Record<string, any>;
    expect(exported.clientScopes.map((s: { name: string }) => s.name)).toContain('exported');
    expect(exported.clientScopes.find((s: { name: string }) => s.name === 'exported').protocolMappers).toMatchObject([{ name: 'exported', protocolMapper: HARDCODED }]);
    expect(exported.defaultOptionalClientScopes).toContain('exported');
    expect(exported.scopeMappings).toEqual(expect.arrayContaining([{ clientScope: 'exported', roles: ['report-reader'] }, { clientScope: 'offline_access', roles: ['offline_access'] }]));
    expect(exported.clients.find((c: { clientId: string }) => c.clientId === 'with-mappers').protocolMappers).toMatchObject([{ name: 'tenant' }, { name: 'plan' }]);

    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({ ...exported, realm: 'scoped-copy' });
    kc.setConfig({ realmName: 'scoped-copy' });
    try {
      const copied = await kc.clientScopes.findOneByName({ name: 'exported' });
      expect(copied!.protocolMappers).toMatchObject([{ name: 'exported' }]);
      expect(names(await kc.clientScopes.listRealmScopeMappings({ id: copied!.id! }))).toEqual(['report-reader']);
      expect(names(await kc.clientScopes.listDefaultOptionalClientScopes())).toContain('exported');
      const [withMappers] = await kc.clients.find({ clientId: 'with-mappers' });
      expect(withMappers.protocolMappers!.map((m) => m.name)).toEqual(['tenant', 'plan']);
      const [chosen] = await kc.clients.find({ clientId: 'chosen' });
      expect(chosen).toMatchObject({ defaultClientScopes: ['email'], optionalClientScopes: ['phone'] });
    } finally {
      kc.setConfig({ realmName: REALM });
    }
  });
});

describe('client scopes and who may change them', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let management: string;
  let mgmt: Map<string, { id: string; name: string }>;
  const R = '/admin/realms/demo';
  const token = async (username: string) => {
    const response = await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.access_token as string;
  };

  beforeAll(async () => {
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
    kc.setConfig({ realmName: 'demo' });
    ({ management, roles: mgmt } = await realmManagement(kc));
    for (const [username, roles] of [['vc', ['view-clients']], ['mc', ['manage-clients']], ['mcmr', ['manage-clients', 'manage-realm']]] as const) {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: roles.map((r) => mgmt.get(r)!) });
    }
  });
  afterAll(() => t?.close());

  it('view-clients reads client scopes and mappers, and changes nothing', async () => {
    const vc = await token('vc');
    const email = (await kc.clientScopes.findOneByName({ name: 'email' }))!;
    expect((await api(t.url, 'GET', `${R}/client-scopes`, vc)).status).toBe(200);
    expect((await api(t.url, 'GET', `${R}/client-scopes/${email.id}/protocol-mappers/models`, vc)).status).toBe(200);
    expect((await api(t.url, 'GET', `${R}/default-default-client-scopes`, vc)).status).toBe(200);
    const attempts: [string, string, unknown?][] = [
      ['POST', `${R}/client-scopes`, { name: 'sneaky' }],
      ['PUT', `${R}/client-scopes/${email.id}`, { name: 'email', description: 'changed' }],
      ['DELETE', `${R}/client-scopes/${email.id}`],
      ['POST', `${R}/client-scopes/${email.id}/protocol-mappers/models`, hardcoded('sneaky')],
      ['POST', `${R}/client-scopes/${email.id}/protocol-mappers/add-models`, [hardcoded('sneaky')]],
      ['DELETE', `${R}/client-scopes/${email.id}/protocol-mappers/models/${email.protocolMappers![0].id}`],
      ['PUT', `${R}/default-default-client-scopes/${email.id}`],
      ['DELETE', `${R}/default-default-client-scopes/${email.id}`],
    ];
    for (const [method, path, body] of attempts) {
      const response = await api(t.url, method, path, vc, body);
      expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBe(403);
    }
    expect(await kc.clientScopes.findOneByName({ name: 'sneaky' })).toBeUndefined();
    expect(await kc.clientScopes.findOne({ id: email.id! })).toEqual(email);
  });

  it('manage-clients manages scopes and their mappers, but not the realm default lists (manage-realm)', async () => {
    const mc = await token('mc');
    const created = await api(t.url, 'POST', `${R}/client-scopes`, mc, { name: 'team', protocolMappers: [hardcoded('team')] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    expect((await api(t.url, 'POST', `${R}/client-scopes/${id}/protocol-mappers/models`, mc, hardcoded('more'))).status).toBe(201);
    expect((await api(t.url, 'PUT', `${R}/default-default-client-scopes/${id}`, mc)).status).toBe(403);
    expect((await api(t.url, 'PUT', `${R}/default-default-client-scopes/${id}`, await token('mcmr'))).status).toBe(204);
    expect(names(await kc.clientScopes.listDefaultClientScopes())).toContain('team');
  });

  it('manage-clients cannot put realm-admin (or any administrative role it lacks) into a client scope', async () => {
    const mc = await token('mc');
    const { id: scope } = await kc.clientScopes.create({ name: 'escalate', protocol: 'openid-connect' });
    for (const role of ['realm-admin', 'manage-users', 'manage-realm', 'impersonation']) {
      for (const body of [[mgmt.get(role)], [{ id: mgmt.get(role)!.id }], [{ name: role }]]) {
        const response = await api(t.url, 'POST', `${R}/client-scopes/${scope}/scope-mappings/clients/${management}`, mc, body);
        expect(response.status, `${role} ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`).toBe(403);
        expect(response.body.errorMessage).toContain(role);
      }
    }
    // Realm roles need manage-realm besides.
    await kc.roles.create({ name: 'plain' });
    const plain = (await kc.roles.findOneByName({ name: 'plain' }))!;
    expect((await api(t.url, 'POST', `${R}/client-scopes/${scope}/scope-mappings/realm`, mc, [{ id: plain.id, name: 'plain' }])).status).toBe(403);
    // What it holds (or is within its power) it may map; an ordinary client role too.
    expect((await api(t.url, 'POST', `${R}/client-scopes/${scope}/scope-mappings/clients/${management}`, mc, [mgmt.get('view-clients')])).status).toBe(204);
    expect(names(await kc.clientScopes.listClientScopeMappings({ id: scope, client: management }))).toEqual(['view-clients']);
  });
});

describe('a database from before client scopes were stored', () => {
  it('gets the built-ins at start-up: every realm its scopes and lists, every client the defaults', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-scopes-upgrade-'));
    const dbUrl = `sqlite:${join(dir, 'old.db')}`;
    try {
      let t = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      let kc = await masterAdminClient(t.url);
      await kc.realms.create({ realm: 'legacy', enabled: true });
      kc.setConfig({ realmName: 'legacy' });
      await kc.clients.create({ clientId: 'old-app' });
      await kc.clients.create({ clientId: 'old-service', publicClient: false, serviceAccountsEnabled: true });
      // Rewind: no client scope, no link, no mapper anywhere (what migration 0011 leaves in an old database).
      const { db } = t.server.context.storage;
      for (const table of ['client_scope_role', 'client_client_scope', 'realm_client_scope', 'protocol_mapper', 'client_scope'] as const) await db.deleteFrom(table).execute();
      await t.close();

      t = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      try {
        kc = await masterAdminClient(t.url);
        expect(t.logs.some((l) => l.msg === 'client scopes: the built-in ones added to existing realms and their clients')).toBe(true);
        for (const realm of ['master', 'legacy']) {
          kc.setConfig({ realmName: realm });
          expect(names(await kc.clientScopes.find()), realm).toEqual(BUILTINS);
          expect(names(await kc.clientScopes.listDefaultClientScopes()), realm).toEqual(DEFAULTS);
          const offline = (await kc.clientScopes.findOneByName({ name: 'offline_access' }))!;
          expect(names(await kc.clientScopes.listRealmScopeMappings({ id: offline.id! }))).toEqual(['offline_access']);
        }
        const [app] = await kc.clients.find({ clientId: 'old-app' });
        expect([...app.defaultClientScopes!].sort()).toEqual(DEFAULTS);
        expect([...app.optionalClientScopes!].sort()).toEqual(OPTIONALS);
        const [service] = await kc.clients.find({ clientId: 'old-service' });
        expect([...service.defaultClientScopes!].sort()).toEqual([...DEFAULTS, 'service_account'].sort());
      } finally {
        await t.close();
      }
      // Once only: a later start changes nothing (a scope deleted by an administrator stays deleted).
      t = await startServer({ config: { REALMGATE_DB_URL: dbUrl } });
      try {
        expect(t.logs.some((l) => l.msg === 'client scopes: the built-in ones added to existing realms and their clients')).toBe(false);
      } finally {
        await t.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
