import type { RealmLifespans } from './lifespans.js';
import type { BrowserSecurityHeaders } from './browser-security-headers.js';
import type { BruteForceSettings } from './brute-force.js';
import type { OtpPolicy } from './otp-policy.js';
import type { WebAuthnPolicies } from './webauthn-policy.js';
import type { ClientPolicy, ClientProfile } from './client-policies.js';

export interface SmtpServer {
  host?: string;
  port?: string;
  from?: string;
  fromDisplayName?: string;
  replyTo?: string;
  auth?: string;
  user?: string;
  password?: string;
  ssl?: string;
  starttls?: string;
  [key: string]: string | undefined;
}

/** Keycloak's realm `sslRequired`: `external` refuses plain HTTP from non-private addresses, `all` all of it. */
export const SSL_REQUIRED = ['all', 'external', 'none'] as const;
export type SslRequired = (typeof SSL_REQUIRED)[number];

export interface Realm {
  id: string;
  name: string;
  displayName: string | null;
  enabled: boolean;
  registrationAllowed: boolean;
  resetPasswordAllowed: boolean;
  verifyEmail: boolean;
  loginWithEmailAllowed: boolean;
  duplicateEmailsAllowed: boolean;
  deleteAccountAllowed: boolean;
  organizationsEnabled: boolean;
  eventsEnabled: boolean;
  eventsExpiration: number | null;
  adminEventsEnabled: boolean;
  adminEventsDetailsEnabled: boolean;
  eventsListeners: string[];
  enabledEventTypes: string[];
  smtpServer: SmtpServer;
  browserFlow: string;
  registrationFlow: string;
  resetCredentialsFlow: string;
  accessTokenLifespan: number;
  ssoSessionIdleTimeout: number;
  ssoSessionMaxLifespan: number;
  /** Keycloak's refresh-token rotation: off, a refresh token may be used again until it expires. */
  revokeRefreshToken: boolean;
  /** With rotation on, how many more times the current refresh token may be used. */
  refreshTokenMaxReuse: number;
  /** Seconds an e-mailed link the user asked for lives (reset password, verify e-mail): Keycloak's default 300. */
  actionTokenGeneratedByUserLifespan: number;
  /** Seconds an authorization code may wait for the client's token request: Keycloak's default 60. */
  accessCodeLifespan: number;
  /** Seconds a link an administrator sent lives (execute actions, invitations) unless the request says: 43200. */
  actionTokenGeneratedByAdminLifespan: number;
  offlineSessionIdleTimeout: number;
  offlineSessionMaxLifespanEnabled: boolean;
  offlineSessionMaxLifespan: number;
  /** Keycloak's client session, remember-me, implicit-flow and login lifespans (model/lifespans.ts). */
  lifespans: RealmLifespans;
  /** Keycloak's browserSecurityHeaders: the headers of the realm's pages (model/browser-security-headers.ts). */
  browserSecurityHeaders: BrowserSecurityHeaders;
  attributes: Record<string, string>;
  /** Keycloak's brute-force detection fields (bruteForceProtected …). */
  bruteForce: BruteForceSettings;
  /** Keycloak's otpPolicy* fields (model/otp-policy.ts). */
  otpPolicy: OtpPolicy;
  /** Keycloak's webAuthnPolicy* and webAuthnPolicyPasswordless* fields (model/webauthn-policy.ts). */
  webAuthnPolicies: WebAuthnPolicies;
  createdAt: number;
  /** Keycloak's passwordPolicy string, '' for none (credentials/password-policy.ts reads it). */
  passwordPolicy: string;
  /** Keycloak's sslRequired: which plain-HTTP requests to the realm's endpoints are refused (http/ssl-required.ts). */
  sslRequired: SslRequired;
  /** Keycloak's defaultSignatureAlgorithm: what tokens are signed with unless the client names another; null: RS256. */
  defaultSignatureAlgorithm: string | null;
  /** Keycloak's realm `notBefore` (seconds, set by logout-all or the Revocation tab): tokens issued before it are refused; 0: none. */
  notBefore: number;
  /** Keycloak's client profiles of the realm (model/client-policies.ts); absent: none. */
  clientProfiles?: ClientProfile[];
  /** Keycloak's client policies of the realm (services/client-policies.ts runs them); absent: none. */
  clientPolicies?: ClientPolicy[];
}

export interface Client {
  id: string;
  realmId: string;
  clientId: string;
  name: string | null;
  description: string | null;
  secret: string | null;
  publicClient: boolean;
  bearerOnly: boolean;
  enabled: boolean;
  protocol: string;
  rootUrl: string | null;
  baseUrl: string | null;
  redirectUris: string[];
  webOrigins: string[];
  serviceAccountsEnabled: boolean;
  standardFlowEnabled: boolean;
  directAccessGrantsEnabled: boolean;
  implicitFlowEnabled: boolean;
  fullScopeAllowed: boolean;
  attributes: Record<string, string>;
  /**
   * Keycloak's `authenticationFlowBindingOverrides`: `browser` and `direct_grant`, each the id of a top-level flow of
   * the realm that this client's sign-ins run instead of the realm's (flows/runner.ts, `signInFlow`).
   */
  authenticationFlowBindingOverrides: Record<string, string>;
  /** Keycloak's `authorizationSettings` (a resource server's JSON), kept as data: Realmgate has no authorization services. */
  authorizationSettings: Record<string, unknown> | null;
  /**
   * Keycloak's `clientAuthenticatorType`: how a confidential client proves itself at the token, introspection,
   * revocation and logout endpoints (protocol/openid-connect/client-auth.ts). Only the methods this server runs.
   */
  clientAuthenticatorType: ClientAuthenticatorType;
  /**
   * Keycloak's `frontchannelLogout` (false for a client created without it, as Keycloak 26.7.3 answers): at a browser logout the client is told through an iframe
   * to its `frontchannel.logout.url`; when false, through its `backchannel.logout.url` (protocol/openid-connect/logout.ts).
   */
  frontchannelLogout: boolean;
  /**
   * Keycloak's `consentRequired`: a browser sign-in asks the user to grant the client's scopes on a consent page
   * (authentication/consent.ts) unless a stored consent already covers them; the password grant is refused.
   */
  consentRequired: boolean;
  /**
   * Keycloak's `adminUrl` (the management URL): where the realm's admin actions reach the application (`k_logout`,
   * `k_push_not_before`, as keycloak-connect's admin middleware answers them); null: none.
   */
  adminUrl: string | null;
  /** Keycloak's client `notBefore` (seconds): tokens issued to this client before it are refused; 0: none. */
  notBefore: number;
}

/** Keycloak's client authenticators this server runs (client-x509: the certificate a trusted proxy forwards, http/client-certificate.ts). */
export const CLIENT_AUTHENTICATOR_TYPES = ['client-secret', 'client-jwt', 'client-secret-jwt', 'client-x509'] as const;
export type ClientAuthenticatorType = (typeof CLIENT_AUTHENTICATOR_TYPES)[number];

export interface User {
  id: string;
  realmId: string;
  username: string;
  email: string | null;
  emailVerified: boolean;
  firstName: string | null;
  lastName: string | null;
  enabled: boolean;
  createdTimestamp: number;
  attributes: Record<string, string[]>;
  serviceAccountClientId: string | null;
  passwordHash: string | null;
  passwordCreated: number | null;
  /** The password credential's label (the console names it "My password"); a new password has none. */
  passwordLabel?: string | null;
  /**
   * The password credential's id, kept when the password is reset or changed (Keycloak updates its credential in
   * place); null or absent for a password set before migration 0032, whose id is derived from its creation time.
   */
  passwordCredentialId?: string | null;
}

export interface Role {
  id: string;
  realmId: string;
  containerId: string;
  clientRole: boolean;
  name: string;
  description: string | null;
}

/** A group of users (Keycloak's): roles mapped to it count for its members and the members of its subgroups. */
export interface Group {
  id: string;
  realmId: string;
  /** null for a top-level group. */
  parentId: string | null;
  name: string;
  description: string | null;
  attributes: Record<string, string[]>;
  /** The organization of an organization group (Keycloak's), absent for the realm's groups. */
  organizationId?: string | null;
}

export interface Organization {
  id: string;
  realmId: string;
  name: string;
  alias: string;
  description: string | null;
  enabled: boolean;
  redirectUrl: string | null;
  attributes: Record<string, string[]>;
  domains: { name: string; verified: boolean }[];
}

/** An invitation to join an organization (Keycloak's OrganizationInvitationModel); times in epoch seconds. */
export interface OrganizationInvitation {
  id: string;
  organizationId: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  createdAt: number;
  expiresAt: number;
  inviteLink: string | null;
}

export interface UserSession {
  id: string;
  realmId: string;
  userId: string;
  ipAddress: string | null;
  started: number;
  lastRefresh: number;
  /** An offline session (`offline_access`): outlives the SSO session, kept by the offline timeouts. */
  offline?: boolean;
  /**
   * A session a brokered sign-in started (Keycloak's brokerSessionId and brokerUserId): `{alias}.{upstream sid}` and
   * `{alias}.{upstream sub}`, which an upstream's back-channel logout token names.
   */
  brokerSessionId?: string | null;
  brokerUserId?: string | null;
  /**
   * The upstream's ID token of that sign-in, kept only when its identity provider logs the upstream out (by
   * back-channel, or through the browser with `id_token_hint`; Keycloak's FEDERATED_ID_TOKEN note): the
   * `id_token_hint` of this server's logout towards the upstream.
   */
  brokerIdToken?: string | null;
}

export interface ClientSession {
  id: string;
  sessionId: string;
  clientId: string;
  refreshTokenId: string | null;
  scope: string;
  started: number;
}

/** A protocol mapper (Keycloak's): puts one claim (or a few) into tokens; `protocolMapper` names its type. */
export interface ProtocolMapper {
  id: string;
  name: string;
  /** 'openid-connect' (or 'saml', kept as data: Realmgate issues no SAML assertions). */
  protocol: string;
  /** The mapper type, e.g. 'oidc-audience-mapper'. */
  protocolMapper: string;
  config: Record<string, string>;
}

/** A realm's client scope (Keycloak's): a named bundle of protocol mappers and role scope mappings. */
export interface ClientScope {
  id: string;
  realmId: string;
  name: string;
  description: string | null;
  protocol: string;
  attributes: Record<string, string>;
  protocolMappers: ProtocolMapper[];
}

/**
 * What a client's tokens are made from: its default client scopes (always applied), its optional ones (applied
 * when the request's `scope` names them), each with its mappers, and the client's own mappers.
 */
export interface ClientScopeSet {
  defaultScopes: ClientScope[];
  optionalScopes: ClientScope[];
  clientMappers: ProtocolMapper[];
}

/**
 * A realm's identity provider (Keycloak's IdentityProviderRepresentation), kept as data: Realmgate signs nobody in
 * through it. `rest` holds the representation's other fields (config, trustEmail, flow aliases, …) as given.
 */
export interface IdentityProvider {
  internalId: string;
  realmId: string;
  alias: string;
  providerId: string;
  enabled: boolean;
  displayName: string | null;
  config: Record<string, string>;
  rest: Record<string, unknown>;
}

/**
 * A user's link to an account at an identity provider (Keycloak's FederatedIdentityRepresentation): the provider's
 * alias, the account's id and username there. Kept as data: nobody signs in through it (Realmgate has no brokering).
 */
/**
 * A user's consent to a client (Keycloak's UserConsentRepresentation), kept from realm files: the client scopes it
 * granted, by name. The consent screen (pages/consent.ts) adds to it; the admin and account APIs list and revoke it.
 */
export interface UserConsent {
  userId: string;
  /** The client's internal id. */
  clientId: string;
  grantedClientScopes: string[];
  createdDate: number | null;
  lastUpdatedDate: number | null;
}

export interface FederatedIdentity {
  identityProvider: string;
  userId: string;
  userName: string | null;
}

/** A mapper of an identity provider (Keycloak's IdentityProviderMapperRepresentation), kept as data. */
export interface IdentityProviderMapper {
  id: string;
  name: string;
  identityProviderAlias: string;
  identityProviderMapper: string;
  config: Record<string, string>;
}

/**
 * A realm's component (Keycloak's ComponentRepresentation): a configured provider of some type (user storage,
 * client registration policy, …) kept as data. `parentId` is the realm's id or another component's.
 */
export interface Component {
  id: string;
  realmId: string;
  parentId: string;
  name: string;
  providerId: string;
  providerType: string;
  subType: string | null;
  config: Record<string, string[]>;
}
