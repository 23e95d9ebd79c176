/**
 * Keycloak's client registration policies as data (its DefaultClientRegistrationPolicies and the factories' config
 * names): components of `CLIENT_REGISTRATION_POLICY_TYPE` under the realm, sub-type `anonymous` or `authenticated`.
 * They are run by protocol/openid-connect/registration-policies.ts; every realm gets the defaults (new realms at
 * creation, older ones by migration 0028, an imported one when its file names none).
 */

export const CLIENT_REGISTRATION_POLICY_TYPE = 'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy';

export type RegistrationAuth = 'anonymous' | 'authenticated';

/** The policy providers this server runs, by Keycloak's ids. */
export const POLICY = {
  trustedHosts: 'trusted-hosts',
  consentRequired: 'consent-required',
  fullScopeDisabled: 'scope',
  maxClients: 'max-clients',
  protocolMappers: 'allowed-protocol-mappers',
  clientScopes: 'allowed-client-templates',
} as const;

/** The config names of the policies (Keycloak's). */
export const POLICY_CONFIG = {
  trustedHosts: 'trusted-hosts',
  hostMustMatch: 'host-sending-registration-request-must-match',
  clientUrisMustMatch: 'client-uris-must-match',
  maxClients: 'max-clients',
  allowedMapperTypes: 'allowed-protocol-mapper-types',
  allowedClientScopes: 'allowed-client-scopes',
  allowDefaultScopes: 'allow-default-scopes',
} as const;

export const DEFAULT_MAX_CLIENTS = '200';

/** Keycloak's default allowed mapper types (SAML ones included, as its default policy lists them). */
export const DEFAULT_ALLOWED_MAPPER_TYPES = [
  'saml-user-attribute-mapper',
  'oidc-usermodel-attribute-mapper',
  'saml-user-property-mapper',
  'oidc-usermodel-property-mapper',
  'oidc-full-name-mapper',
  'oidc-address-mapper',
  'oidc-sha256-pairwise-sub-mapper',
  'saml-role-list-mapper',
];

export interface DefaultPolicy {
  name: string;
  providerId: string;
  subType: RegistrationAuth;
  config: Record<string, string[]>;
}

/** The policies Keycloak gives a realm, in its order: anonymous ones, then authenticated ones. */
export function defaultRegistrationPolicies(): DefaultPolicy[] {
  const generic = (subType: RegistrationAuth): DefaultPolicy[] => [
    { name: 'Allowed Protocol Mapper Types', providerId: POLICY.protocolMappers, subType, config: { [POLICY_CONFIG.allowedMapperTypes]: [...DEFAULT_ALLOWED_MAPPER_TYPES] } },
    { name: 'Allowed Client Scopes', providerId: POLICY.clientScopes, subType, config: { [POLICY_CONFIG.allowedClientScopes]: [], [POLICY_CONFIG.allowDefaultScopes]: ['true'] } },
  ];
  return [
    {
      name: 'Trusted Hosts',
      providerId: POLICY.trustedHosts,
      subType: 'anonymous',
      config: { [POLICY_CONFIG.trustedHosts]: [], [POLICY_CONFIG.hostMustMatch]: ['true'], [POLICY_CONFIG.clientUrisMustMatch]: ['true'] },
    },
    { name: 'Consent Required', providerId: POLICY.consentRequired, subType: 'anonymous', config: {} },
    { name: 'Full Scope Disabled', providerId: POLICY.fullScopeDisabled, subType: 'anonymous', config: {} },
    { name: 'Max Clients Limit', providerId: POLICY.maxClients, subType: 'anonymous', config: { [POLICY_CONFIG.maxClients]: [DEFAULT_MAX_CLIENTS] } },
    ...generic('anonymous'),
    ...generic('authenticated'),
  ];
}

interface PolicyProperty {
  name: string;
  label: string;
  helpText: string;
  type: 'String' | 'boolean' | 'MultivaluedString' | 'MultivaluedList';
  defaultValue?: string;
  options?: string[];
}

/**
 * What `GET /admin/realms/{r}/client-registration-policy/providers` answers (Keycloak's ComponentTypeRepresentation),
 * so the console's Client registration tab can add and edit these policies. `mapperTypes` are the mapper types the
 * server knows.
 */
export function registrationPolicyProviders(mapperTypes: readonly string[]): { id: string; helpText: string; properties: PolicyProperty[]; metadata: Record<string, never> }[] {
  const p = (id: string, helpText: string, properties: PolicyProperty[] = []) => ({ id, helpText, properties, metadata: {} as Record<string, never> });
  return [
    p(POLICY.clientScopes, 'When present, then newly registered client can only have client scopes mentioned in the configured list', [
      { name: POLICY_CONFIG.allowedClientScopes, label: 'Allowed Client Scopes', helpText: 'Whitelist of the client scopes, which can be used on newly registered client.', type: 'MultivaluedString' },
      { name: POLICY_CONFIG.allowDefaultScopes, label: 'Allow Default Scopes', helpText: "If on, newly registered clients may use the realm's default and optional client scopes.", type: 'boolean', defaultValue: 'true' },
    ]),
    p(POLICY.protocolMappers, 'When present, then newly registered client can only have protocol mappers of the configured types', [
      { name: POLICY_CONFIG.allowedMapperTypes, label: 'Allowed Protocol Mapper Types', helpText: 'Whitelist of the protocol mapper types a registered client may have.', type: 'MultivaluedList', options: [...mapperTypes] },
    ]),
    p(POLICY.consentRequired, 'When present, then newly registered client will always have consentRequired switch enabled'),
    p(POLICY.maxClients, 'When present, then it won\'t be allowed to register new client if count of existing clients in realm is same or bigger than configured limit', [
      { name: POLICY_CONFIG.maxClients, label: 'Max Clients Per Realm', helpText: 'It won\'t be allowed to register a new client if the count of existing clients in the realm is the same or bigger than this limit.', type: 'String', defaultValue: DEFAULT_MAX_CLIENTS },
    ]),
    p(POLICY.fullScopeDisabled, 'When present, then newly registered client won\'t have full scope allowed'),
    p(POLICY.trustedHosts, 'Allows to specify from which hosts is user able to register and which redirect URIs can client use in it\'s configuration', [
      { name: POLICY_CONFIG.trustedHosts, label: 'Trusted Hosts', helpText: 'Addresses (or, for client URIs, host names; `*.domain` for a domain) trusted for client registration.', type: 'MultivaluedString' },
      { name: POLICY_CONFIG.hostMustMatch, label: 'Host Sending Client Registration Request Must Match', helpText: 'If on, a registration request must come from a trusted host.', type: 'boolean', defaultValue: 'true' },
      { name: POLICY_CONFIG.clientUrisMustMatch, label: 'Client URIs Must Match', helpText: "If on, the client's redirect URIs and URLs must be on trusted hosts or domains.", type: 'boolean', defaultValue: 'true' },
    ]),
  ];
}
