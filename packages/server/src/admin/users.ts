import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, conflict, notFound } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { createUser, setPassword, userSnapshot } from '../services/index.js';
import { isUniqueViolation, type Db } from '../storage/index.js';
import { requireMayMapRoles, requireRole } from './permissions.js';
import { roleMappingRoutes } from './role-mappings.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';
import { parseRepresentation, queryBool, queryInt, queryString, type Spec } from './validation.js';
import { emailPattern, personNamePattern, usernamePattern } from '../model/user-profile.js';


const userSpec: Spec = {
  username: { type: 'string', min: 1, pattern: usernamePattern, patternHint: 'a username without spaces or special characters' },
  // "" means no address, as Keycloak's user profile reads it (forms and scripts send it for an empty field).
  email: { type: 'string', max: 254, pattern: new RegExp(`^$|${emailPattern.source}`), patternHint: 'a valid e-mail address' },
  firstName: { type: 'string', pattern: personNamePattern, patternHint: 'a name without special characters' },
  lastName: { type: 'string', pattern: personNamePattern, patternHint: 'a name without special characters' },
  enabled: { type: 'boolean' },
  emailVerified: { type: 'boolean' },
  attributes: { type: 'multiMap', max: 2048 },
  credentials: { type: 'array' },
  requiredActions: { type: 'stringArray' },
};
const userIgnored = [
  'id', 'createdTimestamp', 'totp', 'disableableCredentialTypes', 'notBefore', 'access', 'clientConsents', 'clientRoles',
  'federatedIdentities', 'federationLink', 'groups', 'realmRoles', 'self', 'serviceAccountClientId', 'userProfileMetadata', 'origin',
];

export interface UserInput {
  username?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  enabled?: boolean;
  emailVerified?: boolean;
  attributes?: Record<string, string[]>;
  password?: string;
}

export function parseUser(body: unknown, path = 'user', onUnknown?: (path: string) => void): UserInput {
  const rep = parseRepresentation(body, userSpec, userIgnored, path, onUnknown) as UserInput & { credentials?: unknown };
  const { credentials, ...input } = rep;
  if (credentials !== undefined) {
    if (!Array.isArray(credentials)) throw badRequest(`${path}.credentials: must be an array`, 'credentials');
    for (const [i, credential] of credentials.entries()) {
      const c = credential as { type?: unknown; value?: unknown };
      if (c?.type !== 'password' || typeof c.value !== 'string' || c.value.length === 0 || c.value.length > 1024) {
        throw badRequest(`${path}.credentials[${i}]: only {"type":"password","value":"…"} credentials are supported`, 'credentials');
      }
      input.password = c.value;
    }
  }
  return input;
}

export function userRep(user: User) {
  return {
    id: user.id,
    username: user.username,
    firstName: user.firstName ?? undefined,
    lastName: user.lastName ?? undefined,
    email: user.email ?? undefined,
    emailVerified: user.emailVerified,
    attributes: Object.keys(user.attributes).length ? user.attributes : undefined,
    createdTimestamp: user.createdTimestamp,
    enabled: user.enabled,
    totp: false,
    ...(user.serviceAccountClientId ? { serviceAccountClientId: user.serviceAccountClientId } : {}),
    disableableCredentialTypes: [],
    requiredActions: [],
    notBefore: 0,
    access: { manageGroupMembership: true, view: true, mapRoles: true, impersonate: false, manage: true },
  };
}

/** Creates a user from an admin representation; used by the users API and by realm import. */
export async function insertUser(ctx: ServerContext, realm: Realm, input: UserInput, db: Db, path = 'user'): Promise<User> {
  if (!input.username) throw badRequest(`${path}.username: is required`, 'username');
  if (input.email && !realm.duplicateEmailsAllowed && (await db.selectFrom('user_entity').select('id').where('realm_id', '=', realm.id).where('email', '=', input.email.toLowerCase()).executeTakeFirst())) {
    throw conflict('User exists with same email', 'email');
  }
  let user: User;
  try {
    user = await createUser(ctx.storage, realm, { ...input, username: input.username }, db);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('User exists with same username', 'username');
    throw error;
  }
  if (input.password !== undefined) user = await setPassword(ctx.storage, user, input.password, db);
  return user;
}

export function userRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const searchQuery = (query: Record<string, unknown>) => ({
    username: queryString(query, 'username'),
    email: queryString(query, 'email'),
    firstName: queryString(query, 'firstName'),
    lastName: queryString(query, 'lastName'),
    search: queryString(query, 'search'),
    exact: queryBool(query, 'exact'),
    enabled: queryBool(query, 'enabled'),
    emailVerified: queryBool(query, 'emailVerified'),
  });

  app.get('/realms/:realm/users', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'view-users');
    const users = await ctx.storage.users.search(realm.id, {
      ...searchQuery(request.query),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', 100),
    });
    return users.map(userRep);
  });

  app.get('/realms/:realm/users/count', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'view-users');
    return ctx.storage.users.count(realm.id, searchQuery(request.query));
  });

  app.post('/realms/:realm/users', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'manage-users');
    const input = parseUser(request.body);
    const user = await ctx.storage.transaction((trx) => insertUser(ctx, realm, input, trx));
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'USER', `users/${user.id}`, userRep(user), await userSnapshot(ctx.storage, user));
    return reply.code(201).header('location', locationOf(ctx, request, user.id)).send();
  });

  const load = async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    return { realm, user };
  };

  app.get('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, user } = await load(request);
    requireRole(callerOf(request), realm, 'view-users');
    return userRep(user);
  });

  // Keycloak updates the fields given and leaves the others (unlike clients, whose PUT replaces).
  app.put('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    requireRole(callerOf(request), realm, 'manage-users');
    const input = parseUser(request.body);
    if (input.username !== undefined && input.username.toLowerCase() !== user.username) {
      throw badRequest('user.username: cannot be changed (editUsernameAllowed is off)', 'username');
    }
    const email = input.email !== undefined ? input.email.toLowerCase() || null : user.email;
    if (email && email !== user.email && !realm.duplicateEmailsAllowed) {
      const other = await ctx.storage.users.byEmail(realm.id, email);
      if (other && other.id !== user.id) throw conflict('User exists with same email', 'email');
    }
    let updated: User = {
      ...user,
      email,
      emailVerified: input.emailVerified ?? (email !== user.email ? false : user.emailVerified),
      firstName: input.firstName ?? user.firstName,
      lastName: input.lastName ?? user.lastName,
      enabled: input.enabled ?? user.enabled,
      attributes: input.attributes ?? user.attributes,
    };
    await ctx.storage.users.update(updated);
    if (input.password !== undefined) updated = await setPassword(ctx.storage, updated, input.password);
    if (!updated.enabled && user.enabled) await ctx.storage.sessions.deleteForUser(user.id);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'USER', `users/${user.id}`, userRep(updated), await userSnapshot(ctx.storage, updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    requireRole(callerOf(request), realm, 'manage-users');
    if (user.serviceAccountClientId) throw badRequest('A service-account user is removed with its client');
    const snapshot = await userSnapshot(ctx.storage, user);
    await ctx.storage.users.delete(user.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER', `users/${user.id}`, undefined, snapshot);
    return reply.code(204).send();
  });

  app.put('/realms/:realm/users/:id/reset-password', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    requireRole(callerOf(request), realm, 'manage-users');
    const body = parseRepresentation(request.body, { type: { type: 'string' }, value: { type: 'string', max: 1024 }, temporary: { type: 'boolean' } }, ['userLabel', 'id', 'createdDate', 'priority', 'secretData', 'credentialData'], 'credential');
    if (body.type !== undefined && body.type !== 'password') throw badRequest('credential.type: must be "password"', 'type');
    if (typeof body.value !== 'string' || body.value.length === 0) throw badRequest('credential.value: is required', 'value');
    await setPassword(ctx.storage, user, body.value);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/reset-password`);
    return reply.code(204).send();
  });

  // Role mappings ---------------------------------------------------------------------------------------

  roleMappingRoutes(app, ctx, {
    prefix: '/realms/:realm/users/:id/role-mappings',
    segment: 'role-mappings',
    holder: async (request) => {
      const { realm, user } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, id: user.id, eventPath: `users/${user.id}` };
    },
    view: 'view-users',
    manage: 'manage-users',
    resourceTypes: { realm: 'REALM_ROLE_MAPPING', client: 'CLIENT_ROLE_MAPPING' },
    mayMap: (caller, roles) => requireMayMapRoles(ctx, caller, roles),
    mappedIds: (userId) => ctx.storage.roles.userRoleIds(userId),
    add: (userId, roleIds) => ctx.storage.roles.grant(userId, roleIds),
    remove: (userId, roleIds) => ctx.storage.roles.revoke(userId, roleIds),
  });
}
