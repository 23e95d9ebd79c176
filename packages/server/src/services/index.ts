export { effectiveRoles, type EffectiveRoles } from './roles.js';
export { defaultRolesName, grantAdminClientRoles, provisionRealm, removeAdminClient, renameAdminClient, upgradeAdminModel } from './realm-provisioning.js';
export { createUser, ensureServiceAccount, setPassword, userSnapshot, type NewUser } from './users.js';
