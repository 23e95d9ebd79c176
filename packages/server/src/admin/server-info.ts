import type { ServerContext } from '../context.js';
import { passwordPolicyTypes } from '../credentials/password-policy.js';
import { KEY_PROVIDER_TYPES, TOKEN_SIGNATURE_ALGS } from '../keys/index.js';
import { KEYSTORE_FORMATS } from '../keys/keystore.js';
import { ASYMMETRIC_ASSERTION_ALGS, SECRET_ASSERTION_ALGS } from '../protocol/openid-connect/client-assertion.js';
import { SOCIAL_PROVIDERS } from '../authentication/index.js';
import { IDENTITY_PROVIDER_KINDS } from './identity-providers.js';

/**
 * The parts of Keycloak's ServerInfoRepresentation (`GET /admin/serverinfo`) the admin console reads, describing
 * this server: its built-in theme of each kind and the theme directory's themes, the providers it has (OpenID Connect, Argon2id, RS256), the component
 * types it has none of, the admin-event enums, and the features, with only those it implements enabled (the console
 * hides the pages of a disabled feature). The route itself is in admin/index.ts.
 */

/** Keycloak's feature flags the console asks about; enabled where this server implements the feature. */
const FEATURES: Record<string, boolean> = {
  ACCOUNT_V3: false,
  ADMIN_FINE_GRAINED_AUTHZ: false,
  ADMIN_FINE_GRAINED_AUTHZ_V2: false,
  CLIENT_POLICIES: true,
  KERBEROS: false,
  PARAMETERIZED_SCOPES: false,
  DPOP: false,
  DEVICE_FLOW: true,
  TRANSIENT_USERS: false,
  CLIENT_TYPES: false,
  DECLARATIVE_UI: false,
  ORGANIZATION: true,
  OID4VC_VCI: false,
  QUICK_THEME: false,
  TOKEN_EXCHANGE_STANDARD_V2: true,
  JWT_AUTHORIZATION_GRANT: false,
  PASSKEYS: false,
  CLIENT_AUTH_FEDERATED: false,
  WORKFLOWS: false,
  STEP_UP_AUTHENTICATION_SAML: false,
  SSF: false,
  SCIM_API: false,
  IDENTITY_BROKERING_API_V1: false,
  IDENTITY_BROKERING_API_V2: false,
};

/**
 * Component types the console looks up. The realm's key providers are this server's (keys/providers.ts); of the
 * others it has no provider, so the console offers none to add (components of these types from realm files are
 * kept as data: admin/components.ts).
 */
const COMPONENT_TYPES = [
  'org.keycloak.authentication.ClientAuthenticator',
  'org.keycloak.broker.provider.IdentityProvider',
  'org.keycloak.broker.social.SocialIdentityProvider',
  'org.keycloak.services.clientpolicy.condition.ClientPolicyConditionProvider',
  'org.keycloak.services.clientpolicy.executor.ClientPolicyExecutorProvider',
  'org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy',
  'org.keycloak.services.ui.extend.UiPageProvider',
  'org.keycloak.services.ui.extend.UiTabProvider',
  'org.keycloak.storage.UserStorageProvider',
  'org.keycloak.storage.ldap.mappers.LDAPStorageMapper',
  'org.keycloak.validate.Validator',
];

/** The resource types of admin events (Keycloak's names), for the console's admin-event search. */
const RESOURCE_TYPES = [
  'REALM', 'REALM_ROLE', 'REALM_ROLE_MAPPING', 'REALM_SCOPE_MAPPING', 'AUTH_FLOW', 'AUTH_EXECUTION_FLOW', 'AUTH_EXECUTION', 'AUTHENTICATOR_CONFIG',
  'REQUIRED_ACTION', 'IDENTITY_PROVIDER', 'IDENTITY_PROVIDER_MAPPER', 'PROTOCOL_MAPPER', 'USER', 'USER_LOGIN_FAILURE', 'USER_SESSION',
  'USER_FEDERATION_PROVIDER', 'USER_FEDERATION_MAPPER', 'GROUP', 'GROUP_MEMBERSHIP', 'CLIENT', 'CLIENT_INITIAL_ACCESS_MODEL', 'CLIENT_ROLE',
  'CLIENT_ROLE_MAPPING', 'CLIENT_SCOPE', 'CLIENT_SCOPE_MAPPING', 'CLIENT_SCOPE_CLIENT_MAPPING', 'CLUSTER_NODE', 'COMPONENT',
  'AUTHORIZATION_RESOURCE_SERVER', 'AUTHORIZATION_RESOURCE', 'AUTHORIZATION_SCOPE', 'AUTHORIZATION_POLICY', 'CUSTOM', 'USER_PROFILE',
  'ORGANIZATION', 'ORGANIZATION_MEMBERSHIP',
];

type ProviderInfo = { internal: boolean; providers: Record<string, { order: number; operationalInfo?: Record<string, string> }> };

/** The server's own providers of the SPIs the console asks about (extensions' are added by the route). */
export function builtInProviders(): Record<string, ProviderInfo> {
  const one = (...ids: string[]): ProviderInfo => ({ internal: true, providers: Object.fromEntries(ids.map((id) => [id, { order: 0 }])) });
  return {
    'login-protocol': one('openid-connect'),
    hash: one('argon2'),
    // What the realm and its clients may sign tokens with (the console's algorithm lists), and what client
    // assertions may be signed with (private_key_jwt, client_secret_jwt).
    signature: one(...TOKEN_SIGNATURE_ALGS),
    clientSignature: one(...ASYMMETRIC_ASSERTION_ALGS, ...SECRET_ASSERTION_ALGS),
    // No encryption of ID tokens, userinfo or request objects: the client's Advanced tab offers no algorithm.
    contentencryption: one(),
    cekmanagement: one(),
    'client-registration-policy': one(),
  };
}

/** What the console reads besides systemInfo, memoryInfo and providers. */
export function consoleServerInfo(ctx: ServerContext): Record<string, unknown> {
  return {
    themes: ctx.pages.serverInfoThemes(),
    componentTypes: {
      ...Object.fromEntries(COMPONENT_TYPES.map((type) => [type, []])),
      'org.keycloak.keys.KeyProvider': KEY_PROVIDER_TYPES.map((type) => ({ id: type.id, helpText: type.helpText, properties: type.properties, metadata: {} })),
    },
    enums: { operationType: ['CREATE', 'UPDATE', 'DELETE', 'ACTION'], resourceType: RESOURCE_TYPES, type: ['REALM', 'ORGANIZATION'] },
    profileInfo: { name: 'community', disabledFeatures: Object.keys(FEATURES).filter((name) => !FEATURES[name]), previewFeatures: [], experimentalFeatures: [] },
    features: Object.entries(FEATURES).map(([name, enabled]) => ({ name, label: name, type: 'DEFAULT', enabled, dependencies: [] })),
    cryptoInfo: { cryptoProvider: 'node:crypto', supportedKeystoreTypes: [...KEYSTORE_FORMATS], clientSignatureSymmetricAlgorithms: [...SECRET_ASSERTION_ALGS], clientSignatureAsymmetricAlgorithms: [...ASYMMETRIC_ASSERTION_ALGS] },
    passwordPolicies: passwordPolicyTypes(),
    clientInstallations: {},
    // The console's Identity providers → Add provider cards, grouped by groupName as Keycloak's serverinfo groups
    // them: the kinds this server signs in through.
    identityProviders: IDENTITY_PROVIDER_KINDS,
    // The social kinds this server signs in through (authentication/brokering/social-providers.ts).
    socialProviders: Object.entries(SOCIAL_PROVIDERS).map(([id, provider]) => ({ id, name: provider.name })),
    clientImporters: [],
    // Keycloak's value types of dynamic (parameterized) client scopes: none, dynamic scopes are not supported.
    parameterizedScopeTypes: [],
  };
}
