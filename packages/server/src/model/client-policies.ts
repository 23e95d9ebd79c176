/**
 * Keycloak's client policies as data: a realm's client profiles (named lists of executors, each an executor provider
 * id and its configuration) and client policies (conditions that pick clients and requests, and the profiles whose
 * executors then run). Keycloak's representations: ClientProfilesRepresentation {profiles, globalProfiles} and
 * ClientPoliciesRepresentation {policies, globalPolicies}. Kept per realm among its attributes (storage/realms.ts),
 * so they travel with the cached realm; run by services/client-policies.ts.
 *
 * Every executor named is either run here or refused by name when it is saved (`unsupportedExecutor`): a policy is
 * never stored to be silently ignored. The global profiles are Keycloak 26.7.3's built-in ones (same names,
 * executors and configuration, described in our words); a realm policy may name one only if all of its executors are
 * run here.
 */

export interface ClientPolicyExecutor {
  executor: string;
  configuration: Record<string, unknown>;
}

export interface ClientProfile {
  name: string;
  description?: string;
  executors: ClientPolicyExecutor[];
}

export interface ClientPolicyCondition {
  condition: string;
  configuration: Record<string, unknown>;
}

export const CLIENT_POLICY_MODES = ['DEFAULT', 'STRICT'] as const;
export type ClientPolicyMode = (typeof CLIENT_POLICY_MODES)[number];

export interface ClientPolicy {
  name: string;
  description?: string;
  enabled: boolean;
  /** Keycloak's ClientPolicyMode: DEFAULT (a yes and no no; abstentions ignored) or STRICT (every condition yes). */
  mode?: ClientPolicyMode;
  conditions: ClientPolicyCondition[];
  profiles: string[];
}

/** The executors this server runs, by Keycloak's provider ids. */
export const EXECUTOR = {
  pkce: 'pkce-enforcer',
  clientAuthenticator: 'secure-client-authenticator',
  confidentialClient: 'confidential-client',
  fullScopeDisabled: 'full-scope-disabled',
  consentRequired: 'consent-required',
  rejectImplicit: 'reject-implicit-grant',
  rejectRopc: 'reject-ropc-grant',
  dpopBind: 'dpop-bind-enforcer',
  secureRedirectUris: 'secure-redirect-uris-enforcer',
  holderOfKey: 'holder-of-key-enforcer',
  secureSession: 'secure-session',
  signatureAlgorithm: 'secure-signature-algorithm',
  parContent: 'secure-par-content',
  clientUris: 'secure-client-uris',
  signedJwtAlgorithm: 'secure-signature-algorithm-signed-jwt',
  assertionAudience: 'secure-client-authentication-assertion',
  secureLogout: 'secure-logout',
} as const;

/** The conditions this server evaluates, by Keycloak's provider ids. */
export const CONDITION = {
  anyClient: 'any-client',
  accessType: 'client-access-type',
  protocol: 'client-type',
  roles: 'client-roles',
  scopes: 'client-scopes',
  attributes: 'client-attributes',
  grantType: 'grant-type',
  updaterContext: 'client-updater-context',
  updaterSourceHost: 'client-updater-source-host',
} as const;

export const ENFORCED_EXECUTORS: readonly string[] = Object.values(EXECUTOR);
export const EVALUATED_CONDITIONS: readonly string[] = Object.values(CONDITION);

/**
 * Keycloak's executors and conditions this server does not run, each with the reason given when one is saved.
 * A provider id in neither list is not Keycloak's (or not 26.7.3's) and is refused as unknown.
 */
export const UNSUPPORTED_EXECUTORS: Record<string, string> = {
  'secure-request-object': 'not run here',
  'secure-response-type': 'it asks for response_type=code id_token (or JARM), and Realmgate answers only response_type=code',
  'secure-ciba-req-sig-algorithm': 'Realmgate has no CIBA',
  'secure-ciba-session': 'Realmgate has no CIBA',
  'secure-ciba-signed-authn-req': 'Realmgate has no CIBA',
  'saml-secure-client-uris': 'Realmgate has no SAML',
  'saml-signature-enforcer': 'Realmgate has no SAML',
  'saml-avoid-redirect': 'Realmgate has no SAML',
  'intent-client-bind-checker': 'not run here',
  'client-secret-rotation': 'Realmgate has no secret rotation',
  'reject-request': 'not run here',
  'use-lightweight-access-token': 'not run here',
  'suppress-refresh-token-rotation': 'not run here',
  'downscope-assertion-grant-enforcer': 'not run here',
  'auth-flow-enforcer': 'not run here',
};

export const UNSUPPORTED_CONDITIONS: Record<string, string> = {
  'client-updater-source-groups': 'not evaluated here',
  'client-updater-source-roles': 'not evaluated here',
  'client-ip-address': 'not evaluated here',
  'client-id-uri-scheme': 'not evaluated here',
  'client-ids': 'not evaluated here',
  'acr-condition': 'not evaluated here',
  'identity-provider': 'not evaluated here',
};

/** The signature algorithms FAPI allows (Keycloak's FapiConstant): secure-signature-algorithm and its signed-JWT kin. */
export const FAPI_ALGORITHMS: readonly string[] = ['PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

/**
 * The client attributes naming a signature algorithm that secure-signature-algorithm checks (and fills with its
 * default when absent), as Keycloak's; the access token's only when the client comes through the admin API.
 */
export const SIGNATURE_ALGORITHM_ATTRIBUTES = ['user.info.response.signature.alg', 'request.object.signature.alg', 'id.token.signed.response.alg', 'token.endpoint.auth.signing.alg'] as const;
export const ADMIN_ONLY_SIGNATURE_ALGORITHM_ATTRIBUTE = 'access.token.signed.response.alg';

/** Keycloak's client-updater-context sources: who registers or updates a client. */
export const UPDATER_SOURCES = ['ByAuthenticatedUser', 'ByInitialAccessToken', 'ByRegistrationAccessToken', 'ByAnonymous'] as const;
export type UpdaterSource = (typeof UPDATER_SOURCES)[number];

/** Keycloak's `true`/`"true"` configuration flags (its JSON mapper takes either). */
export const configFlag = (value: unknown): boolean => value === true || value === 'true';

/** A configuration value of a list (Keycloak's List<String>): an array of strings, or one string. */
export const configList = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? [value] : []);

/** A permitted-domain pattern of `secure-redirect-uris-enforcer` (Java's String.matches: the whole host) as a whole-string JavaScript expression, or null when it does not compile. */
export function domainPattern(pattern: string): RegExp | null {
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch {
    return null;
  }
}

const auto = { 'auto-configure': true };
const autoText = { 'auto-configure': 'true' };
const fapiAuthenticators = { 'allowed-client-authenticators': ['client-jwt', 'client-x509'], 'default-client-authenticator': 'client-jwt' };
const loopbackRedirects = { 'allow-ipv4-loopback-address': 'true', 'allow-ipv6-loopback-address': 'true', 'allow-private-use-uri-scheme': 'true', 'oauth-2-1-compliant': 'true' };
const dpop = { 'auto-configure': 'true', 'enforce-authorization-code-binding-to-dpop': 'false', 'allow-only-refresh-token-binding': 'false' };
const e = (executor: string, configuration: Record<string, unknown> = {}): ClientPolicyExecutor => ({ executor, configuration });

/** The FAPI 2 executors every FAPI 2 profile starts with (Keycloak's order). */
const fapi2Start = (): ClientPolicyExecutor[] => [
  e('confidential-client'),
  e('secure-client-authenticator', fapiAuthenticators),
  e('secure-client-uris'),
  e('secure-signature-algorithm', { 'default-algorithm': 'PS256' }),
  e('secure-signature-algorithm-signed-jwt', { 'require-client-assertion': false }),
  e('consent-required', auto),
  e('full-scope-disabled', auto),
  e('reject-implicit-grant', autoText),
];
const signedRequestObject = { 'verify-nbf': true, 'available-period': '3600', 'encryption-required': false };

/** Keycloak 26.7.3's global (built-in) client profiles: names, executors and configuration as it lists them. */
export function globalClientProfiles(): ClientProfile[] {
  return [
    {
      name: 'fapi-1-baseline',
      description: 'Executors for the FAPI 1.0 Baseline security profile.',
      executors: [
        e('secure-session'),
        e('pkce-enforcer', auto),
        e('secure-client-authenticator', { 'allowed-client-authenticators': ['client-jwt', 'client-secret-jwt', 'client-x509'], 'default-client-authenticator': 'client-jwt' }),
        e('secure-client-uris'),
        e('consent-required', auto),
        e('full-scope-disabled', auto),
      ],
    },
    {
      name: 'fapi-1-advanced',
      description: 'Executors for the FAPI 1.0 Advanced security profile.',
      executors: [
        e('secure-session'),
        e('confidential-client'),
        e('secure-client-authenticator', fapiAuthenticators),
        e('secure-client-uris'),
        e('secure-request-object', { 'available-period': '3600', 'verify-nbf': true }),
        e('secure-response-type', { 'auto-configure': true, 'allow-token-response-type': false }),
        e('secure-signature-algorithm', { 'default-algorithm': 'PS256' }),
        e('secure-signature-algorithm-signed-jwt', { 'require-client-assertion': false }),
        e('consent-required', auto),
        e('full-scope-disabled', auto),
        e('holder-of-key-enforcer', auto),
      ],
    },
    {
      name: 'fapi-ciba',
      description: 'Executors for the FAPI CIBA security profile.',
      executors: [e('secure-ciba-req-sig-algorithm', { 'default-algorithm': 'PS256' }), e('secure-ciba-session'), e('secure-ciba-signed-authn-req', { 'available-period': '3600' })],
    },
    {
      name: 'fapi-2-security-profile',
      description: 'Executors for the FAPI 2.0 Security Profile.',
      executors: [...fapi2Start(), e('holder-of-key-enforcer', autoText), e('pkce-enforcer', autoText), e('secure-client-authentication-assertion'), e('secure-par-content')],
    },
    {
      name: 'fapi-2-message-signing',
      description: 'Executors for FAPI 2.0 Message Signing.',
      executors: [
        ...fapi2Start(),
        e('holder-of-key-enforcer', autoText),
        e('pkce-enforcer', autoText),
        e('secure-par-content'),
        e('secure-request-object', signedRequestObject),
        e('secure-client-authentication-assertion'),
      ],
    },
    {
      name: 'oauth-2-1-for-confidential-client',
      description: 'Executors for OAuth 2.1 with a confidential client.',
      executors: [
        e('confidential-client'),
        e('secure-client-authenticator', fapiAuthenticators),
        e('secure-redirect-uris-enforcer', loopbackRedirects),
        e('pkce-enforcer', autoText),
        e('holder-of-key-enforcer', autoText),
        e('reject-implicit-grant', autoText),
        e('reject-ropc-grant', autoText),
      ],
    },
    {
      name: 'oauth-2-1-for-public-client',
      description: 'Executors for OAuth 2.1 with a public client.',
      executors: [e('secure-redirect-uris-enforcer', loopbackRedirects), e('pkce-enforcer', autoText), e('dpop-bind-enforcer', dpop), e('reject-implicit-grant', autoText), e('reject-ropc-grant', autoText)],
    },
    {
      name: 'fapi-2-dpop-security-profile',
      description: 'Executors for the FAPI 2.0 Security Profile with DPoP.',
      executors: [...fapi2Start(), e('pkce-enforcer', autoText), e('secure-client-authentication-assertion'), e('secure-par-content'), e('dpop-bind-enforcer', dpop)],
    },
    {
      name: 'fapi-2-dpop-message-signing',
      description: 'Executors for FAPI 2.0 Message Signing with DPoP.',
      executors: [
        ...fapi2Start(),
        e('pkce-enforcer', autoText),
        e('secure-par-content'),
        e('secure-request-object', signedRequestObject),
        e('dpop-bind-enforcer', dpop),
        e('secure-client-authentication-assertion'),
      ],
    },
    {
      name: 'saml-security-profile',
      description: 'Executors for SAML clients: signatures, POST binding and https URLs.',
      executors: [e('saml-secure-client-uris'), e('saml-signature-enforcer'), e('saml-avoid-redirect')],
    },
  ];
}

/** Keycloak 26.7.3 has no global policies unless a security profile is chosen at start-up; none here. */
export const globalClientPolicies = (): ClientPolicy[] => [];
