import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, conflict, forbidden } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { defaultRolesName, grantAdminClientRoles, provisionRealm, removeAdminClient, renameAdminClient } from '../services/index.js';
import { isUniqueViolation } from '../storage/index.js';
import { hasAnyRole, isSuperAdmin, requireRole } from './permissions.js';
import { importRealmContents, parseRealmImport } from './realm-import.js';
import { callerOf, locationOf, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';
import { parseRepresentation, type Spec } from './validation.js';

const SMTP_MASK = '**********';

export const realmSpec: Spec = {
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
  attributes: { type: 'stringMap', max: 4096 },
};

/** Keycloak RealmRepresentation fields this server accepts and does not use. */
export const realmIgnored = [
  'id', 'accessCodeLifespan', 'accessCodeLifespanLogin', 'accessCodeLifespanUserAction', 'accessTokenLifespanForImplicitFlow',
  'accountTheme', 'actionTokenGeneratedByAdminLifespan', 'actionTokenGeneratedByUserLifespan', 'adminPermissionsClient',
  'adminPermissionsEnabled', 'adminTheme', 'authenticationFlows', 'authenticatorConfig', 'browserSecurityHeaders',
  'bruteForceProtected', 'clientAuthenticationFlow', 'clientScopeMappings', 'clientScopes', 'clientPolicies', 'clientProfiles',
  'components', 'defaultDefaultClientScopes', 'defaultGroups', 'defaultLocale', 'defaultOptionalClientScopes', 'defaultRoles',
  'defaultRole', 'defaultSignatureAlgorithm', 'directGrantFlow', 'dockerAuthenticationFlow', 'editUsernameAllowed', 'emailTheme',
  'failureFactor', 'maxSecondaryAuthFailures', 'federatedUsers', 'groups', 'identityProviderMappers', 'identityProviders',
  'internationalizationEnabled', 'keycloakVersion', 'loginTheme', 'maxDeltaTimeSeconds', 'maxFailureWaitSeconds',
  'maxTemporaryLockouts', 'bruteForceStrategy', 'minimumQuickLoginWaitSeconds', 'notBefore', 'offlineSessionIdleTimeout',
  'offlineSessionMaxLifespan', 'offlineSessionMaxLifespanEnabled', 'verifiableCredentialsEnabled', 'otpPolicyAlgorithm',
  'otpPolicyDigits', 'otpPolicyInitialCounter', 'otpPolicyLookAheadWindow', 'otpPolicyPeriod', 'otpPolicyType',
  'otpSupportedApplications', 'otpPolicyCodeReusable', 'passwordPolicy', 'permanentLockout', 'protocolMappers',
  'quickLoginCheckMilliSeconds', 'refreshTokenMaxReuse', 'registrationEmailAsUsername', 'rememberMe', 'requiredActions',
  'revokeRefreshToken', 'scopeMappings', 'sslRequired', 'ssoSessionIdleTimeoutRememberMe', 'ssoSessionMaxLifespanRememberMe',
  'clientSessionIdleTimeout', 'clientSessionMaxLifespan', 'clientOfflineSessionIdleTimeout', 'clientOfflineSessionMaxLifespan',
  'supportedLocales', 'userFederationMappers', 'userFederationProviders', 'userManagedAccessAllowed', 'waitIncrementSeconds',
  'webAuthnPolicyPasswordlessPasskeysEnabled', 'scimApiEnabled', 'webAuthnPolicyRpEntityName', 'webAuthnPolicySignatureAlgorithms',
  'webAuthnPolicyRpId', 'webAuthnPolicyAttestationConveyancePreference', 'webAuthnPolicyAuthenticatorAttachment',
  'webAuthnPolicyRequireResidentKey', 'webAuthnPolicyUserVerificationRequirement', 'webAuthnPolicyCreateTimeout',
  'webAuthnPolicyAvoidSameAuthenticatorRegister', 'webAuthnPolicyAcceptableAaguids', 'webAuthnPolicyExtraOrigins',
  'webAuthnPolicyPasswordlessRpEntityName', 'webAuthnPolicyPasswordlessSignatureAlgorithms', 'webAuthnPolicyPasswordlessRpId',
  'webAuthnPolicyPasswordlessAttestationConveyancePreference', 'webAuthnPolicyPasswordlessAuthenticatorAttachment',
  'webAuthnPolicyPasswordlessRequireResidentKey', 'webAuthnPolicyPasswordlessUserVerificationRequirement',
  'webAuthnPolicyPasswordlessCreateTimeout', 'webAuthnPolicyPasswordlessAvoidSameAuthenticatorRegister',
  'webAuthnPolicyPasswordlessAcceptableAaguids', 'webAuthnPolicyPasswordlessExtraOrigins', 'oauth2DeviceCodeLifespan',
  'oauth2DevicePollingInterval', 'firstBrokerLoginFlow', 'localizationTexts', 'organizations', 'roles', 'clients', 'users',
];

export function realmRep(realm: Realm) {
  const smtp = { ...realm.smtpServer };
  if (smtp.password) smtp.password = SMTP_MASK;
  return {
    id: realm.id,
    realm: realm.name,
    ...(realm.displayName !== null ? { displayName: realm.displayName } : {}),
    notBefore: 0,
    defaultSignatureAlgorithm: 'RS256',
    revokeRefreshToken: true,
    refreshTokenMaxReuse: 0,
    accessTokenLifespan: realm.accessTokenLifespan,
    ssoSessionIdleTimeout: realm.ssoSessionIdleTimeout,
    ssoSessionMaxLifespan: realm.ssoSessionMaxLifespan,
    enabled: realm.enabled,
    sslRequired: 'external',
    registrationAllowed: realm.registrationAllowed,
    registrationEmailAsUsername: false,
    rememberMe: false,
    verifyEmail: realm.verifyEmail,
    loginWithEmailAllowed: realm.loginWithEmailAllowed,
    duplicateEmailsAllowed: realm.duplicateEmailsAllowed,
    resetPasswordAllowed: realm.resetPasswordAllowed,
    editUsernameAllowed: false,
    bruteForceProtected: false,
    organizationsEnabled: realm.organizationsEnabled,
    eventsEnabled: realm.eventsEnabled,
    ...(realm.eventsExpiration !== null ? { eventsExpiration: realm.eventsExpiration } : {}),
    eventsListeners: realm.eventsListeners,
    enabledEventTypes: realm.enabledEventTypes,
    adminEventsEnabled: realm.adminEventsEnabled,
    adminEventsDetailsEnabled: realm.adminEventsDetailsEnabled,
    smtpServer: smtp,
    browserFlow: realm.browserFlow,
    registrationFlow: realm.registrationFlow,
    resetCredentialsFlow: realm.resetCredentialsFlow,
    directGrantFlow: 'direct grant',
    clientAuthenticationFlow: 'clients',
    attributes: realm.attributes,
  };
}

/** Representation fields that are stored under the same name in the realm model. */
const sameNamedSettings = [
  'displayName', 'enabled', 'registrationAllowed', 'resetPasswordAllowed', 'verifyEmail', 'loginWithEmailAllowed',
  'duplicateEmailsAllowed', 'organizationsEnabled', 'eventsEnabled', 'eventsExpiration', 'enabledEventTypes',
  'adminEventsEnabled', 'adminEventsDetailsEnabled', 'browserFlow', 'registrationFlow', 'resetCredentialsFlow',
  'accessTokenLifespan', 'ssoSessionIdleTimeout', 'ssoSessionMaxLifespan', 'attributes',
] as const satisfies readonly (keyof Realm)[];

/** Applies a (partial) realm representation: given fields change, absent ones stay, as Keycloak's realm PUT. */
export function applyRealmSettings(realm: Realm, rep: Record<string, unknown>, knownListeners: (id: string) => boolean, path = 'realm'): void {
  const listeners = rep.eventsListeners as string[] | undefined;
  for (const [i, id] of (listeners ?? []).entries()) {
    if (!knownListeners(id)) throw badRequest(`${path}.eventsListeners[${i}]: no event listener "${id}" is installed`, 'eventsListeners');
  }
  const smtp = rep.smtpServer as Realm['smtpServer'] | undefined;
  if (smtp?.password === SMTP_MASK) smtp.password = realm.smtpServer.password;
  if (smtp?.port !== undefined && smtp.port !== '' && !/^\d{1,5}$/.test(smtp.port)) throw badRequest(`${path}.smtpServer.port: must be a port number`, 'smtpServer');
  const set = <K extends keyof Realm>(key: K, value: unknown) => {
    if (value !== undefined) realm[key] = value as Realm[K];
  };
  set('name', rep.realm);
  set('eventsListeners', listeners);
  set('smtpServer', smtp);
  for (const key of sameNamedSettings) set(key, rep[key]);
}

export function realmRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;

  app.get('/realms', async (request: AdminRequest) => {
    const caller = callerOf(request);
    // A master caller may administer any realm through master's {realm}-realm clients; others only their own.
    const candidates = caller.realm.name === 'master' ? await ctx.storage.realms.list() : [caller.realm];
    const realms = candidates.filter((r) => hasAnyRole(caller, r));
    // Keycloak answers 403, not an empty list, to a caller who may see no realm at all.
    if (realms.length === 0) throw forbidden('No realm is visible to this caller');
    return realms.map(realmRep);
  });

  app.post('/realms', async (request: AdminRequest, reply) => {
    const caller = callerOf(request);
    requireRole(caller, null, 'create-realm');
    const parsed = parseRealmImport(request.body, isListener);
    if (await ctx.storage.realms.byName(parsed.settings.realm as string)) throw conflict(`Realm ${String(parsed.settings.realm)} already exists`, 'realm');
    let realm: Realm;
    try {
      // Keycloak gives a creator who is not the master administrator every role over the new realm, so what the
      // import grants inside that realm is never more than the creator holds afterwards.
      realm = await createRealmFromImport(ctx, parsed, isSuperAdmin(caller) ? null : caller.userId);
    } catch (error) {
      // Another request created the same name between the check above and the insert.
      if (isUniqueViolation(error)) throw conflict(`Realm ${String(parsed.settings.realm)} already exists`, 'realm');
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'REALM', '', realmRep(realm));
    return reply.code(201).header('location', locationOf(ctx, request, realm.name)).send();
  });

  app.get('/realms/:realm', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    if (!hasAnyRole(callerOf(request), realm)) requireRole(callerOf(request), realm, 'view-realm');
    return realmRep(realm);
  });

  app.put('/realms/:realm', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'manage-realm');
    const rep = parseRepresentation(request.body, realmSpec, realmIgnored, 'realm');
    if (rep.realm !== undefined && rep.realm !== realm.name && realm.name === 'master') throw badRequest('realm.realm: the master realm cannot be renamed', 'realm');
    const updated = structuredClone(realm);
    applyRealmSettings(updated, rep, isListener);
    const binding = await ctx.flows.validateBindings(updated);
    if (binding) throw badRequest(binding.message, binding.field);
    try {
      await ctx.storage.transaction(async (trx) => {
        await ctx.storage.realms.update(updated, trx);
        // New users get the default role by its name, default-roles-<realm>: it is renamed with the realm, as Keycloak does.
        if (updated.name !== realm.name) {
          await renameAdminClient(realm.name, updated.name, trx);
          await trx
            .updateTable('role')
            .set({ name: defaultRolesName(updated.name) })
            .where('container_id', '=', realm.id)
            .where('name', '=', defaultRolesName(realm.name))
            .execute();
        }
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(`Realm ${updated.name} already exists`, 'realm');
      throw error;
    }
    await recordAdminEvent(ctx, request, updated, 'UPDATE', 'REALM', '', realmRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'manage-realm');
    if (realm.name === 'master') throw badRequest('The master realm cannot be deleted');
    await ctx.storage.transaction(async (trx) => {
      await removeAdminClient(realm.name, trx);
      await ctx.storage.realms.delete(realm.id, trx);
    });
    const master = await ctx.storage.realms.byName('master');
    if (master) await recordAdminEvent(ctx, request, master, 'DELETE', 'REALM', `realms/${realm.name}`);
    return reply.code(204).send();
  });
}

/** Creates a realm from an import; `creatorUserId`, a master user, is given every role of master's client for it. */
export async function createRealmFromImport(ctx: ServerContext, parsed: ReturnType<typeof parseRealmImport>, creatorUserId: string | null = null): Promise<Realm> {
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;
  return ctx.storage.transaction(async (trx) => {
    const realm = await provisionRealm(ctx.storage, ctx.keys, ctx.flows, parsed.settings.realm as string, (r) => applyRealmSettings(r, parsed.settings, isListener), trx);
    await importRealmContents(ctx, realm, parsed, trx);
    if (creatorUserId) await grantAdminClientRoles(creatorUserId, realm.name, trx);
    return realm;
  });
}
