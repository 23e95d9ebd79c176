import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement, rejects } from './support/admin-client.js';
import { api, httpDatabases, startServer, type TestServer } from './support/server.js';

/**
 * Issues 16 and 18: identity providers, their mappers and components through Keycloak's admin API (the admin client's
 * `identityProviders` and `components`), kept as data; the realm's signing keys as key-provider components; secrets
 * masked; Keycloak's permissions, tried by callers holding one role below what a call needs.
 */

const LDAP = 'org.keycloak.storage.UserStorageProvider';
const LDAP_MAPPER = 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper';
const KEYS = 'org.keycloak.keys.KeyProvider';
const MASK = '**********';

describe.each(httpDatabases)('identity providers and components through the admin API (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let realmId: string;
  /** An admin client of a user of `fed` holding only these realm-management roles. */
  const holding = async (username: string, roles: string[]) => {
    kc.setConfig({ realmName: 'fed' });
    const { management, roles: all } = await realmManagement(kc);
    const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: 'Fed-pass-123', temporary: false }] });
    await kc.users.addClientRoleMappings({ id, clientUniqueId: management, roles: roles.map((r) => all.get(r)!) });
    const limited = new KcAdminClient({ baseUrl: t.url, realmName: 'fed' });
    await limited.auth({ grantType: 'password', clientId: 'admin-cli', username, password: 'Fed-pass-123' });
    return { client: limited, id, token: (await limited.getAccessToken())! };
  };

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'fed', enabled: true });
    realmId = (await kc.realms.findOne({ realm: 'fed' }))!.id!;
    kc.setConfig({ realmName: 'fed' });
  }, 60_000);
  afterAll(() => t?.close());

  it('identity providers: create, list with search and paging, read with the secret masked, update keeping it, rename, delete', async () => {
    kc.setConfig({ realmName: 'fed' });
    await kc.identityProviders.create({ alias: 'corp', providerId: 'oidc', displayName: 'Corp', config: { clientId: 'rg', clientSecret: 'corp-secret-1', tokenUrl: 'https://idp.example/token' } });
    await kc.identityProviders.create({ alias: 'github', providerId: 'github', config: { clientId: 'gh', clientSecret: '${vault.github}' } });
    await kc.identityProviders.create({ alias: 'org-idp', providerId: 'oidc', organizationId: 'f0000000-0000-4000-8000-000000000000' });
    await rejects(kc.identityProviders.create({ alias: 'corp', providerId: 'saml' }), 409, /corp already exists/);

    expect((await kc.identityProviders.find()).map((p) => p.alias)).toEqual(['corp', 'github', 'org-idp']);
    expect((await kc.identityProviders.find({ search: 'GIT' })).map((p) => p.alias)).toEqual(['github']);
    expect((await kc.identityProviders.find({ search: '"corp"' })).map((p) => p.alias)).toEqual(['corp']);
    expect((await kc.identityProviders.find({ first: 1, max: 1 })).map((p) => p.alias)).toEqual(['github']);
    expect((await kc.identityProviders.find({ realmOnly: true })).map((p) => p.alias)).toEqual(['corp', 'github']);
    const corp = (await kc.identityProviders.findOne({ alias: 'corp' }))!;
    expect(corp).toMatchObject({ alias: 'corp', providerId: 'oidc', displayName: 'Corp', enabled: true, config: { clientId: 'rg', clientSecret: MASK, tokenUrl: 'https://idp.example/token' } });
    // A vault reference is no secret: shown as it is, as Keycloak shows it.
    expect((await kc.identityProviders.findOne({ alias: 'github' }))!.config!.clientSecret).toBe('${vault.github}');

    // The console saves what it read: the mask keeps the stored secret; a new value replaces it.
    await kc.identityProviders.update({ alias: 'corp' }, { ...corp, displayName: 'Corporate' });
    const stored = async (alias: string) => (await t.server.context.storage.federation.providerByAlias(realmId, alias))!;
    expect((await stored('corp')).config.clientSecret).toBe('corp-secret-1');
    expect((await stored('corp')).displayName).toBe('Corporate');
    await kc.identityProviders.update({ alias: 'corp' }, { ...corp, config: { ...corp.config, clientSecret: 'corp-secret-2' } });
    expect((await stored('corp')).config.clientSecret).toBe('corp-secret-2');
    // Renamed, then renaming onto a taken alias is 409.
    await kc.identityProviders.update({ alias: 'corp' }, { ...corp, alias: 'corporate' });
    expect(await kc.identityProviders.findOne({ alias: 'corp' })).toBeFalsy();
    await rejects(kc.identityProviders.update({ alias: 'corporate' }, { ...corp, alias: 'github' }), 409);
    await kc.identityProviders.del({ alias: 'org-idp' });
    expect((await kc.identityProviders.find()).map((p) => p.alias)).toEqual(['corporate', 'github']);
    // Secrets are never logged.
    expect(JSON.stringify(t.logs)).not.toMatch(/corp-secret-[12]/);
    // Only a type this server does not sign in through is named as kept as data (issue 37: OpenID Connect and social ones sign in).
    await kc.identityProviders.create({ alias: 'tw', providerId: 'twitter', config: { clientId: 'tw', clientSecret: 'tw-secret' } });
    const inert = (alias: string) => t.logs.some((l) => l.msg === 'identity provider stored as data: Realmgate signs users in through OpenID Connect and social (github, google, …) providers only' && l.alias === alias);
    expect(inert('tw')).toBe(true);
    expect(inert('github')).toBe(false);
    expect(inert('corp')).toBe(false);
  });

  it("identity-provider mappers: create, list, read, update, delete; a duplicate name is 409; they go with their provider", async () => {
    kc.setConfig({ realmName: 'fed' });
    await kc.identityProviders.create({ alias: 'mapped', providerId: 'oidc' });
    const { id } = await kc.identityProviders.createMapper({ alias: 'mapped', identityProviderMapper: { name: 'dept', identityProviderMapper: 'hardcoded-attribute-idp-mapper', identityProviderAlias: 'mapped', config: { attribute: 'dept', 'attribute.value': 'a' } } });
    await rejects(kc.identityProviders.createMapper({ alias: 'mapped', identityProviderMapper: { name: 'dept', identityProviderMapper: 'x', identityProviderAlias: 'mapped' } }), 409);
    expect(await kc.identityProviders.findMappers({ alias: 'mapped' })).toEqual([{ id, name: 'dept', identityProviderAlias: 'mapped', identityProviderMapper: 'hardcoded-attribute-idp-mapper', config: { attribute: 'dept', 'attribute.value': 'a' } }]);
    await kc.identityProviders.updateMapper({ alias: 'mapped', id }, { id, name: 'dept', identityProviderAlias: 'mapped', identityProviderMapper: 'hardcoded-attribute-idp-mapper', config: { attribute: 'dept', 'attribute.value': 'b' } });
    expect((await kc.identityProviders.findOneMapper({ alias: 'mapped', id }))?.config).toEqual({ attribute: 'dept', 'attribute.value': 'b' });
    expect(Object.keys(await kc.identityProviders.findMapperTypes({ alias: 'mapped' }))).toContain('hardcoded-attribute-idp-mapper');
    // A mapper of one provider is not found under another.
    await kc.identityProviders.create({ alias: 'other', providerId: 'oidc' });
    expect((await api(t.url, 'GET', `/admin/realms/fed/identity-provider/instances/other/mappers/${id}`, (await kc.getAccessToken())!)).status).toBe(404);
    await kc.identityProviders.delMapper({ alias: 'mapped', id });
    expect(await kc.identityProviders.findMappers({ alias: 'mapped' })).toEqual([]);
    const { id: again } = await kc.identityProviders.createMapper({ alias: 'mapped', identityProviderMapper: { name: 'again', identityProviderMapper: 'x', identityProviderAlias: 'mapped' } });
    await kc.identityProviders.del({ alias: 'mapped' });
    expect(await t.server.context.storage.db.selectFrom('identity_provider_mapper').select('id').where('id', '=', again).execute()).toEqual([]);
  });

  it("mapper-types answers the mapper types of the provider's kind, as Keycloak's (the console's Add mapper form)", async () => {
    await kc.identityProviders.create({ alias: 'types-oidc', providerId: 'oidc', enabled: true, config: { clientId: 'c', clientSecret: 's', authorizationUrl: 'http://127.0.0.1:9/auth', tokenUrl: 'http://127.0.0.1:9/token' } });
    await kc.identityProviders.create({ alias: 'types-github', providerId: 'github', enabled: true, config: { clientId: 'c', clientSecret: 's' } });
    try {
      const oidc = await kc.identityProviders.findMapperTypes({ alias: 'types-oidc' });
      expect(Object.keys(oidc).sort()).toEqual(['hardcoded-attribute-idp-mapper', 'oidc-advanced-role-idp-mapper', 'oidc-hardcoded-group-idp-mapper', 'oidc-hardcoded-role-idp-mapper', 'oidc-role-idp-mapper', 'oidc-user-attribute-idp-mapper', 'oidc-username-idp-mapper']);
      expect(oidc['oidc-role-idp-mapper']).toMatchObject({ id: 'oidc-role-idp-mapper', name: 'Claim to Role', category: 'Role Importer' });
      expect((oidc['oidc-role-idp-mapper'] as { properties: { name: string; type: string }[] }).properties.map((p) => [p.name, p.type])).toEqual([['claim', 'String'], ['claim.value', 'String'], ['role', 'Role']]);
      const github = await kc.identityProviders.findMapperTypes({ alias: 'types-github' });
      expect(Object.keys(github).sort()).toEqual(['github-user-attribute-mapper', 'hardcoded-attribute-idp-mapper', 'oidc-hardcoded-role-idp-mapper']);
      await rejects(kc.identityProviders.findMapperTypes({ alias: 'no-such' }), 404);
    } finally {
      await kc.identityProviders.del({ alias: 'types-oidc' });
      await kc.identityProviders.del({ alias: 'types-github' });
    }
  });

  it("import-config reads an OpenID Provider's metadata from its URL or an uploaded file into config fields (nothing stored); bad input is a 400", async () => {
    kc.setConfig({ realmName: 'fed' });
    const issuer = `${t.url}/realms/fed`;
    const expected = {
      issuer,
      authorizationUrl: `${issuer}/protocol/openid-connect/auth`,
      tokenUrl: `${issuer}/protocol/openid-connect/token`,
      userInfoUrl: `${issuer}/protocol/openid-connect/userinfo`,
      logoutUrl: `${issuer}/protocol/openid-connect/logout`,
      jwksUrl: `${issuer}/protocol/openid-connect/certs`,
      validateSignature: 'true',
      useJwksUrl: 'true',
    };
    const before = await kc.identityProviders.find();
    expect(await kc.identityProviders.importFromUrl({ providerId: 'oidc', fromUrl: `${issuer}/.well-known/openid-configuration` })).toEqual(expected);
    const metadata = await (await fetch(`${issuer}/.well-known/openid-configuration`)).text();
    const form = new FormData();
    form.append('providerId', 'keycloak-oidc');
    form.append('file', new Blob([metadata]), 'openid-configuration.json');
    expect(await kc.identityProviders.importFromUrl(form)).toEqual(expected);
    expect(await kc.identityProviders.find()).toEqual(before);
    for (const [body, pattern] of [
      [{ providerId: 'saml', fromUrl: `${issuer}/.well-known/openid-configuration` }, /providerId: "saml" has no configuration to import/],
      [{ providerId: 'oidc', fromUrl: 'ftp://127.0.0.1/metadata' }, /fromUrl: must be an http or https URL/],
      [{ providerId: 'oidc', fromUrl: `${issuer}/.well-known/no-such-document` }, /answered status 404/],
      [{ providerId: 'oidc', fromUrl: `${t.url}/realms/fed/account` }, /fromUrl/],
      [{ providerId: 'oidc', fromUrl: `${issuer}/protocol/openid-connect/certs` }, /names no authorization_endpoint or token_endpoint/],
      [{ providerId: 'oidc' }, /fromUrl: is required/],
    ] as const) {
      await rejects(kc.identityProviders.importFromUrl(body as { providerId: string; fromUrl: string }), 400, pattern);
    }
    const bad = new FormData();
    bad.append('providerId', 'oidc');
    bad.append('file', new Blob(['{not json']), 'x.json');
    await rejects(kc.identityProviders.importFromUrl(bad), 400, /file: the metadata is not JSON/);
    const viewer = await holding('idp-import-viewer', ['view-identity-providers']);
    await rejects(viewer.client.identityProviders.importFromUrl({ providerId: 'oidc', fromUrl: `${issuer}/.well-known/openid-configuration` }), 403);
  });

  it('components: an LDAP provider with a mapper under it, filtered by type, parent and name; secrets masked and kept; deleted with what is under it', async () => {
    kc.setConfig({ realmName: 'fed' });
    const { id: ldap } = await kc.components.create({ name: 'corp-ldap', providerId: 'ldap', providerType: LDAP, parentId: realmId, config: { connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: ['bind-secret-1'], enabled: ['true'] } });
    const { id: mapper } = await kc.components.create({ name: 'email', providerId: 'user-attribute-ldap-mapper', providerType: LDAP_MAPPER, parentId: ldap, config: { 'ldap.attribute': 'mail' } as never });
    // The console's user federation list: its type under the realm (the admin client sends the parent as `parent`).
    expect((await kc.components.find({ type: LDAP })).map((c) => c.name)).toEqual(['corp-ldap']);
    expect((await kc.components.find({ type: LDAP, parent: realmId })).map((c) => c.id)).toEqual([ldap]);
    expect((await kc.components.find({ parent: ldap })).map((c) => [c.id, c.providerType, c.parentId])).toEqual([[mapper, LDAP_MAPPER, ldap]]);
    expect((await kc.components.find({ type: LDAP_MAPPER, parent: ldap, name: 'email' })).map((c) => c.id)).toEqual([mapper]);
    expect(await kc.components.find({ type: LDAP, name: 'nope' })).toEqual([]);
    const found = (await kc.components.findOne({ id: ldap }))!;
    expect(found).toEqual({ id: ldap, name: 'corp-ldap', providerId: 'ldap', providerType: LDAP, parentId: realmId, config: { connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: [MASK], enabled: ['true'] } });
    // A single value is read as a one-value list, as Keycloak's MultivaluedHashMap reads it.
    expect((await kc.components.findOne({ id: mapper }))!.config).toEqual({ 'ldap.attribute': ['mail'] });
    expect(await kc.components.listSubComponents({ id: ldap, type: LDAP_MAPPER })).toEqual([]);

    await kc.components.update({ id: ldap }, { ...found, config: { ...found.config, enabled: ['false'] } });
    const storedLdap = async () => (await t.server.context.storage.federation.component(realmId, ldap))!;
    expect((await storedLdap()).config).toEqual({ connectionUrl: ['ldap://127.0.0.1:1'], bindCredential: ['bind-secret-1'], enabled: ['false'] });
    await kc.components.update({ id: ldap }, { ...found, config: { ...found.config, bindCredential: ['bind-secret-2'] } });
    expect((await storedLdap()).config.bindCredential).toEqual(['bind-secret-2']);
    expect(JSON.stringify(t.logs)).not.toMatch(/bind-secret-[12]/);

    // Hostile input: an unknown parent, a component as its own parent, __proto__ keys, a huge config.
    await rejects(kc.components.create({ name: 'x', providerId: 'ldap', providerType: LDAP, parentId: 'f0000000-0000-4000-8000-000000000000' }), 400, /parentId/);
    await rejects(kc.components.update({ id: ldap }, { ...found, parentId: ldap }), 400, /parentId/);
    await rejects(kc.components.update({ id: ldap }, { ...found, parentId: mapper }), 400, /parentId/);
    await rejects(kc.components.create({ name: 'x', providerId: 'ldap', providerType: LDAP, config: JSON.parse('{"__proto__": ["x"]}') }), 400, /__proto__/);
    await rejects(kc.components.create({ name: 'x', providerId: 'ldap', providerType: LDAP, config: Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, ['v']])) }), 400, /500 entries/);
    await rejects(kc.components.create({ name: 'x', providerId: 'ldap', providerType: LDAP, config: { big: ['a'.repeat(20_000)] } }), 400, /characters/);
    expect((await kc.components.find({ type: LDAP })).map((c) => c.id)).toEqual([ldap]);

    await kc.components.del({ id: ldap });
    expect((await api(t.url, 'GET', `/admin/realms/fed/components/${mapper}`, (await kc.getAccessToken())!)).status).toBe(404);
    expect(await t.server.context.storage.federation.components(realmId, { parentId: ldap })).toEqual([]);
  });

  it("the realm's signing keys are its key-provider components, agreeing with GET /keys; changed through them", async () => {
    kc.setConfig({ realmName: 'fed' });
    await t.server.context.keys.rotate(realmId);
    const keys = await kc.realms.getKeys({ realm: 'fed' });
    const providers = await kc.components.find({ type: KEYS });
    expect(providers.map((p) => p.id).sort()).toEqual(keys.keys!.map((k) => k.providerId).sort());
    expect(providers).toHaveLength(2);
    for (const key of keys.keys!) {
      const provider = providers.find((p) => p.id === key.providerId)!;
      expect(provider).toMatchObject({ name: 'rsa-generated', providerId: 'rsa-generated', providerType: KEYS, parentId: realmId });
      expect(provider.config!.active).toEqual([String(key.status === 'ACTIVE')]);
      expect(provider.config).not.toHaveProperty('privateKey');
    }
    const active = keys.keys!.find((k) => k.status === 'ACTIVE')!;
    expect(await kc.components.findOne({ id: active.providerId! })).toMatchObject({ providerType: KEYS });
    // A key provider that cannot be used is refused naming the entry, and the keys stay as they are
    // (test/realm-key-providers.test.ts adds, changes and deletes them).
    await rejects(kc.components.create({ name: 'mine', providerId: 'rsa', providerType: KEYS, config: { privateKey: ['x'] } }), 400, /config\.privateKey/);
    await rejects(kc.components.update({ id: active.providerId! }, { ...providers[0], config: { priority: ['high'] } }), 400, /config\.priority/);
    const { id: policy } = await kc.components.create({ name: 'p', providerId: 'max-clients', providerType: 'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy', subType: 'anonymous' });
    await rejects(kc.components.update({ id: policy }, { name: 'p', providerId: 'rsa', providerType: KEYS }), 400, /key provider/);
    await rejects(kc.components.create({ name: 'under-key', providerId: 'x', providerType: LDAP_MAPPER, parentId: active.providerId }), 400, /parentId/);
    expect((await kc.realms.getKeys({ realm: 'fed' })).keys).toEqual(keys.keys);
    // Every component of the realm, keys included, without filters.
    expect((await kc.components.find()).map((c) => c.id)).toEqual(expect.arrayContaining([...providers.map((p) => p.id), policy]));
  });

  it('a caller with view-realm only reads components and identity providers but creates neither', async () => {
    const { client: viewer } = await holding('realm-viewer', ['view-realm']);
    expect((await viewer.identityProviders.find()).length).toBeGreaterThan(0);
    expect((await viewer.components.find({ type: KEYS })).length).toBeGreaterThan(0);
    await rejects(viewer.identityProviders.create({ alias: 'viewer-idp', providerId: 'oidc' }), 403);
    await rejects(viewer.components.create({ name: 'viewer-ldap', providerId: 'ldap', providerType: LDAP }), 403);
    await rejects(viewer.identityProviders.del({ alias: 'github' }), 403);
    kc.setConfig({ realmName: 'fed' });
    expect(await kc.identityProviders.findOne({ alias: 'viewer-idp' })).toBeFalsy();
    expect((await kc.components.find({ name: 'viewer-ldap' }))).toEqual([]);
    expect(await kc.identityProviders.findOne({ alias: 'github' })).toBeTruthy();
  });

  it('a caller with manage-identity-providers only manages identity providers, reads no components, and gives itself nothing more', async () => {
    const { client: idpAdmin, id, token } = await holding('idp-admin', ['manage-identity-providers']);
    await idpAdmin.identityProviders.create({ alias: 'by-idp-admin', providerId: 'oidc', config: { clientSecret: 's' } });
    expect((await idpAdmin.identityProviders.findOne({ alias: 'by-idp-admin' }))!.config!.clientSecret).toBe(MASK);
    await rejects(idpAdmin.components.find({ type: LDAP }), 403);
    await rejects(idpAdmin.components.find({ type: KEYS }), 403);
    await rejects(idpAdmin.components.create({ name: 'x', providerId: 'ldap', providerType: LDAP }), 403);
    await rejects(idpAdmin.realms.getKeys({ realm: 'fed' }), 403);
    // Nor through the rest of the API: no role mapping for itself, no partial import beyond its power.
    const { management, roles } = await realmManagement(kc);
    await rejects(idpAdmin.users.addClientRoleMappings({ id, clientUniqueId: management, roles: [roles.get('manage-realm')!] }), 403);
    expect((await api(t.url, 'POST', '/admin/realms/fed/partialImport', token, { identityProviders: [{ alias: 'x', providerId: 'oidc' }] })).status).toBe(403);
    kc.setConfig({ realmName: 'fed' });
    expect((await kc.users.listClientRoleMappings({ id, clientUniqueId: management })).map((r) => r.name)).toEqual(['manage-identity-providers']);
  });

  it('a caller with view-identity-providers only reads identity providers and changes none', async () => {
    const { client: idpViewer } = await holding('idp-viewer', ['view-identity-providers']);
    expect((await idpViewer.identityProviders.find()).map((p) => p.alias)).toContain('github');
    await rejects(idpViewer.identityProviders.update({ alias: 'github' }, { alias: 'github', providerId: 'github', enabled: false }), 403);
    await rejects(idpViewer.identityProviders.createMapper({ alias: 'github', identityProviderMapper: { name: 'm', identityProviderMapper: 'x', identityProviderAlias: 'github' } }), 403);
    await rejects(idpViewer.components.find(), 403);
    kc.setConfig({ realmName: 'fed' });
    expect((await kc.identityProviders.findOne({ alias: 'github' }))!.enabled).toBe(true);
  });

  it('everything goes with its realm', async () => {
    kc.setConfig({ realmName: 'master' });
    await kc.realms.create({ realm: 'doomed', enabled: true });
    kc.setConfig({ realmName: 'doomed' });
    const doomed = (await kc.realms.findOne({ realm: 'doomed' }))!.id!;
    await kc.identityProviders.create({ alias: 'gone', providerId: 'oidc' });
    await kc.identityProviders.createMapper({ alias: 'gone', identityProviderMapper: { name: 'm', identityProviderMapper: 'x', identityProviderAlias: 'gone' } });
    const { id: parent } = await kc.components.create({ name: 'gone', providerId: 'ldap', providerType: LDAP });
    await kc.components.create({ name: 'sub', providerId: 'x', providerType: LDAP_MAPPER, parentId: parent });
    kc.setConfig({ realmName: 'master' });
    await kc.realms.del({ realm: 'doomed' });
    const { db } = t.server.context.storage;
    for (const table of ['identity_provider', 'identity_provider_mapper', 'component'] as const) {
      expect(await db.selectFrom(table).select('realm_id').where('realm_id', '=', doomed).execute(), table).toEqual([]);
    }
  });
});
