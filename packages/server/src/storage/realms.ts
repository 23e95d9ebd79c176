import type { Selectable } from 'kysely';
import { BRUTE_FORCE_FIELDS, defaultBruteForce, type BruteForceSettings } from '../model/brute-force.js';
import { OTP_ALGORITHMS, OTP_POLICY_FIELDS, defaultOtpPolicy, type OtpPolicy } from '../model/otp-policy.js';
import { readWebAuthnPolicies } from '../model/webauthn-policy.js';
import { browserSecurityHeaderOverrides, readBrowserSecurityHeaders } from '../model/browser-security-headers.js';
import { defaultLifespans, LIFESPAN_FIELDS, type RealmLifespans } from '../model/lifespans.js';
import { SSL_REQUIRED, type Realm, type SslRequired } from '../model/types.js';
import type { Db } from './db.js';
import type { ConfigCache } from './config-cache.js';
import type { RealmTable } from './schema.js';
import { bool, flag, fromJson, storable, toJson } from './codec.js';

/**
 * The brute-force settings are kept as JSON under this key of the attributes column (as Keycloak keeps its newer
 * realm settings among the realm's attributes), so they needed no migration; it never reaches Realm.attributes.
 */
const BRUTE_FORCE_KEY = 'realmgate.bruteForce';
/** sslRequired, kept the same way. */
const SSL_REQUIRED_KEY = 'realmgate.sslRequired';
/** The OTP policy (otpPolicy* fields), kept the same way. */
const OTP_POLICY_KEY = 'realmgate.otpPolicy';
/** The WebAuthn policies (webAuthnPolicy* and webAuthnPolicyPasswordless* fields), kept the same way. */
const WEBAUTHN_POLICIES_KEY = 'realmgate.webAuthnPolicies';
/** defaultSignatureAlgorithm, kept the same way (absent: RS256). */
const SIGNATURE_ALGORITHM_KEY = 'realmgate.defaultSignatureAlgorithm';
/** The realm's notBefore (seconds), kept beside the other reserved attributes: 0 is not stored. */
const NOT_BEFORE_KEY = 'realmgate.notBefore';
/** The action token lifespans (Keycloak keeps them among the realm's attributes too), absent when Keycloak's defaults. */
const ACTION_TOKEN_USER_KEY = 'realmgate.actionTokenGeneratedByUserLifespan';
const ACTION_TOKEN_ADMIN_KEY = 'realmgate.actionTokenGeneratedByAdminLifespan';
const ACCESS_CODE_KEY = 'realmgate.accessCodeLifespan';
const lifespan = (text: string | undefined, fallback: number) => (text && /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : fallback);
/** The client profiles and policies (model/client-policies.ts), kept the same way: absent or empty is not stored. */
const CLIENT_PROFILES_KEY = 'realmgate.clientProfiles';
const CLIENT_POLICIES_KEY = 'realmgate.clientPolicies';
/** The other lifespans (model/lifespans.ts) and the browser security headers, kept the same way: only what differs from the defaults. */
const LIFESPANS_KEY = 'realmgate.lifespans';
const BROWSER_HEADERS_KEY = 'realmgate.browserSecurityHeaders';

function readLifespans(text: string | undefined): RealmLifespans {
  const stored = fromJson<Record<string, unknown>>(text, {});
  const lifespans = defaultLifespans();
  for (const field of LIFESPAN_FIELDS) if (Number.isSafeInteger(stored[field]) && (stored[field] as number) >= 0) lifespans[field] = stored[field] as number;
  return lifespans;
}

const lifespanOverrides = (lifespans: RealmLifespans) => {
  const defaults = defaultLifespans();
  return Object.fromEntries(LIFESPAN_FIELDS.filter((field) => lifespans[field] !== defaults[field]).map((field) => [field, lifespans[field]]));
};

const readSslRequired = (text: string | undefined): SslRequired => (SSL_REQUIRED as readonly string[]).includes(text ?? '') ? (text as SslRequired) : 'external';

function readBruteForce(text: string | undefined): BruteForceSettings {
  const stored = fromJson<Partial<BruteForceSettings>>(text, {});
  const settings = defaultBruteForce();
  for (const field of BRUTE_FORCE_FIELDS) {
    if (typeof stored[field] === typeof settings[field]) (settings as unknown as Record<string, unknown>)[field] = stored[field];
  }
  return settings;
}

function readOtpPolicy(text: string | undefined): OtpPolicy {
  const stored = fromJson<Partial<OtpPolicy>>(text, {});
  const policy = defaultOtpPolicy();
  for (const field of OTP_POLICY_FIELDS) {
    if (typeof stored[field] === typeof policy[field]) (policy as unknown as Record<string, unknown>)[field] = stored[field];
  }
  if (!(OTP_ALGORITHMS as readonly string[]).includes(policy.otpPolicyAlgorithm)) policy.otpPolicyAlgorithm = 'HmacSHA1';
  policy.otpPolicyType = 'totp';
  return policy;
}

function toRealm(row: Selectable<RealmTable>): Realm {
  const { [BRUTE_FORCE_KEY]: bruteForce, [SSL_REQUIRED_KEY]: sslRequired, [OTP_POLICY_KEY]: otpPolicy, [WEBAUTHN_POLICIES_KEY]: webAuthnPolicies, [SIGNATURE_ALGORITHM_KEY]: signatureAlgorithm, [NOT_BEFORE_KEY]: notBefore, [CLIENT_PROFILES_KEY]: clientProfiles, [CLIENT_POLICIES_KEY]: clientPolicies, [ACTION_TOKEN_USER_KEY]: userLifespan, [ACTION_TOKEN_ADMIN_KEY]: adminLifespan, [ACCESS_CODE_KEY]: codeLifespan, [LIFESPANS_KEY]: lifespans, [BROWSER_HEADERS_KEY]: browserHeaders, ...attributes } = fromJson<Record<string, string>>(row.attributes, {});
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    enabled: bool(row.enabled),
    registrationAllowed: bool(row.registration_allowed),
    resetPasswordAllowed: bool(row.reset_password_allowed),
    verifyEmail: bool(row.verify_email),
    loginWithEmailAllowed: bool(row.login_with_email_allowed),
    duplicateEmailsAllowed: bool(row.duplicate_emails_allowed),
    deleteAccountAllowed: bool(row.delete_account_allowed),
    organizationsEnabled: bool(row.organizations_enabled),
    eventsEnabled: bool(row.events_enabled),
    eventsExpiration: row.events_expiration,
    adminEventsEnabled: bool(row.admin_events_enabled),
    adminEventsDetailsEnabled: bool(row.admin_events_details_enabled),
    eventsListeners: fromJson(row.events_listeners, []),
    enabledEventTypes: fromJson(row.enabled_event_types, []),
    smtpServer: fromJson(row.smtp_server, {}),
    browserFlow: row.browser_flow,
    registrationFlow: row.registration_flow,
    resetCredentialsFlow: row.reset_credentials_flow,
    accessTokenLifespan: row.access_token_lifespan,
    ssoSessionIdleTimeout: row.sso_session_idle_timeout,
    ssoSessionMaxLifespan: row.sso_session_max_lifespan,
    revokeRefreshToken: bool(row.revoke_refresh_token),
    refreshTokenMaxReuse: row.refresh_token_max_reuse,
    actionTokenGeneratedByUserLifespan: lifespan(userLifespan, 300),
    actionTokenGeneratedByAdminLifespan: lifespan(adminLifespan, 43200),
    accessCodeLifespan: lifespan(codeLifespan, 60),
    offlineSessionIdleTimeout: row.offline_session_idle_timeout,
    offlineSessionMaxLifespanEnabled: bool(row.offline_session_max_lifespan_enabled),
    offlineSessionMaxLifespan: row.offline_session_max_lifespan,
    lifespans: readLifespans(lifespans),
    browserSecurityHeaders: readBrowserSecurityHeaders(fromJson(browserHeaders, {})),
    attributes,
    bruteForce: readBruteForce(bruteForce),
    otpPolicy: readOtpPolicy(otpPolicy),
    webAuthnPolicies: readWebAuthnPolicies(fromJson(webAuthnPolicies, {})),
    createdAt: row.created_at,
    passwordPolicy: row.password_policy,
    sslRequired: readSslRequired(sslRequired),
    defaultSignatureAlgorithm: signatureAlgorithm ?? null,
    notBefore: Number(notBefore ?? 0) || 0,
    ...(clientProfiles ? { clientProfiles: fromJson(clientProfiles, []) } : {}),
    ...(clientPolicies ? { clientPolicies: fromJson(clientPolicies, []) } : {}),
  };
}

/** A JSON object under a reserved key, absent when empty. */
const storedJson = (key: string, value: Record<string, unknown>) => (Object.keys(value).length ? { [key]: toJson(value) } : {});

function toRow(realm: Realm): Selectable<RealmTable> {
  return {
    id: realm.id,
    name: realm.name,
    display_name: realm.displayName,
    enabled: flag(realm.enabled),
    registration_allowed: flag(realm.registrationAllowed),
    reset_password_allowed: flag(realm.resetPasswordAllowed),
    verify_email: flag(realm.verifyEmail),
    login_with_email_allowed: flag(realm.loginWithEmailAllowed),
    duplicate_emails_allowed: flag(realm.duplicateEmailsAllowed),
    delete_account_allowed: flag(realm.deleteAccountAllowed),
    organizations_enabled: flag(realm.organizationsEnabled),
    events_enabled: flag(realm.eventsEnabled),
    events_expiration: realm.eventsExpiration,
    admin_events_enabled: flag(realm.adminEventsEnabled),
    admin_events_details_enabled: flag(realm.adminEventsDetailsEnabled),
    events_listeners: toJson(realm.eventsListeners),
    enabled_event_types: toJson(realm.enabledEventTypes),
    smtp_server: toJson(realm.smtpServer),
    browser_flow: realm.browserFlow,
    registration_flow: realm.registrationFlow,
    reset_credentials_flow: realm.resetCredentialsFlow,
    access_token_lifespan: realm.accessTokenLifespan,
    sso_session_idle_timeout: realm.ssoSessionIdleTimeout,
    sso_session_max_lifespan: realm.ssoSessionMaxLifespan,
    revoke_refresh_token: flag(realm.revokeRefreshToken),
    refresh_token_max_reuse: realm.refreshTokenMaxReuse,
    offline_session_idle_timeout: realm.offlineSessionIdleTimeout,
    offline_session_max_lifespan_enabled: flag(realm.offlineSessionMaxLifespanEnabled),
    offline_session_max_lifespan: realm.offlineSessionMaxLifespan,
    attributes: toJson({ ...realm.attributes, [BRUTE_FORCE_KEY]: toJson(realm.bruteForce), [SSL_REQUIRED_KEY]: realm.sslRequired, [OTP_POLICY_KEY]: toJson(realm.otpPolicy), [WEBAUTHN_POLICIES_KEY]: toJson(realm.webAuthnPolicies), ...(realm.defaultSignatureAlgorithm ? { [SIGNATURE_ALGORITHM_KEY]: realm.defaultSignatureAlgorithm } : {}), ...(realm.notBefore ? { [NOT_BEFORE_KEY]: String(realm.notBefore) } : {}), ...(realm.clientProfiles?.length ? { [CLIENT_PROFILES_KEY]: toJson(realm.clientProfiles) } : {}), ...(realm.clientPolicies?.length ? { [CLIENT_POLICIES_KEY]: toJson(realm.clientPolicies) } : {}), ...(realm.actionTokenGeneratedByUserLifespan !== 300 ? { [ACTION_TOKEN_USER_KEY]: String(realm.actionTokenGeneratedByUserLifespan) } : {}), ...(realm.actionTokenGeneratedByAdminLifespan !== 43200 ? { [ACTION_TOKEN_ADMIN_KEY]: String(realm.actionTokenGeneratedByAdminLifespan) } : {}), ...(realm.accessCodeLifespan !== 60 ? { [ACCESS_CODE_KEY]: String(realm.accessCodeLifespan) } : {}), ...storedJson(LIFESPANS_KEY, lifespanOverrides(realm.lifespans)), ...storedJson(BROWSER_HEADERS_KEY, browserSecurityHeaderOverrides(realm.browserSecurityHeaders)) }),
    created_at: realm.createdAt,
    password_policy: realm.passwordPolicy,
  };
}

export class RealmRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
  ) {}

  /** byName through the configuration cache (frozen; copy before changing). For the hot paths. */
  cachedByName(name: string): Promise<Realm | null> {
    return this.cache.get(`realm\0${name}`, ['realm'], () => this.byName(name));
  }

  /** byId through the configuration cache (frozen; copy before changing). */
  cachedById(id: string): Promise<Realm | null> {
    return this.cache.get(`realm-id\0${id}`, ['realm'], () => this.byId(id));
  }

  async list(): Promise<Realm[]> {
    const rows = await this.db.selectFrom('realm').selectAll().orderBy('name').execute();
    return rows.map(toRealm);
  }

  async byName(name: string): Promise<Realm | null> {
    if (!storable(name)) return null;
    const row = await this.db.selectFrom('realm').selectAll().where('name', '=', name).executeTakeFirst();
    return row ? toRealm(row) : null;
  }

  async byId(id: string): Promise<Realm | null> {
    const row = await this.db.selectFrom('realm').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toRealm(row) : null;
  }

  async insert(realm: Realm, db: Db = this.db): Promise<void> {
    await db.insertInto('realm').values(toRow(realm)).execute();
  }

  async update(realm: Realm, db: Db = this.db): Promise<void> {
    const { id, ...row } = toRow(realm);
    await db.updateTable('realm').set(row).where('id', '=', id).execute();
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('realm').where('id', '=', id).execute();
  }
}
