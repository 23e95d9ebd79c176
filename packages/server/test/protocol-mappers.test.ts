import { describe, expect, it } from 'vitest';
import { AppError } from '../src/model/errors.js';
import { BUILTIN_CLIENT_SCOPES } from '../src/model/builtin-client-scopes.js';
import { mapperServerInfo, PROTOCOL_MAPPER_TYPE_IDS, PROTOCOL_MAPPER_TYPES, validateProtocolMapper } from '../src/model/protocol-mapper-types.js';
import type { Client, ClientScope, ClientScopeSet, Organization, ProtocolMapper, Realm, User } from '../src/model/types.js';
import { MAPPER_IMPLEMENTATIONS, normalizeScope, runMappers, scopePlan, unknownScopes, type MapperData, type TokenKind } from '../src/protocol/openid-connect/mappers/index.js';

/**
 * The mapper types as pure functions: a ClientScopeSet built here, the plan the scope parameter makes of it, and
 * what each document's mappers write. The end-to-end side (tokens through the token endpoint) is in
 * client-scope-tokens.test.ts.
 */

const realm = { id: 'r1', name: 'demo', organizationsEnabled: true } as Realm;
const client = { id: 'c1', realmId: 'r1', clientId: 'app', webOrigins: ['https://app.example', '+'], redirectUris: ['https://cb.example/x/*', '/relative'], rootUrl: null } as unknown as Client;
const user: User = {
  id: 'u1',
  realmId: 'r1',
  username: 'alice',
  email: 'alice@example.com',
  emailVerified: true,
  firstName: 'Alice',
  lastName: null,
  enabled: true,
  createdTimestamp: 1700000000000,
  attributes: { phoneNumber: ['+49 1'], shoe: ['42', '43'], flags: ['true'], street: ['Main St 1'], country: ['DE'], blob: ['{"a":1}'] },
  serviceAccountClientId: null,
  passwordHash: null,
  passwordCreated: null,
};
const org = (alias: string): Organization => ({ id: `id-${alias}`, realmId: 'r1', name: alias, alias, description: null, enabled: true, redirectUrl: null, attributes: { tier: ['gold'] }, domains: [] });

function data(over: Partial<MapperData> = {}): MapperData {
  return {
    realm,
    client,
    user,
    roles: { realmRoles: ['admin', 'user'], clientRoles: { app: ['own'], 'orders-api': ['reader', 'writer'], 'my.dotted': ['x'] } },
    groups: [['staff'], ['staff', 'kitchen']],
    organizations: [org('acme'), org('globex')],
    notes: { AUTH_TIME: '1700000000' },
    base: 'http://localhost:8080',
    ...over,
  };
}

let seq = 0;
const ALL = { 'access.token.claim': 'true', 'id.token.claim': 'true', 'userinfo.token.claim': 'true', 'introspection.token.claim': 'true' };
const m = (type: string, config: Record<string, string>, targets: Record<string, string> = ALL): ProtocolMapper => ({ id: `m${++seq}`, name: `m${seq}`, protocol: 'openid-connect', protocolMapper: type, config: { ...targets, ...config } });
const scope = (name: string, mappers: ProtocolMapper[], attributes: Record<string, string> = {}): ClientScope => ({ id: `s-${name}`, realmId: 'r1', name, description: null, protocol: 'openid-connect', attributes, protocolMappers: mappers });

/** The claims one document gets from mappers attached to the client itself. */
function run(mappers: ProtocolMapper[], kind: TokenKind = 'access', d: MapperData = data()) {
  const plan = scopePlan({ defaultScopes: [], optionalScopes: [], clientMappers: mappers }, '');
  return runMappers(plan.mappers[kind], d, kind);
}

describe('mapper types, one by one', () => {
  it('every catalogued type has an implementation, and the other way round', () => {
    expect([...MAPPER_IMPLEMENTATIONS.keys()].sort()).toEqual([...PROTOCOL_MAPPER_TYPE_IDS].sort());
  });

  it('oidc-audience-mapper: a client or a custom audience, once each', () => {
    const claims = run([
      m('oidc-audience-mapper', { 'included.client.audience': 'orders-api' }),
      m('oidc-audience-mapper', { 'included.custom.audience': 'https://api.example' }),
      m('oidc-audience-mapper', { 'included.client.audience': 'orders-api' }),
    ]);
    expect(claims.aud).toEqual(['orders-api', 'https://api.example']);
  });

  it('oidc-hardcoded-claim-mapper: the value converted by jsonType.label, dotted names nest, \\. escapes', () => {
    expect(
      run([
        m('oidc-hardcoded-claim-mapper', { 'claim.name': 'tenant.id', 'claim.value': '42', 'jsonType.label': 'long' }),
        m('oidc-hardcoded-claim-mapper', { 'claim.name': 'tenant.name', 'claim.value': 'acme' }),
        m('oidc-hardcoded-claim-mapper', { 'claim.name': 'a\\.b', 'claim.value': 'true', 'jsonType.label': 'boolean' }),
        m('oidc-hardcoded-claim-mapper', { 'claim.name': 'cfg', 'claim.value': '{"x":[1,2]}', 'jsonType.label': 'JSON' }),
        m('oidc-hardcoded-claim-mapper', { 'claim.name': 'broken', 'claim.value': 'abc', 'jsonType.label': 'int' }),
      ]),
    ).toEqual({ tenant: { id: 42, name: 'acme' }, 'a.b': true, cfg: { x: [1, 2] } });
  });

  it('oidc-usermodel-attribute-mapper: first value, or all with multivalued; built-in fields count as attributes; absent, no claim', () => {
    expect(
      run([
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'shoe', 'claim.name': 'shoe', 'jsonType.label': 'int' }),
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'shoe', 'claim.name': 'shoes', multivalued: 'true', 'jsonType.label': 'String' }),
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'email', 'claim.name': 'mail' }),
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'lastName', 'claim.name': 'family_name' }),
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'missing', 'claim.name': 'missing' }),
        m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'flags', 'claim.name': 'flag', 'jsonType.label': 'boolean' }),
      ]),
    ).toEqual({ shoe: 42, shoes: ['42', '43'], mail: 'alice@example.com', flag: true });
  });

  it('oidc-usermodel-property-mapper: emailVerified as a boolean, createdTimestamp as a number', () => {
    expect(
      run([
        m('oidc-usermodel-property-mapper', { 'user.attribute': 'emailVerified', 'claim.name': 'email_verified', 'jsonType.label': 'boolean' }),
        m('oidc-usermodel-property-mapper', { 'user.attribute': 'createdTimestamp', 'claim.name': 'created', 'jsonType.label': 'long' }),
        m('oidc-usermodel-property-mapper', { 'user.attribute': 'username', 'claim.name': 'login' }),
      ]),
    ).toEqual({ email_verified: true, created: 1700000000000, login: 'alice' });
  });

  it('oidc-usermodel-realm-role-mapper: prefix, multivalued list, or one string; two mappers on one claim merge', () => {
    expect(run([m('oidc-usermodel-realm-role-mapper', { 'claim.name': 'realm_access.roles', multivalued: 'true', 'usermodel.realmRoleMapping.rolePrefix': 'r:' })])).toEqual({
      realm_access: { roles: ['r:admin', 'r:user'] },
    });
    expect(run([m('oidc-usermodel-realm-role-mapper', { 'claim.name': 'roles' })])).toEqual({ roles: '[admin, user]' });
    expect(
      run([
        m('oidc-usermodel-realm-role-mapper', { 'claim.name': 'groups', multivalued: 'true' }),
        m('oidc-usermodel-client-role-mapper', { 'claim.name': 'groups', multivalued: 'true', 'usermodel.clientRoleMapping.clientId': 'orders-api' }),
      ]),
    ).toEqual({ groups: ['admin', 'user', 'reader', 'writer'] });
    expect(run([m('oidc-usermodel-realm-role-mapper', { 'claim.name': 'roles', multivalued: 'true' })], 'access', data({ roles: { realmRoles: [], clientRoles: {} } }))).toEqual({});
  });

  it('oidc-usermodel-client-role-mapper: ${client_id} per client (its dots kept), one client, prefix', () => {
    expect(run([m('oidc-usermodel-client-role-mapper', { 'claim.name': 'resource_access.${client_id}.roles', multivalued: 'true' })])).toEqual({
      resource_access: { app: { roles: ['own'] }, 'orders-api': { roles: ['reader', 'writer'] }, 'my.dotted': { roles: ['x'] } },
    });
    expect(
      run([m('oidc-usermodel-client-role-mapper', { 'claim.name': 'api_roles', multivalued: 'true', 'usermodel.clientRoleMapping.clientId': 'orders-api', 'usermodel.clientRoleMapping.rolePrefix': 'orders:' })]),
    ).toEqual({ api_roles: ['orders:reader', 'orders:writer'] });
  });

  it('oidc-group-membership-mapper: full paths by default, names with full.path false; no groups, no claim', () => {
    expect(run([m('oidc-group-membership-mapper', { 'claim.name': 'groups' })])).toEqual({ groups: ['/staff', '/staff/kitchen'] });
    expect(run([m('oidc-group-membership-mapper', { 'claim.name': 'groups', 'full.path': 'false' })])).toEqual({ groups: ['staff', 'kitchen'] });
    expect(run([m('oidc-group-membership-mapper', { 'claim.name': 'groups' })], 'access', data({ groups: [] }))).toEqual({});
  });

  it('oidc-full-name-mapper: the names there are, joined', () => {
    expect(run([m('oidc-full-name-mapper', {})])).toEqual({ name: 'Alice' });
    expect(run([m('oidc-full-name-mapper', {})], 'access', data({ user: { ...user, firstName: null } }))).toEqual({});
  });

  it('oidc-audience-resolve-mapper: clients the user holds roles of, not the asking client, sorted', () => {
    expect(run([m('oidc-audience-resolve-mapper', {})]).aud).toEqual(['my.dotted', 'orders-api']);
  });

  it('oidc-allowed-origins-mapper: web origins with + resolved to the redirect URIs\' origins', () => {
    expect(run([m('oidc-allowed-origins-mapper', {})])).toEqual({ 'allowed-origins': ['https://app.example', 'https://cb.example', 'http://localhost:8080'] });
    expect(run([m('oidc-allowed-origins-mapper', {})], 'access', data({ client: { ...client, webOrigins: [] } }))).toEqual({});
  });

  it('oidc-sub-mapper, oidc-acr-mapper', () => {
    expect(run([m('oidc-sub-mapper', {}), m('oidc-acr-mapper', {})])).toEqual({ sub: 'u1', acr: '1' });
  });

  it('oidc-usersessionmodel-note-mapper: a note as a typed claim; no note, no claim', () => {
    expect(
      run([
        m('oidc-usersessionmodel-note-mapper', { 'user.session.note': 'AUTH_TIME', 'claim.name': 'auth_time', 'jsonType.label': 'long' }),
        m('oidc-usersessionmodel-note-mapper', { 'user.session.note': 'clientHost', 'claim.name': 'clientHost' }),
      ]),
    ).toEqual({ auth_time: 1700000000 });
  });

  it('oidc-address-mapper: the parts there are, street from "street", attribute names configurable', () => {
    expect(run([m('oidc-address-mapper', {})])).toEqual({ address: { street_address: 'Main St 1', country: 'DE' } });
    expect(run([m('oidc-address-mapper', { 'user.attribute.country': 'shoe' })])).toEqual({ address: { street_address: 'Main St 1', country: '42' } });
  });

  it('oidc-organization-membership-mapper: aliases, or objects with id and attributes; nothing when organizations are off', () => {
    expect(run([m('oidc-organization-membership-mapper', { 'claim.name': 'organization', multivalued: 'true' })])).toEqual({ organization: ['acme', 'globex'] });
    expect(run([m('oidc-organization-membership-mapper', { 'claim.name': 'organization', addOrganizationId: 'true', addOrganizationAttributes: 'true' })])).toEqual({
      organization: { acme: { id: 'id-acme', tier: ['gold'] }, globex: { id: 'id-globex', tier: ['gold'] } },
    });
    expect(run([m('oidc-organization-membership-mapper', { 'claim.name': 'organization' })], 'access', data({ realm: { ...realm, organizationsEnabled: false } }))).toEqual({});
  });

  it('oidc-organization-group-membership-mapper: under the membership mapper\'s claim (listed before or after it), aliases become objects; nothing without that mapper', () => {
    const groups = { 'id-acme': { paths: ['/eng'], realmRoles: ['r'], clientRoles: { api: ['x'] } }, 'id-globex': { paths: [], realmRoles: [], clientRoles: {} } };
    const d = data({ organizationGroups: groups });
    const groupMapper = (config: Record<string, string> = {}) => m('oidc-organization-group-membership-mapper', config);
    expect(run([groupMapper()], 'access', d)).toEqual({});
    expect(run([groupMapper(), m('oidc-organization-membership-mapper', { 'claim.name': 'orgs.mine' })], 'access', d)).toEqual({ orgs: { mine: { acme: { groups: ['/eng'] }, globex: { groups: [] } } } });
    expect(run([m('oidc-organization-membership-mapper', { 'claim.name': 'organization', addOrganizationId: 'true' }), groupMapper({ addGroupRoleMappings: 'true' })], 'access', d)).toEqual({
      organization: { acme: { id: 'id-acme', groups: ['/eng'], realm_access: { roles: ['r'] }, resource_access: { api: { roles: ['x'] } } }, globex: { id: 'id-globex', groups: [] } },
    });
    // Its own `claim.name` (not one of Keycloak's options) does not move it.
    expect(Object.keys(run([groupMapper({ 'claim.name': 'elsewhere' }), m('oidc-organization-membership-mapper', { 'claim.name': 'organization' })], 'access', d))).toEqual(['organization']);
  });
});

describe('which documents a mapper writes to', () => {
  const mapper = m('oidc-hardcoded-claim-mapper', { 'claim.name': 'x', 'claim.value': 'v' }, { 'access.token.claim': 'true', 'id.token.claim': 'false', 'userinfo.token.claim': 'true' });
  it('access, ID, userinfo, introspection flags; introspection absent follows the access token', () => {
    expect(run([mapper], 'access')).toEqual({ x: 'v' });
    expect(run([mapper], 'id')).toEqual({});
    expect(run([mapper], 'userinfo')).toEqual({ x: 'v' });
    expect(run([mapper], 'introspection')).toEqual({ x: 'v' });
    const off = m('oidc-hardcoded-claim-mapper', { 'claim.name': 'x', 'claim.value': 'v' }, { 'access.token.claim': 'true', 'introspection.token.claim': 'false' });
    expect(run([off], 'introspection')).toEqual({});
  });
});

describe('the scope parameter and the scope set', () => {
  const set: ClientScopeSet = {
    defaultScopes: [scope('profile', [m('oidc-full-name-mapper', {})], { 'include.in.token.scope': 'true' }), scope('roles', [m('oidc-usermodel-realm-role-mapper', { 'claim.name': 'r', multivalued: 'true' })], { 'include.in.token.scope': 'false' })],
    optionalScopes: [
      scope('phone', [m('oidc-usermodel-attribute-mapper', { 'user.attribute': 'phoneNumber', 'claim.name': 'phone_number' })], { 'include.in.token.scope': 'true' }),
      scope('offline_access', []),
      scope('groups', [m('oidc-group-membership-mapper', { 'claim.name': 'groups' })], { 'include.in.token.scope': 'false' }),
    ],
    clientMappers: [m('oidc-hardcoded-claim-mapper', { 'claim.name': 'tenant', 'claim.value': 'acme' })],
  };

  it('default scopes always, optional ones when named; scope: openid first, then names in token scope, sorted', () => {
    const plain = scopePlan(set, '');
    expect(plain.scope).toBe('profile');
    expect(plain.openid).toBe(false);
    expect(plain.scopeIds).toEqual(['s-profile', 's-roles']);
    expect(runMappers(plain.mappers.access, data(), 'access')).toEqual({ tenant: 'acme', name: 'Alice', r: ['admin', 'user'] });
    expect(plain.needs.access).toEqual({ roles: true });

    const asked = scopePlan(set, 'openid phone offline_access groups');
    expect(asked.scope).toBe('openid offline_access phone profile');
    expect(asked.scopeIds).toEqual(['s-profile', 's-roles', 's-phone', 's-offline_access', 's-groups']);
    expect(runMappers(asked.mappers.id, data(), 'id')).toMatchObject({ phone_number: '+49 1', groups: ['/staff', '/staff/kitchen'] });
    // The phone scope's attribute mapper reads phoneNumber through the user's groups when the user lacks it (Keycloak's resolveAttribute).
    expect(asked.needs.id).toEqual({ roles: true, groups: true, groupAttributes: [{ name: 'phoneNumber', aggregate: false }] });
  });

  it('a plan is made once per scope set and request', () => {
    expect(scopePlan(set, 'openid phone')).toBe(scopePlan(set, 'openid phone'));
  });

  it('unknown names are found (Keycloak: invalid_scope); openid and default scope names are not unknown', () => {
    expect(unknownScopes(set, 'openid profile phone')).toEqual([]);
    expect(unknownScopes(set, 'openid email nonsense')).toEqual(['email', 'nonsense']);
    expect(unknownScopes(set, undefined)).toEqual([]);
  });

  it('normalizeScope: each name once, offline_access only where allowed', () => {
    expect(normalizeScope('openid  phone openid offline_access', true)).toBe('openid phone offline_access');
    expect(normalizeScope('openid offline_access', false)).toBe('openid');
  });

  it('the built-in scopes applied as a default realm\'s client applies them give the claims tokens carried before mappers', () => {
    const builtin = (name: string): ClientScope => {
      const b = BUILTIN_CLIENT_SCOPES.find((s) => s.name === name)!;
      return { ...b, id: name, realmId: 'r1', protocolMappers: b.protocolMappers.map((p, i) => ({ ...p, id: `${name}${i}` })) };
    };
    const defaults: ClientScopeSet = { defaultScopes: ['profile', 'email', 'roles', 'web-origins', 'acr', 'basic'].map(builtin), optionalScopes: [], clientMappers: [] };
    const plan = scopePlan(defaults, 'openid');
    expect(plan.scope).toBe('openid email profile');
    const d = data({ client: { ...client, webOrigins: [] }, roles: { realmRoles: ['default-roles-demo'], clientRoles: { app: ['own'], api: ['r'] } } });
    expect(runMappers(plan.mappers.access, d, 'access')).toEqual({
      auth_time: 1700000000,
      sub: 'u1',
      acr: '1',
      name: 'Alice',
      given_name: 'Alice',
      preferred_username: 'alice',
      email: 'alice@example.com',
      email_verified: true,
      realm_access: { roles: ['default-roles-demo'] },
      resource_access: { app: { roles: ['own'] }, api: { roles: ['r'] } },
      aud: ['api'],
    });
    expect(Object.keys(runMappers(plan.mappers.userinfo, d, 'userinfo')).sort()).toEqual(['email', 'email_verified', 'given_name', 'name', 'preferred_username']);
  });
});

describe('mapper validation (400 naming the problem)', () => {
  const valid = { name: 'x', protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': 'tenant', 'claim.value': '1', 'jsonType.label': 'long', 'access.token.claim': 'true' } };
  const refused = (mapper: unknown) => {
    try {
      validateProtocolMapper(mapper as Omit<ProtocolMapper, 'id'>, 'mapper');
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(400);
      return (error as AppError).message;
    }
    throw new Error('accepted');
  };

  it('accepts a valid mapper, unknown config keys, and every built-in mapper', () => {
    expect(() => validateProtocolMapper({ ...valid, config: { ...valid.config, 'some.extension.key': 'anything' } })).not.toThrow();
    for (const s of BUILTIN_CLIENT_SCOPES) for (const mapper of s.protocolMappers) expect(() => validateProtocolMapper(mapper)).not.toThrow();
    expect(() => validateProtocolMapper({ name: 'saml one', protocol: 'saml', protocolMapper: 'saml-role-list-mapper', config: {} })).not.toThrow();
  });

  it('refuses an unknown type, wrong config types, reserved claim names', () => {
    expect(refused({ ...valid, protocolMapper: 'oidc-script-mapper' })).toBe('mapper.protocolMapper: unknown mapper type "oidc-script-mapper"');
    expect(refused({ ...valid, config: { ...valid.config, 'access.token.claim': 'yes' } })).toBe('mapper.config.access.token.claim: must be "true" or "false", not "yes"');
    expect(refused({ ...valid, config: { ...valid.config, 'jsonType.label': 'float' } })).toBe('mapper.config.jsonType.label: must be one of String, long, int, boolean, JSON, not "float"');
    expect(refused({ ...valid, config: { ...valid.config, 'claim.value': 'abc' } })).toBe('mapper.config.claim.value: "abc" is not a valid long (jsonType.label)');
    expect(refused({ ...valid, config: { ...valid.config, 'claim.value': '{', 'jsonType.label': 'JSON' } })).toMatch(/not a valid JSON/);
    expect(refused({ ...valid, config: { ...valid.config, multivalued: 1 } })).toBe('mapper.config.multivalued: must be a string');
    for (const reserved of ['sub', 'iss', 'aud', 'exp', 'iat', 'typ', 'azp', 'sid', 'nonce', 'scope', 'iss.nested']) {
      expect(refused({ ...valid, config: { ...valid.config, 'claim.name': reserved } })).toMatch(/would write the reserved claim/);
    }
    expect(refused({ ...valid, config: { ...valid.config, 'claim.name': 'aud' } })).toMatch(/use an audience mapper/);
    expect(() => validateProtocolMapper({ ...valid, config: { ...valid.config, 'claim.name': 'auth_time' } })).not.toThrow();
    expect(refused({ ...valid, config: { ...valid.config, 'claim.name': 'a..b' } })).toMatch(/empty part/);
    expect(refused({ ...valid, name: '' })).toBe('mapper.name: a protocol mapper needs a name');
    expect(refused({ ...valid, protocol: 'cas' })).toBe('mapper.protocol: unknown protocol "cas"');
    expect(refused({ ...valid, protocolMapper: 'oidc-group-membership-mapper', config: { 'full.path': 'TRUE' } })).toMatch(/full\.path: must be "true" or "false"/);
  });
});

describe('the catalogue as serverinfo lists it', () => {
  it('Keycloak\'s ProtocolMapperTypeRepresentation shape, every property typed', () => {
    const info = mapperServerInfo();
    expect(info.protocolMapperTypes['openid-connect']).toBe(PROTOCOL_MAPPER_TYPES);
    for (const type of PROTOCOL_MAPPER_TYPES) {
      // Keycloak's priorities: 0, but the organization group mapper's 10 (it runs after the membership mapper).
      expect(type).toMatchObject({ id: expect.any(String), name: expect.any(String), category: 'Token mapper', helpText: expect.any(String), priority: type.id === 'oidc-organization-group-membership-mapper' ? 10 : 0 });
      for (const p of type.properties) expect(p).toMatchObject({ name: expect.any(String), label: expect.any(String), type: expect.stringMatching(/^(String|boolean|List|ClientList|Role|UserProfileAttributeList|Text)$/) });
    }
    expect(PROTOCOL_MAPPER_TYPES.find((t) => t.id === 'oidc-usermodel-attribute-mapper')!.properties.find((p) => p.name === 'jsonType.label')).toMatchObject({ type: 'List', options: ['String', 'long', 'int', 'boolean', 'JSON'] });
    expect(info.builtinProtocolMappers['openid-connect'].map((b) => b.name)).toEqual(expect.arrayContaining(['email', 'full name', 'realm roles', 'audience resolve']));
  });
});
