// Realm import has its own entry, services/realm-import/index.ts: it reads representations/ and, through them,
// flows/, which the modules importing this index (protocol/, http/) must not load in a cycle.
export { clientRoleScope, effectiveRoles, heldRoleIds, rolesStillHeld, type EffectiveRoles } from './roles.js';
export { clientScopeSet } from './client-scope-set.js';
export { attachClientScopes, clientScopeViews, provisionClientScopes, realmDefaultScopeNames, syncServiceAccountScope, upgradeClientScopes, type RequestedScopes } from './client-scopes.js';
export { createGroup, deleteGroup, groupEffectiveRoles, groupRoleNames, GroupTree, joinDefaultGroups, moveGroup, updateGroup, byName, type GroupInput } from './groups.js';
export { defaultRolesName, grantAdminClientRoles, provisionRealm, removeAdminClient, renameAdminClient, renameAdminConsolePaths, upgradeAccountRoles, upgradeAdminConsoleClient, upgradeAdminModel } from './realm-provisioning.js';
export { clientFrom, insertClient, replaceClientMappers, serviceAccountNamed, type ClientExtras } from './clients.js';
export { applicableExecutors, enforceClientPolicies, registerWithPolicies, type ClientPolicyEvent, type PolicyContext } from './client-policies.js';
export { revokeClientGrants } from './grants.js';
export { saveOrganization } from './organizations.js';
export { checkNewPassword, createUser, ensureServiceAccount, insertUser, setPassword, upgradePasswordHash, userSnapshot, type NewUser } from './users.js';
export {
  dueRequiredActions,
  inPriorityOrder,
  moveRequiredAction,
  pendingRequiredActions,
  realmRequiredAction,
  realmRequiredActions,
  registerRequiredAction,
  requiredActionConfig,
  requiredActionConfigDescription,
  requiredActionMaxAuthAge,
  setRequiredActionConfig,
  unregisteredRequiredActions,
  unregisterRequiredAction,
  updateEmailActionEnabled,
  updateRequiredAction,
  type RequiredAction,
} from './required-actions.js';
