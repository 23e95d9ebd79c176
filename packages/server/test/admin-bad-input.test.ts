import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminRoutes, fillPath, paramCount, rawRequest, type PathValues, type Route } from './support/admin-routes.js';
import { adminToken, databases, httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

const REALM = 'bad';
/** Routes that take a whole realm file, up to 10 MiB as Keycloak's default body limit. */
const REALM_IMPORT_ROUTES = ['POST /admin/realms', 'POST /admin/realms/:realm/partialImport'];
/** Routes whose body is text/plain, as Keycloak's. */
const TEXT_BODY_ROUTES = ['PUT /admin/realms/:realm/users/:id/credentials/:credentialId/userLabel', 'PUT /admin/realms/:realm/localization/:locale/:key'];
/** Routes that take Keycloak's form parameters (an organization's invitation): a form body is read there, not refused. */
const FORM_BODY_ROUTES = ['POST /admin/realms/:realm/organizations/:id/members/invite-user', 'POST /admin/realms/:realm/organizations/:id/members/invite-existing-user'];
const key = (r: Route) => `${r.method} ${r.url}`;

/** Bodies that are not JSON at all (or not a JSON value the server can use). */
const malformedJson: Record<string, string> = {
  'truncated object': '{"name":',
  'lone brace': '{',
  'single quotes': "{'name': 'x'}",
  'trailing comma': '{"name":"x",}',
  'bare word': 'nul',
  'unterminated array': '[1,2',
  'NUL byte': '\u0000',
  'deep nesting': '['.repeat(50_000) + ']'.repeat(49_999),
};

/** Shapes that are valid JSON but never a representation: sent to every route that reads an object body. */
const notAnObject: Record<string, unknown> = {
  'empty body': '',
  null: null,
  array: [],
  'array of objects': [{}],
  number: 5,
  string: 'text',
  boolean: true,
  'unknown field': { notAField: 1 },
  'prototype key': JSON.parse('{"__proto__": {"admin": true}}'),
};

/** Valid JSON that is not a list of roles: sent to every route that reads one. */
const notARoleList: Record<string, unknown> = {
  'empty body': '',
  null: null,
  object: {},
  number: 5,
  string: 'text',
  'array of numbers': [5],
  'role without id or name': [{}],
  'numeric id': [{ id: 5 }],
  'injection id': [{ id: "' OR 1=1 --" }],
  'unknown uuid': [{ id: randomUUID() }],
  'script name': [{ name: '<script>alert(1)</script>' }],
  'NUL name': [{ name: 'fixture\u0000role' }],
  'NUL id': [{ id: '\u0000'.repeat(36) }],
  'uuid-length junk id': [{ id: "' OR 1=1 --".padEnd(36, ' ') }],
  'too many': Array.from({ length: 1001 }, () => ({ name: 'fixture-role' })),
  // One good and one unknown role: all or nothing.
  'partly unknown': [{ name: 'fixture-role' }, { name: 'ghost' }],
};

/** Valid JSON that is not the console's Unassign request (`[{roleId, roleName, clientId?}]`). */
const notADeleteRequest: Record<string, unknown> = {
  'empty body': '',
  null: null,
  object: {},
  string: 'text',
  'array of numbers': [5],
  'without roleId': [{ roleName: 'fixture-role' }],
  'numeric roleId': [{ roleId: 5 }],
  'injection roleId': [{ roleId: "' OR 1=1 --" }],
  'unknown uuid': [{ roleId: randomUUID() }],
  'NUL roleId': [{ roleId: '\u0000'.repeat(36) }],
  'too many': Array.from({ length: 1001 }, () => ({ roleId: randomUUID() })),
};

const long = 'a'.repeat(10_000);

/** Route-specific bodies with the right shape but a bad field: each must be refused and change nothing. */
const realmFields: unknown[] = [
  { realm: 'bad-2', supportedLocales: ['de', '<script>'] },
  { realm: 'bad-2', supportedLocales: 'de' },
  { realm: 'bad-2', defaultLocale: '../en' },
  { realm: 'bad-2', internationalizationEnabled: 'yes' },
  { realm: 5 },
  { realm: '' },
  { realm: 'has space' },
  { realm: '../../etc/passwd' },
  { realm: 'x\u0000y' },
  { realm: ['bad-2'] },
  { realm: 'bad-2', enabled: 'true' },
  { realm: 'bad-2', displayName: long },
  { realm: 'bad-2', accessTokenLifespan: 3_000_000_000 },
  { realm: 'bad-2', accessTokenLifespan: -1 },
  { realm: 'bad-2', eventsExpiration: 1e20 },
  { realm: 'bad-2', smtpServer: { port: 'abc' } },
  { realm: 'bad-2', smtpServer: 'smtp.example' },
  { realm: 'bad-2', attributes: { a: { b: 1 } } },
];
const realmImportFields: unknown[] = [
  ...realmFields,
  { realm: 'bad-2', users: 'nope' },
  { realm: 'bad-2', users: [null] },
  { realm: 'bad-2', users: [{ username: 'u', credentials: [{ type: 'password', value: 5 }] }] },
  { realm: 'bad-2', users: [{ username: 'u' }, { username: 'U' }] },
  { realm: 'bad-2', users: [{ username: 'u', realmRoles: ['ghost'] }] },
  { realm: 'bad-2', clients: [{ clientId: 5 }] },
  { realm: 'bad-2', clients: [{ clientId: 'c' }, { clientId: 'c' }] },
  { realm: 'bad-2', roles: 'x' },
  { realm: 'bad-2', roles: { realm: [{ name: 5 }] } },
  { realm: 'bad-2', roles: { client: { ghost: [{ name: 'r' }] } } },
  // One thing named twice (Keycloak's database refuses these too), and references to what does not exist.
  { realm: 'bad-2', roles: { realm: [{ name: 'twice' }, { name: 'twice', description: 'other' }] } },
  { realm: 'bad-2', clients: [{ id: 'same-id', clientId: 'a' }, { id: 'same-id', clientId: 'b' }] },
  { realm: 'bad-2', users: [{ id: 'u1', username: 'a' }, { id: 'u1', username: 'b' }] },
  { realm: 'bad-2', scopeMappings: [{ client: 'ghost-client', roles: ['offline_access'] }] },
  { realm: 'bad-2', scopeMappings: [{ clientScope: 'ghost-scope', roles: ['offline_access'] }] },
  { realm: 'bad-2', clients: [{ clientId: 'app' }], clientScopeMappings: { 'realm-management': [{ client: 'app', roles: ['god-mode'] }] } },
  { realm: 'bad-2', organizations: [{ name: 'o', domains: 'x' }] },
  { realm: 'bad-2', users: [{ username: 'u', realmRoles: ['\u0000'] }] },
  { realm: 'bad-2', users: [{ username: 'u', clientRoles: { account: ['x\u0000'] } }] },
  { realm: 'bad-2', roles: { realm: [{ name: 'r', composites: { realm: ['\u0000'] } }] } },
  { realm: 'bad-2', roles: { realm: [{ name: 'r', composites: { client: { account: [5] } } }] } },
  { realm: 'bad-2', identityProviders: [{ alias: 'x', providerId: 'oidc' }, { alias: 'x', providerId: 'saml' }] },
  { realm: 'bad-2', identityProviders: [{ alias: 'x' }] },
  { realm: 'bad-2', identityProviders: [{ alias: 'x', providerId: 'oidc', config: JSON.parse('{"__proto__": "y"}') }] },
  { realm: 'bad-2', identityProviderMappers: [{ name: 'm', identityProviderMapper: 'x', identityProviderAlias: 'ghost' }] },
  { realm: 'bad-2', components: [] },
  { realm: 'bad-2', components: { 'org.keycloak.storage.UserStorageProvider': 'ldap' } },
  { realm: 'bad-2', components: { 'org.keycloak.storage.UserStorageProvider': [{ name: 'ldap' }] } },
  { realm: 'bad-2', components: { 'org.keycloak.storage.UserStorageProvider': [{ name: 'ldap', providerId: 'ldap', config: { a: [{}] } }] } },
  { realm: 'bad-2', components: { a: [{ providerId: 'p', subComponents: { b: [{ providerId: 'p', subComponents: { c: [{ providerId: 'p', subComponents: { d: [{ providerId: 'p', subComponents: { e: [{ providerId: 'p', subComponents: { f: [{ providerId: 'p' }] } }] } }] } }] } }] } }] } },
  { realm: REALM },
];
const realmUpdateFields: unknown[] = [...realmFields.map((r) => ({ ...(r as object), realm: (r as { realm: unknown }).realm === 'bad-2' ? REALM : (r as { realm: unknown }).realm })), { realm: 'master' }, { registrationAllowed: 'yes' }, { displayName: 5 }];
const clientFields: unknown[] = [
  { clientId: 5 },
  { clientId: '' },
  { clientId: 'a b' },
  { clientId: '../x' },
  { clientId: 'x\u0000' },
  { clientId: long },
  { clientId: 'x', redirectUris: 'https://a.example' },
  { clientId: 'x', redirectUris: [5] },
  { clientId: 'x', redirectUris: ['https://a.example/#fragment'] },
  { clientId: 'x', redirectUris: ['javascript alert(1)'] },
  { clientId: 'x', webOrigins: {} },
  { clientId: 'x', attributes: [] },
  { clientId: 'x', attributes: { a: { b: 1 } } },
  { clientId: 'x', protocol: 'saml' },
  { clientId: 'x', publicClient: 'false' },
  { clientId: 'x', description: 'a\u0000b' },
  { clientId: 'x', description: long },
  { clientId: 'x', clientAuthenticatorType: 'client-jwt', attributes: { 'token.endpoint.auth.signing.max.exp': 'sixty' } },
];
const roleFields: unknown[] = [{ name: 5 }, { name: '' }, { name: 'a/b' }, { name: 'x', description: 5 }, { name: 'x\u0000' }, { name: long }];
const userFields: unknown[] = [
  { username: 5 },
  { username: '' },
  { username: 'a b' },
  { username: '<script>' },
  { username: 'x\u0000y' },
  { username: 'x', email: 'not-an-email' },
  { username: 'x', email: 5 },
  { username: 'x', firstName: '<script>alert(1)</script>' },
  { username: 'x', enabled: 1 },
  { username: 'x', attributes: [] },
  { username: 'x', attributes: { a: 5 } },
  { username: 'x', attributes: { a: [{}] } },
  { username: 'x', credentials: {} },
  { username: 'x', credentials: [{ type: 'password', value: '' }] },
  { username: 'x', credentials: [{ type: 'otp', value: '123456' }] },
  { username: 'x', requiredActions: 'UPDATE_PASSWORD' },
];
/** For updates: a case about another field drops `username` (which the PUT would otherwise refuse for itself). */
const withoutUsername = (u: unknown): unknown => {
  const { username, ...rest } = u as Record<string, unknown>;
  return Object.keys(rest).length ? rest : { username };
};
const orgFields: unknown[] = [
  { name: 5 },
  { name: '' },
  { name: 'x\u0000' },
  { name: 'x', alias: 'a b' },
  { name: 'x', domains: 'x.example' },
  { name: 'x', domains: [{ name: 5 }] },
  { name: 'x', domains: [{ name: 'not a domain' }] },
  { name: 'x', domains: [{ name: 'ok.example', verified: 'yes' }] },
  { name: 'x', attributes: { a: 5 } },
  { name: 'x', enabled: 'true' },
];
const eventsConfigFields: unknown[] = [
  { eventsEnabled: 'true' },
  { eventsListeners: 'jboss-logging' },
  { eventsListeners: ['no-such-listener'] },
  { eventsListeners: [5] },
  { eventsExpiration: 0 },
  { eventsExpiration: 1.5 },
  { eventsExpiration: 1e20 },
  { enabledEventTypes: [5] },
  { adminEventsEnabled: null, bogus: 1 },
];

const groupFields: unknown[] = [{ name: 5 }, { name: '' }, { name: '   ' }, {}, { name: 'x', description: 5 }, { name: 'x\u0000' }, { name: long }, { name: 'x', attributes: 'y' }, { name: 'x', bogus: 1 }, { id: 5, name: 'x' }];
const HARDCODED = 'oidc-hardcoded-claim-mapper';
const mapperFields: unknown[] = [
  {},
  { name: 5, protocolMapper: HARDCODED },
  { name: 'm' },
  { name: 'm', protocolMapper: 'no-such-type' },
  { name: 'm', protocolMapper: 5 },
  { name: '', protocolMapper: HARDCODED },
  { name: 'm', protocolMapper: HARDCODED, protocol: 'cas' },
  { name: 'm', protocolMapper: HARDCODED, config: 'x' },
  { name: 'm', protocolMapper: HARDCODED, config: { a: { b: 1 } } },
  { name: 'm', protocolMapper: HARDCODED, config: { a: 'x\u0000' } },
  { name: 'm\u0000', protocolMapper: HARDCODED },
  { name: long, protocolMapper: HARDCODED },
  { name: 'm', protocolMapper: HARDCODED, bogus: 1 },
];
const scopeFields: unknown[] = [
  { name: 5 },
  { name: '' },
  {},
  { name: 'has space' },
  { name: 'quo"te' },
  { name: 'back\\slash' },
  { name: 'x', protocol: 'cas' },
  { name: 'x', description: 5 },
  { name: 'x\u0000' },
  { name: long },
  { name: 'x', attributes: 'y' },
  { name: 'x', attributes: { a: { b: 1 } } },
  { name: 'x', bogus: 1 },
  { name: 'x', protocolMappers: 'y' },
  { name: 'x', protocolMappers: [{ name: 'm', protocolMapper: 'no-such-type' }] },
  { name: 'x', protocolMappers: [{ name: 'm', protocolMapper: HARDCODED }, { name: 'm', protocolMapper: HARDCODED }] },
];
/** Bodies of add-models: a list of mappers, all or nothing. */
const mapperListBody = {
  shapes: {
    'empty body': '',
    null: null,
    object: {},
    number: 5,
    string: 'text',
    'array of numbers': [5],
    'array of empty objects': [{}],
    'unknown type': [{ name: 'fresh', protocolMapper: 'no-such-type' }],
    'one good, one unknown': [{ name: 'fresh', protocolMapper: HARDCODED }, { name: 'fresh2', protocolMapper: 'no-such-type' }],
    'a name twice': [{ name: 'fresh', protocolMapper: HARDCODED }, { name: 'fresh', protocolMapper: HARDCODED }],
    'a taken name': [{ name: 'fresh', protocolMapper: HARDCODED }, { name: 'fixture-mapper', protocolMapper: HARDCODED }],
  } as Record<string, unknown>,
  fields: [] as unknown[],
};
const objectBody = (fields: unknown[]) => ({ shapes: notAnObject, fields });
const roleListBody = { shapes: notARoleList, fields: [] as unknown[] };

const idpFields: unknown[] = [
  { providerId: 'oidc' },
  { alias: 5, providerId: 'oidc' },
  { alias: '', providerId: 'oidc' },
  { alias: 'a/b', providerId: 'oidc' },
  { alias: 'a b', providerId: 'oidc' },
  { alias: 'x\u0000', providerId: 'oidc' },
  { alias: long, providerId: 'oidc' },
  { alias: 'fresh' },
  { alias: 'fresh', providerId: 'oidc', enabled: 'yes' },
  { alias: 'fresh', providerId: 'oidc', config: [] },
  { alias: 'fresh', providerId: 'oidc', config: { a: { b: 1 } } },
  { alias: 'fresh', providerId: 'oidc', config: { a: 'x\u0000' } },
  { alias: 'fresh', providerId: 'oidc', config: JSON.parse('{"__proto__": "x"}') },
  { alias: 'fresh', providerId: 'oidc', config: Object.fromEntries(Array.from({ length: 501 }, (_, i) => [`k${i}`, 'v'])) },
  { alias: 'fresh', providerId: 'oidc', config: { metadata: 'a'.repeat(20_000) } },
  { alias: 'fresh', providerId: 'oidc', postBrokerLoginFlowAlias: 'no such flow' },
  { alias: 'fresh', providerId: 'oidc', firstBrokerLoginFlowAlias: 'no such flow' },
  { alias: 'fresh', providerId: 'apple', config: { clientId: 'com.example', teamId: 'T', keyId: 'K', p8Content: 'not a key' } },
  { alias: 'fresh', providerId: 'oidc', postBrokerLoginFlowAlias: 5 },
];
const idpMapperFields: unknown[] = [
  { name: 'm' },
  { identityProviderMapper: 'hardcoded-attribute-idp-mapper' },
  { name: 5, identityProviderMapper: 'x' },
  { name: 'm', identityProviderMapper: 'x', config: { a: { b: 1 } } },
  { name: 'm', identityProviderMapper: 'x', identityProviderAlias: 'other-idp' },
  { name: 'm', identityProviderMapper: 'x', config: JSON.parse('{"__proto__": "x"}') },
];
const componentFields: unknown[] = [
  { providerType: 'org.keycloak.storage.UserStorageProvider' },
  { name: 'c', providerId: 'ldap' },
  { name: 5, providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider' },
  { name: 'c', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', parentId: randomUUID() },
  { name: 'c', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', parentId: "' OR 1=1 --" },
  { name: 'c', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: { a: [{}] } },
  { name: 'c', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: JSON.parse('{"__proto__": ["x"]}') },
  { name: 'c', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: { a: Array.from({ length: 1001 }, () => 'v') } },
  // Key providers are run (issue 39): bad config is refused, nothing stored.
  { name: 'c', providerId: 'rsa-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { keySize: ['1024'] } },
  { name: 'c', providerId: 'ecdsa-generated', providerType: 'org.keycloak.keys.KeyProvider', config: { ecdsaEllipticCurveKey: ['P-1'], priority: ['x'] } },
  { name: 'c', providerId: 'rsa', providerType: 'org.keycloak.keys.KeyProvider', config: { privateKey: ['not a key'] } },
  { name: 'c', providerId: 'java-keystore', providerType: 'org.keycloak.keys.KeyProvider' },
  { name: 'c', providerId: 'java-keystore', providerType: 'org.keycloak.keys.KeyProvider', config: { keystore: ['/nonexistent/realmgate.p12'], keystorePassword: ['p'], keyAlias: ['a'], keyPassword: ['p'] } },
  { name: 'c', providerId: 'java-keystore', providerType: 'org.keycloak.keys.KeyProvider', config: { keystore: ['/dev/zero'], keystorePassword: ['p'], keyAlias: ['a'], keyPassword: ['p'], keystoreType: ['BCFKS'] } },
  { name: 'c', providerId: 'java-keystore', providerType: 'org.keycloak.keys.KeyProvider', config: { keystore: ['/dev/zero'], keystorePassword: ['p'], keyAlias: ['a'], keyPassword: ['p'] } },
];

/**
 * Every route that reads a body, with the bad bodies for it. A POST or PUT route missing here fails the
 * coverage test, so a new route cannot slip past the sweep.
 */
const bodyRoutes: Record<string, { shapes: Record<string, unknown>; fields: unknown[] }> = {
  'POST /admin/realms': objectBody(realmImportFields),
  'PUT /admin/realms/:realm': objectBody(realmUpdateFields),
  'PUT /admin/realms/:realm/ui-ext': objectBody([...realmUpdateFields, { upConfig: 'x' }, { upConfig: { attributes: [{ name: 'phone' }] } }, { loginTheme: '../x', upConfig: null }, { upConfig: { unmanagedAttributePolicy: 'ENABLED' }, displayName: 'changed?' }]),
  'POST /admin/realms/:realm/clients': objectBody([...clientFields, { clientId: 'fixture-app' }]),
  'PUT /admin/realms/:realm/clients/:id': objectBody([...clientFields, { clientId: 'realm-management' }, { clientId: 'fixture-app', id: randomUUID() }]),
  'POST /admin/realms/:realm/clients/:id/roles': objectBody([...roleFields, { name: 'fixture-role' }]),
  'PUT /admin/realms/:realm/clients/:id/roles/:roleName': objectBody([...roleFields, { name: 'other-client-role' }]),
  'POST /admin/realms/:realm/clients/:id/roles/:roleName/composites': roleListBody,
  'DELETE /admin/realms/:realm/clients/:id/roles/:roleName/composites': roleListBody,
  'POST /admin/realms/:realm/users': objectBody([...userFields, { username: 'fixture-user' }, { username: 'FIXTURE-USER' }, { username: 'y', email: 'fixture@example.com' }]),
  'PUT /admin/realms/:realm/users/:id': objectBody([...userFields.map(withoutUsername), { username: 'renamed' }, { email: 'other@example.com' }]),
  'PUT /admin/realms/:realm/users/:id/reset-password': objectBody([{ type: 'password' }, { type: 'password', value: 5 }, { type: 'password', value: '' }, { type: 'otp', value: 'x' }, { value: 'x', temporary: 'yes' }, { value: long }]),
  ...Object.fromEntries(['users', 'groups', 'clients', 'clientScopes', 'roles'].map((type) => [`POST /admin/realms/:realm/ui-ext/role-mapping-delete/${type}/:id`, { shapes: notADeleteRequest, fields: [] }])),
  'POST /admin/realms/:realm/users/:id/federated-identity/:provider': objectBody([{}, { userName: 'x' }, { userId: 5 }, { userId: '' }, { userId: long }, { userId: 'x\u0000y' }, { userId: 'x', userName: 7 }, { userId: 'x', identityProvider: 'other-idp' }, { userId: 'x', token: 't' }, JSON.parse('{"userId": "x", "__proto__": {"admin": true}}')]),
  'POST /admin/realms/:realm/users/:id/role-mappings/realm': roleListBody,
  'DELETE /admin/realms/:realm/users/:id/role-mappings/realm': roleListBody,
  'POST /admin/realms/:realm/users/:id/role-mappings/clients/:client': roleListBody,
  'DELETE /admin/realms/:realm/users/:id/role-mappings/clients/:client': roleListBody,
  'POST /admin/realms/:realm/clients/:id/scope-mappings/realm': roleListBody,
  'DELETE /admin/realms/:realm/clients/:id/scope-mappings/realm': roleListBody,
  'POST /admin/realms/:realm/clients/:id/scope-mappings/clients/:client': roleListBody,
  'DELETE /admin/realms/:realm/clients/:id/scope-mappings/clients/:client': roleListBody,
  'POST /admin/realms/:realm/roles': objectBody([...roleFields, { name: 'fixture-role' }]),
  'PUT /admin/realms/:realm/roles/:roleName': objectBody([...roleFields, { name: 'offline_access' }]),
  'POST /admin/realms/:realm/roles/:roleName/composites': roleListBody,
  'DELETE /admin/realms/:realm/roles/:roleName/composites': roleListBody,
  'PUT /admin/realms/:realm/roles-by-id/:id': objectBody([...roleFields, { name: 'offline_access' }]),
  'POST /admin/realms/:realm/roles-by-id/:id/composites': roleListBody,
  'DELETE /admin/realms/:realm/roles-by-id/:id/composites': roleListBody,
  'POST /admin/realms/:realm/organizations': objectBody([...orgFields, { name: 'Fixture' }, { name: 'Other', alias: 'fixture' }, { name: 'Other', domains: [{ name: 'fixture.example' }] }]),
  'PUT /admin/realms/:realm/organizations/:id': objectBody([...orgFields, { name: 'Fixture', alias: 'changed' }, { name: 'Other Org' }, { name: 'Fixture', domains: [{ name: 'ok.example' }, { name: 'ok.example' }] }]),
  'POST /admin/realms/:realm/organizations/:id/members': {
    shapes: { 'empty body': '', null: null, object: {}, array: [], number: 5, boolean: true, 'not a uuid': 'not-a-uuid', 'unknown uuid': randomUUID(), 'quoted injection': JSON.stringify("' OR 1=1 --"), 'raw injection': "' OR 1=1 --", long, 'raw NUL': 'x\u0000' },
    fields: [],
  },
  // Keycloak reads form parameters here: a JSON body of any shape gives none (400, the address or id is required);
  // bad form values are in organization-invitations.test.ts.
  'POST /admin/realms/:realm/organizations/:id/members/invite-user': { shapes: { ...notAnObject, 'JSON address': { email: 'someone@fixture.example' } }, fields: [] },
  'POST /admin/realms/:realm/organizations/:id/members/invite-existing-user': { shapes: { ...notAnObject, 'JSON id': { id: randomUUID() } }, fields: [] },
  'POST /admin/realms/:realm/organizations/:id/identity-providers': {
    shapes: { 'empty body': '', null: null, object: {}, array: [], number: 5, boolean: true, 'unknown alias': 'no-such-idp', 'quoted injection': JSON.stringify("' OR 1=1 --"), 'raw injection': "' OR 1=1 --", long, 'raw NUL': 'x\u0000' },
    fields: [],
  },
  'POST /admin/realms/:realm/organizations/:id/groups': objectBody([...groupFields, { name: 'fixture-org-group' }, { id: randomUUID(), name: 'x' }]),
  'PUT /admin/realms/:realm/organizations/:id/groups/:orgGroupId': objectBody([...groupFields, { name: 'other-org-group' }, { id: randomUUID(), name: 'fixture-org-group' }]),
  'POST /admin/realms/:realm/organizations/:id/groups/:orgGroupId/children': objectBody([...groupFields, { id: randomUUID(), name: 'x' }]),
  'POST /admin/realms/:realm/organizations/:id/groups/:orgGroupId/role-mappings/realm': roleListBody,
  'DELETE /admin/realms/:realm/organizations/:id/groups/:orgGroupId/role-mappings/realm': roleListBody,
  'POST /admin/realms/:realm/organizations/:id/groups/:orgGroupId/role-mappings/clients/:client': roleListBody,
  'DELETE /admin/realms/:realm/organizations/:id/groups/:orgGroupId/role-mappings/clients/:client': roleListBody,
  'POST /admin/realms/:realm/groups': objectBody([...groupFields, { name: 'fixture-group' }, { id: randomUUID(), name: 'x' }]),
  'PUT /admin/realms/:realm/groups/:id': objectBody([...groupFields, { name: 'other-group' }, { id: randomUUID(), name: 'fixture-group' }]),
  'POST /admin/realms/:realm/groups/:id/children': objectBody([...groupFields, { name: 'fixture-child' }, { id: randomUUID(), name: 'x' }]),
  'POST /admin/realms/:realm/groups/:id/role-mappings/realm': roleListBody,
  'DELETE /admin/realms/:realm/groups/:id/role-mappings/realm': roleListBody,
  'POST /admin/realms/:realm/groups/:id/role-mappings/clients/:client': roleListBody,
  'DELETE /admin/realms/:realm/groups/:id/role-mappings/clients/:client': roleListBody,
  'PUT /admin/realms/:realm/events/config': objectBody(eventsConfigFields),
  'POST /admin/realms/:realm/client-scopes': objectBody([...scopeFields, { name: 'fixture-scope' }]),
  'PUT /admin/realms/:realm/client-scopes/:id': objectBody([...scopeFields, { name: 'other-scope' }, { id: randomUUID(), name: 'fixture-scope' }]),
  'POST /admin/realms/:realm/client-scopes/:id/protocol-mappers/models': objectBody([...mapperFields, { name: 'fixture-mapper', protocolMapper: HARDCODED }]),
  'PUT /admin/realms/:realm/client-scopes/:id/protocol-mappers/models/:mapperId': objectBody([...mapperFields, { name: 'other-mapper', protocolMapper: HARDCODED }, { id: randomUUID(), name: 'fixture-mapper', protocolMapper: HARDCODED }]),
  'POST /admin/realms/:realm/client-scopes/:id/protocol-mappers/add-models': mapperListBody,
  'POST /admin/realms/:realm/clients/:id/protocol-mappers/models': objectBody([...mapperFields, { name: 'fixture-mapper', protocolMapper: HARDCODED }]),
  'PUT /admin/realms/:realm/clients/:id/protocol-mappers/models/:mapperId': objectBody(mapperFields),
  'POST /admin/realms/:realm/clients/:id/protocol-mappers/add-models': mapperListBody,
  'POST /admin/realms/:realm/client-scopes/:id/scope-mappings/realm': roleListBody,
  'DELETE /admin/realms/:realm/client-scopes/:id/scope-mappings/realm': roleListBody,
  'POST /admin/realms/:realm/client-scopes/:id/scope-mappings/clients/:client': roleListBody,
  'DELETE /admin/realms/:realm/client-scopes/:id/scope-mappings/clients/:client': roleListBody,
  'POST /admin/realms/:realm/authentication/flows': objectBody([
    { alias: 5 },
    { alias: '' },
    { description: 'no alias' },
    { alias: 'x\u0000' },
    { alias: 'new-flow', providerId: 'no-such-type' },
    { alias: 'new-flow', topLevel: 'yes' },
    { alias: 'new-flow', builtIn: true },
    { alias: 'new-flow', description: 5 },
    { alias: 'browser' },
  ]),
  'PUT /admin/realms/:realm/authentication/flows/:flow': objectBody([{ alias: 5 }, { description: 'no alias' }, { alias: 'x', providerId: 'no-such-type' }, { alias: 'registration' }, { alias: 'x\u0000' }]),
  'POST /admin/realms/:realm/authentication/flows/:flow/copy': objectBody([{}, { newName: 5 }, { newName: '' }, { newName: 'x\u0000' }, { newName: 'registration' }]),
  'PUT /admin/realms/:realm/authentication/flows/:flow/executions': objectBody([
    {},
    { id: 5 },
    { id: randomUUID(), requirement: 'REQUIRED' },
    { id: 'x\u0000', requirement: 'REQUIRED' },
    { id: "' OR 1=1 --", requirement: 'REQUIRED' },
    { requirement: 'SOMETIMES' },
    { priority: 'high' },
    { priority: 1e12 },
  ]),
  'POST /admin/realms/:realm/authentication/flows/:flow/executions/execution': objectBody([{}, { provider: 5 }, { provider: '' }, { provider: 'no-such-provider' }, { provider: 'x\u0000' }, { provider: 'auth-cookie', priority: 'first' }]),
  'POST /admin/realms/:realm/authentication/flows/:flow/executions/flow': objectBody([{}, { alias: 5 }, { alias: 'sub', type: 'client-flow' }, { alias: 'sub', priority: 1.5 }, { alias: 'x\u0000' }]),
  'POST /admin/realms/:realm/authentication/executions/:id/config': objectBody([{}, { alias: 5 }, { alias: 'cfg', config: [] }, { alias: 'cfg', config: { a: { b: 1 } } }, { alias: 'cfg', config: { a: 'x\u0000' } }]),
  'PUT /admin/realms/:realm/authentication/config/:id': objectBody([{ alias: 5 }, { config: 'x' }, { config: { a: ['b'] } }]),
  'PUT /admin/realms/:realm/authentication/required-actions/:alias/config': objectBody([{ config: { max_auth_age: 'soon' } }, { config: { max_auth_age: '-1' } }, { config: { unknown: '1' } }, { config: [] }, { unknownField: true }]),
  // CONFIGURE_TOTP is registered already: 409.
  'POST /admin/realms/:realm/authentication/register-required-action': objectBody([{ providerId: 5 }, { providerId: 'NO_SUCH_PROVIDER' }, {}, { providerId: 'CONFIGURE_TOTP' }, { providerId: 'update_user_locale', unknownField: true }]),
  'PUT /admin/realms/:realm/authentication/required-actions/:alias': objectBody([{ enabled: 'yes' }, { defaultAction: 1 }, { priority: 1.5 }, { priority: 2147483648 }, { config: { a: 'b' } }, { config: [] }, { unknownField: true }]),
  'PUT /admin/realms/:realm/users/profile': objectBody([{ attributes: [] }, { attributes: 'x' }, { attributes: [{ name: 'phone' }] }, { unmanagedAttributePolicy: 'ENABLED' }]),
  'PUT /admin/realms/:realm/users/:id/credentials/:credentialId/userLabel': {
    // Sent as JSON: refused with 415, as Keycloak's text/plain route refuses them.
    shapes: { null: null, object: {}, number: 5, array: ['x'], string: 'label' },
    fields: [],
  },
  'PUT /admin/realms/:realm/localization/:locale/:key': {
    // Sent as JSON: refused with 415, as Keycloak's text/plain route refuses them.
    shapes: { null: null, object: {}, number: 5, array: ['x'], string: 'text' },
    fields: [],
  },
  'POST /admin/realms/:realm/localization/:locale': objectBody([{ key: 5 }, { key: { nested: 'x' } }, { key: ['x'] }, { '': 'x' }, { key: 'x\u0000' }, { ['k'.repeat(300)]: 'x' }, { key: 'x'.repeat(20000) }]),
  'PUT /admin/realms/:realm/users/:id/execute-actions-email': {
    shapes: { 'empty body': '', null: null, object: {}, number: 5, string: 'text', 'array of numbers': [5], 'unknown action': ['delete_credential'], 'injection': ["' OR 1=1 --"], 'NUL': ['UPDATE_PASSWORD\u0000'] },
    fields: [],
  },
  'POST /admin/realms/:realm/clients/:id/nodes': objectBody([{}, { node: 5 }, { node: '' }, { node: 'a/b' }, { node: 'x'.repeat(300) }, { node: 'a\u0000' }, { node: '${application.session.host}' }]),
  'POST /admin/realms/:realm/identity-provider/instances': objectBody([...idpFields, { alias: 'fixture-idp', providerId: 'oidc' }]),
  'PUT /admin/realms/:realm/identity-provider/instances/:alias': objectBody([...idpFields, { alias: 'other-idp', providerId: 'oidc' }, { alias: 'fixture-idp', providerId: 'oidc', internalId: randomUUID() }]),
  'POST /admin/realms/:realm/identity-provider/instances/:alias/mappers': objectBody([...idpMapperFields, { name: 'fixture-idp-mapper', identityProviderMapper: 'x' }]),
  'PUT /admin/realms/:realm/identity-provider/instances/:alias/mappers/:id': objectBody([...idpMapperFields, { name: 'other-idp-mapper', identityProviderMapper: 'x' }]),
  // Refused before anything is fetched (the provider kind, the URL's form).
  'POST /admin/realms/:realm/identity-provider/import-config': objectBody([{ providerId: 'oidc' }, { providerId: 5, fromUrl: 'http://127.0.0.1/x' }, { providerId: 'oidc', fromUrl: 5 }, { providerId: 'oidc', fromUrl: 'ftp://127.0.0.1/x' }, { providerId: 'saml', fromUrl: 'http://127.0.0.1/x' }, { providerId: 'oidc', fromUrl: 'x'.repeat(3000) }, { fromUrl: 'http://127.0.0.1/x' }]),
  'POST /admin/realms/:realm/components': objectBody(componentFields),
  'PUT /admin/realms/:realm/client-policies/profiles': objectBody([
    { profiles: 'x' },
    { profiles: [{}] },
    { profiles: [{ name: 5, executors: [] }] },
    { profiles: [{ name: 'x\u0000', executors: [] }] },
    { profiles: [{ name: 'p', executors: [{ executor: 'no-such-executor' }] }] },
    { profiles: [{ name: 'p', executors: [{ executor: 'reject-request', configuration: {} }] }] },
    { profiles: [{ name: 'p', executors: [{ executor: 'pkce-enforcer', configuration: [] }] }] },
    { profiles: [{ name: 'p', executors: [{ executor: 'secure-signature-algorithm', configuration: { 'default-algorithm': 'RS256' } }] }] },
    { profiles: [{ name: 'p', executors: [{ executor: 'secure-signature-algorithm', configuration: { 'default-algorithm': 5 } }] }] },
    { profiles: [{ name: 'p', executors: [] }, { name: 'p', executors: [] }] },
    { profiles: [{ name: 'fapi-1-baseline', executors: [] }] },
    { profiles: Array.from({ length: 101 }, (_, i) => ({ name: `p${i}`, executors: [] })) },
  ]),
  'PUT /admin/realms/:realm/client-policies/policies': objectBody([
    { policies: 'x' },
    { policies: [{ name: 'x', enabled: 'yes', conditions: [], profiles: [] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'no-such-condition' }], profiles: [] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'any-client' }], profiles: ['no-such-profile'] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'any-client' }], profiles: ['fapi-2-message-signing'] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'client-attributes', configuration: { attributes: 'not json' } }], profiles: [] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'client-updater-context', configuration: { 'update-client-source': ['ByRobot'] } }], profiles: [] }] },
    { policies: [{ name: 'x', enabled: true, conditions: [{ condition: 'client-updater-source-host', configuration: { 'trusted-hosts': ['admin.example'] } }], profiles: [] }] },
  ]),
  'POST /admin/realms/:realm/clients-initial-access': objectBody([{ count: -1 }, { count: 'many' }, { count: 1.5 }, { expiration: -5 }, { expiration: '60' }, { expiration: 2 ** 40 }, { count: 1, token: 'chosen' }]),
  'PUT /admin/realms/:realm/components/:id': objectBody([...componentFields.slice(2), { parentId: 'self' }]),
  'POST /admin/realms/:realm/partialImport': objectBody([
    { ifResourceExists: 'MERGE' },
    { ifResourceExists: 5 },
    { users: 'x' },
    { users: [{ username: 5 }] },
    { users: [{ username: 'fixture-user' }] },
    { users: [{ username: 'new-one', realmRoles: ['no-such-role'] }] },
    { clients: [{ clientId: 'fixture-app' }] },
    { clients: [{ clientId: 'x', redirectUris: ['javascript:alert(1)'] }] },
    { roles: { realm: [{ name: '' }] } },
    { roles: { realm: [{ name: 'fresh', composites: { realm: ['no-such-role'] } }] } },
    { roles: { client: { 'no-such-client': [{ name: 'r' }] } } },
    { identityProviders: [{ alias: 'fixture-idp', providerId: 'oidc' }] },
    { identityProviders: [{ alias: 'dup', providerId: 'oidc' }, { alias: 'dup', providerId: 'oidc' }] },
    { identityProviders: [{ alias: 'new-idp', providerId: 'oidc' }], identityProviderMappers: [{ name: 'm', identityProviderMapper: 'x', identityProviderAlias: 'ghost' }] },
  ]),
};
/** POST and PUT routes that take no body (any body is ignored, as Keycloak ignores it). */
const noBodyRoutes = [
  'POST /admin/realms/:realm/organizations/:id/invitations/:invitationId/resend',
  'POST /admin/realms/:realm/clients/:id/client-secret',
  'POST /admin/realms/:realm/clients/:id/registration-access-token',
  'POST /admin/realms/:realm/authentication/executions/:id/raise-priority',
  'POST /admin/realms/:realm/authentication/executions/:id/lower-priority',
  'POST /admin/realms/:realm/authentication/required-actions/:alias/raise-priority',
  'POST /admin/realms/:realm/authentication/required-actions/:alias/lower-priority',
  'POST /admin/realms/:realm/users/:id/logout',
  'POST /admin/realms/:realm/users/:id/impersonation',
  'POST /admin/realms/:realm/logout-all',
  'POST /admin/realms/:realm/push-revocation',
  'POST /admin/realms/:realm/clear-realm-cache',
  'POST /admin/realms/:realm/clear-user-cache',
  'POST /admin/realms/:realm/clear-keys-cache',
  'POST /admin/realms/:realm/clear-crl-cache',
  'POST /admin/realms/:realm/users/:id/credentials/:credentialId/moveToFirst',
  'POST /admin/realms/:realm/users/:id/credentials/:credentialId/moveAfter/:newPreviousCredentialId',
  'POST /admin/realms/:realm/clients/:id/push-revocation',
  'POST /admin/realms/:realm/partial-export',
  'POST /admin/realms/:realm/clients/:id/certificates/:attr/:operation',
  'PUT /admin/realms/:realm/users/:id/send-verify-email',
  'PUT /admin/realms/:realm/users/:id/groups/:groupId',
  'PUT /admin/realms/:realm/organizations/:id/groups/:orgGroupId/members/:userId',
  'PUT /admin/realms/:realm/default-groups/:groupId',
  'PUT /admin/realms/:realm/default-default-client-scopes/:scopeId',
  'PUT /admin/realms/:realm/default-optional-client-scopes/:scopeId',
  'PUT /admin/realms/:realm/clients/:id/default-client-scopes/:scopeId',
  'PUT /admin/realms/:realm/clients/:id/optional-client-scopes/:scopeId',
];

/** Query parameters each searching or paging GET route reads, with bad values for them. */
const paging = ['first=-1', 'max=abc', 'first=1e3', 'max=99999999999', 'first=1&first=2', 'first=%00', 'max=0x10'];
const text = (name: string) => [`${name}=${'a'.repeat(300)}`, `${name}=x&${name}=y`, `${name}=%00`, `${name}=a%00b`];
/** A client's Evaluate tools read `scope` as the token endpoint keeps it (up to 2,048 characters). */
const evaluateScope = [`scope=${'a'.repeat(3000)}`, 'scope=x&scope=y', 'scope=%00', 'scope=a%00b'];
const queryRoutes: Record<string, string[]> = {
  'GET /admin/realms/:realm/clients': [...paging, ...text('clientId'), 'search=maybe'],
  'GET /admin/realms/:realm/users': [...paging, ...text('username'), ...text('email'), ...text('search'), ...text('firstName'), 'exact=maybe', 'enabled=1', 'emailVerified=yes'],
  'GET /admin/realms/:realm/ui-ext/brute-force-user': [...paging, ...text('username'), ...text('email'), ...text('search'), 'exact=maybe', 'enabled=1'],
  'GET /admin/:realm/console/whoami': text('currentRealm'),
  'GET /admin/realms/:realm/ui-ext/sessions': [...paging, ...text('search'), 'type=BOGUS', 'type=ALL&type=OFFLINE'],
  'GET /admin/realms/:realm/ui-ext/realms/names': [...paging, ...text('search')],
  'GET /admin/realms/:realm/partial-export': ['exportClients=maybe', 'exportGroupsAndRoles=1', 'exportClients=true&exportClients=false', 'exportClients=%00'],
  ...Object.fromEntries(['users', 'groups', 'clients', 'clientScopes'].map((type) => [`GET /admin/realms/:realm/ui-ext/available-roles/${type}/:id`, [...paging, ...text('search')]])),
  'GET /admin/realms/:realm/ui-ext/sessions/client': ['clientId=not-a-uuid', 'clientId=', ...text('clientId'), 'type=BOGUS', ...text('search')],
  'GET /admin/realms/:realm/users/count': [...text('username'), ...text('search'), 'exact=maybe', 'enabled=1'],
  'GET /admin/realms/:realm/clients/:id/roles': [...paging, ...text('search')],
  'GET /admin/realms/:realm/clients/:id/roles/:roleName/users': paging,
  'GET /admin/realms/:realm/roles': [...paging, ...text('search')],
  'GET /admin/realms/:realm/roles/:roleName/users': paging,
  'GET /admin/realms/:realm/organizations': [...paging, ...text('search'), ...text('q'), 'exact=maybe'],
  'GET /admin/realms/:realm/organizations/:id/members': paging,
  'GET /admin/realms/:realm/organizations/:id/invitations': [...paging, ...text('search'), ...text('email'), ...text('firstName'), ...text('lastName'), ...text('status')],
  'GET /admin/realms/:realm/clients/:id/offline-sessions': paging,
  'GET /admin/realms/:realm/clients/:id/user-sessions': paging,
  'GET /admin/realms/:realm/events': [...paging, 'dateFrom=yesterday', 'dateTo=2020-13-45', 'dateFrom=1e3', ...text('client'), ...text('user'), ...text('ipAddress'), `type=${'A'.repeat(100)}`, `${Array.from({ length: 101 }, () => 'type=LOGIN').join('&')}`, 'type=%00'],
  'GET /admin/realms/:realm/groups': [...paging, ...text('search'), ...text('q'), 'q=novalue', 'exact=maybe', 'briefRepresentation=1', 'populateHierarchy=yes', 'subGroupsCount=0'],
  'GET /admin/realms/:realm/organizations/:id/groups': [...paging, ...text('search'), ...text('q'), 'q=novalue', 'exact=maybe', 'briefRepresentation=1', 'populateHierarchy=yes', 'subGroupsCount=0'],
  'GET /admin/realms/:realm/organizations/:id/groups/:orgGroupId': ['subGroupsCount=0', 'subGroupsCount=true&subGroupsCount=false'],
  'GET /admin/realms/:realm/organizations/:id/groups/group-by-path/:path': ['subGroupsCount=0'],
  'GET /admin/realms/:realm/organizations/:id/groups/:orgGroupId/children': [...paging, ...text('search'), 'exact=maybe', 'subGroupsCount=0'],
  'GET /admin/realms/:realm/organizations/:id/groups/:orgGroupId/members': [...paging, 'briefRepresentation=1'],
  'GET /admin/realms/:realm/organizations/:id/members/:userId/groups': [...paging, ...text('search'), 'briefRepresentation=1'],
  'GET /admin/realms/:realm/groups/count': [...text('search'), 'top=maybe'],
  'GET /admin/realms/:realm/groups/:id/children': [...paging, ...text('search'), 'exact=maybe', 'briefRepresentation=no'],
  'GET /admin/realms/:realm/groups/:id/members': [...paging, 'briefRepresentation=1'],
  'GET /admin/realms/:realm/users/:id/groups': [...paging, ...text('search'), 'briefRepresentation=1'],
  'GET /admin/realms/:realm/users/:id/groups/count': text('search'),
  'GET /admin/realms/:realm/roles/:roleName/groups': paging,
  'GET /admin/realms/:realm/clients/:id/roles/:roleName/groups': paging,
  'GET /admin/realms/:realm/identity-provider/instances': [...paging, ...text('search'), 'realmOnly=maybe', 'briefRepresentation=1'],
  'GET /admin/realms/:realm/components': [...text('type'), ...text('parent'), ...text('name')],
  'GET /admin/realms/:realm/components/:id/sub-component-types': text('type'),
  ...Object.fromEntries(['protocol-mappers', 'scope-mappings/:container/granted', 'scope-mappings/:container/not-granted'].map((tail) => [`GET /admin/realms/:realm/clients/:id/evaluate-scopes/${tail}`, evaluateScope])),
  ...Object.fromEntries(['access-token', 'id-token', 'userinfo'].map((doc) => [`GET /admin/realms/:realm/clients/:id/evaluate-scopes/generate-example-${doc}`, [...evaluateScope, 'userId=x&userId=y', 'userId=%00', `userId=${'a'.repeat(300)}`, ...(doc === 'access-token' ? ['audience=x&audience=y', 'audience=%00'] : [])]])),
  'GET /admin/realms/:realm/client-policies/profiles': ['include-global-profiles=yes', 'include-global-profiles=true&include-global-profiles=false', 'include-global-profiles=%00', `include-global-profiles=${'t'.repeat(300)}`],
  'GET /admin/realms/:realm/client-policies/policies': ['include-global-policies=yes', 'include-global-policies=true&include-global-policies=false', 'include-global-policies=%00', `include-global-policies=${'t'.repeat(300)}`],
  'GET /admin/realms/:realm/admin-events': [...paging, 'dateFrom=abc', ...text('resourcePath'), ...text('authUser'), `operationTypes=${'A'.repeat(100)}`, 'resourceTypes=%00'],
};
/** GET routes that read no query parameter. */
const noQueryRoutes = [
  'GET /admin/realms/:realm/clients/:id/test-nodes-available',
  'GET /admin/realms/:realm/identity-provider/providers/:providerId',
  'GET /admin/realms/:realm/identity-provider/instances/:alias/reload-keys',
  'GET /admin/realms/:realm/organizations/:id/invitations/:invitationId',
  'GET /admin/realms/:realm/users/:id/configured-user-storage-credential-types',
  'GET /admin/realms/:realm/clients/:id/client-secret/rotated',
  'GET /admin/realms/:realm/clients-initial-access',
  'GET /admin/realms/:realm/client-registration-policy/providers',
  'GET /admin/serverinfo',
  'GET /admin/:realm/console',
  'GET /admin/realms/:realm/ui-ext/info',
  'GET /admin/realms/:realm/users/:id/unmanagedAttributes',
  'GET /admin/realms/:realm/authentication/required-actions',
  'GET /admin/realms/:realm/authentication/required-actions/:alias',
  'GET /admin/realms/:realm/authentication/unregistered-required-actions',
  'GET /admin/realms/:realm/authentication/required-actions/:alias/config',
  'GET /admin/realms/:realm/authentication/required-actions/:alias/config-description',
  'GET /admin/realms/:realm/ui-ext/authentication-management/required-actions',
  'GET /admin/realms/:realm/ui-ext/available-event-listeners',
  'GET /admin/realms/:realm/ui-ext/role-mappings/roles/:id',
  // The console sends first/max/search here too; Keycloak's answer (and this one) is the whole list, they are not read.
  ...['users', 'groups', 'clients', 'clientScopes', 'roles'].map((type) => `GET /admin/realms/:realm/ui-ext/effective-roles-all/${type}/:id`),
  'GET /admin/realms/:realm/users/:id/consents',
  'GET /admin/realms/:realm/users/:id/federated-identity',
  'GET /admin/realms/:realm/clients/:id/certificates/:attr',
  'GET /admin/realms/:realm/ui-ext/authentication-management/flows',
  'GET /admin/realms/:realm/localization',
  'GET /admin/realms/:realm/localization/:locale',
  'GET /admin/realms/:realm/localization/:locale/:key',
  'GET /admin/realms',
  'GET /admin/realms/:realm',
  'GET /admin/realms/:realm/clients/:id',
  'GET /admin/realms/:realm/clients/:id/client-secret',
  'GET /admin/realms/:realm/clients/:id/service-account-user',
  'GET /admin/realms/:realm/clients/:id/roles/:roleName',
  'GET /admin/realms/:realm/clients/:id/roles/:roleName/composites',
  'GET /admin/realms/:realm/users/:id',
  'GET /admin/realms/:realm/attack-detection/brute-force/users/:id',
  'GET /admin/realms/:realm/users/:id/credentials',
  'GET /admin/realms/:realm/users/:id/role-mappings',
  'GET /admin/realms/:realm/users/:id/role-mappings/realm',
  'GET /admin/realms/:realm/users/:id/role-mappings/realm/available',
  'GET /admin/realms/:realm/users/:id/role-mappings/realm/composite',
  'GET /admin/realms/:realm/users/:id/role-mappings/clients/:client',
  'GET /admin/realms/:realm/users/:id/role-mappings/clients/:client/available',
  'GET /admin/realms/:realm/users/:id/role-mappings/clients/:client/composite',
  'GET /admin/realms/:realm/clients/:id/scope-mappings',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/realm',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/realm/available',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/realm/composite',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/clients/:client',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/clients/:client/available',
  'GET /admin/realms/:realm/clients/:id/scope-mappings/clients/:client/composite',
  'GET /admin/realms/:realm/roles/:roleName',
  'GET /admin/realms/:realm/roles/:roleName/composites',
  'GET /admin/realms/:realm/roles-by-id/:id',
  'GET /admin/realms/:realm/roles-by-id/:id/composites',
  'GET /admin/realms/:realm/roles-by-id/:id/composites/realm',
  'GET /admin/realms/:realm/roles-by-id/:id/composites/clients/:clientUuid',
  'GET /admin/realms/:realm/roles/:roleName/composites/realm',
  'GET /admin/realms/:realm/roles/:roleName/composites/clients/:clientUuid',
  'GET /admin/realms/:realm/clients/:id/roles/:roleName/composites/realm',
  'GET /admin/realms/:realm/clients/:id/roles/:roleName/composites/clients/:clientUuid',
  'GET /admin/realms/:realm/client-session-stats',
  'GET /admin/realms/:realm/organizations/count',
  'GET /admin/realms/:realm/organizations/members/:userId/organizations',
  'GET /admin/realms/:realm/organizations/:id',
  'GET /admin/realms/:realm/organizations/:id/members/count',
  'GET /admin/realms/:realm/organizations/:id/identity-providers',
  'GET /admin/realms/:realm/organizations/:id/identity-providers/:alias',
  'GET /admin/realms/:realm/organizations/:id/members/:userId',
  'GET /admin/realms/:realm/events/config',
  'GET /admin/realms/:realm/keys',
  'GET /admin/realms/:realm/components/:id',
  'GET /admin/realms/:realm/identity-provider/instances/:alias',
  'GET /admin/realms/:realm/identity-provider/instances/:alias/mapper-types',
  'GET /admin/realms/:realm/identity-provider/instances/:alias/mappers',
  'GET /admin/realms/:realm/identity-provider/instances/:alias/mappers/:id',
  'GET /admin/realms/:realm/users/:id/offline-sessions/:client',
  'GET /admin/realms/:realm/clients/:id/offline-session-count',
  'GET /admin/realms/:realm/clients/:id/session-count',
  'GET /admin/realms/:realm/users/:id/sessions',
  'GET /admin/realms/:realm/users/profile',
  'GET /admin/realms/:realm/users/profile/metadata',
  'GET /admin/realms/:realm/clients/:id/installation/providers/:provider',
  'GET /admin/realms/:realm/authentication/authenticator-providers',
  'GET /admin/realms/:realm/authentication/form-action-providers',
  'GET /admin/realms/:realm/authentication/form-providers',
  'GET /admin/realms/:realm/authentication/client-authenticator-providers',
  'GET /admin/realms/:realm/authentication/config-description/:providerId',
  'GET /admin/realms/:realm/authentication/flows',
  'GET /admin/realms/:realm/authentication/flows/:flow',
  'GET /admin/realms/:realm/authentication/flows/:flow/executions',
  'GET /admin/realms/:realm/authentication/executions/:id',
  'GET /admin/realms/:realm/authentication/config/:id',
  'GET /admin/realms/:realm/groups/:id',
  'GET /admin/realms/:realm/groups/:id/role-mappings',
  'GET /admin/realms/:realm/groups/:id/role-mappings/realm',
  'GET /admin/realms/:realm/groups/:id/role-mappings/realm/available',
  'GET /admin/realms/:realm/groups/:id/role-mappings/realm/composite',
  'GET /admin/realms/:realm/groups/:id/role-mappings/clients/:client',
  'GET /admin/realms/:realm/groups/:id/role-mappings/clients/:client/available',
  'GET /admin/realms/:realm/groups/:id/role-mappings/clients/:client/composite',
  'GET /admin/realms/:realm/group-by-path/:path',
  ...['', '/realm', '/realm/available', '/realm/composite', '/clients/:client', '/clients/:client/available', '/clients/:client/composite'].map((tail) => `GET /admin/realms/:realm/organizations/:id/groups/:orgGroupId/role-mappings${tail}`),
  'GET /admin/realms/:realm/default-groups',
  'GET /admin/realms/:realm/client-scopes',
  'GET /admin/realms/:realm/client-scopes/:id',
  'GET /admin/realms/:realm/client-scopes/:id/protocol-mappers/models',
  'GET /admin/realms/:realm/client-scopes/:id/protocol-mappers/models/:mapperId',
  'GET /admin/realms/:realm/client-scopes/:id/protocol-mappers/protocol/:protocol',
  'GET /admin/realms/:realm/clients/:id/protocol-mappers/models',
  'GET /admin/realms/:realm/clients/:id/protocol-mappers/models/:mapperId',
  'GET /admin/realms/:realm/clients/:id/protocol-mappers/protocol/:protocol',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/realm',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/realm/available',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/realm/composite',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/clients/:client',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/clients/:client/available',
  'GET /admin/realms/:realm/client-scopes/:id/scope-mappings/clients/:client/composite',
  'GET /admin/realms/:realm/default-default-client-scopes',
  'GET /admin/realms/:realm/default-optional-client-scopes',
  'GET /admin/realms/:realm/clients/:id/default-client-scopes',
  'GET /admin/realms/:realm/clients/:id/optional-client-scopes',
];

/** Path-parameter values that must name nothing; each is written into the path exactly as given here. */
const badIds: Record<string, string> = {
  'encoded traversal': encodeURIComponent('../../etc/passwd'),
  'percent-encoded dots': '%2e%2e%2f',
  'double-encoded dots': '%252e%252e%252f',
  'dot-dot': '..',
  'SQL injection': encodeURIComponent("' OR 1=1 --"),
  'SQL injection 2': encodeURIComponent('1; DROP TABLE client; --'),
  script: encodeURIComponent('<script>alert(1)</script>'),
  '300 characters': 'a'.repeat(300),
  '5000 characters': 'a'.repeat(5000),
  NUL: '%00',
  'embedded NUL': `${randomUUID().slice(0, 30)}%00`,
  'broken escape': '%ZZ',
  'overlong UTF-8': '%C0%AF',
  'random uuid': randomUUID(),
  'uppercase unknown uuid': randomUUID().toUpperCase(),
  whitespace: '%20',
};
/**
 * The path values whose handling differs by database (PostgreSQL refuses NUL in text, SQLite cuts the string at it):
 * the only ones swept on PostgreSQL too. Every other one is a lookup of a text no row has, alike on both (every column
 * is `text`, every query bound), so it is swept on `httpDatabases` (issue 36).
 */
const databaseDependentIds = ['NUL', 'embedded NUL'];

/**
 * Every case on SQLite; on PostgreSQL only what reaches the database and can differ there: bodies (a value that passes
 * validation is written), NUL path values, query parameters and search terms (each dialect's LIKE), and that nothing
 * changed and nothing answered 5xx. Malformed JSON, content types and sizes are refused before any query (issue 36).
 */
describe.each(databases)('admin API refuses bad input on every route, with a 4xx and no change (%s)', (database) => {
  const everyCase = httpDatabases.includes(database);
  let t: TestServer;
  let token: string;
  let values: PathValues;
  let routes: Route[];
  const failures: string[] = [];
  beforeEach(() => {
    failures.length = 0;
  });

  const send = (method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}) =>
    rawRequest(t.url, method, path, { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, body);

  /** Records (rather than throws on) a response that is not a JSON 4xx, so one run lists every offender. */
  const check = (label: string, response: { status: number; json: any; text: string }, expected?: number) => {
    const json = response.json as Record<string, unknown> | undefined;
    const ok =
      (expected === undefined ? response.status >= 400 && response.status < 500 : response.status === expected) &&
      typeof json === 'object' &&
      json !== null &&
      (typeof json.errorMessage === 'string' || typeof json.error === 'string');
    if (!ok) failures.push(`${label} → ${response.status} ${response.text.slice(0, 200)}`);
  };

  const get = async (path: string) => {
    const response = await send('GET', path);
    expect(response.status, `${path}: ${response.text}`).toBe(200);
    return response.json;
  };

  /** What the sweep must leave untouched: the realms, and everything in the test realm. */
  const snapshot = async () => {
    const base = `/admin/realms/${REALM}`;
    return {
      realms: (await get('/admin/realms')) as unknown,
      realm: await get(base),
      clients: await get(`${base}/clients`),
      initialAccess: await get(`${base}/clients-initial-access`),
      users: await get(`${base}/users?max=1000`),
      userCount: await get(`${base}/users/count`),
      serviceAccount: await get(`${base}/clients/${values['clients:id']}/service-account-user`),
      secret: await get(`${base}/clients/${values['clients:id']}/client-secret`),
      realmRoles: await get(`${base}/roles`),
      clientRoles: await get(`${base}/clients/${values['clients:id']}/roles`),
      composites: await get(`${base}/roles/fixture-role/composites`),
      clientComposites: await get(`${base}/clients/${values['clients:id']}/roles/fixture-role/composites`),
      mappings: await get(`${base}/users/${values['users:id']}/role-mappings`),
      scopeMappings: await get(`${base}/clients/${values['clients:id']}/scope-mappings`),
      organizations: await get(`${base}/organizations`),
      members: await get(`${base}/organizations/${values['organizations:id']}/members`),
      invitations: await get(`${base}/organizations/${values['organizations:id']}/invitations`),
      organizationGroups: await get(`${base}/organizations/${values['organizations:id']}/groups?briefRepresentation=false&populateHierarchy=true&search=`),
      organizationGroupMembers: await get(`${base}/organizations/${values['organizations:id']}/groups/${values.orgGroupId}/members`),
      eventsConfig: await get(`${base}/events/config`),
      flows: await get(`${base}/authentication/flows`),
      browserExecutions: await get(`${base}/authentication/flows/browser/executions`),
      groups: await get(`${base}/groups?briefRepresentation=false&populateHierarchy=true&search=`),
      groupMembers: await get(`${base}/groups/${values['groups:id']}/members`),
      userGroups: await get(`${base}/users/${values['users:id']}/groups`),
      defaultGroups: await get(`${base}/default-groups`),
      clientScopes: await get(`${base}/client-scopes`),
      scopeScopeMappings: await get(`${base}/client-scopes/${values['client-scopes:id']}/scope-mappings`),
      realmDefaultScopes: [await get(`${base}/default-default-client-scopes`), await get(`${base}/default-optional-client-scopes`)],
      clientDefaultScopes: [await get(`${base}/clients/${values['clients:id']}/default-client-scopes`), await get(`${base}/clients/${values['clients:id']}/optional-client-scopes`)],
      identityProviders: await get(`${base}/identity-provider/instances`),
      identityProviderMappers: await get(`${base}/identity-provider/instances/fixture-idp/mappers`),
      components: await get(`${base}/components`),
      masterClients: ((await get('/admin/realms/master/clients')) as { clientId: string }[]).map((c) => c.clientId),
      masterUsers: ((await get('/admin/realms/master/users')) as { username: string }[]).map((u) => u.username),
    };
  };
  let before: Awaited<ReturnType<typeof snapshot>>;

  beforeAll(async () => {
    t = await startServer({ database });
    const kc = await masterAdminClient(t.url);
    // One token serves every sweep of the file, which runs for minutes on a busy machine: master's default 60 s
    // lifespan ran out mid-sweep (load 30-48, 2026-11-29) and every later request was a 401 "token expired".
    await kc.realms.update({ realm: 'master' }, { accessTokenLifespan: 3600 });
    token = await adminToken(t.url);
    await kc.realms.create({ realm: REALM, enabled: true, organizationsEnabled: true });
    kc.setConfig({ realmName: REALM });
    const { id: client } = await kc.clients.create({ clientId: 'fixture-app', serviceAccountsEnabled: true, publicClient: false });
    await kc.clients.createRole({ id: client, name: 'fixture-role' });
    await kc.clients.createRole({ id: client, name: 'other-client-role' });
    await kc.roles.create({ name: 'fixture-role' });
    const role = (await kc.roles.findOneByName({ name: 'fixture-role' }))!;
    const { id: user } = await kc.users.create({ username: 'fixture-user', email: 'fixture@example.com', enabled: true, credentials: [{ type: 'password', value: 'fixture-pass' }] });
    await kc.users.create({ username: 'other-user', email: 'other@example.com', enabled: true });
    const [password] = await kc.users.getCredentials({ id: user });
    await kc.users.addRealmRoleMappings({ id: user, roles: [{ id: role.id!, name: 'fixture-role' }] });
    const { id: org } = await kc.organizations.create({ name: 'Fixture', alias: 'fixture', domains: [{ name: 'fixture.example' }] });
    await kc.organizations.create({ name: 'Other Org', alias: 'other-org' });
    await kc.organizations.addMember({ orgId: org, userId: user });
    const orgGroup = async (name: string, parent = '') => {
      const response = await send('POST', `/admin/realms/${REALM}/organizations/${org}/groups${parent ? `/${parent}/children` : ''}`, JSON.stringify({ name }));
      return response.json.id as string;
    };
    const fixtureOrgGroup = await orgGroup('fixture-org-group');
    await orgGroup('other-org-group');
    await orgGroup('fixture-org-child', fixtureOrgGroup);
    await send('PUT', `/admin/realms/${REALM}/organizations/${org}/groups/${fixtureOrgGroup}/members/${user}`);
    const { id: group } = await kc.groups.create({ name: 'fixture-group', attributes: { a: ['b'] } });
    await kc.groups.create({ name: 'other-group' });
    await kc.groups.createChildGroup({ id: group }, { name: 'fixture-child' });
    await kc.groups.addRealmRoleMappings({ id: group, roles: [{ id: role.id!, name: 'fixture-role' }] });
    await kc.users.addToGroup({ id: user, groupId: group });
    const { id: scope } = await kc.clientScopes.create({ name: 'fixture-scope', protocol: 'openid-connect' });
    await kc.clientScopes.create({ name: 'other-scope', protocol: 'openid-connect' });
    const mapperOf = (name: string) => ({ name, protocol: 'openid-connect', protocolMapper: HARDCODED, config: { 'claim.name': name, 'claim.value': 'v' } });
    await kc.clientScopes.addMultipleProtocolMappers({ id: scope }, [mapperOf('fixture-mapper'), mapperOf('other-mapper')]);
    await kc.clients.addProtocolMapper({ id: client }, mapperOf('fixture-mapper'));
    const mapper = (await kc.clientScopes.listProtocolMappers({ id: scope })).find((m) => m.name === 'fixture-mapper')!;
    await kc.clientScopes.addRealmScopeMappings({ id: scope }, [{ id: role.id!, name: 'fixture-role' }]);
    await kc.identityProviders.create({ alias: 'fixture-idp', providerId: 'oidc', config: { clientSecret: 'fixture-secret' } });
    await kc.identityProviders.create({ alias: 'other-idp', providerId: 'oidc' });
    const { id: idpMapper } = await kc.identityProviders.createMapper({ alias: 'fixture-idp', identityProviderMapper: { name: 'fixture-idp-mapper', identityProviderMapper: 'x', identityProviderAlias: 'fixture-idp' } });
    await kc.identityProviders.createMapper({ alias: 'fixture-idp', identityProviderMapper: { name: 'other-idp-mapper', identityProviderMapper: 'x', identityProviderAlias: 'fixture-idp' } });
    const { id: component } = await kc.components.create({ name: 'fixture-ldap', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: { bindCredential: ['fixture-bind'] } });
    const flows = await kc.authenticationManagement.getFlows();
    const browser = flows.find((f) => f.alias === 'browser')!;
    const [execution] = await kc.authenticationManagement.getExecutions({ flow: 'browser' });
    values = {
      realm: REALM,
      'clients:id': client,
      'users:id': user,
      'roles-by-id:id': role.id!,
      'organizations:id': org,
      'groups:id': group,
      orgGroupId: fixtureOrgGroup,
      'client-scopes:id': scope,
      'clientScopes:id': scope,
      'roles:id': role.id!,
      scopeId: scope,
      mapperId: mapper.id!,
      protocol: 'openid-connect',
      groupId: group,
      path: 'fixture-group',
      roleName: 'fixture-role',
      client,
      userId: user,
      // Below /flows/ the segment is a flow id at the end of the path and an alias before a sub-path, as Keycloak's.
      'flows:flow:': browser.id!,
      'flows:flow': 'browser',
      'executions:id': execution.id!,
      providerId: 'auth-cookie',
      'instances:alias': 'fixture-idp',
      'mappers:id': idpMapper,
      'components:id': component,
      'required-actions:alias': 'CONFIGURE_TOTP',
      'credentials:credentialId': password.id!,
      'federated-identity:provider': 'fixture-idp',
      locale: 'en',
    };
    routes = adminRoutes(t.server.app);
    before = await snapshot();
  });
  afterAll(() => t?.close());

  it('classifies every admin route (so a new one cannot skip the sweep)', () => {
    expect(routes.length).toBeGreaterThanOrEqual(60);
    for (const route of routes) {
      const k = key(route);
      if (route.method === 'POST' || route.method === 'PUT') expect(Object.hasOwn(bodyRoutes, k) || noBodyRoutes.includes(k), `${k} has no bad-body cases`).toBe(true);
      if (route.method === 'GET') expect(Object.hasOwn(queryRoutes, k) || noQueryRoutes.includes(k), `${k} has no bad-query cases`).toBe(true);
    }
    for (const k of [...Object.keys(bodyRoutes), ...Object.keys(queryRoutes)]) expect(routes.map(key), `${k} is not a route`).toContain(k);
  });

  // Refused before any query: not run again on PostgreSQL.
  if (everyCase) {
    it('malformed JSON, other content types and bodies over 1 MiB (a realm import: 10 MiB) on every route that accepts a body', async () => {
      const oversized = JSON.stringify({ description: 'a'.repeat(1024 * 1024) });
      const oversizedImport = JSON.stringify({ description: 'a'.repeat(10 * 1024 * 1024) });
      for (const route of routes.filter((r) => r.method !== 'GET')) {
        const path = fillPath(route.url, values);
        const label = key(route);
        for (const [name, body] of Object.entries(malformedJson)) check(`${label} ${name}`, await send(route.method, path, body));
        check(`${label} oversized`, await send(route.method, path, REALM_IMPORT_ROUTES.includes(label) ? oversizedImport : oversized), 413);
        check(`${label} form body`, await send(route.method, path, 'name=x&clientId=x&username=x&realm=x', { 'content-type': 'application/x-www-form-urlencoded' }), FORM_BODY_ROUTES.includes(label) ? 400 : 415);
        // A credential's label is a text/plain body (Keycloak's): there a text body is read (credential-labels.test.ts).
        if (!TEXT_BODY_ROUTES.includes(label)) check(`${label} text body`, await send(route.method, path, 'x', { 'content-type': 'text/plain' }), 415);
      }
      expect(failures).toEqual([]);
    });
  }

  it('wrong shapes and wrong field types in the body of every route that reads one', async () => {
    for (const [k, cases] of Object.entries(bodyRoutes)) {
      const [method, url] = k.split(' ');
      const path = fillPath(url, values);
      for (const [name, body] of Object.entries(cases.shapes)) {
        check(`${k} ${name}`, await send(method, path, typeof body === 'string' && name.startsWith('raw') ? body : body === '' ? '' : JSON.stringify(body)));
      }
      for (const body of cases.fields) check(`${k} ${JSON.stringify(body).slice(0, 80)}`, await send(method, path, JSON.stringify(body)));
    }
    expect(failures).toEqual([]);
  });

  it(everyCase ? 'path traversal, injection, over-long and malformed ids in every path parameter of every route' : 'NUL in every path parameter of every route', async () => {
    const ids = Object.entries(badIds).filter(([name]) => everyCase || databaseDependentIds.includes(name));
    for (const route of routes.filter((r) => paramCount(r.url) > 0)) {
      for (let index = 0; index < paramCount(route.url); index++) {
        for (const [name, raw] of ids) {
          check(`${key(route)} param ${index} ${name}`, await send(route.method, fillPath(route.url, values, { index, raw })));
        }
        // Unencoded: `..` segments and slashes reach the router as they are.
        if (everyCase) check(`${key(route)} param ${index} raw traversal`, await send(route.method, fillPath(route.url, values, { index, raw: '../../../../etc/passwd' })));
      }
    }
    expect(failures).toEqual([]);
  });

  it('bad paging, repeated, over-long and NUL query parameters on every route that reads them', async () => {
    for (const [k, queries] of Object.entries(queryRoutes)) {
      const [method, url] = k.split(' ');
      for (const query of queries) check(`${k}?${query.slice(0, 60)}`, await send(method, `${fillPath(url, values)}?${query}`), 400);
    }
    expect(failures).toEqual([]);
  });

  it('search terms are data: injection and wildcard characters match nothing', async () => {
    const base = `/admin/realms/${REALM}`;
    for (const term of ["' OR 1=1 --", "%' OR '1'='1", '%', '*)(uid=*', '<script>']) {
      const q = encodeURIComponent(term);
      expect(await get(`${base}/users?search=${q}`), term).toEqual([]);
      expect(await get(`${base}/users?username=${q}`), term).toEqual([]);
      expect(await get(`${base}/users/count?email=${q}`), term).toBe(0);
      expect(await get(`${base}/clients?clientId=${q}&search=true`), term).toEqual([]);
      expect(await get(`${base}/roles?search=${q}`), term).toEqual([]);
      expect(await get(`${base}/organizations?search=${q}`), term).toEqual([]);
      expect(await get(`${base}/identity-provider/instances?search=${q}`), term).toEqual([]);
      expect(await get(`${base}/components?name=${q}`), term).toEqual([]);
    }
  });

  it('left every realm, client, user, role, mapping, organization and setting as it was', async () => {
    expect(await snapshot()).toEqual(before);
  });

  it('answered nothing with a 5xx', () => {
    expect(t.logs.filter((l) => l.msg === 'unhandled error').map((l) => (l.err as { message?: string })?.message)).toEqual([]);
  });
});
