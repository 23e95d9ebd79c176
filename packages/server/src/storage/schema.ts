import type { Generated } from 'kysely';

/** Booleans are stored as 0/1 and times as epoch milliseconds so SQLite and PostgreSQL read back alike. */
type Flag = number;

export interface RealmTable {
  id: string;
  name: string;
  display_name: string | null;
  enabled: Flag;
  registration_allowed: Flag;
  reset_password_allowed: Flag;
  verify_email: Flag;
  login_with_email_allowed: Flag;
  duplicate_emails_allowed: Flag;
  delete_account_allowed: Flag;
  organizations_enabled: Flag;
  events_enabled: Flag;
  events_expiration: number | null;
  admin_events_enabled: Flag;
  admin_events_details_enabled: Flag;
  /** JSON string[] */
  events_listeners: string;
  /** JSON string[] */
  enabled_event_types: string;
  /** JSON object (Keycloak's smtpServer) */
  smtp_server: string;
  browser_flow: string;
  registration_flow: string;
  reset_credentials_flow: string;
  access_token_lifespan: number;
  sso_session_idle_timeout: number;
  sso_session_max_lifespan: number;
  revoke_refresh_token: Flag;
  refresh_token_max_reuse: number;
  offline_session_idle_timeout: number;
  offline_session_max_lifespan_enabled: Flag;
  offline_session_max_lifespan: number;
  /** JSON Record<string,string> */
  attributes: string;
  created_at: number;
  /** Keycloak's passwordPolicy string ('' for none); checked by credentials/password-policy.ts when saved. */
  password_policy: string;
}

export interface RealmKeyTable {
  kid: string;
  realm_id: string;
  algorithm: string;
  private_jwk: string;
  public_jwk: string;
  /** A self-signed X.509 certificate of the key (base64 DER), as Keycloak keeps; null for keys from before 0004. */
  certificate: string | null;
  active: Flag;
  created_at: number;
  /** The key-provider component (migration 0025); null: the kid (older rows). */
  component_id: string | null;
  /** Keycloak's providerId; null: rsa-generated. */
  provider_id: string | null;
  name: string | null;
  /** null: 100. The active enabled key of highest priority signs. */
  priority: number | null;
  /** null: enabled. A disabled key neither signs nor verifies, and is not published. */
  enabled: Flag | null;
  /** sig or enc; null: sig. */
  key_use: string | null;
  /** JSON Record<string,string>: the provider's config entries (algorithm, keySize, curve …), no key material. */
  settings: string | null;
}

export interface ClientTable {
  id: string;
  realm_id: string;
  client_id: string;
  name: string | null;
  description: string | null;
  secret: string | null;
  public_client: Flag;
  bearer_only: Flag;
  enabled: Flag;
  protocol: string;
  root_url: string | null;
  base_url: string | null;
  /** JSON string[] */
  redirect_uris: string;
  /** JSON string[] */
  web_origins: string;
  service_accounts_enabled: Flag;
  standard_flow_enabled: Flag;
  direct_access_grants_enabled: Flag;
  implicit_flow_enabled: Flag;
  full_scope_allowed: Flag;
  /** JSON Record<string,string>: Keycloak's authenticationFlowBindingOverrides (flow ids); null for none (migration 0020). */
  flow_binding_overrides: string | null;
  /** JSON: Keycloak's authorizationSettings, kept as data; null for none (migration 0020). */
  authorization_settings: string | null;
  /** JSON Record<string,string> */
  attributes: string;
  /** Keycloak's clientAuthenticatorType; null is client-secret (clients from before migration 0024). */
  authenticator_type: string | null;
  /** Keycloak's frontchannelLogout; null is true (clients from before migration 0027). */
  frontchannel_logout: number | null;
  /** Keycloak's adminUrl (management URL); null: none (migration 0029 gave older clients their root URL, as their representation showed). */
  admin_url: string | null;
  /** Keycloak's client notBefore (seconds); null: 0. */
  not_before: number | null;
  /** Keycloak's consentRequired; null is false (clients from before migration 0036). */
  consent_required: number | null;
  created_at: number;
  /** Registered cluster nodes, JSON `{host: epoch seconds}` (migration 0037); null: none. */
  registered_nodes: Generated<string | null>;
}

export interface UserTable {
  id: string;
  realm_id: string;
  username: string;
  email: string | null;
  email_verified: Flag;
  first_name: string | null;
  last_name: string | null;
  enabled: Flag;
  created_timestamp: number;
  /** JSON Record<string,string[]> */
  attributes: string;
  /** The client UUID this user is the service account of. */
  service_account_client_id: string | null;
  password_hash: string | null;
  password_created: number | null;
  password_label: string | null;
  /** The password credential's id (migration 0032), kept across resets as Keycloak's; null: derived (representations/credential.ts). */
  password_credential_id: string | null;
  /** The password's priority among the user's credentials (migration 0036; Keycloak's 10 unless moved). */
  password_priority: Generated<number>;
}

export interface RoleTable {
  id: string;
  realm_id: string;
  /** Realm id for realm roles, client UUID for client roles. */
  container_id: string;
  client_role: Flag;
  name: string;
  description: string | null;
}

export interface RoleCompositeTable {
  parent_id: string;
  child_id: string;
}

export interface UserRoleTable {
  user_id: string;
  role_id: string;
}

/** A client's scope: the roles its tokens may carry when `fullScopeAllowed` is off (Keycloak's scope mappings). */
export interface ScopeMappingTable {
  client_id: string;
  role_id: string;
}

export interface OrganizationTable {
  id: string;
  realm_id: string;
  name: string;
  alias: string;
  description: string | null;
  enabled: Flag;
  redirect_url: string | null;
  /** JSON Record<string,string[]> */
  attributes: string;
}

export interface OrganizationDomainTable {
  organization_id: string;
  realm_id: string;
  name: string;
  verified: Flag;
}

export interface OrganizationMemberTable {
  organization_id: string;
  user_id: string;
}

export interface OrganizationInvitationTable {
  id: string;
  organization_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  /** Epoch seconds, as Keycloak's representation shows them. */
  created_at: number;
  expires_at: number;
  invite_link: string | null;
}

export interface UserSessionTable {
  id: string;
  realm_id: string;
  user_id: string;
  ip_address: string | null;
  started: number;
  last_refresh: number;
  /** 1 for an offline session (offline_access). */
  offline: Flag;
  /**
   * SHA-256 (base64url) of the random value sealed into the SSO cookie of the browser sign-in that started the
   * session; null for a session no browser signed in to (password grant, offline), which no cookie can name.
   */
  sso_cookie_hash: string | null;
  /** A brokered sign-in's `{alias}.{upstream sid}` and `{alias}.{upstream sub}` (migration 0031); null otherwise. */
  broker_session_id: string | null;
  broker_user_id: string | null;
  broker_id_token: string | null;
}

export interface ClientSessionTable {
  id: string;
  session_id: string;
  client_id: string;
  /** jti of the refresh token issued at sign-in. */
  refresh_token_id: string | null;
  scope: string;
  started: number;
}

/**
 * With the realm's revokeRefreshToken: per client session and refresh-token family (the `reuse_id` a sign-in gives
 * its refresh token and every refresh passes on, so two tabs signed in separately do not disturb each other), the
 * token used last, how often, and the token issued last.
 */
export interface RefreshTokenFamilyTable {
  client_session_id: string;
  reuse_id: string;
  used_token: string;
  uses: number;
  latest_token: string;
}

/** A user's earlier password hashes, for the password policy's passwordHistory rule. */
export interface PasswordHistoryTable {
  user_id: string;
  password_hash: string;
  /** When the password stopped being the current one. */
  created_at: number;
}

export interface RevokedTokenTable {
  jti: string;
  expires_at: number;
}

export interface EventTable {
  id: string;
  realm_id: string;
  time: number;
  type: string;
  client_id: string | null;
  user_id: string | null;
  session_id: string | null;
  ip_address: string | null;
  error: string | null;
  /** JSON Record<string,string> */
  details: string;
}

export interface AdminEventTable {
  id: string;
  realm_id: string;
  time: number;
  operation_type: string;
  resource_type: string;
  resource_path: string;
  representation: string | null;
  auth_realm_id: string | null;
  auth_client_id: string | null;
  auth_user_id: string | null;
  auth_ip_address: string | null;
  error: string | null;
}

/** Authentication flows (Keycloak's model): flows/ reads and writes them through its repository. */
export interface AuthFlowTable {
  id: string;
  realm_id: string;
  /** Unique within the realm, subflows included: Keycloak addresses flows by alias. */
  alias: string;
  description: string | null;
  /** `basic-flow`, `form-flow` or `client-flow`. */
  provider_id: string;
  top_level: Flag;
  built_in: Flag;
}

export interface AuthExecutionTable {
  id: string;
  realm_id: string;
  parent_flow_id: string;
  /** Provider id; null for a basic subflow (a form subflow keeps its form provider here, as Keycloak). */
  authenticator: string | null;
  sub_flow_id: string | null;
  requirement: string;
  priority: number;
  authenticator_config_id: string | null;
}

export interface AuthenticatorConfigTable {
  id: string;
  realm_id: string;
  /** Unique within the realm, as Keycloak checks. */
  alias: string;
  /** JSON Record<string,string> */
  config: string;
}

/** A user's credential other than the password (OTP today), as Keycloak's CredentialRepresentation. */
export interface CredentialTable {
  id: string;
  user_id: string;
  /** `otp`. */
  type: string;
  user_label: string | null;
  /** JSON; for OTP `{"value": <base32 secret>}`. Never answered by any API. */
  secret_data: string;
  /** JSON; for OTP `{"subType","digits","period","algorithm","counter"}`. */
  credential_data: string;
  created_date: number;
  priority: number;
}

/** A required action an administrator set on a user, carried out at the next browser login. */
export interface UserRequiredActionTable {
  user_id: string;
  required_action: string;
}

/**
 * A realm's settings of one required action, once changed from its defaults or imported; an action this server does
 * not carry out (kept as data) has a row with its name, provider id and config as the realm file had them.
 */
export interface RealmRequiredActionTable {
  realm_id: string;
  alias: string;
  enabled: Flag;
  default_action: Flag;
  priority: number;
  /** Keycloak's display name; null: the server's own name of its action. */
  name: string | null;
  /** Keycloak's providerId; null: the alias. */
  provider_id: string | null;
  /** JSON Record<string,string>, Keycloak's config; null: none. */
  config: string | null;
  /** 0: a provider of the server's registry an administrator unregistered; null or 1: registered. */
  registered: Flag | null;
}

/** A group; `parent_id` is '' for a top-level group. */
export interface GroupTable {
  id: string;
  realm_id: string;
  parent_id: string;
  name: string;
  description: string | null;
  /** JSON Record<string,string[]> */
  attributes: string;
  /** An organization's group (migration 0035); null for the realm's groups. */
  organization_id: string | null;
}

export interface UserGroupTable {
  user_id: string;
  group_id: string;
}

export interface GroupRoleTable {
  group_id: string;
  role_id: string;
}

/** The groups every new user of the realm joins. */
export interface DefaultGroupTable {
  realm_id: string;
  group_id: string;
}

export interface ClientScopeTable {
  id: string;
  realm_id: string;
  name: string;
  description: string | null;
  protocol: string;
  attributes: string;
}

/** A protocol mapper of a client scope or of a client (`owner_id` is the one, the other foreign key is null). */
export interface ProtocolMapperTable {
  id: string;
  realm_id: string;
  owner_id: string;
  client_scope_id: string | null;
  client_id: string | null;
  name: string;
  protocol: string;
  mapper_type: string;
  config: string;
  /** Keeps the order mappers were added in. */
  position: number;
}

/** The realm's default (1) and optional (0) client scopes, which new clients start with. */
export interface RealmClientScopeTable {
  realm_id: string;
  scope_id: string;
  default_scope: number;
}

/** A client's default (1) and optional (0) client scopes. */
export interface ClientClientScopeTable {
  client_id: string;
  scope_id: string;
  default_scope: number;
}

/** The role scope mappings of a client scope. */
export interface ClientScopeRoleTable {
  scope_id: string;
  role_id: string;
}

export interface IdentityProviderTable {
  internal_id: string;
  realm_id: string;
  alias: string;
  provider_id: string;
  enabled: Flag;
  display_name: string | null;
  /** JSON: the rest of Keycloak's IdentityProviderRepresentation (config, trustEmail, flows, …), kept as given. */
  representation: string;
}

export interface IdentityProviderMapperTable {
  id: string;
  realm_id: string;
  identity_provider_id: string;
  name: string;
  mapper_type: string;
  /** JSON Record<string,string> */
  config: string;
}

export interface ComponentTable {
  id: string;
  realm_id: string;
  /** The realm's id, or the id of the component this one belongs to. */
  parent_id: string;
  name: string;
  provider_id: string;
  provider_type: string;
  sub_type: string | null;
  /** JSON Record<string,string[]> (Keycloak's MultivaluedHashMap) */
  config: string;
}

/** A user's link to an account at an identity provider (Keycloak's FederatedIdentityRepresentation), kept as data. */
export interface FederatedIdentityTable {
  user_id: string;
  /** The provider's internal id: a renamed alias keeps the link, a deleted provider takes it along. */
  identity_provider_id: string;
  realm_id: string;
  federated_user_id: string;
  federated_username: string | null;
  /** The upstream's token response, kept when the provider stores tokens (storeToken); null otherwise. */
  token: string | null;
}

export interface UserConsentTable {
  user_id: string;
  /** The client's internal id: its deletion takes the consent along. */
  client_id: string;
  realm_id: string;
  /** JSON string[]: client scope names. */
  granted_client_scopes: string;
  created_date: number | null;
  last_updated_date: number | null;
}

export interface RealmLocalizationTable {
  realm_id: string;
  locale: string;
  message_key: string;
  text: string;
}

/** Keycloak's client initial access tokens: the token itself is never stored, only its SHA-256. */
export interface ClientInitialAccessTable {
  id: string;
  realm_id: string;
  /** base64url SHA-256 of the token's secret `jti` */
  token_hash: string;
  /** Seconds since the epoch (Keycloak's `timestamp`). */
  created_at: number;
  /** Seconds the token is valid for; 0 never expires. */
  expiration: number;
  count: number;
  remaining_count: number;
}

/** The registration access token of a client (one at a time, rotated at each update): its hash and how it was registered. */
export interface ClientRegistrationTokenTable {
  client_id: string;
  realm_id: string;
  token_hash: string;
  /** `anonymous` or `authenticated`: the policies that govern the token's holder. */
  registration_auth: string;
}

export interface Database {
  realm: RealmTable;
  realm_key: RealmKeyTable;
  client: ClientTable;
  user_entity: UserTable;
  role: RoleTable;
  role_composite: RoleCompositeTable;
  user_role: UserRoleTable;
  scope_mapping: ScopeMappingTable;
  organization: OrganizationTable;
  organization_domain: OrganizationDomainTable;
  organization_member: OrganizationMemberTable;
  organization_invitation: OrganizationInvitationTable;
  user_session: UserSessionTable;
  client_session: ClientSessionTable;
  refresh_token_family: RefreshTokenFamilyTable;
  revoked_token: RevokedTokenTable;
  password_history: PasswordHistoryTable;
  event_entity: EventTable;
  admin_event_entity: AdminEventTable;
  auth_flow: AuthFlowTable;
  auth_execution: AuthExecutionTable;
  authenticator_config: AuthenticatorConfigTable;
  credential: CredentialTable;
  user_required_action: UserRequiredActionTable;
  realm_required_action: RealmRequiredActionTable;
  realm_group: GroupTable;
  user_group: UserGroupTable;
  group_role: GroupRoleTable;
  default_group: DefaultGroupTable;
  client_scope: ClientScopeTable;
  protocol_mapper: ProtocolMapperTable;
  realm_client_scope: RealmClientScopeTable;
  client_client_scope: ClientClientScopeTable;
  client_scope_role: ClientScopeRoleTable;
  identity_provider: IdentityProviderTable;
  identity_provider_mapper: IdentityProviderMapperTable;
  component: ComponentTable;
  client_initial_access: ClientInitialAccessTable;
  client_registration_token: ClientRegistrationTokenTable;
  federated_identity: FederatedIdentityTable;
  user_consent: UserConsentTable;
  realm_localization: RealmLocalizationTable;
}
