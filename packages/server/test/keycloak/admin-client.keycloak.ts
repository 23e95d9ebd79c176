import KcAdminClient from '@keycloak/keycloak-admin-client';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/server.js';
import { startSmtp } from '../support/smtp.js';
import { addUser, passwordGrant, startBoth, USER_PASSWORD, type Both, type Side, type SideName } from './both.js';
import { differences, type ListedDifference } from './differences.js';

/**
 * Issue 41's breadth measure: every method of the official admin client (@keycloak/keycloak-admin-client, enumerated
 * from the client object at run time, so a new version's methods are counted), called once with valid arguments
 * against a realm set up alike on Keycloak 26.7.3 and on Realmgate. A method works when its call does not throw.
 *
 * The figure: of the methods that work on Keycloak, excluding Authorization Services and workflows, the share that
 * works on Realmgate. The test fails when it drops below FLOOR, when a method that works on Keycloak fails on
 * Realmgate without being listed in differences.ts (case BREADTH, path `works.<resource>.<method>`), when a GET
 * answer of Realmgate lacks a top-level key of Keycloak's without being listed (`keys.<resource>.<method>.<key>`),
 * when a listed difference no longer occurs, and when the client has a method with no row here.
 */

const BREADTH = 'admin-client breadth';
/** The share reached (Realmgate works / Keycloak works, in per cent; 288 of 289 on 2026-11-29): a floor that fails when it regresses. */
const FLOOR = 99.6;

/** What each side's calls use: the fixture's ids, and what earlier calls made (filled in as they run). */
interface Fixture {
  side: Side;
  realm: string;
  app: string;
  appRoleId: string;
  alice: string;
  bob?: string;
  team: string;
  sub?: string;
  readerId: string;
  compositeId: string;
  scope: string;
  scopeMapper: string;
  appMapper: string;
  org: string;
  idpMapper?: string;
  component?: string;
  flowId?: string;
  executionId?: string;
  configId?: string;
  initialAccess?: string;
  sessionId?: string;
  passwordCredential?: string;
  bobCredential?: string;
  tmpRoleId?: string;
  tmpScope?: string;
  tmpClient?: string;
  tmpOrg?: string;
  tmpIdp?: string;
  discovery: string;
  [more: string]: unknown;
}

type Call = (kc: KcAdminClient, f: Fixture) => Promise<unknown>;
/** A row: how to call the method, or why it is not called (counted apart, never silently dropped). */
type Row = Call | { notCalled: string };

const AUTHZ = 'Authorization Services (out of scope, issue 41): not called, not counted';
const WORKFLOWS = 'workflows (a preview feature, out of scope, issue 41): not called, not counted';
const HELPER = 'a local helper of the client: sends no request';

const AUTHZ_CLIENT_METHODS = [
  'getResourceServer', 'updateResourceServer', 'listResources', 'createResource', 'getResource', 'updateResource', 'delResource', 'importResource', 'exportResource',
  'evaluateResource', 'listPolicies', 'findPolicyByName', 'updatePolicy', 'createPolicy', 'findOnePolicyWithType', 'findOnePolicy', 'listDependentPolicies', 'delPolicy',
  'listPolicyProviders', 'listAllScopes', 'listAllResourcesByScope', 'listAllPermissionsByScope', 'listPermissionsByResource', 'listScopesByResource', 'listPermissionScope',
  'createAuthorizationScope', 'updateAuthorizationScope', 'getAuthorizationScope', 'delAuthorizationScope', 'findPermissions', 'createPermission', 'updatePermission',
  'delPermission', 'findOnePermission', 'getAssociatedScopes', 'getAssociatedResources', 'getAssociatedPolicies', 'createOrUpdatePolicy', 'evaluatePermission',
  // Fine-grained admin permissions are Authorization Services policies on the realm-management client.
  'updateFineGrainPermission', 'listFineGrainPermissions',
];

const role = async (kc: KcAdminClient, name: string) => {
  const r = await kc.roles.findOneByName({ name });
  return { id: r!.id!, name: r!.name! };
};
const appRole = (f: Fixture) => ({ id: f.appRoleId, name: 'app-role' });
const form = (fields: Record<string, string>) => {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  return data;
};
const idp = (alias: string, f: Fixture) => ({
  alias,
  providerId: 'oidc',
  enabled: true,
  config: { authorizationUrl: `${f.discovery}/auth`, tokenUrl: `${f.discovery}/token`, clientId: 'rg', clientSecret: 'up-secret', clientAuthMethod: 'client_secret_post', syncMode: 'LEGACY' },
});

/**
 * The table: `resource.method` → how to call it. Calls run in this order (reads, then writes, then deletions), so
 * a row may use what an earlier row made (`f.bob`, `f.flowId`…).
 */
const ROWS: Record<string, Row> = {
  // --- server-wide
  'serverInfo.find': (kc) => kc.serverInfo.find(),
  'serverInfo.findEffectiveMessageBundles': (kc, f) => kc.serverInfo.findEffectiveMessageBundles({ realm: f.realm, themeType: 'login', locale: 'en', source: false } as never),
  // The console's whoami is asked of the realm the administrator signed in to (master), about the realm it shows.
  'whoAmI.find': async (kc, f) => {
    kc.setConfig({ realmName: 'master' });
    try {
      return await kc.whoAmI.find({ currentRealm: f.realm });
    } finally {
      kc.setConfig({ realmName: f.realm });
    }
  },

  // --- realms
  'realms.find': (kc) => kc.realms.find(),
  'realms.findOne': (kc, f) => kc.realms.findOne({ realm: f.realm }),
  'realms.update': (kc, f) => kc.realms.update({ realm: f.realm }, { displayName: 'Breadth' }),
  'realms.create': (kc, f) => kc.realms.create({ realm: `${f.realm}-x`, enabled: true }),
  'realms.del': (kc, f) => kc.realms.del({ realm: `${f.realm}-x` }),
  'realms.partialImport': (kc, f) => kc.realms.partialImport({ realm: f.realm, rep: { ifResourceExists: 'SKIP', roles: { realm: [{ name: 'imported' }] } } as never }),
  'realms.export': (kc, f) => kc.realms.export({ realm: f.realm, exportClients: true, exportGroupsAndRoles: true }),
  'realms.getDefaultGroups': (kc, f) => kc.realms.getDefaultGroups({ realm: f.realm }),
  'realms.addDefaultGroup': (kc, f) => kc.realms.addDefaultGroup({ realm: f.realm, id: f.team }),
  'realms.removeDefaultGroup': (kc, f) => kc.realms.removeDefaultGroup({ realm: f.realm, id: f.team }),
  'realms.getGroupByPath': (kc, f) => kc.realms.getGroupByPath({ realm: f.realm, path: 'team' }),
  'realms.findEvents': (kc, f) => kc.realms.findEvents({ realm: f.realm, max: 10 }),
  'realms.getConfigEvents': (kc, f) => kc.realms.getConfigEvents({ realm: f.realm }),
  'realms.updateConfigEvents': (kc, f) => kc.realms.updateConfigEvents({ realm: f.realm }, { eventsEnabled: true, adminEventsEnabled: true, eventsListeners: ['jboss-logging'] }),
  'realms.clearEvents': (kc, f) => kc.realms.clearEvents({ realm: f.realm }),
  'realms.clearAdminEvents': (kc, f) => kc.realms.clearAdminEvents({ realm: f.realm }),
  'realms.findAdminEvents': (kc, f) => kc.realms.findAdminEvents({ realm: f.realm, max: 10 }),
  'realms.getClientRegistrationPolicyProviders': (kc, f) => kc.realms.getClientRegistrationPolicyProviders({ realm: f.realm }),
  'realms.getClientsInitialAccess': (kc, f) => kc.realms.getClientsInitialAccess({ realm: f.realm }),
  'realms.createClientsInitialAccess': async (kc, f) => {
    const made = await kc.realms.createClientsInitialAccess({ realm: f.realm }, { count: 1, expiration: 3600 });
    f.initialAccess = made.id;
    return made;
  },
  'realms.delClientsInitialAccess': (kc, f) => kc.realms.delClientsInitialAccess({ realm: f.realm, id: f.initialAccess! }),
  'realms.getUsersManagementPermissions': (kc, f) => kc.realms.getUsersManagementPermissions({ realm: f.realm }),
  'realms.updateUsersManagementPermissions': (kc, f) => kc.realms.updateUsersManagementPermissions({ realm: f.realm, enabled: false }),
  'realms.getClientSessionStats': (kc, f) => kc.realms.getClientSessionStats({ realm: f.realm }),
  'realms.getKeys': (kc, f) => kc.realms.getKeys({ realm: f.realm }),
  'realms.testLDAPConnection': { notCalled: 'needs an LDAP server; none runs on loopback in the suite' },
  'realms.ldapServerCapabilities': { notCalled: 'needs an LDAP server; none runs on loopback in the suite' },
  'realms.testSMTPConnection': (kc, f) => kc.realms.testSMTPConnection({ realm: f.realm }, { ...f.smtpServer as Record<string, string>, to: 'admin@diff.example' } as never),
  'realms.getRealmSpecificLocales': (kc, f) => kc.realms.getRealmSpecificLocales({ realm: f.realm }),
  'realms.addLocalization': (kc, f) => kc.realms.addLocalization({ realm: f.realm, selectedLocale: 'en', key: 'breadth' }, 'Breadth'),
  'realms.getRealmLocalizationTexts': (kc, f) => kc.realms.getRealmLocalizationTexts({ realm: f.realm, selectedLocale: 'en' }),
  'realms.deleteRealmLocalizationTexts': (kc, f) => kc.realms.deleteRealmLocalizationTexts({ realm: f.realm, selectedLocale: 'en', key: 'breadth' }),
  'realms.pushRevocation': (kc, f) => kc.realms.pushRevocation({ realm: f.realm }),
  'realms.deleteSession': async (kc, f) => {
    await passwordGrant(f.side, 'alice');
    const [session] = await kc.users.listSessions({ id: f.alice });
    return kc.realms.deleteSession({ realm: f.realm, session: session.id!, isOffline: false });
  },
  'realms.removeSession': async (kc, f) => {
    await passwordGrant(f.side, 'alice');
    const [session] = await kc.users.listSessions({ id: f.alice });
    return kc.realms.removeSession({ realm: f.realm, sessionId: session.id! });
  },
  'realms.logoutAll': (kc, f) => kc.realms.logoutAll({ realm: f.realm }),

  // --- users
  'users.find': (kc) => kc.users.find({ max: 10 }),
  'users.count': (kc) => kc.users.count(),
  'users.findOne': (kc, f) => kc.users.findOne({ id: f.alice }),
  'users.create': async (kc, f) => {
    f.bob = (await kc.users.create({ username: 'bob', enabled: true, email: 'bob@example.test', credentials: [{ type: 'password', value: USER_PASSWORD, temporary: false }] })).id;
    return f.bob;
  },
  'users.update': (kc, f) => kc.users.update({ id: f.bob! }, { firstName: 'Bob' }),
  'users.getProfile': (kc) => kc.users.getProfile(),
  'users.updateProfile': async (kc) => kc.users.updateProfile(await kc.users.getProfile()),
  'users.getProfileMetadata': (kc) => kc.users.getProfileMetadata(),
  'users.getUnmanagedAttributes': (kc, f) => kc.users.getUnmanagedAttributes({ id: f.alice }),
  'users.listRoleMappings': (kc, f) => kc.users.listRoleMappings({ id: f.alice }),
  'users.addRealmRoleMappings': async (kc, f) => kc.users.addRealmRoleMappings({ id: f.alice, roles: [await role(kc, 'reader')] }),
  'users.listRealmRoleMappings': (kc, f) => kc.users.listRealmRoleMappings({ id: f.alice }),
  'users.listAvailableRealmRoleMappings': (kc, f) => kc.users.listAvailableRealmRoleMappings({ id: f.alice }),
  'users.listCompositeRealmRoleMappings': (kc, f) => kc.users.listCompositeRealmRoleMappings({ id: f.alice }),
  'users.delRealmRoleMappings': async (kc, f) => kc.users.delRealmRoleMappings({ id: f.alice, roles: [await role(kc, 'reader')] }),
  'users.addClientRoleMappings': (kc, f) => kc.users.addClientRoleMappings({ id: f.alice, clientUniqueId: f.app, roles: [appRole(f)] }),
  'users.listClientRoleMappings': (kc, f) => kc.users.listClientRoleMappings({ id: f.alice, clientUniqueId: f.app }),
  'users.listAvailableClientRoleMappings': (kc, f) => kc.users.listAvailableClientRoleMappings({ id: f.alice, clientUniqueId: f.app }),
  'users.listCompositeClientRoleMappings': (kc, f) => kc.users.listCompositeClientRoleMappings({ id: f.alice, clientUniqueId: f.app }),
  'users.delClientRoleMappings': (kc, f) => kc.users.delClientRoleMappings({ id: f.alice, clientUniqueId: f.app, roles: [appRole(f)] }),
  'users.executeActionsEmail': (kc, f) => kc.users.executeActionsEmail({ id: f.alice, actions: ['UPDATE_PASSWORD'] }),
  'users.sendVerifyEmail': (kc, f) => kc.users.sendVerifyEmail({ id: f.alice }),
  'users.addToGroup': (kc, f) => kc.users.addToGroup({ id: f.alice, groupId: f.team }),
  'users.listGroups': (kc, f) => kc.users.listGroups({ id: f.alice }),
  'users.countGroups': (kc, f) => kc.users.countGroups({ id: f.alice }),
  'users.delFromGroup': (kc, f) => kc.users.delFromGroup({ id: f.alice, groupId: f.team }),
  'users.addToFederatedIdentity': (kc, f) => kc.users.addToFederatedIdentity({ id: f.alice, federatedIdentityId: 'upstream', federatedIdentity: { identityProvider: 'upstream', userId: 'ext-1', userName: 'alice-up' } }),
  'users.listFederatedIdentities': (kc, f) => kc.users.listFederatedIdentities({ id: f.alice }),
  'users.delFromFederatedIdentity': (kc, f) => kc.users.delFromFederatedIdentity({ id: f.alice, federatedIdentityId: 'upstream' }),
  'users.removeTotp': async (kc, f) => {
    const { id } = await kc.users.create({ username: 'dave', enabled: true, credentials: [OTP_CREDENTIAL] });
    return kc.users.removeTotp({ id });
  },
  'users.getCredentials': async (kc, f) => {
    const credentials = await kc.users.getCredentials({ id: f.alice });
    f.passwordCredential = credentials.find((c) => c.type === 'password')?.id;
    f.bobCredential = (await kc.users.getCredentials({ id: f.bob! })).find((c) => c.type === 'password')?.id;
    return credentials;
  },
  'users.resetPassword': (kc, f) => kc.users.resetPassword({ id: f.alice, credential: { type: 'password', value: `${USER_PASSWORD}-2`, temporary: false } }),
  'users.updateCredentialLabel': (kc, f) => kc.users.updateCredentialLabel({ id: f.alice, credentialId: f.passwordCredential! }, 'my password'),
  'users.moveCredentialPositionUp': (kc, f) => kc.users.moveCredentialPositionUp({ id: f.alice, credentialId: f.passwordCredential! }),
  'users.moveCredentialPositionDown': async (kc, f) => {
    // A user with a password and an authenticator app (imported as a realm file's OTP credential is).
    const { id } = await kc.users.create({ username: 'carol', enabled: true, credentials: [{ type: 'password', value: USER_PASSWORD, temporary: false }, OTP_CREDENTIAL] });
    const [first, second] = await kc.users.getCredentials({ id });
    return kc.users.moveCredentialPositionDown({ id, credentialId: first.id!, newPreviousCredentialId: second.id! });
  },
  'users.getUserStorageCredentialTypes': (kc, f) => kc.users.getUserStorageCredentialTypes({ id: f.alice }),
  'users.deleteCredential': (kc, f) => kc.users.deleteCredential({ id: f.bob!, credentialId: f.bobCredential! }),
  'users.listSessions': async (kc, f) => {
    await passwordGrant(f.side, 'alice', { password: `${USER_PASSWORD}-2` });
    const sessions = await kc.users.listSessions({ id: f.alice });
    f.sessionId = sessions[0]?.id;
    return sessions;
  },
  'users.listOfflineSessions': (kc, f) => kc.users.listOfflineSessions({ id: f.alice, clientId: f.app }),
  'users.listConsents': (kc, f) => kc.users.listConsents({ id: f.alice }),
  'users.revokeConsent': (kc, f) => kc.users.revokeConsent({ id: f.alice, clientId: 'app' }),
  'users.impersonation': (kc, f) => kc.users.impersonation({ id: f.alice }, { user: f.alice, realm: f.realm }),
  'users.listVerifiableCredentials': (kc, f) => kc.users.listVerifiableCredentials({ id: f.alice }),
  'users.createVerifiableCredential': (kc, f) => kc.users.createVerifiableCredential({ id: f.alice }, { credentialScopeName: 'extra' } as never),
  'users.updateVerifiableCredential': (kc, f) => kc.users.updateVerifiableCredential({ id: f.alice, credentialScopeName: 'extra' } as never, {} as never),
  'users.sendVerifiableCredentialOffer': (kc, f) => kc.users.sendVerifiableCredentialOffer({ id: f.alice }, {} as never),
  'users.listIssuedVerifiableCredentials': (kc, f) => kc.users.listIssuedVerifiableCredentials({ id: f.alice }),
  'users.revokeIssuedVerifiableCredential': (kc, f) => kc.users.revokeIssuedVerifiableCredential({ id: f.alice, credentialId: 'none' } as never),
  'users.revokeVerifiableCredential': (kc, f) => kc.users.revokeVerifiableCredential({ id: f.alice, credentialScopeName: 'extra' } as never),
  'users.logout': (kc, f) => kc.users.logout({ id: f.alice }),

  // --- groups
  'groups.find': (kc) => kc.groups.find(),
  'groups.count': (kc) => kc.groups.count(),
  'groups.findOne': (kc, f) => kc.groups.findOne({ id: f.team }),
  'groups.create': async (kc, f) => {
    f.tmpGroup = (await kc.groups.create({ name: 'tmp-group' })).id;
    return f.tmpGroup;
  },
  'groups.update': (kc, f) => kc.groups.update({ id: f.team }, { name: 'team', attributes: { kind: ['people'] } }),
  'groups.updateRoot': (kc, f) => kc.groups.updateRoot({ id: f.tmpGroup as string, name: 'tmp-group-2' }),
  'groups.createChildGroup': async (kc, f) => {
    f.sub = (await kc.groups.createChildGroup({ id: f.team }, { name: 'sub' })).id;
    return f.sub;
  },
  'groups.updateChildGroup': (kc, f) => kc.groups.updateChildGroup({ id: f.team }, { id: f.sub, name: 'sub' }),
  'groups.listSubGroups': (kc, f) => kc.groups.listSubGroups({ parentId: f.team }),
  'groups.listMembers': (kc, f) => kc.groups.listMembers({ id: f.team }),
  'groups.listRoleMappings': (kc, f) => kc.groups.listRoleMappings({ id: f.team }),
  'groups.addRealmRoleMappings': async (kc, f) => kc.groups.addRealmRoleMappings({ id: f.team, roles: [await role(kc, 'reader')] }),
  'groups.listRealmRoleMappings': (kc, f) => kc.groups.listRealmRoleMappings({ id: f.team }),
  'groups.listAvailableRealmRoleMappings': (kc, f) => kc.groups.listAvailableRealmRoleMappings({ id: f.team }),
  'groups.listCompositeRealmRoleMappings': (kc, f) => kc.groups.listCompositeRealmRoleMappings({ id: f.team }),
  'groups.delRealmRoleMappings': async (kc, f) => kc.groups.delRealmRoleMappings({ id: f.team, roles: [await role(kc, 'reader')] }),
  'groups.addClientRoleMappings': (kc, f) => kc.groups.addClientRoleMappings({ id: f.team, clientUniqueId: f.app, roles: [appRole(f)] }),
  'groups.listClientRoleMappings': (kc, f) => kc.groups.listClientRoleMappings({ id: f.team, clientUniqueId: f.app }),
  'groups.listAvailableClientRoleMappings': (kc, f) => kc.groups.listAvailableClientRoleMappings({ id: f.team, clientUniqueId: f.app }),
  'groups.listCompositeClientRoleMappings': (kc, f) => kc.groups.listCompositeClientRoleMappings({ id: f.team, clientUniqueId: f.app }),
  'groups.delClientRoleMappings': (kc, f) => kc.groups.delClientRoleMappings({ id: f.team, clientUniqueId: f.app, roles: [appRole(f)] }),
  'groups.listPermissions': (kc, f) => kc.groups.listPermissions({ id: f.team }),
  'groups.updatePermission': (kc, f) => kc.groups.updatePermission({ id: f.team }, { enabled: false }),
  'groups.getOrgId': { notCalled: HELPER },
  'groups.isOrgGroups': { notCalled: HELPER },
  'groups.del': (kc, f) => kc.groups.del({ id: f.tmpGroup as string }),

  // --- roles
  'roles.find': (kc) => kc.roles.find(),
  'roles.create': (kc) => kc.roles.create({ name: 'tmp-role' }),
  'roles.findOneByName': (kc) => kc.roles.findOneByName({ name: 'reader' }),
  'roles.updateByName': (kc) => kc.roles.updateByName({ name: 'reader' }, { name: 'reader', description: 'reads' }),
  'roles.findUsersWithRole': (kc) => kc.roles.findUsersWithRole({ name: 'reader' }),
  'roles.findOneById': (kc, f) => kc.roles.findOneById({ id: f.readerId }),
  'roles.updateById': (kc, f) => kc.roles.updateById({ id: f.readerId }, { name: 'reader', description: 'reads things' }),
  'roles.createComposite': async (kc, f) => kc.roles.createComposite({ roleId: f.compositeId }, [await role(kc, 'reader'), appRole(f)]),
  'roles.getCompositeRoles': (kc, f) => kc.roles.getCompositeRoles({ id: f.compositeId }),
  'roles.getCompositeRolesForRealm': (kc, f) => kc.roles.getCompositeRolesForRealm({ id: f.compositeId }),
  'roles.getCompositeRolesForClient': (kc, f) => kc.roles.getCompositeRolesForClient({ id: f.compositeId, clientId: f.app }),
  'roles.delCompositeRoles': async (kc, f) => kc.roles.delCompositeRoles({ id: f.compositeId }, [await role(kc, 'reader')]),
  'roles.listPermissions': (kc, f) => kc.roles.listPermissions({ id: f.readerId }),
  'roles.updatePermission': (kc, f) => kc.roles.updatePermission({ id: f.readerId }, { enabled: false }),
  'roles.delByName': (kc) => kc.roles.delByName({ name: 'tmp-role' }),
  'roles.delById': async (kc, f) => {
    await kc.roles.create({ name: 'tmp-role-2' });
    return kc.roles.delById({ id: (await role(kc, 'tmp-role-2')).id });
  },

  // --- clients
  'clients.find': (kc) => kc.clients.find({ max: 50 }),
  'clients.findOne': (kc, f) => kc.clients.findOne({ id: f.app }),
  'clients.create': async (kc, f) => {
    f.tmpClient = (await kc.clients.create({ clientId: 'tmp-client' })).id;
    return f.tmpClient;
  },
  'clients.update': async (kc, f) => kc.clients.update({ id: f.app }, { ...(await kc.clients.findOne({ id: f.app })), description: 'breadth' }),
  'clients.createRole': (kc, f) => kc.clients.createRole({ id: f.app, name: 'tmp-app-role' }),
  'clients.listRoles': (kc, f) => kc.clients.listRoles({ id: f.app }),
  'clients.findRole': (kc, f) => kc.clients.findRole({ id: f.app, roleName: 'app-role' }),
  'clients.updateRole': (kc, f) => kc.clients.updateRole({ id: f.app, roleName: 'app-role' }, { name: 'app-role', description: 'app' }),
  'clients.findUsersWithRole': (kc, f) => kc.clients.findUsersWithRole({ id: f.app, roleName: 'app-role' }),
  'clients.delRole': (kc, f) => kc.clients.delRole({ id: f.app, roleName: 'tmp-app-role' }),
  'clients.getServiceAccountUser': (kc, f) => kc.clients.getServiceAccountUser({ id: f.app }),
  'clients.getClientSecret': (kc, f) => kc.clients.getClientSecret({ id: f.app }),
  'clients.generateNewClientSecret': (kc, f) => kc.clients.generateNewClientSecret({ id: f.app }),
  'clients.invalidateSecret': (kc, f) => kc.clients.invalidateSecret({ id: f.app }),
  'clients.generateRegistrationAccessToken': (kc, f) => kc.clients.generateRegistrationAccessToken({ id: f.app }),
  'clients.listDefaultClientScopes': (kc, f) => kc.clients.listDefaultClientScopes({ id: f.app }),
  'clients.addDefaultClientScope': (kc, f) => kc.clients.addDefaultClientScope({ id: f.app, clientScopeId: f.scope }),
  'clients.delDefaultClientScope': (kc, f) => kc.clients.delDefaultClientScope({ id: f.app, clientScopeId: f.scope }),
  'clients.listOptionalClientScopes': (kc, f) => kc.clients.listOptionalClientScopes({ id: f.app }),
  'clients.addOptionalClientScope': (kc, f) => kc.clients.addOptionalClientScope({ id: f.app, clientScopeId: f.scope }),
  'clients.delOptionalClientScope': (kc, f) => kc.clients.delOptionalClientScope({ id: f.app, clientScopeId: f.scope }),
  'clients.addProtocolMapper': (kc, f) => kc.clients.addProtocolMapper({ id: f.app }, hardcoded('tmp-claim')),
  'clients.addMultipleProtocolMappers': (kc, f) => kc.clients.addMultipleProtocolMappers({ id: f.app }, [hardcoded('tmp-claim-2')]),
  'clients.listProtocolMappers': (kc, f) => kc.clients.listProtocolMappers({ id: f.app }),
  'clients.findProtocolMapperById': (kc, f) => kc.clients.findProtocolMapperById({ id: f.app, mapperId: f.appMapper }),
  'clients.findProtocolMapperByName': (kc, f) => kc.clients.findProtocolMapperByName({ id: f.app, name: 'team' }),
  'clients.findProtocolMappersByProtocol': (kc, f) => kc.clients.findProtocolMappersByProtocol({ id: f.app, protocol: 'openid-connect' }),
  'clients.updateProtocolMapper': (kc, f) => kc.clients.updateProtocolMapper({ id: f.app, mapperId: f.appMapper }, { ...hardcoded('team'), id: f.appMapper }),
  'clients.delProtocolMapper': async (kc, f) => {
    const made = (await kc.clients.listProtocolMappers({ id: f.app })).find((m) => m.name === 'tmp-claim')!;
    return kc.clients.delProtocolMapper({ id: f.app, mapperId: made.id! });
  },
  'clients.listScopeMappings': (kc, f) => kc.clients.listScopeMappings({ id: f.app }),
  'clients.addClientScopeMappings': (kc, f) => kc.clients.addClientScopeMappings({ id: f.tmpClient!, client: f.app }, [appRole(f)]),
  'clients.listClientScopeMappings': (kc, f) => kc.clients.listClientScopeMappings({ id: f.tmpClient!, client: f.app }),
  'clients.listAvailableClientScopeMappings': (kc, f) => kc.clients.listAvailableClientScopeMappings({ id: f.tmpClient!, client: f.app }),
  'clients.listCompositeClientScopeMappings': (kc, f) => kc.clients.listCompositeClientScopeMappings({ id: f.tmpClient!, client: f.app }),
  'clients.delClientScopeMappings': (kc, f) => kc.clients.delClientScopeMappings({ id: f.tmpClient!, client: f.app }, [appRole(f)]),
  'clients.addRealmScopeMappings': async (kc, f) => kc.clients.addRealmScopeMappings({ id: f.tmpClient! }, [await role(kc, 'reader')]),
  'clients.listRealmScopeMappings': (kc, f) => kc.clients.listRealmScopeMappings({ id: f.tmpClient! }),
  'clients.listAvailableRealmScopeMappings': (kc, f) => kc.clients.listAvailableRealmScopeMappings({ id: f.tmpClient! }),
  'clients.listCompositeRealmScopeMappings': (kc, f) => kc.clients.listCompositeRealmScopeMappings({ id: f.tmpClient! }),
  'clients.delRealmScopeMappings': async (kc, f) => kc.clients.delRealmScopeMappings({ id: f.tmpClient! }, [await role(kc, 'reader')]),
  'clients.evaluateListProtocolMapper': (kc, f) => kc.clients.evaluateListProtocolMapper({ id: f.app, scope: 'openid' }),
  'clients.evaluateGenerateAccessToken': (kc, f) => kc.clients.evaluateGenerateAccessToken({ id: f.app, userId: f.alice, scope: 'openid' } as never),
  'clients.evaluateGenerateIdToken': (kc, f) => kc.clients.evaluateGenerateIdToken({ id: f.app, userId: f.alice, scope: 'openid' }),
  'clients.evaluateGenerateUserInfo': (kc, f) => kc.clients.evaluateGenerateUserInfo({ id: f.app, userId: f.alice, scope: 'openid' }),
  'clients.evaluateGenerateSamlResponse': { notCalled: 'SAML: Realmgate speaks OpenID Connect only (server README); the call needs a SAML client' },
  'clients.listSessions': (kc, f) => kc.clients.listSessions({ id: f.app }),
  'clients.listOfflineSessions': (kc, f) => kc.clients.listOfflineSessions({ id: f.app }),
  'clients.getSessionCount': (kc, f) => kc.clients.getSessionCount({ id: f.app }),
  'clients.getOfflineSessionCount': (kc, f) => kc.clients.getOfflineSessionCount({ id: f.app }),
  'clients.getInstallationProviders': (kc, f) => kc.clients.getInstallationProviders({ id: f.app, providerId: 'keycloak-oidc-keycloak-json' }),
  'clients.pushRevocation': (kc, f) => kc.clients.pushRevocation({ id: f.app }),
  'clients.addClusterNode': (kc, f) => kc.clients.addClusterNode({ id: f.app, node: '127.0.0.1' }),
  'clients.testNodesAvailable': (kc, f) => kc.clients.testNodesAvailable({ id: f.app }),
  'clients.deleteClusterNode': (kc, f) => kc.clients.deleteClusterNode({ id: f.app, node: '127.0.0.1' }),
  'clients.getKeyInfo': (kc, f) => kc.clients.getKeyInfo({ id: f.app, attr: 'jwt.credential' }),
  'clients.generateKey': (kc, f) => kc.clients.generateKey({ id: f.app, attr: 'jwt.credential' }),
  'clients.downloadKey': (kc, f) => kc.clients.downloadKey({ id: f.app, attr: 'jwt.credential' }, { format: 'PKCS12', keyAlias: 'k', keyPassword: 'store-pass-1', storePassword: 'store-pass-1' }),
  'clients.generateAndDownloadKey': (kc, f) => kc.clients.generateAndDownloadKey({ id: f.app, attr: 'jwt.credential' }, { format: 'PKCS12', keyAlias: 'k', keyPassword: 'store-pass-1', storePassword: 'store-pass-1' }),
  'clients.uploadKey': { notCalled: 'needs a key store file (JKS/PKCS12) as form data; the suite has none to give both alike' },
  'clients.uploadCertificate': { notCalled: 'needs a certificate file as form data; the suite has none to give both alike' },
  'clients.v2': { notCalled: 'the clients v2 API (a fluent builder for a preview feature, not a request)' },
  'clients.del': (kc, f) => kc.clients.del({ id: f.tmpClient! }),

  // --- client scopes
  'clientScopes.find': (kc) => kc.clientScopes.find(),
  'clientScopes.findOne': (kc, f) => kc.clientScopes.findOne({ id: f.scope }),
  'clientScopes.findOneByName': (kc) => kc.clientScopes.findOneByName({ name: 'extra' }),
  'clientScopes.create': async (kc, f) => {
    await kc.clientScopes.create({ name: 'tmp-scope', protocol: 'openid-connect' });
    f.tmpScope = (await kc.clientScopes.findOneByName({ name: 'tmp-scope' }))!.id;
  },
  'clientScopes.update': (kc, f) => kc.clientScopes.update({ id: f.scope }, { id: f.scope, name: 'extra', protocol: 'openid-connect', description: 'extra things' }),
  'clientScopes.listDefaultClientScopes': (kc) => kc.clientScopes.listDefaultClientScopes(),
  'clientScopes.addDefaultClientScope': (kc, f) => kc.clientScopes.addDefaultClientScope({ id: f.tmpScope! }),
  'clientScopes.delDefaultClientScope': (kc, f) => kc.clientScopes.delDefaultClientScope({ id: f.tmpScope! }),
  'clientScopes.listDefaultOptionalClientScopes': (kc) => kc.clientScopes.listDefaultOptionalClientScopes(),
  'clientScopes.addDefaultOptionalClientScope': (kc, f) => kc.clientScopes.addDefaultOptionalClientScope({ id: f.tmpScope! }),
  'clientScopes.delDefaultOptionalClientScope': (kc, f) => kc.clientScopes.delDefaultOptionalClientScope({ id: f.tmpScope! }),
  'clientScopes.addProtocolMapper': (kc, f) => kc.clientScopes.addProtocolMapper({ id: f.scope }, hardcoded('tmp-claim')),
  'clientScopes.addMultipleProtocolMappers': (kc, f) => kc.clientScopes.addMultipleProtocolMappers({ id: f.scope }, [hardcoded('tmp-claim-2')]),
  'clientScopes.listProtocolMappers': (kc, f) => kc.clientScopes.listProtocolMappers({ id: f.scope }),
  'clientScopes.findProtocolMapper': (kc, f) => kc.clientScopes.findProtocolMapper({ id: f.scope, mapperId: f.scopeMapper }),
  'clientScopes.findProtocolMapperByName': (kc, f) => kc.clientScopes.findProtocolMapperByName({ id: f.scope, name: 'colour' }),
  'clientScopes.findProtocolMappersByProtocol': (kc, f) => kc.clientScopes.findProtocolMappersByProtocol({ id: f.scope, protocol: 'openid-connect' }),
  'clientScopes.updateProtocolMapper': (kc, f) => kc.clientScopes.updateProtocolMapper({ id: f.scope, mapperId: f.scopeMapper }, { ...hardcoded('colour'), id: f.scopeMapper }),
  'clientScopes.delProtocolMapper': async (kc, f) => {
    const made = (await kc.clientScopes.listProtocolMappers({ id: f.scope })).find((m) => m.name === 'tmp-claim')!;
    return kc.clientScopes.delProtocolMapper({ id: f.scope, mapperId: made.id! });
  },
  'clientScopes.listScopeMappings': (kc, f) => kc.clientScopes.listScopeMappings({ id: f.scope }),
  'clientScopes.addClientScopeMappings': (kc, f) => kc.clientScopes.addClientScopeMappings({ id: f.scope, client: f.app }, [appRole(f)]),
  'clientScopes.listClientScopeMappings': (kc, f) => kc.clientScopes.listClientScopeMappings({ id: f.scope, client: f.app }),
  'clientScopes.listAvailableClientScopeMappings': (kc, f) => kc.clientScopes.listAvailableClientScopeMappings({ id: f.scope, client: f.app }),
  'clientScopes.listCompositeClientScopeMappings': (kc, f) => kc.clientScopes.listCompositeClientScopeMappings({ id: f.scope, client: f.app }),
  'clientScopes.delClientScopeMappings': (kc, f) => kc.clientScopes.delClientScopeMappings({ id: f.scope, client: f.app }, [appRole(f)]),
  'clientScopes.addRealmScopeMappings': async (kc, f) => kc.clientScopes.addRealmScopeMappings({ id: f.scope }, [await role(kc, 'reader')]),
  'clientScopes.listRealmScopeMappings': (kc, f) => kc.clientScopes.listRealmScopeMappings({ id: f.scope }),
  'clientScopes.listAvailableRealmScopeMappings': (kc, f) => kc.clientScopes.listAvailableRealmScopeMappings({ id: f.scope }),
  'clientScopes.listCompositeRealmScopeMappings': (kc, f) => kc.clientScopes.listCompositeRealmScopeMappings({ id: f.scope }),
  'clientScopes.delRealmScopeMappings': async (kc, f) => kc.clientScopes.delRealmScopeMappings({ id: f.scope }, [await role(kc, 'reader')]),
  'clientScopes.del': (kc, f) => kc.clientScopes.del({ id: f.tmpScope! }),
  'clientScopes.delByName': async (kc) => {
    await kc.clientScopes.create({ name: 'tmp-scope-2', protocol: 'openid-connect' });
    return kc.clientScopes.delByName({ name: 'tmp-scope-2' });
  },

  // --- client policies
  'clientPolicies.listProfiles': (kc) => kc.clientPolicies.listProfiles({ includeGlobalProfiles: true }),
  'clientPolicies.createProfiles': (kc) => kc.clientPolicies.createProfiles({ profiles: [{ name: 'breadth', description: 'empty', executors: [] }] }),
  'clientPolicies.listPolicies': (kc) => kc.clientPolicies.listPolicies({ includeGlobalPolicies: true }),
  'clientPolicies.updatePolicy': (kc) => kc.clientPolicies.updatePolicy({ policies: [{ name: 'breadth', enabled: false, conditions: [], profiles: ['breadth'] }] }),

  // --- identity providers
  'identityProviders.find': (kc) => kc.identityProviders.find(),
  'identityProviders.findOne': (kc) => kc.identityProviders.findOne({ alias: 'upstream' }),
  'identityProviders.create': (kc, f) => kc.identityProviders.create(idp('tmp-idp', f)),
  'identityProviders.update': (kc, f) => kc.identityProviders.update({ alias: 'upstream' }, { ...idp('upstream', f), displayName: 'Upstream' }),
  'identityProviders.findFactory': (kc) => kc.identityProviders.findFactory({ providerId: 'oidc' }),
  'identityProviders.createMapper': async (kc, f) => {
    f.idpMapper = (await kc.identityProviders.createMapper({ alias: 'upstream', identityProviderMapper: { name: 'dept', identityProviderAlias: 'upstream', identityProviderMapper: 'hardcoded-attribute-idp-mapper', config: { attribute: 'dept', 'attribute.value': 'x', syncMode: 'INHERIT' } } })).id;
    return f.idpMapper;
  },
  'identityProviders.findMappers': (kc) => kc.identityProviders.findMappers({ alias: 'upstream' }),
  'identityProviders.findOneMapper': (kc, f) => kc.identityProviders.findOneMapper({ alias: 'upstream', id: f.idpMapper! }),
  'identityProviders.updateMapper': (kc, f) => kc.identityProviders.updateMapper({ alias: 'upstream', id: f.idpMapper! }, { id: f.idpMapper, name: 'dept', identityProviderAlias: 'upstream', identityProviderMapper: 'hardcoded-attribute-idp-mapper', config: { attribute: 'dept', 'attribute.value': 'y', syncMode: 'INHERIT' } }),
  'identityProviders.delMapper': (kc, f) => kc.identityProviders.delMapper({ alias: 'upstream', id: f.idpMapper! }),
  'identityProviders.findMapperTypes': (kc) => kc.identityProviders.findMapperTypes({ alias: 'upstream' }),
  'identityProviders.importFromUrl': (kc, f) => kc.identityProviders.importFromUrl({ fromUrl: `${f.discovery}/.well-known/openid-configuration`, providerId: 'oidc' }),
  'identityProviders.reloadKeys': (kc) => kc.identityProviders.reloadKeys({ alias: 'upstream' }),
  'identityProviders.uploadCertificate': { notCalled: 'needs a certificate file as form data; the suite has none to give both alike' },
  'identityProviders.listPermissions': (kc) => kc.identityProviders.listPermissions({ alias: 'upstream' }),
  'identityProviders.updatePermission': (kc) => kc.identityProviders.updatePermission({ alias: 'upstream' }, { enabled: false }),
  'identityProviders.del': (kc) => kc.identityProviders.del({ alias: 'tmp-idp' }),

  // --- organizations
  'organizations.find': (kc) => kc.organizations.find({ max: 10 }),
  'organizations.findOne': (kc, f) => kc.organizations.findOne({ id: f.org }),
  'organizations.create': async (kc, f) => {
    f.tmpOrg = (await kc.organizations.create({ name: 'tmp-org', alias: 'tmp-org', domains: [{ name: 'tmp-org.test', verified: false }] })).id;
    return f.tmpOrg;
  },
  'organizations.updateById': (kc, f) => kc.organizations.updateById({ id: f.org }, { id: f.org, name: 'acme', alias: 'acme', enabled: true, description: 'Acme', domains: [{ name: 'acme.test', verified: false }] }),
  'organizations.addMember': (kc, f) => kc.organizations.addMember({ orgId: f.org, userId: f.alice }),
  'organizations.listMembers': (kc, f) => kc.organizations.listMembers({ orgId: f.org }),
  'organizations.getMember': (kc, f) => kc.organizations.getMember({ orgId: f.org, userId: f.alice }),
  'organizations.memberOrganizations': (kc, f) => kc.organizations.memberOrganizations({ userId: f.alice }),
  'organizations.groups': async (kc, f) => {
    f.orgGroup = (await kc.organizations.groups(f.org).create({ name: 'org-team' })).id;
    return kc.organizations.groups(f.org).find();
  },
  // Organization groups (the groups resource bound to an organization, organizations.groups(orgId)): 
  'groups.listOrgGroups': (kc, f) => kc.organizations.groups(f.org).listOrgGroups({ id: f.alice }),
  'groups.addMemberToOrgGroup': (kc, f) => kc.organizations.groups(f.org).addMemberToOrgGroup({ groupId: f.orgGroup as string, userId: f.alice }),
  'groups.removeMemberFromOrgGroup': (kc, f) => kc.organizations.groups(f.org).removeMemberFromOrgGroup({ groupId: f.orgGroup as string, userId: f.alice }),
  'organizations.linkIdp': (kc, f) => kc.organizations.linkIdp({ orgId: f.org, alias: 'upstream' }),
  'organizations.listIdentityProviders': (kc, f) => kc.organizations.listIdentityProviders({ orgId: f.org }),
  'organizations.unLinkIdp': (kc, f) => kc.organizations.unLinkIdp({ orgId: f.org, alias: 'upstream' }),
  'organizations.invite': (kc, f) => kc.organizations.invite({ orgId: f.org }, form({ email: 'carol@acme.test', firstName: 'Carol', lastName: 'Acme' })),
  'organizations.inviteExistingUser': (kc, f) => kc.organizations.inviteExistingUser({ orgId: f.org }, form({ id: f.bob! })),
  'organizations.listInvitations': async (kc, f) => {
    const invitations = await kc.organizations.listInvitations({ orgId: f.org });
    // Carol's (a new user's, with a name): the two sides list in different orders.
    f.invitation = invitations.find((i) => i.email === 'carol@acme.test')?.id;
    return invitations;
  },
  'organizations.findInvitation': (kc, f) => kc.organizations.findInvitation({ orgId: f.org, invitationId: f.invitation as string }),
  'organizations.resendInvitation': (kc, f) => kc.organizations.resendInvitation({ orgId: f.org, invitationId: f.invitation as string }),
  // A resend replaces the invitation (a new id on Keycloak): the one to delete is read again.
  'organizations.deleteInvitation': async (kc, f) => {
    const [invitation] = await kc.organizations.listInvitations({ orgId: f.org });
    return kc.organizations.deleteInvitation({ orgId: f.org, invitationId: invitation.id! });
  },
  'organizations.delMember': (kc, f) => kc.organizations.delMember({ orgId: f.org, userId: f.alice }),
  'organizations.delById': (kc, f) => kc.organizations.delById({ id: f.tmpOrg! }),

  // --- components (a key provider: every realm may have more)
  'components.find': (kc, f) => kc.components.find({ parent: f.realmId as string, type: 'org.keycloak.keys.KeyProvider' }),
  'components.create': async (kc, f) => {
    f.component = (await kc.components.create({ name: 'breadth-hmac', providerId: 'hmac-generated', providerType: 'org.keycloak.keys.KeyProvider', parentId: f.realmId as string, config: { priority: ['10'] } })).id;
    return f.component;
  },
  'components.findOne': (kc, f) => kc.components.findOne({ id: f.component! }),
  'components.update': (kc, f) => kc.components.update({ id: f.component! }, { id: f.component, name: 'breadth-hmac', providerId: 'hmac-generated', providerType: 'org.keycloak.keys.KeyProvider', parentId: f.realmId as string, config: { priority: ['20'] } }),
  'components.listSubComponents': (kc, f) => kc.components.listSubComponents({ id: f.component!, type: 'org.keycloak.keys.KeyProvider' }),
  'components.del': (kc, f) => kc.components.del({ id: f.component! }),

  // --- user storage (needs a user federation provider, which needs LDAP or Kerberos)
  'userStorageProvider.name': { notCalled: 'needs a user federation provider (LDAP or Kerberos); none runs on loopback in the suite' },
  'userStorageProvider.removeImportedUsers': { notCalled: 'needs a user federation provider (LDAP or Kerberos)' },
  'userStorageProvider.sync': { notCalled: 'needs a user federation provider (LDAP or Kerberos)' },
  'userStorageProvider.unlinkUsers': { notCalled: 'needs a user federation provider (LDAP or Kerberos)' },
  'userStorageProvider.mappersSync': { notCalled: 'needs a user federation provider (LDAP or Kerberos)' },

  // --- authentication
  'authenticationManagement.getFlows': (kc) => kc.authenticationManagement.getFlows(),
  'authenticationManagement.copyFlow': (kc) => kc.authenticationManagement.copyFlow({ flow: 'browser', newName: 'breadth browser' }),
  'authenticationManagement.createFlow': (kc) => kc.authenticationManagement.createFlow({ alias: 'breadth flow', providerId: 'basic-flow', topLevel: true, builtIn: false, description: '' }),
  'authenticationManagement.getFlow': async (kc, f) => {
    f.flowId = (await kc.authenticationManagement.getFlows()).find((x) => x.alias === 'breadth flow')!.id;
    return kc.authenticationManagement.getFlow({ flowId: f.flowId! });
  },
  'authenticationManagement.updateFlow': (kc, f) => kc.authenticationManagement.updateFlow({ flowId: f.flowId! }, { id: f.flowId, alias: 'breadth flow', providerId: 'basic-flow', topLevel: true, builtIn: false, description: 'mine' }),
  'authenticationManagement.addExecutionToFlow': (kc) => kc.authenticationManagement.addExecutionToFlow({ flow: 'breadth flow', provider: 'auth-cookie' }),
  'authenticationManagement.addFlowToFlow': (kc) => kc.authenticationManagement.addFlowToFlow({ flow: 'breadth flow', alias: 'breadth sub', type: 'basic-flow', provider: 'registration-page-form', description: '' }),
  'authenticationManagement.addExecution': (kc, f) => kc.authenticationManagement.addExecution({ flow: 'breadth sub' }, { provider: 'auth-username-password-form', requirement: 'REQUIRED', parentFlow: f.flowId } as never),
  'authenticationManagement.getExecutions': async (kc, f) => {
    const all = await kc.authenticationManagement.getExecutions({ flow: 'breadth flow' });
    f.executionId = all.find((e) => e.providerId === 'auth-cookie')?.id;
    return all;
  },
  'authenticationManagement.updateExecution': async (kc, f) => {
    const execution = (await kc.authenticationManagement.getExecutions({ flow: 'breadth flow' })).find((e) => e.id === f.executionId)!;
    return kc.authenticationManagement.updateExecution({ flow: 'breadth flow' }, { ...execution, requirement: 'ALTERNATIVE' });
  },
  'authenticationManagement.lowerPriorityExecution': (kc, f) => kc.authenticationManagement.lowerPriorityExecution({ id: f.executionId! }),
  'authenticationManagement.raisePriorityExecution': (kc, f) => kc.authenticationManagement.raisePriorityExecution({ id: f.executionId! }),
  'authenticationManagement.getConfigDescription': (kc) => kc.authenticationManagement.getConfigDescription({ providerId: 'identity-provider-redirector' }),
  'authenticationManagement.createConfig': async (kc, f) => {
    await kc.authenticationManagement.addExecutionToFlow({ flow: 'breadth flow', provider: 'identity-provider-redirector' });
    const redirector = (await kc.authenticationManagement.getExecutions({ flow: 'breadth flow' })).find((e) => e.providerId === 'identity-provider-redirector')!;
    f.configId = (await kc.authenticationManagement.createConfig({ id: redirector.id!, alias: 'to upstream', config: { defaultProvider: 'upstream' } })).id;
    return f.configId;
  },
  'authenticationManagement.getConfig': (kc, f) => kc.authenticationManagement.getConfig({ id: f.configId! }),
  'authenticationManagement.updateConfig': (kc, f) => kc.authenticationManagement.updateConfig({ id: f.configId, alias: 'to upstream', config: { defaultProvider: 'upstream' } }),
  'authenticationManagement.delConfig': (kc, f) => kc.authenticationManagement.delConfig({ id: f.configId! }),
  'authenticationManagement.delExecution': (kc, f) => kc.authenticationManagement.delExecution({ id: f.executionId! }),
  'authenticationManagement.deleteFlow': (kc, f) => kc.authenticationManagement.deleteFlow({ flowId: f.flowId! }),
  'authenticationManagement.getAuthenticatorProviders': (kc) => kc.authenticationManagement.getAuthenticatorProviders(),
  'authenticationManagement.getClientAuthenticatorProviders': (kc) => kc.authenticationManagement.getClientAuthenticatorProviders(),
  'authenticationManagement.getFormActionProviders': (kc) => kc.authenticationManagement.getFormActionProviders(),
  'authenticationManagement.getFormProviders': (kc) => kc.authenticationManagement.getFormProviders(),
  'authenticationManagement.getRequiredActions': (kc) => kc.authenticationManagement.getRequiredActions(),
  'authenticationManagement.getRequiredActionForAlias': (kc) => kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.updateRequiredAction': async (kc) => {
    const action = await kc.authenticationManagement.getRequiredActionForAlias({ alias: 'UPDATE_PASSWORD' });
    return kc.authenticationManagement.updateRequiredAction({ alias: 'UPDATE_PASSWORD' }, { ...action, defaultAction: false });
  },
  'authenticationManagement.lowerRequiredActionPriority': (kc) => kc.authenticationManagement.lowerRequiredActionPriority({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.raiseRequiredActionPriority': (kc) => kc.authenticationManagement.raiseRequiredActionPriority({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.getRequiredActionConfigDescription': (kc) => kc.authenticationManagement.getRequiredActionConfigDescription({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.getRequiredActionConfig': (kc) => kc.authenticationManagement.getRequiredActionConfig({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.updateRequiredActionConfig': (kc) => kc.authenticationManagement.updateRequiredActionConfig({ alias: 'UPDATE_PASSWORD' }, { config: { max_auth_age: '300' } }),
  'authenticationManagement.removeRequiredActionConfig': (kc) => kc.authenticationManagement.removeRequiredActionConfig({ alias: 'UPDATE_PASSWORD' }),
  'authenticationManagement.getUnregisteredRequiredActions': (kc) => kc.authenticationManagement.getUnregisteredRequiredActions(),
  'authenticationManagement.deleteRequiredAction': (kc) => kc.authenticationManagement.deleteRequiredAction({ alias: 'TERMS_AND_CONDITIONS' }),
  'authenticationManagement.registerRequiredAction': (kc) => kc.authenticationManagement.registerRequiredAction({ providerId: 'TERMS_AND_CONDITIONS', name: 'Terms and Conditions' }),

  // --- brute force
  'attackDetection.findOne': (kc, f) => kc.attackDetection.findOne({ id: f.alice }),
  'attackDetection.del': (kc, f) => kc.attackDetection.del({ id: f.alice }),
  'attackDetection.delAll': (kc) => kc.attackDetection.delAll(),

  // --- caches
  'cache.clearUserCache': (kc) => kc.cache.clearUserCache(),
  'cache.clearKeysCache': (kc) => kc.cache.clearKeysCache(),
  'cache.clearCrlCache': (kc) => kc.cache.clearCrlCache(),
  'cache.clearRealmCache': (kc) => kc.cache.clearRealmCache(),

  // --- last: what ends the fixture's objects
  'users.del': (kc, f) => kc.users.del({ id: f.bob! }),
};

const OTP_CREDENTIAL = { type: 'otp', userLabel: 'phone', secretData: JSON.stringify({ value: 'JBSWY3DPEHPK3PXPJBSWY3DP' }), credentialData: JSON.stringify({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1', secretEncoding: 'BASE32' }) };

function hardcoded(name: string) {
  return { name, protocol: 'openid-connect', protocolMapper: 'oidc-hardcoded-claim-mapper', config: { 'claim.name': name, 'claim.value': 'v', 'jsonType.label': 'String', 'access.token.claim': 'true', 'id.token.claim': 'true', 'userinfo.token.claim': 'true' } };
}

/** The methods of the client, enumerated at run time: `resource.method` for each resource object it holds. */
export function enumerateMethods(): string[] {
  const client = new KcAdminClient({ baseUrl: 'http://127.0.0.1:1' });
  const names: string[] = [];
  for (const resource of Object.getOwnPropertyNames(client)) {
    const value = (client as unknown as Record<string, unknown>)[resource];
    if (!value || typeof value !== 'object' || typeof (value as { makeRequest?: unknown }).makeRequest !== 'function') continue;
    const own = Object.getOwnPropertyNames(value).filter((k) => typeof (value as Record<string, unknown>)[k] === 'function');
    const proto = Object.getPrototypeOf(value) as Record<string, unknown>;
    const inherited = Object.getOwnPropertyNames(proto).filter((k) => k !== 'constructor' && typeof proto[k] === 'function');
    for (const method of [...own, ...inherited]) {
      // The request builders every resource has: not methods of the API.
      if (method === 'makeRequest' || method === 'makeUpdateRequest') continue;
      names.push(`${resource}.${method}`);
    }
  }
  return names;
}

/** Why a method is out of the measure, or null when it is counted. */
function excluded(name: string): string | null {
  const [resource, method] = name.split('.');
  if (resource === 'workflows') return WORKFLOWS;
  if (resource === 'clients' && AUTHZ_CLIENT_METHODS.includes(method)) return AUTHZ;
  const row = ROWS[name];
  if (row && typeof row === 'object') return row.notCalled;
  return null;
}

interface Outcome {
  works: boolean;
  status?: number;
  /** The top-level keys of a GET answer (an object's, or the union of an array's elements'). */
  keys?: string[];
}

/** The HTTP method of the last request the admin client sent (fetch is wrapped while a call runs). */
let lastMethod = 'GET';
const realFetch = globalThis.fetch;
function recordingFetch(...args: Parameters<typeof fetch>): ReturnType<typeof fetch> {
  const [input, init] = args;
  lastMethod = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  return realFetch(...args);
}

function keysOf(value: unknown): string[] | undefined {
  const objects = Array.isArray(value) ? value : [value];
  if (!objects.length || !objects.every((o) => o && typeof o === 'object' && !Array.isArray(o))) return undefined;
  return [...new Set(objects.flatMap((o) => Object.keys(o as object)))].sort();
}

async function callOn(name: string, call: Call, kc: KcAdminClient, f: Fixture): Promise<Outcome> {
  lastMethod = 'GET';
  globalThis.fetch = recordingFetch as typeof fetch;
  try {
    const result = await call(kc, f);
    return { works: true, ...(lastMethod === 'GET' ? { keys: keysOf(result) } : {}) };
  } catch (error) {
    const status = (error as { response?: { status?: number } }).response?.status;
    return { works: false, ...(status ? { status } : {}) };
  } finally {
    globalThis.fetch = realFetch;
  }
}

/** A loopback OpenID provider's discovery document, for the identity provider and importFromUrl. */
function discoveryServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: base, authorization_endpoint: `${base}/auth`, token_endpoint: `${base}/token`, jwks_uri: `${base}/jwks`, userinfo_endpoint: `${base}/userinfo`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'] }));
    } else if (req.url === '/jwks') {
      res.setHeader('content-type', 'application/json');
      res.end('{"keys":[]}');
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

describe('the official admin client against Keycloak 26.7.3 and Realmgate (issue 41 breadth)', () => {
  let both: Both;
  let discovery: { server: Server; url: string };
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  const fixtures = new Map<SideName, Fixture>();

  beforeAll(async () => {
    discovery = await discoveryServer();
    smtp = await startSmtp();
    both = await startBoth(async (side) => {
      const kc = await side.admin();
      // A loopback SMTP server: the e-mail sending methods (actions, verification, invitations) work on both.
      const smtpServer = { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@diff.example' };
      await kc.realms.update({ realm: side.realm }, { organizationsEnabled: true, eventsEnabled: true, adminEventsEnabled: true, smtpServer });
      const realmId = (await kc.realms.findOne({ realm: side.realm }))!.id!;
      const app = (await kc.clients.create({ clientId: 'app', secret: 'app-secret-123', publicClient: false, serviceAccountsEnabled: true, directAccessGrantsEnabled: true, standardFlowEnabled: true, redirectUris: ['http://127.0.0.1:59999/cb'] })).id;
      await kc.clients.createRole({ id: app, name: 'app-role' });
      const appRoleId = (await kc.clients.findRole({ id: app, roleName: 'app-role' }))!.id!;
      const appMapper = (await kc.clients.addProtocolMapper({ id: app }, hardcoded('team')), (await kc.clients.listProtocolMappers({ id: app })).find((m) => m.name === 'team')!.id!);
      await kc.roles.create({ name: 'reader' });
      await kc.roles.create({ name: 'composite' });
      const readerId = (await role(kc, 'reader')).id;
      const compositeId = (await role(kc, 'composite')).id;
      // The web client of both.ts: the password grant makes the sessions some rows list.
      await kc.clients.create({ clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['http://127.0.0.1:59999/cb'], standardFlowEnabled: true });
      const alice = await addUser(side, 'alice');
      const team = (await kc.groups.create({ name: 'team' })).id;
      await kc.clientScopes.create({ name: 'extra', protocol: 'openid-connect' });
      const scope = (await kc.clientScopes.findOneByName({ name: 'extra' }))!.id!;
      await kc.clientScopes.addProtocolMapper({ id: scope }, hardcoded('colour'));
      const scopeMapper = (await kc.clientScopes.listProtocolMappers({ id: scope })).find((m) => m.name === 'colour')!.id!;
      const fixture = { side, realm: side.realm, realmId, app, appRoleId, appMapper, alice, team, readerId, compositeId, scope, scopeMapper, org: '', discovery: discovery.url, smtpServer } as Fixture;
      await kc.identityProviders.create(idp('upstream', fixture));
      fixture.org = (await kc.organizations.create({ name: 'acme', alias: 'acme', domains: [{ name: 'acme.test', verified: false }] })).id!;
      fixtures.set(side.name, fixture);
    });
  });

  afterAll(async () => {
    await both?.close();
    await new Promise((done) => discovery?.server.close(done));
    await smtp?.close();
  });

  it('every method of the client has a row: a call, or the reason it is not called', () => {
    const methods = enumerateMethods();
    expect(methods.length).toBeGreaterThan(300);
    expect(methods.filter((m) => !ROWS[m] && !excluded(m))).toEqual([]);
    expect(Object.keys(ROWS).filter((name) => !methods.includes(name)), 'rows for methods the client no longer has').toEqual([]);
  });

  it('of the methods that work on Keycloak (but Authorization Services and workflows), the share that works on Realmgate', async () => {
    const methods = enumerateMethods();
    const outcomes: Record<string, Record<SideName, Outcome>> = {};
    // In the table's order (reads, writes, deletions), so a row may use what an earlier row made.
    for (const name of Object.keys(ROWS)) {
      if (excluded(name)) continue;
      const row = ROWS[name] as Call;
      outcomes[name] = await both.run(async (side) => callOn(name, row, await side.admin(), fixtures.get(side.name)!));
    }
    const onKeycloak = Object.keys(outcomes).filter((n) => outcomes[n].keycloak.works);
    const onBoth = onKeycloak.filter((n) => outcomes[n].realmgate.works);
    const failing = onKeycloak.filter((n) => !outcomes[n].realmgate.works);
    const share = Math.floor((onBoth.length / onKeycloak.length) * 1000) / 10;

    // Observed differences, as paths under the case BREADTH.
    const found: { path: string; keycloak: unknown; realmgate: unknown }[] = failing.map((n) => ({ path: `works.${n}`, keycloak: 'works', realmgate: outcomes[n].realmgate.status ?? 'throws' }));
    for (const n of onBoth) {
      const k = outcomes[n].keycloak.keys;
      const r = outcomes[n].realmgate.keys;
      if (!k) continue;
      for (const key of k.filter((key) => !(r ?? []).includes(key))) found.push({ path: `keys.${n}.${key}`, keycloak: 'present', realmgate: 'absent' });
    }
    const listed = differences.filter((d) => d.case === BREADTH);
    const listingOf = (path: string): ListedDifference | undefined => listed.find((l) => l.path === path || path.startsWith(`${l.path}.`));
    const unlisted = found.filter((d) => !listingOf(d.path));
    const stale = listed.filter((l) => !found.some((d) => listingOf(d.path) === l));

    const report = {
      methods: methods.length,
      notCalled: methods.filter((m) => excluded(m)).map((m) => ({ method: m, why: excluded(m) })),
      worksOnKeycloak: onKeycloak.length,
      worksOnBoth: onBoth.length,
      share,
      failingOnRealmgate: failing.map((n) => ({ method: n, status: outcomes[n].realmgate.status ?? null, listed: listingOf(`works.${n}`)?.reason ?? null })),
      failingOnKeycloak: Object.keys(outcomes).filter((n) => !outcomes[n].keycloak.works).map((n) => ({ method: n, status: outcomes[n].keycloak.status ?? null, realmgate: outcomes[n].realmgate.works })),
      missingKeys: found.filter((d) => d.path.startsWith('keys.')).map((d) => d.path),
      extraKeysOnRealmgate: onBoth.flatMap((n) => (outcomes[n].realmgate.keys ?? []).filter((key) => outcomes[n].keycloak.keys && !outcomes[n].keycloak.keys!.includes(key)).map((key) => `${n}.${key}`)),
    };
    const dir = join(REPO_ROOT, 'test-results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'keycloak-admin-client-breadth.json'), `${JSON.stringify(report, null, 2)}\n`);
    console.log(`admin-client breadth: ${onBoth.length} of the ${onKeycloak.length} methods that work on Keycloak work on Realmgate (${share}%); failing: ${failing.join(', ') || 'none'}`);

    expect(share, `the breadth figure regressed below ${FLOOR}% (failing: ${failing.join(', ')})`).toBeGreaterThanOrEqual(FLOOR);
    expect(unlisted.map((d) => `${d.path}: keycloak ${JSON.stringify(d.keycloak)}, realmgate ${JSON.stringify(d.realmgate)}`), 'differences not listed in test/keycloak/differences.ts').toEqual([]);
    expect(stale.map((l) => l.path), 'listed in differences.ts but no longer different: remove them').toEqual([]);
    // Every listed failing method says what is missing (open) or why (deliberate).
    expect(listed.filter((l) => !l.reason.trim()).map((l) => l.path)).toEqual([]);
  });
});
