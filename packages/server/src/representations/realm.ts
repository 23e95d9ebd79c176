import { parsePasswordPolicy } from '../credentials/password-policy.js';
import { parseClientPolicies, parseClientProfiles } from './client-policies.js';
import { badRequest } from '../model/errors.js';
import { BRUTE_FORCE_FIELDS } from '../model/brute-force.js';
import { OTP_POLICY_FIELDS } from '../model/otp-policy.js';
import {
  applyWebAuthnPolicyRep,
  ATTESTATION_PREFERENCES,
  AUTHENTICATOR_ATTACHMENTS,
  PASSKEYS_ENABLED_FIELD,
  PASSWORDLESS_PREFIX,
  REQUIRE_RESIDENT_KEY,
  RESIDENT_KEY,
  TWO_FACTOR_PREFIX,
  USER_VERIFICATION,
  WEBAUTHN_SIGNATURE_ALGORITHMS,
  webAuthnPolicyRep,
} from '../model/webauthn-policy.js';
import type { Realm } from '../model/types.js';
import { LIFESPAN_FIELDS } from '../model/lifespans.js';
import { BROWSER_SECURITY_HEADERS, HEADER_VALUE, RETIRED_BROWSER_SECURITY_HEADERS, type BrowserSecurityHeaders } from '../model/browser-security-headers.js';
import { LOCALE_TAG, realmLocales } from '../model/locales.js';
import { THEME_FIELDS, THEME_NAME } from '../model/themes.js';
import type { Spec } from './fields.js';

const SMTP_MASK = '**********';

function oneOf(values: readonly string[]) {
  return { type: 'string', pattern: new RegExp(`^(${values.map((v) => v.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')).join('|')})$`), patternHint: values.map((v) => `"${v}"`).join(', ') } as const;
}

export const realmSpec: Spec = {
  // Keycloak's ClientProfilesRepresentation and ClientPoliciesRepresentation (representations/client-policies.ts reads them).
  clientProfiles: { type: 'object' },
  clientPolicies: { type: 'object' },
  realm: { type: 'string', min: 1, max: 100, pattern: /^[A-Za-z0-9][A-Za-z0-9_.-]*$/, patternHint: 'letters, digits, ".", "_" or "-"' },
  displayName: { type: 'string' },
  displayNameHtml: { type: 'string', max: 2048 },
  enabled: { type: 'boolean' },
  registrationAllowed: { type: 'boolean' },
  resetPasswordAllowed: { type: 'boolean' },
  verifyEmail: { type: 'boolean' },
  loginWithEmailAllowed: { type: 'boolean' },
  duplicateEmailsAllowed: { type: 'boolean' },
  organizationsEnabled: { type: 'boolean' },
  eventsEnabled: { type: 'boolean' },
  eventsExpiration: { type: 'integer', min: 1, max: Number.MAX_SAFE_INTEGER },
  eventsListeners: { type: 'stringArray' },
  enabledEventTypes: { type: 'stringArray' },
  adminEventsEnabled: { type: 'boolean' },
  adminEventsDetailsEnabled: { type: 'boolean' },
  smtpServer: { type: 'stringMap', max: 1024 },
  browserFlow: { type: 'string' },
  registrationFlow: { type: 'string' },
  resetCredentialsFlow: { type: 'string' },
  accessTokenLifespan: { type: 'integer', min: 1 },
  ssoSessionIdleTimeout: { type: 'integer', min: 1 },
  ssoSessionMaxLifespan: { type: 'integer', min: 1 },
  revokeRefreshToken: { type: 'boolean' },
  refreshTokenMaxReuse: { type: 'integer', min: 0, max: 2147483647 },
  actionTokenGeneratedByUserLifespan: { type: 'integer', min: 1, max: 2147483647 },
  actionTokenGeneratedByAdminLifespan: { type: 'integer', min: 1, max: 2147483647 },
  accessCodeLifespan: { type: 'integer', min: 1, max: 2147483647 },
  offlineSessionIdleTimeout: { type: 'integer', min: 1 },
  offlineSessionMaxLifespanEnabled: { type: 'boolean' },
  offlineSessionMaxLifespan: { type: 'integer', min: 1 },
  ...Object.fromEntries(LIFESPAN_FIELDS.map((field) => [field, { type: 'integer', min: 0, max: 2_147_483_647 }])),
  // Checked key by key in applyRealmSettings (Keycloak's seven names, one-line printable values).
  browserSecurityHeaders: { type: 'stringMap', max: 2048 },
  attributes: { type: 'stringMap', max: 4096 },
  // The device grant's defaults, kept as Keycloak keeps them: realm attributes of the same names (DEVICE_FIELDS).
  oauth2DeviceCodeLifespan: { type: 'integer', min: 1, max: 2_147_483_647 },
  oauth2DevicePollingInterval: { type: 'integer', min: 1, max: 2_147_483_647 },
  // Keycloak's internationalization settings, kept as realm attributes of the same names (pages/i18n.ts reads them).
  internationalizationEnabled: { type: 'boolean' },
  supportedLocales: { type: 'stringArray' },
  defaultLocale: { type: 'string' },
  // Keycloak's theme fields, kept as realm attributes of the same names (pages/themes.ts); "" is the built-in theme.
  ...Object.fromEntries(Object.keys(THEME_FIELDS).map((field) => [field, { type: 'string', max: 100, pattern: new RegExp(`^$|${THEME_NAME.source}`), patternHint: 'a theme name: letters, digits, ".", "_" or "-"' }])),
  ...bruteForceSpec(),
  // Keycloak's OTP policy (model/otp-policy.ts); "hotp" is refused: only time-based codes are supported.
  otpPolicyType: { type: 'string', pattern: /^totp$/, patternHint: '"totp" (HOTP is not supported)' },
  otpPolicyAlgorithm: { type: 'string', pattern: /^Hmac(SHA1|SHA256|SHA512)$/, patternHint: 'HmacSHA1, HmacSHA256 or HmacSHA512' },
  otpPolicyDigits: { type: 'integer', min: 6, max: 8 },
  otpPolicyPeriod: { type: 'integer', min: 1, max: 3600 },
  otpPolicyLookAheadWindow: { type: 'integer', min: 0, max: 100 },
  otpPolicyCodeReusable: { type: 'boolean' },
  otpPolicyInitialCounter: { type: 'integer', min: 0, max: 2147483647 },
  ...webAuthnPolicySpec(TWO_FACTOR_PREFIX),
  ...webAuthnPolicySpec(PASSWORDLESS_PREFIX),
  [PASSKEYS_ENABLED_FIELD]: { type: 'boolean' },
  passwordPolicy: { type: 'string', max: 2048 },
  sslRequired: { type: 'string', pattern: /^(all|external|none)$/i, patternHint: 'all, external or none' },
  notBefore: { type: 'integer', min: 0, max: 2_147_483_647 },
  defaultSignatureAlgorithm: { type: 'string', pattern: /^(RS256|RS384|RS512|PS256|PS384|PS512|ES256|ES384|ES512|EdDSA)?$/, patternHint: 'RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512 or EdDSA' },
};


/** Keycloak's WebAuthn policy fields under `prefix` (model/webauthn-policy.ts); the lists are checked item by item in applyRealmSettings. */
function webAuthnPolicySpec(prefix: string): Spec {
  return {
    [`${prefix}RpEntityName`]: { type: 'string', max: 255 },
    [`${prefix}SignatureAlgorithms`]: { type: 'stringArray' },
    [`${prefix}RpId`]: { type: 'string', max: 255, pattern: /^$|^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/, patternHint: 'a domain name (or empty: the server\'s host)' },
    [`${prefix}AttestationConveyancePreference`]: oneOf(ATTESTATION_PREFERENCES),
    [`${prefix}AuthenticatorAttachment`]: oneOf(AUTHENTICATOR_ATTACHMENTS),
    [`${prefix}RequireResidentKey`]: oneOf(REQUIRE_RESIDENT_KEY),
    [`${prefix}ResidentKey`]: oneOf(RESIDENT_KEY),
    [`${prefix}UserVerificationRequirement`]: oneOf(USER_VERIFICATION),
    [`${prefix}CreateTimeout`]: { type: 'integer', min: 0, max: 31536 },
    [`${prefix}AvoidSameAuthenticatorRegister`]: { type: 'boolean' },
    [`${prefix}AcceptableAaguids`]: { type: 'stringArray' },
    [`${prefix}ExtraOrigins`]: { type: 'stringArray' },
  };
}

const AAGUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The items of the WebAuthn policies' lists: Keycloak's algorithm names, AAGUIDs, and origins (scheme, host, port). */
function checkWebAuthnLists(rep: Record<string, unknown>, path: string): void {
  for (const prefix of [TWO_FACTOR_PREFIX, PASSWORDLESS_PREFIX]) {
    const each = (suffix: string, ok: (v: string) => boolean, hint: string) => {
      const field = `${prefix}${suffix}`;
      for (const [i, v] of ((rep[field] as string[] | undefined) ?? []).entries()) {
        if (!ok(v)) throw badRequest(`${path}.${field}[${i}]: must be ${hint}`, field);
      }
    };
    each('SignatureAlgorithms', (v) => (WEBAUTHN_SIGNATURE_ALGORITHMS as readonly string[]).includes(v), WEBAUTHN_SIGNATURE_ALGORITHMS.join(', '));
    each('AcceptableAaguids', (v) => AAGUID.test(v), 'an AAGUID (a UUID)');
    each('ExtraOrigins', (v) => {
      if (/^android:apk-key-hash:[A-Za-z0-9_-]{1,128}$/.test(v)) return true;
      try {
        const url = new URL(v);
        return url.origin === v && url.origin !== 'null';
      } catch {
        return false;
      }
    }, 'an origin such as https://example.com or android:apk-key-hash:… (scheme, host and port only)');
  }
}

/** Keycloak's brute-force fields (model/brute-force.ts); realmIgnored still names them, the spec comes first. */
function bruteForceSpec(): Spec {
  const seconds = { type: 'integer', min: 0 } as const;
  return {
    bruteForceProtected: { type: 'boolean' },
    permanentLockout: { type: 'boolean' },
    maxTemporaryLockouts: { type: 'integer', min: 0 },
    bruteForceStrategy: { type: 'string', pattern: /^(MULTIPLE|LINEAR)$/, patternHint: 'MULTIPLE or LINEAR' },
    failureFactor: { type: 'integer', min: 1 },
    waitIncrementSeconds: seconds,
    maxFailureWaitSeconds: seconds,
    maxDeltaTimeSeconds: seconds,
    quickLoginCheckMilliSeconds: { type: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
    minimumQuickLoginWaitSeconds: seconds,
  };
}

/** Keycloak RealmRepresentation fields this server accepts and does not use. */
export const realmIgnored = [
  'id', 'adminPermissionsClient',
  'adminPermissionsEnabled', 'adminTheme', 'authenticationFlows', 'authenticatorConfig', 
  'bruteForceProtected', 'clientAuthenticationFlow', 'clientScopeMappings', 'clientScopes',
  'components', 'defaultDefaultClientScopes', 'defaultGroups', 'defaultOptionalClientScopes', 'defaultRoles',
  'defaultRole', 'directGrantFlow', 'dockerAuthenticationFlow', 'editUsernameAllowed',
  'failureFactor', 'maxSecondaryAuthFailures', 'federatedUsers', 'groups', 'identityProviderMappers', 'identityProviders',
  'keycloakVersion', 'maxDeltaTimeSeconds', 'maxFailureWaitSeconds',
  'maxTemporaryLockouts', 'bruteForceStrategy', 'minimumQuickLoginWaitSeconds', 'verifiableCredentialsEnabled',
  'otpSupportedApplications', 'permanentLockout', 'protocolMappers',
  'quickLoginCheckMilliSeconds', 'registrationEmailAsUsername', 'rememberMe', 'requiredActions',
  'scopeMappings',
  'userFederationMappers', 'userFederationProviders', 'userManagedAccessAllowed', 'waitIncrementSeconds',
  'scimApiEnabled', 'firstBrokerLoginFlow', 'localizationTexts', 'organizations', 'roles', 'clients', 'users',
  // In every Keycloak export (not in the admin client's RealmRepresentation): the credential types a realm asks for.
  'requiredCredentials',
];

/**
 * The realm fields this server acts on, each with the source file (under src/) where it takes effect. Every other
 * accepted field (`realmSpec` or `realmIgnored`) has no effect here and is listed in the README's "Stored, not
 * enforced" table; test/silent-settings.test.ts holds the three together against Keycloak's RealmRepresentation.
 */
export const realmFieldUse: Record<string, string> = {
  realm: 'admin/realms.ts',
  clientProfiles: 'services/client-policies.ts',
  clientPolicies: 'services/client-policies.ts',
  oauth2DeviceCodeLifespan: 'protocol/openid-connect/device.ts',
  oauth2DevicePollingInterval: 'protocol/openid-connect/device.ts',
  displayName: 'pages/render.ts',
  internationalizationEnabled: 'model/locales.ts',
  supportedLocales: 'model/locales.ts',
  defaultLocale: 'model/locales.ts',
  loginTheme: 'pages/themes.ts',
  accountTheme: 'pages/themes.ts',
  emailTheme: 'pages/themes.ts',
  enabled: 'protocol/openid-connect/auth.ts',
  registrationAllowed: 'pages/registration.ts',
  resetPasswordAllowed: 'pages/reset.ts',
  verifyEmail: 'services/required-actions.ts',
  loginWithEmailAllowed: 'authentication/password.ts',
  duplicateEmailsAllowed: 'services/users.ts',
  organizationsEnabled: 'admin/organizations.ts',
  eventsEnabled: 'events/index.ts',
  eventsListeners: 'events/index.ts',
  enabledEventTypes: 'events/index.ts',
  adminEventsEnabled: 'events/index.ts',
  adminEventsDetailsEnabled: 'events/index.ts',
  smtpServer: 'mail/index.ts',
  browserFlow: 'flows/index.ts',
  registrationFlow: 'flows/index.ts',
  resetCredentialsFlow: 'flows/runner.ts',
  accessTokenLifespan: 'protocol/openid-connect/tokens.ts',
  notBefore: 'protocol/openid-connect/tokens.ts',
  ssoSessionIdleTimeout: 'model/sessions.ts',
  ssoSessionMaxLifespan: 'model/sessions.ts',
  revokeRefreshToken: 'protocol/openid-connect/token/refresh-token.ts',
  refreshTokenMaxReuse: 'protocol/openid-connect/token/refresh-token.ts',
  actionTokenGeneratedByUserLifespan: 'authentication/action-tokens.ts',
  actionTokenGeneratedByAdminLifespan: 'admin/user-action-emails.ts',
  accessCodeLifespan: 'authentication/authorization-code.ts',
  offlineSessionIdleTimeout: 'model/sessions.ts',
  offlineSessionMaxLifespanEnabled: 'model/sessions.ts',
  offlineSessionMaxLifespan: 'model/sessions.ts',
  clientSessionIdleTimeout: 'model/sessions.ts',
  clientSessionMaxLifespan: 'model/sessions.ts',
  clientOfflineSessionIdleTimeout: 'model/sessions.ts',
  clientOfflineSessionMaxLifespan: 'model/sessions.ts',
  browserSecurityHeaders: 'pages/render.ts',
  ...Object.fromEntries(BRUTE_FORCE_FIELDS.map((f) => [f, 'model/brute-force.ts'])),
  otpPolicyType: 'representations/realm.ts',
  otpPolicyAlgorithm: 'credentials/otp.ts',
  otpPolicyDigits: 'credentials/otp.ts',
  otpPolicyPeriod: 'credentials/otp.ts',
  otpPolicyLookAheadWindow: 'authentication/otp.ts',
  otpPolicyCodeReusable: 'authentication/otp.ts',
  passwordPolicy: 'authentication/password.ts',
  sslRequired: 'http/ssl-required.ts',
  defaultSignatureAlgorithm: 'protocol/openid-connect/tokens.ts',
  ...webAuthnFieldUse(TWO_FACTOR_PREFIX),
  ...webAuthnFieldUse(PASSWORDLESS_PREFIX),
};

/** Where each WebAuthn policy field takes effect; RequireResidentKey (Keycloak's older setting) is only kept. */
function webAuthnFieldUse(prefix: string): Record<string, string> {
  const fields = ['RpEntityName', 'SignatureAlgorithms', 'RpId', 'AttestationConveyancePreference', 'AuthenticatorAttachment', 'ResidentKey', 'UserVerificationRequirement', 'CreateTimeout', 'AvoidSameAuthenticatorRegister', 'AcceptableAaguids', 'ExtraOrigins'];
  return Object.fromEntries(fields.map((f) => [`${prefix}${f}`, 'authentication/webauthn.ts']));
}

export function realmRep(realm: Realm) {
  const smtp = { ...realm.smtpServer };
  if (smtp.password) smtp.password = SMTP_MASK;
  return {
    id: realm.id,
    realm: realm.name,
    ...(realm.displayName !== null ? { displayName: realm.displayName } : {}),
    // Kept as Keycloak keeps it (a realm attribute of that name); the pages show displayName, never this HTML.
    ...(realm.attributes.displayNameHtml ? { displayNameHtml: realm.attributes.displayNameHtml } : {}),
    notBefore: realm.notBefore,
    defaultSignatureAlgorithm: realm.defaultSignatureAlgorithm ?? 'RS256',
    revokeRefreshToken: realm.revokeRefreshToken,
    refreshTokenMaxReuse: realm.refreshTokenMaxReuse,
    actionTokenGeneratedByUserLifespan: realm.actionTokenGeneratedByUserLifespan,
    actionTokenGeneratedByAdminLifespan: realm.actionTokenGeneratedByAdminLifespan,
    accessCodeLifespan: realm.accessCodeLifespan,
    accessTokenLifespan: realm.accessTokenLifespan,
    ssoSessionIdleTimeout: realm.ssoSessionIdleTimeout,
    ssoSessionMaxLifespan: realm.ssoSessionMaxLifespan,
    offlineSessionIdleTimeout: realm.offlineSessionIdleTimeout,
    offlineSessionMaxLifespanEnabled: realm.offlineSessionMaxLifespanEnabled,
    offlineSessionMaxLifespan: realm.offlineSessionMaxLifespan,
    ...realm.lifespans,
    enabled: realm.enabled,
    sslRequired: realm.sslRequired,
    registrationAllowed: realm.registrationAllowed,
    registrationEmailAsUsername: false,
    rememberMe: false,
    verifyEmail: realm.verifyEmail,
    loginWithEmailAllowed: realm.loginWithEmailAllowed,
    duplicateEmailsAllowed: realm.duplicateEmailsAllowed,
    resetPasswordAllowed: realm.resetPasswordAllowed,
    editUsernameAllowed: false,
    ...realm.bruteForce,
    // Wrong OTP codes count with wrong passwords (failureFactor): no second counter.
    maxSecondaryAuthFailures: 0,
    requiredCredentials: ['password'],
    ...realm.otpPolicy,
    ...webAuthnPolicyRep(realm.webAuthnPolicies),
    otpSupportedApplications: ['totpAppFreeOTPName', 'totpAppGoogleName', 'totpAppMicrosoftAuthenticatorName'],
    organizationsEnabled: realm.organizationsEnabled,
    ...eventsConfigRep(realm),
    browserSecurityHeaders: { ...realm.browserSecurityHeaders },
    smtpServer: smtp,
    browserFlow: realm.browserFlow,
    registrationFlow: realm.registrationFlow,
    resetCredentialsFlow: realm.resetCredentialsFlow,
    directGrantFlow: 'direct grant',
    clientAuthenticationFlow: 'clients',
    // Not a setting here yet: the built-in flow, until identity brokering binds its own.
    firstBrokerLoginFlow: 'first broker login',
    dockerAuthenticationFlow: 'docker auth',
    // Features this server does not have, answered as Keycloak answers them when off.
    userManagedAccessAllowed: false,
    verifiableCredentialsEnabled: false,
    adminPermissionsEnabled: false,
    scimApiEnabled: false,
    attributes: Object.fromEntries(Object.entries(realm.attributes).filter(([key]) => !(FIELD_ATTRIBUTES as readonly string[]).includes(key))),
    ...deviceFields(realm),
    ...localeFields(realm),
    ...Object.fromEntries(Object.keys(THEME_FIELDS).flatMap((field) => (realm.attributes[field] ? [[field, realm.attributes[field]]] : []))),
    ...(realm.passwordPolicy ? { passwordPolicy: realm.passwordPolicy } : {}),
    // As Keycloak's realm representation (and its exports) carry them.
    clientProfiles: { profiles: realm.clientProfiles ?? [] },
    clientPolicies: { policies: realm.clientPolicies ?? [] },
  };
}

/** Keycloak's RealmEventsConfigRepresentation: these realm fields, validated as in the realm PUT. */
export const eventsConfigFields = ['eventsEnabled', 'eventsExpiration', 'eventsListeners', 'enabledEventTypes', 'adminEventsEnabled', 'adminEventsDetailsEnabled'] as const;
export const eventsConfigSpec = Object.fromEntries(eventsConfigFields.map((f) => [f, realmSpec[f]]));

export const eventsConfigRep = (realm: Realm) => ({
  eventsEnabled: realm.eventsEnabled,
  ...(realm.eventsExpiration !== null ? { eventsExpiration: realm.eventsExpiration } : {}),
  eventsListeners: realm.eventsListeners,
  enabledEventTypes: realm.enabledEventTypes,
  adminEventsEnabled: realm.adminEventsEnabled,
  adminEventsDetailsEnabled: realm.adminEventsDetailsEnabled,
});

/** Representation fields that are stored under the same name in the realm model. */
const sameNamedSettings = [
  'displayName', 'enabled', 'registrationAllowed', 'resetPasswordAllowed', 'verifyEmail', 'loginWithEmailAllowed',
  'duplicateEmailsAllowed', 'organizationsEnabled', 'eventsEnabled', 'eventsExpiration', 'enabledEventTypes',
  'adminEventsEnabled', 'adminEventsDetailsEnabled', 'browserFlow', 'registrationFlow', 'resetCredentialsFlow',
  'accessTokenLifespan', 'ssoSessionIdleTimeout', 'ssoSessionMaxLifespan', 'revokeRefreshToken', 'refreshTokenMaxReuse',
  'actionTokenGeneratedByUserLifespan', 'actionTokenGeneratedByAdminLifespan', 'accessCodeLifespan',
  'offlineSessionIdleTimeout', 'offlineSessionMaxLifespanEnabled', 'offlineSessionMaxLifespan', 'attributes', 'passwordPolicy',
] as const satisfies readonly (keyof Realm)[];

/**
 * Applies a (partial) realm representation: given fields change, absent ones stay, as Keycloak's realm PUT. With
 * `knownListeners` (the events config) an event listener that is not installed is refused; without it (realm PUT,
 * POST and import) it is stored as Keycloak 26 stores it, and the events service skips it with a warning.
 */
export function applyRealmSettings(realm: Realm, rep: Record<string, unknown>, path = 'realm', knownListeners?: (id: string) => boolean): void {
  const listeners = rep.eventsListeners as string[] | undefined;
  for (const [i, id] of (listeners ?? []).entries()) {
    if (knownListeners && !knownListeners(id)) throw badRequest(`${path}.eventsListeners[${i}]: no event listener "${id}" is installed`, 'eventsListeners');
  }
  const smtp = rep.smtpServer as Realm['smtpServer'] | undefined;
  if (smtp?.password === SMTP_MASK) smtp.password = realm.smtpServer.password;
  if (smtp?.port !== undefined && smtp.port !== '' && !/^\d{1,5}$/.test(smtp.port)) throw badRequest(`${path}.smtpServer.port: must be a port number`, 'smtpServer');
  const policy = rep.passwordPolicy as string | undefined;
  if (policy !== undefined) {
    const parsed = parsePasswordPolicy(policy);
    if (!parsed.ok) throw badRequest(`${path}.passwordPolicy: ${parsed.rule} ${parsed.message}`, 'passwordPolicy');
  }
  checkWebAuthnLists(rep, path);
  if (rep.otpPolicyDigits === 7) throw badRequest(`${path}.otpPolicyDigits: must be 6 or 8`, 'otpPolicyDigits');
  const localesBefore = Object.fromEntries(FIELD_ATTRIBUTES.filter((key) => realm.attributes[key] !== undefined).map((key) => [key, realm.attributes[key]]));
  const set = <K extends keyof Realm>(key: K, value: unknown) => {
    if (value !== undefined) realm[key] = value as Realm[K];
  };
  set('name', rep.realm);
  set('notBefore', rep.notBefore);
  set('eventsListeners', listeners);
  set('smtpServer', smtp);
  // Keycloak reads the value case-insensitively (kcadm's `-s sslRequired=NONE`) and answers it in lower case.
  set('sslRequired', (rep.sslRequired as string | undefined)?.toLowerCase());
  // "" (the console's untouched select) is the default, RS256.
  if (rep.defaultSignatureAlgorithm !== undefined) realm.defaultSignatureAlgorithm = (rep.defaultSignatureAlgorithm as string) || null;
  for (const key of sameNamedSettings) set(key, rep[key]);
  const bruteForce = { ...realm.bruteForce };
  for (const key of BRUTE_FORCE_FIELDS) if (rep[key] !== undefined) Object.assign(bruteForce, { [key]: rep[key] });
  realm.bruteForce = bruteForce;
  const otpPolicy = { ...realm.otpPolicy };
  for (const key of OTP_POLICY_FIELDS) if (rep[key] !== undefined) Object.assign(otpPolicy, { [key]: rep[key] });
  realm.otpPolicy = otpPolicy;
  realm.webAuthnPolicies = applyWebAuthnPolicyRep(realm.webAuthnPolicies, rep);
  const lifespans = { ...realm.lifespans };
  for (const key of LIFESPAN_FIELDS) if (rep[key] !== undefined) lifespans[key] = rep[key] as number;
  realm.lifespans = lifespans;
  const headers = rep.browserSecurityHeaders as Record<string, string> | undefined;
  if (headers !== undefined) realm.browserSecurityHeaders = applyBrowserSecurityHeaders(realm.browserSecurityHeaders, headers, path);
  // Keycloak's OAuth2DeviceConfig writes these two as realm attributes; the device grant reads them there.
  // A value that is already in effect (the default, say) writes nothing, so an export imported again is the same realm.
  const effective = deviceFields(realm);
  for (const [key] of DEVICE_FIELDS) if (rep[key] !== undefined && rep[key] !== effective[key]) realm.attributes = { ...realm.attributes, [key]: String(rep[key]) };
  // The representation's `attributes` do not carry these fields: a PUT of `attributes` keeps them.
  if (rep.attributes !== undefined) realm.attributes = { ...localesBefore, ...realm.attributes };
  applyLocaleFields(realm, rep, path);
  // Keycloak's realm update replaces them when given: profiles first, the policies name them.
  if (rep.clientProfiles !== undefined) realm.clientProfiles = parseClientProfiles(rep.clientProfiles, `${path}.clientProfiles`);
  if (rep.clientPolicies !== undefined) realm.clientPolicies = parseClientPolicies(rep.clientPolicies, realm.clientProfiles ?? [], `${path}.clientPolicies`);
  const themed = { ...realm.attributes };
  for (const field of Object.keys(THEME_FIELDS)) {
    const name = rep[field] as string | undefined;
    if (name) themed[field] = name;
    else if (name === '') delete themed[field];
  }
  if (rep.displayNameHtml) themed.displayNameHtml = rep.displayNameHtml as string;
  else if (rep.displayNameHtml === '') delete themed.displayNameHtml;
  realm.attributes = themed;
}

/** A realm's browserSecurityHeaders after a representation's: given names replaced, others kept (as Keycloak's update). */
function applyBrowserSecurityHeaders(current: BrowserSecurityHeaders, given: Record<string, string>, path: string): BrowserSecurityHeaders {
  const headers = { ...current };
  for (const [key, value] of Object.entries(given)) {
    if (RETIRED_BROWSER_SECURITY_HEADERS.includes(key)) continue;
    if (!(key in BROWSER_SECURITY_HEADERS)) throw badRequest(`${path}.browserSecurityHeaders.${key}: not a header Keycloak names (${Object.keys(BROWSER_SECURITY_HEADERS).join(', ')})`, 'browserSecurityHeaders');
    if (!HEADER_VALUE.test(value)) throw badRequest(`${path}.browserSecurityHeaders.${key}: must be one line of printable characters (at most 2048)`, 'browserSecurityHeaders');
    headers[key as keyof BrowserSecurityHeaders] = value;
  }
  return headers;
}

/** Keycloak's internationalization fields, kept as realm attributes of the same names (model/locales.ts). */
const LOCALE_FIELDS = ['internationalizationEnabled', 'supportedLocales', 'defaultLocale'] as const;
/** Representation fields kept as realm attributes: not in the representation's `attributes`, kept by a PUT of them. */
const FIELD_ATTRIBUTES = [...LOCALE_FIELDS, ...(Object.keys(THEME_FIELDS) as (keyof typeof THEME_FIELDS)[]), 'displayNameHtml'];

/** Keycloak's internationalization fields as its representation answers them (the realm's attributes of those names). */
function localeFields(realm: Realm): Record<string, unknown> {
  const { enabled, defaultLocale } = realmLocales(realm);
  const listed = (realm.attributes.supportedLocales ?? '').split(',').filter(Boolean);
  return { internationalizationEnabled: enabled, supportedLocales: listed, ...(realm.attributes.defaultLocale ? { defaultLocale } : {}) };
}

/** A locale is a BCP 47 tag (`de`, `pt-BR`): anything else is a 400 naming the field. */
function applyLocaleFields(realm: Realm, rep: Record<string, unknown>, path: string): void {
  const attributes = { ...realm.attributes };
  if (rep.internationalizationEnabled === true) attributes.internationalizationEnabled = 'true';
  else if (rep.internationalizationEnabled === false) delete attributes.internationalizationEnabled;
  const supported = rep.supportedLocales as string[] | undefined;
  if (supported !== undefined) {
    for (const [i, locale] of supported.entries()) if (!LOCALE_TAG.test(locale)) throw badRequest(`${path}.supportedLocales[${i}]: not a locale such as de or pt-BR`, 'supportedLocales');
    if (supported.length) attributes.supportedLocales = [...new Set(supported)].join(',');
    else delete attributes.supportedLocales;
  }
  const defaultLocale = rep.defaultLocale as string | undefined;
  if (defaultLocale !== undefined) {
    if (defaultLocale !== '' && !LOCALE_TAG.test(defaultLocale)) throw badRequest(`${path}.defaultLocale: not a locale such as de or pt-BR`, 'defaultLocale');
    if (defaultLocale) attributes.defaultLocale = defaultLocale;
    else delete attributes.defaultLocale;
  }
  realm.attributes = attributes;
}

/**
 * Representation numbers Keycloak keeps as realm attributes of the same names, with its defaults: the device grant's
 * (a device code lives 600 s and may be polled every 5 s).
 */
const DEVICE_FIELDS = [
  ['oauth2DeviceCodeLifespan', 600],
  ['oauth2DevicePollingInterval', 5],
] as const;

/** The device fields as Keycloak's representation answers them: numbers, from the realm's attributes or the defaults. */
function deviceFields(realm: Realm): Record<string, number> {
  return Object.fromEntries(DEVICE_FIELDS.map(([key, fallback]) => [key, Number(realm.attributes[key]) > 0 ? Number(realm.attributes[key]) : fallback]));
}
