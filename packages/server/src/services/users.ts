import type { UserSnapshot } from '@realmgate/spi';
import type { UserInput } from '../representations/user.js';
import { passwordCredentialId } from '../representations/credential.js';
import { hashNeedsUpgrade, hashPassword, newId, verifyPassword, type PasswordHashCost } from '../credentials/index.js';
import { RECOVERY_CODES_TYPE } from '../credentials/recovery-codes.js';
import { OTP_CREDENTIAL_TYPE } from '../credentials/otp.js';
import { checkPassword, policyHashCost, policyMessage, realmPasswordPolicy, type PasswordPolicy, type PolicyViolation } from '../credentials/password-policy.js';
import { badRequest, conflict, PasswordPolicyError } from '../model/errors.js';
import type { ServiceContext } from './context.js';
import type { Client, Realm, User } from '../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../storage/index.js';
import { joinDefaultGroups } from './groups.js';
import { defaultRolesName } from './realm-provisioning.js';
import { defaultRequiredActions } from './required-actions.js';
import { UPDATE_PASSWORD } from '../required-actions/index.js';

export interface NewUser {
  username: string;
  email?: string | null;
  firstName?: string | null;
  lastName?: string | null;
  emailVerified?: boolean;
  enabled?: boolean;
  attributes?: Record<string, string[]>;
  serviceAccountClientId?: string | null;
  /** A realm file's (Keycloak's import keeps it); otherwise now. */
  createdTimestamp?: number;
}

/**
 * Creates a user with the realm's default roles, in its default groups and with its default required actions, as
 * Keycloak does for every new user (a service account signs in with no page, so it gets no required action).
 */
export async function createUser(storage: Storage, realm: Realm, input: NewUser, db: Db): Promise<User> {
  const user: User = {
    id: newId(),
    realmId: realm.id,
    username: input.username.toLowerCase(),
    email: input.email ? input.email.toLowerCase() : null,
    emailVerified: input.emailVerified ?? false,
    firstName: input.firstName ?? null,
    lastName: input.lastName ?? null,
    enabled: input.enabled ?? true,
    createdTimestamp: input.createdTimestamp ?? Date.now(),
    attributes: input.attributes ?? {},
    serviceAccountClientId: input.serviceAccountClientId ?? null,
    passwordHash: null,
    passwordCreated: null,
  };
  await storage.users.insert(user, db);
  const defaults = await db
    .selectFrom('role')
    .select('id')
    .where('container_id', '=', realm.id)
    .where('name', '=', defaultRolesName(realm.name))
    .executeTakeFirst();
  if (defaults) await storage.roles.grant(user.id, [defaults.id], db);
  await joinDefaultGroups(storage, realm.id, user.id, db);
  if (!user.serviceAccountClientId) {
    const actions = await defaultRequiredActions(storage, realm.id, db);
    if (actions.length) await storage.credentials.setRequiredActions(user.id, actions, db);
  }
  return user;
}

/**
 * Creates a user from an admin representation (e-mail and username must be free, password set when given);
 * used by the users API and by realm import.
 */
export async function insertUser(ctx: Pick<ServiceContext, 'storage' | 'config'>, realm: Realm, input: UserInput, db: Db, path = 'user'): Promise<User> {
  const { storage } = ctx;
  if (!input.username) throw badRequest(`${path}.username: is required`, 'username');
  if (input.email && !realm.duplicateEmailsAllowed && (await db.selectFrom('user_entity').select('id').where('realm_id', '=', realm.id).where('email', '=', input.email.toLowerCase()).executeTakeFirst())) {
    throw conflict('User exists with same email', 'email');
  }
  let user: User;
  try {
    user = await createUser(storage, realm, { ...input, username: input.username }, db);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('User exists with same username', 'username');
    throw error;
  }
  if (input.password !== undefined) user = await setPassword(ctx, realm, user, input.password, db);
  else if (input.passwordHash !== undefined) {
    // An exported hash cannot be checked against the policy; it is replaced at the user's next sign-in.
    user = { ...user, passwordHash: input.passwordHash, passwordCreated: input.passwordCreated ?? Date.now(), passwordLabel: input.passwordLabel ?? null };
    await storage.users.update(user, db);
    if (input.passwordPriority !== undefined) await storage.credentials.setPasswordPriority(user.id, input.passwordPriority, db);
  }
  if (input.requiredActions?.length) await storage.credentials.setRequiredActions(user.id, input.requiredActions, db);
  for (const otp of input.otpCredentials ?? []) {
    await storage.credentials.insert(
      { id: newId(), userId: user.id, type: OTP_CREDENTIAL_TYPE, userLabel: otp.userLabel, secretData: { value: otp.secret }, credentialData: { ...otp.data }, createdDate: otp.createdDate ?? Date.now(), priority: otp.priority },
      db,
    );
  }
  for (const key of input.webAuthnCredentials ?? []) {
    await storage.credentials.insert(
      { id: newId(), userId: user.id, type: key.type, userLabel: key.userLabel, secretData: key.userHandle ? { userHandle: key.userHandle } : {}, credentialData: { ...key.credentialData }, createdDate: key.createdDate ?? Date.now(), priority: key.priority },
      db,
    );
  }
  if (input.recoveryCodes) {
    const { secretData, credentialData, createdDate, priority } = input.recoveryCodes;
    await storage.credentials.insert({ id: newId(), userId: user.id, type: RECOVERY_CODES_TYPE, userLabel: null, secretData, credentialData, createdDate: createdDate ?? Date.now(), priority }, db);
  }
  return user;
}

/** The service-account user Keycloak keeps for a client with service accounts enabled. */
export async function ensureServiceAccount(storage: Storage, realm: Realm, client: Client, db: Db): Promise<void> {
  const existing = await db.selectFrom('user_entity').select('id').where('service_account_client_id', '=', client.id).executeTakeFirst();
  if (existing) return;
  await createUser(storage, realm, { username: `service-account-${client.clientId}`, serviceAccountClientId: client.id }, db);
}

/**
 * Sets a user's password: the one place every entry point (registration, reset, account page, admin API,
 * realm import, first start) goes through, so the realm's password policy is checked here. A password the
 * policy refuses throws PasswordPolicyError and changes nothing; with passwordHistory(n) the new password may
 * equal neither the current one nor the n-1 before it, and the replaced hash is remembered.
 */
export async function setPassword(ctx: Pick<ServiceContext, 'storage' | 'config'>, realm: Realm, user: User, password: string, db?: Db): Promise<User> {
  const { storage } = ctx;
  const policy = await checkNewPassword(storage, realm, user, password, db);
  const now = Date.now();
  // As Keycloak's PasswordCredentialProvider: a user with a password keeps its credential, updated in place (same id,
  // a new creation date, the label cleared as the new credential model has none); a user without one gets a new one.
  const credentialId = user.passwordHash !== null ? passwordCredentialId(user) : newId();
  const updated = { ...user, passwordHash: await hashPassword(password, policyHashCost(policy, ctx.config.passwordHashingTestCost)), passwordCreated: now, passwordLabel: null, passwordCredentialId: credentialId };
  await storage.users.update(updated, db);
  if (user.passwordHash) await storage.users.rememberPassword(user.id, user.passwordHash, now, Math.max((policy.passwordHistory ?? 0) - 1, 0), db);
  return updated;
}

/**
 * Keycloak's `temporary` of a password set by an administrator: true adds the UPDATE_PASSWORD required action (the
 * user chooses a new password at the next browser sign-in; the password grant is refused until then), false takes
 * it away (reset-password only: Keycloak removes it when a password is set that is not temporary).
 */
export async function markPasswordTemporary(storage: Storage, userId: string, temporary: boolean, db: Db = storage.db): Promise<void> {
  await storage.credentials.removeRequiredAction(userId, UPDATE_PASSWORD, db);
  if (temporary) await db.insertInto('user_required_action').values({ user_id: userId, required_action: UPDATE_PASSWORD }).execute();
}

/**
 * Removes the user's password (Keycloak's removal of the password credential): the user then has none, so a
 * password sign-in fails as a wrong password's, until one is set again. Only while it is still the password the
 * caller saw (`user.passwordHash`); false when there was none or it was changed meanwhile. The earlier passwords
 * kept for passwordHistory stay; the removed one is not added to them (Keycloak keeps only replaced ones).
 */
export async function removePassword(storage: Storage, user: User, db: Db = storage.db): Promise<boolean> {
  if (!user.passwordHash) return false;
  const result = await db
    .updateTable('user_entity')
    .set({ password_hash: null, password_created: null, password_label: null, password_credential_id: null })
    .where('id', '=', user.id)
    .where('password_hash', '=', user.passwordHash)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * The realm's password policy applied to a new password for this user (setPassword's check, for a caller that
 * must know before it spends something, such as a single-use link): throws PasswordPolicyError when refused.
 */
export async function checkNewPassword(storage: Storage, realm: Realm, user: User, password: string, db?: Db): Promise<PasswordPolicy> {
  const policy = realmPasswordPolicy(realm.passwordPolicy);
  const refuse = (violation: PolicyViolation) => new PasswordPolicyError(violation.key, violation.params, policyMessage(violation));
  const violation = checkPassword(policy, password, user);
  if (violation) throw refuse(violation);
  const history = policy.passwordHistory ?? 0;
  if (history > 0) {
    const earlier = [...(user.passwordHash ? [user.passwordHash] : []), ...(await storage.users.passwordHistory(user.id, history - 1, db))].slice(0, history);
    for (const passwordHash of earlier) {
      if (await verifyPassword(password, passwordHash)) throw refuse({ key: 'invalidPasswordHistoryMessage', params: [String(history)] });
    }
  }
  return policy;
}

/**
 * After a successful login: hashes the password again when the stored hash was made with other parameters than
 * the realm's policy asks for now (`cost`: its hashIterations, at this server's memory cost), as Keycloak upgrades
 * a hash at login. A password changed meanwhile is left alone.
 */
export async function upgradePasswordHash(storage: Storage, user: User, password: string, cost: PasswordHashCost): Promise<void> {
  if (!user.passwordHash || !hashNeedsUpgrade(user.passwordHash, cost)) return;
  await storage.users.replacePasswordHash(user.id, user.passwordHash, await hashPassword(password, cost));
}

/**
 * The user as listeners see it; taken before a deletion so a DELETE event still names who went. Its direct realm
 * roles and organizations come through the configuration cache: every sign-in's event takes a snapshot when a realm
 * has a listener that reads it, and two more statements on each login's path cost a PostgreSQL login about a tenth
 * of its time (issue 44). Organization tables are not among the cache's tables: a write to them invalidates every
 * entry, this one included.
 */
export async function userSnapshot(storage: Storage, user: User): Promise<UserSnapshot> {
  const memberships = await storage.cache.get(`user-memberships\0${user.id}`, ['user_role', 'role', 'organization', 'organization_member'], async () => {
    const [roles, organizations] = await Promise.all([storage.roles.userRoles(user.id), storage.organizations.ofUser(user.id)]);
    return {
      realmRoles: roles.filter((r) => !r.clientRole).map((r) => r.name),
      organizations: organizations.map((o) => ({ id: o.id, name: o.name, alias: o.alias })),
    };
  });
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    firstName: user.firstName,
    lastName: user.lastName,
    emailVerified: user.emailVerified,
    enabled: user.enabled,
    createdTimestamp: user.createdTimestamp,
    attributes: user.attributes,
    // Copies: the cached value is frozen and shared.
    realmRoles: [...memberships!.realmRoles],
    organizations: memberships!.organizations.map((o) => ({ ...o })),
  };
}
