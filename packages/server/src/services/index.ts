export { effectiveRoles, type EffectiveRoles } from './roles.js';
export { defaultRolesName, provisionRealm } from './realm-provisioning.js';
export { createUser, ensureServiceAccount, setPassword, userSnapshot, type NewUser } from './users.js';
