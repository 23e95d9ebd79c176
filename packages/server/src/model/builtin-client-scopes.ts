import type { ClientScope, ProtocolMapper } from './types.js';

/**
 * The client scopes Keycloak 26 gives every new realm, with their mappers (names, types and configuration as a
 * Keycloak 26.2 realm export carries them: test/fixtures/keycloak-exports/wirtshaus-demo.json). The default realm's
 * tokens are what these mappers produce. SAML's `role_list` and `saml_organization` are left out: Realmgate speaks
 * OpenID Connect only.
 */
export type BuiltinClientScope = Omit<ClientScope, 'id' | 'realmId' | 'protocolMappers'> & { protocolMappers: Omit<ProtocolMapper, 'id'>[] };

const OIDC = 'openid-connect';

type Targets = { access?: boolean; id?: boolean; userinfo?: boolean; introspection?: boolean };
const ALL: Targets = { access: true, id: true, userinfo: true, introspection: true };

function targets(t: Targets): Record<string, string> {
  const config: Record<string, string> = {};
  if (t.introspection) config['introspection.token.claim'] = 'true';
  if (t.userinfo) config['userinfo.token.claim'] = 'true';
  if (t.id) config['id.token.claim'] = 'true';
  if (t.access) config['access.token.claim'] = 'true';
  return config;
}

const mapper = (name: string, type: string, config: Record<string, string>): Omit<ProtocolMapper, 'id'> => ({ name, protocol: OIDC, protocolMapper: type, config });

/** A user attribute (or, with `property`, a field of the user such as `emailVerified`) as a claim. */
const userAttribute = (name: string, attribute: string, claim: string, jsonType = 'String', property = false) =>
  mapper(name, property ? 'oidc-usermodel-property-mapper' : 'oidc-usermodel-attribute-mapper', {
    ...targets(ALL),
    'user.attribute': attribute,
    'claim.name': claim,
    'jsonType.label': jsonType,
  });

const sessionNote = (name: string, note: string, claim: string, jsonType: string) =>
  mapper(name, 'oidc-usersessionmodel-note-mapper', { 'user.session.note': note, ...targets({ access: true, id: true, introspection: true }), 'claim.name': claim, 'jsonType.label': jsonType });

const scope = (
  name: string,
  description: string,
  attributes: Record<string, string>,
  protocolMappers: Omit<ProtocolMapper, 'id'>[],
): BuiltinClientScope => ({ name, description, protocol: OIDC, attributes, protocolMappers });

const hidden = { 'include.in.token.scope': 'false', 'display.on.consent.screen': 'false' };
const consent = (text: string, inScope = true) => ({
  ...(inScope ? { 'include.in.token.scope': 'true' } : {}),
  'consent.screen.text': `\${${text}}`,
  'display.on.consent.screen': 'true',
});

export const BUILTIN_CLIENT_SCOPES: readonly BuiltinClientScope[] = [
  scope('acr', 'OpenID Connect scope for add acr (authentication context class reference) to the token', hidden, [
    mapper('acr loa level', 'oidc-acr-mapper', targets({ access: true, id: true, introspection: true })),
  ]),
  scope('basic', 'OpenID Connect scope for add all basic claims to the token', hidden, [
    sessionNote('auth_time', 'AUTH_TIME', 'auth_time', 'long'),
    mapper('sub', 'oidc-sub-mapper', targets({ access: true, introspection: true })),
  ]),
  scope('web-origins', 'OpenID Connect scope for add allowed web origins to the access token', { ...hidden, 'consent.screen.text': '' }, [
    mapper('allowed web origins', 'oidc-allowed-origins-mapper', targets({ access: true, introspection: true })),
  ]),
  scope('email', 'OpenID Connect built-in scope: email', consent('emailScopeConsentText'), [
    userAttribute('email', 'email', 'email'),
    userAttribute('email verified', 'emailVerified', 'email_verified', 'boolean', true),
  ]),
  scope('phone', 'OpenID Connect built-in scope: phone', consent('phoneScopeConsentText'), [
    userAttribute('phone number', 'phoneNumber', 'phone_number'),
    userAttribute('phone number verified', 'phoneNumberVerified', 'phone_number_verified', 'boolean'),
  ]),
  scope('address', 'OpenID Connect built-in scope: address', consent('addressScopeConsentText'), [
    mapper('address', 'oidc-address-mapper', {
      ...targets(ALL),
      ...Object.fromEntries(['formatted', 'street', 'locality', 'region', 'postal_code', 'country'].map((part) => [`user.attribute.${part}`, part])),
    }),
  ]),
  scope('microprofile-jwt', 'Microprofile - JWT built-in scope', { 'include.in.token.scope': 'true', 'display.on.consent.screen': 'false' }, [
    userAttribute('upn', 'username', 'upn'),
    mapper('groups', 'oidc-usermodel-realm-role-mapper', { ...targets(ALL), multivalued: 'true', 'claim.name': 'groups', 'jsonType.label': 'String' }),
  ]),
  scope('profile', 'OpenID Connect built-in scope: profile', consent('profileScopeConsentText'), [
    mapper('full name', 'oidc-full-name-mapper', targets(ALL)),
    userAttribute('family name', 'lastName', 'family_name'),
    userAttribute('given name', 'firstName', 'given_name'),
    userAttribute('middle name', 'middleName', 'middle_name'),
    userAttribute('nickname', 'nickname', 'nickname'),
    userAttribute('username', 'username', 'preferred_username'),
    userAttribute('profile', 'profile', 'profile'),
    userAttribute('picture', 'picture', 'picture'),
    userAttribute('website', 'website', 'website'),
    userAttribute('gender', 'gender', 'gender'),
    userAttribute('birthdate', 'birthdate', 'birthdate'),
    userAttribute('zoneinfo', 'zoneinfo', 'zoneinfo'),
    userAttribute('locale', 'locale', 'locale'),
    userAttribute('updated at', 'updatedAt', 'updated_at', 'long'),
  ]),
  scope('offline_access', 'OpenID Connect built-in scope: offline_access', consent('offlineAccessScopeConsentText', false), []),
  scope('roles', 'OpenID Connect scope for add user roles to the access token', { 'include.in.token.scope': 'false', ...consent('rolesScopeConsentText', false) }, [
    mapper('realm roles', 'oidc-usermodel-realm-role-mapper', { ...targets({ access: true, introspection: true }), 'claim.name': 'realm_access.roles', 'jsonType.label': 'String', multivalued: 'true' }),
    mapper('client roles', 'oidc-usermodel-client-role-mapper', { ...targets({ access: true, introspection: true }), 'claim.name': 'resource_access.${client_id}.roles', 'jsonType.label': 'String', multivalued: 'true' }),
    mapper('audience resolve', 'oidc-audience-resolve-mapper', targets({ access: true, introspection: true })),
  ]),
  scope('organization', 'Additional claims about the organization a subject belongs to', consent('organizationScopeConsentText'), [
    mapper('organization', 'oidc-organization-membership-mapper', { ...targets({ access: true, id: true, introspection: true }), 'claim.name': 'organization', 'jsonType.label': 'String', multivalued: 'true' }),
  ]),
  scope('service_account', 'Specific scope for a client enabled for service accounts', hidden, [
    sessionNote('Client ID', 'client_id', 'client_id', 'String'),
    sessionNote('Client Host', 'clientHost', 'clientHost', 'String'),
    sessionNote('Client IP Address', 'clientAddress', 'clientAddress', 'String'),
  ]),
];

/** A new realm's `defaultDefaultClientScopes` and `defaultOptionalClientScopes`: what each new client starts with. */
export const REALM_DEFAULT_CLIENT_SCOPES = ['profile', 'email', 'roles', 'web-origins', 'acr', 'basic'] as const;
export const REALM_OPTIONAL_CLIENT_SCOPES = ['offline_access', 'address', 'phone', 'microprofile-jwt', 'organization'] as const;

/**
 * Not a realm default: Keycloak attaches it as a default scope to a client when its service account is enabled
 * (and takes it away when disabled), so only service-account tokens carry `client_id`, `clientHost`, `clientAddress`.
 */
export const SERVICE_ACCOUNT_SCOPE = 'service_account';
