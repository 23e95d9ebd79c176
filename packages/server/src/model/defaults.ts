import { defaultBruteForce } from './brute-force.js';
import { defaultBrowserSecurityHeaders } from './browser-security-headers.js';
import { defaultLifespans } from './lifespans.js';
import { defaultOtpPolicy } from './otp-policy.js';
import { defaultWebAuthnPolicies } from './webauthn-policy.js';
import type { Client, Realm } from './types.js';

/** Keycloak's built-in clients of every realm. */
export const REALM_MANAGEMENT = 'realm-management';
export const ADMIN_CLI = 'admin-cli';
export const ACCOUNT = 'account';
/** The public client Keycloak's admin console signs in with, in every realm. */
export const SECURITY_ADMIN_CONSOLE = 'security-admin-console';
/** The account console's client (Keycloak's Constants.ACCOUNT_CONSOLE_CLIENT_ID): public, PKCE S256, every realm has it. */
export const ACCOUNT_CONSOLE = 'account-console';

/**
 * Keycloak's rootUrl of the built-in clients a realm is made with (account and account-console `${authBaseUrl}`,
 * security-admin-console `${authAdminUrl}`), answered for one that has none: this server stores none, and an empty
 * rootUrl means this server's base just as those do (model/redirect-uri.ts), so realms made before need no migration.
 */
export const BUILTIN_ROOT_URLS: Readonly<Record<string, string>> = { [ACCOUNT]: '${authBaseUrl}', [ACCOUNT_CONSOLE]: '${authBaseUrl}', [SECURITY_ADMIN_CONSOLE]: '${authAdminUrl}' };


/** The master realm's roles that act on every realm: `admin` (all of them) and `create-realm`. */
export const MASTER_ADMIN_ROLES = ['admin', 'create-realm'] as const;
export const isMasterAdminRole = (name: string): boolean => (MASTER_ADMIN_ROLES as readonly string[]).includes(name);

/**
 * The master realm's client that administers realm `name` (Keycloak's `{realm}-realm`): its roles, held by a
 * master user, act on that realm alone. Master itself is administered through `master-realm`.
 */
export const adminClientId = (realmName: string): string => `${realmName}-realm`;
/** The realm a master client administers by its name, or null for a client id of another shape. */
export const adminClientRealmName = (clientId: string): string | null => (clientId.endsWith('-realm') && clientId.length > 6 ? clientId.slice(0, -6) : null);

/** Client roles of realm-management, with realm-admin the composite of all of them, as Keycloak's. */
export const realmManagementRoles = [
  'create-client',
  'impersonation',
  'manage-authorization',
  'manage-clients',
  'manage-events',
  'manage-identity-providers',
  'manage-realm',
  'manage-users',
  'query-clients',
  'query-groups',
  'query-realms',
  'query-users',
  'view-authorization',
  'view-clients',
  'view-events',
  'view-identity-providers',
  'view-realm',
  'view-users',
] as const;

/** Keycloak's implied roles: holding the key grants the listed ones. */
export const impliedManagementRoles: Record<string, string[]> = {
  'view-clients': ['query-clients'],
  'view-users': ['query-users', 'query-groups'],
};

/** The `account` client's roles, as Keycloak 26 creates them; the account REST API checks them. */
export const accountRoles = ['manage-account', 'manage-account-links', 'view-profile', 'view-applications', 'view-consent', 'manage-consent', 'view-groups', 'delete-account'] as const;

/** Keycloak's composites among the account roles: holding the key grants the listed ones. */
export const impliedAccountRoles: Record<string, string[]> = {
  'manage-account': ['manage-account-links'],
  'manage-consent': ['view-consent'],
};

/** The account roles the `account-console` client's scope holds (its full scope is off), as Keycloak's. */
export const accountConsoleScope = ['manage-account', 'view-groups'] as const;

/** The account roles every user gets through the realm's default roles. */
export const defaultAccountRoles = ['view-profile', 'manage-account'] as const;

export function defaultRealm(id: string, name: string, now: number): Realm {
  return {
    id,
    name,
    displayName: null,
    enabled: true,
    registrationAllowed: false,
    resetPasswordAllowed: false,
    verifyEmail: false,
    loginWithEmailAllowed: true,
    duplicateEmailsAllowed: false,
    deleteAccountAllowed: false,
    organizationsEnabled: false,
    eventsEnabled: false,
    eventsExpiration: null,
    adminEventsEnabled: false,
    adminEventsDetailsEnabled: false,
    eventsListeners: ['jboss-logging'],
    enabledEventTypes: [],
    smtpServer: {},
    browserFlow: 'browser',
    registrationFlow: 'registration',
    resetCredentialsFlow: 'reset credentials',
    accessTokenLifespan: 300,
    ssoSessionIdleTimeout: 1800,
    ssoSessionMaxLifespan: 36000,
    revokeRefreshToken: false,
    refreshTokenMaxReuse: 0,
    actionTokenGeneratedByUserLifespan: 300,
    accessCodeLifespan: 60,
    actionTokenGeneratedByAdminLifespan: 43200,
    offlineSessionIdleTimeout: 2592000,
    offlineSessionMaxLifespanEnabled: false,
    offlineSessionMaxLifespan: 5184000,
    lifespans: defaultLifespans(),
    browserSecurityHeaders: defaultBrowserSecurityHeaders(),
    attributes: {},
    bruteForce: defaultBruteForce(),
    otpPolicy: defaultOtpPolicy(),
    webAuthnPolicies: defaultWebAuthnPolicies(),
    createdAt: now,
    passwordPolicy: '',
    sslRequired: 'external',
    defaultSignatureAlgorithm: null,
    notBefore: 0,
  };
}

export function defaultClient(id: string, realmId: string, clientId: string): Client {
  return {
    id,
    realmId,
    clientId,
    name: null,
    description: null,
    secret: null,
    publicClient: false,
    bearerOnly: false,
    enabled: true,
    protocol: 'openid-connect',
    rootUrl: null,
    baseUrl: null,
    redirectUris: [],
    webOrigins: [],
    serviceAccountsEnabled: false,
    standardFlowEnabled: true,
    directAccessGrantsEnabled: false,
    implicitFlowEnabled: false,
    fullScopeAllowed: true,
    attributes: {},
    authenticationFlowBindingOverrides: {},
    authorizationSettings: null,
    clientAuthenticatorType: 'client-secret',
    frontchannelLogout: false,
    consentRequired: false,
    adminUrl: null,
    notBefore: 0,
  };
}
