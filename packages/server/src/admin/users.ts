import type { FastifyInstance, FastifyReply } from 'fastify';
import { bruteForceStatus, clearLoginFailures, OTP_CREDENTIAL_TYPE } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { badRequest, conflict, notFound, unsupportedMediaType } from '../model/errors.js';
import type { User } from '../model/types.js';

/** Keycloak's credential label column holds 255 characters. */
const CREDENTIAL_LABEL_LIMIT = 255;
import { groupEffectiveRoles, GroupTree, heldRoleIds, insertUser, setPassword, userSnapshot } from '../services/index.js';
import { markPasswordTemporary, removePassword } from '../services/users.js';
import { parseFederatedIdentities, saveFederatedIdentities } from '../services/realm-import/federated-identities.js';
import { linkRep } from './federated-identities.js';
import { hasRole, mayChangeAccount, requireMayChangeAccount, requireMayMapRoles } from './permissions.js';
import { roleMappingRoutes } from './role-mappings.js';
import { queryBool, queryInt, queryString } from './query.js';
import { credentialRep, passwordCredentialRep } from '../representations/credential.js';
import { stringList } from '../representations/fields.js';
import { parsePasswordCredential, parseUser, userRep, type UserExtras } from '../representations/user.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

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

  /** Each user's required actions and whether it has an OTP credential, for userRep. */
  const extrasOf = async (users: User[]): Promise<Map<string, UserExtras>> => {
    const ids = users.map((u) => u.id);
    const [actions, withOtp] = await Promise.all([ctx.storage.credentials.requiredActionsOf(ids), ctx.storage.credentials.usersWith(ids, OTP_CREDENTIAL_TYPE)]);
    return new Map(ids.map((id) => [id, { requiredActions: actions.get(id) ?? [], totp: withOtp.has(id) }]));
  };
  const fullRep = async (user: User) => userRep(user, (await extrasOf([user])).get(user.id));

  /** A page of the realm's users matching the query, with their representations. */
  const searchUsers = async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const users = await ctx.storage.users.search(realm.id, {
      ...searchQuery(request.query),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', 100),
    });
    const extras = await extrasOf(users);
    return { realm, found: users.map((user) => ({ user, rep: userRep(user, extras.get(user.id)) })) };
  };

  app.get('/realms/:realm/users', async (request: AdminRequest) => (await searchUsers(request)).found.map(({ rep }) => rep));

  // The admin console's user list: the same search, each user with its brute-force status.
  app.get('/realms/:realm/ui-ext/brute-force-user', async (request: AdminRequest) => {
    const { realm, found } = await searchUsers(request);
    return Promise.all(found.map(async ({ user, rep }) => ({ ...rep, bruteForceStatus: await bruteForceStatus(ctx, realm, user) })));
  });

  app.get('/realms/:realm/users/count', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    return ctx.storage.users.count(realm.id, searchQuery(request.query));
  });

  app.post('/realms/:realm/users', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = parseUser(request.body);
    // `groups`: paths of groups the new user joins, as Keycloak's; their roles pass the admin-role rule.
    const paths = stringList((request.body as { groups?: unknown }).groups, 'user.groups');
    const tree = paths.length ? await GroupTree.load(ctx.storage, realm.id) : null;
    const groupIds = paths.map((path, i) => {
      const group = tree!.byPath(path.startsWith('/') ? path : `/${path}`);
      if (!group) throw badRequest(`user.groups[${i}]: group "${path}" does not exist`, 'groups');
      return group.id;
    });
    if (tree && groupIds.length) await requireMayMapRoles(ctx, callerOf(request), await groupEffectiveRoles(ctx.storage, tree, groupIds));
    // `federatedIdentities`: links to accounts at the realm's identity providers, kept as data (no brokering here).
    const links = parseFederatedIdentities((request.body as { federatedIdentities?: unknown }).federatedIdentities ?? [], 'user.federatedIdentities');
    const user = await ctx.storage.transaction(async (trx) => {
      const created = await insertUser(ctx, realm, input, trx);
      // A temporary password (`credentials: [{type:"password", value, temporary:true}]`) asks for a new one at the next sign-in.
      if (input.temporaryPassword) await markPasswordTemporary(ctx.storage, created.id, true, trx);
      await ctx.storage.groups.join(created.id, groupIds, trx);
      await saveFederatedIdentities(ctx.storage, realm, links.map((link) => ({ userId: created.id, link })), trx);
      return created;
    });
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'USER', `users/${user.id}`, await fullRep(user), await userSnapshot(ctx.storage, user));
    return reply.code(201).header('location', locationOf(ctx, request, user.id)).send();
  });

  const load = async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    return { realm, user };
  };

  app.get('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const caller = callerOf(request);
    // As Keycloak 26: the caller's own id, asked of a realm other than the caller's, answers the caller (the
    // console's Realm settings → Email tab looks the signed-in administrator up in the realm it edits). Nobody
    // else's: another realm's user stays 404.
    if (request.params.id === caller.userId && caller.realm.name !== request.params.realm) {
      const self = await ctx.storage.users.byId(caller.realm.id, caller.userId);
      if (!self) throw notFound('User not found');
      return fullRep(self);
    }
    const { realm, user } = await load(request);
    const rep = await fullRep(user);
    // Keycloak's access.impersonate: whether this caller may impersonate this user (the console's Impersonate action).
    const impersonate = hasRole(caller, realm, 'impersonation') && (await mayChangeAccount(ctx, caller, user.id)) && user.enabled && !user.serviceAccountClientId;
    // Keycloak adds the user's links to identity providers when the realm has any (its identity federation is on).
    const brokered = (await ctx.storage.federation.providers(realm.id, { realmOnly: false, first: 0, max: 1 })).length > 0;
    const federatedIdentities = brokered ? { federatedIdentities: (await ctx.storage.federation.links(user.id)).map(linkRep) } : {};
    return { ...rep, ...federatedIdentities, access: { ...rep.access, impersonate } };
  });

  // The attributes the user profile does not declare (its policy is ADMIN_EDIT): every stored attribute here.
  app.get('/realms/:realm/users/:id/unmanagedAttributes', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { user } = await load(request);
    return user.attributes;
  });

  // Keycloak updates the fields given and leaves the others (unlike clients, whose PUT replaces).
  app.put('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    await requireMayChangeAccount(ctx, callerOf(request), user.id);
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
    // One write with the password, so a password the policy refuses leaves the other fields unchanged too.
    if (input.password !== undefined) updated = await setPassword(ctx, realm, updated, input.password);
    else await ctx.storage.users.update(updated);
    if (input.requiredActions !== undefined) await ctx.storage.credentials.setRequiredActions(user.id, input.requiredActions);
    // Keycloak's updateUserFromRep: a temporary password credential adds UPDATE_PASSWORD (after the list above).
    if (input.temporaryPassword) await markPasswordTemporary(ctx.storage, user.id, true);
    if (!updated.enabled && user.enabled) await ctx.storage.sessions.deleteForUser(user.id);
    // Enabling a user ends a permanent lockout, as in Keycloak: its failures are forgotten.
    if (updated.enabled && !user.enabled) await clearLoginFailures(ctx, realm.id, user.id);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'USER', `users/${user.id}`, await fullRep(updated), await userSnapshot(ctx.storage, updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/users/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    await requireMayChangeAccount(ctx, callerOf(request), user.id);
    if (user.serviceAccountClientId) throw badRequest('A service-account user is removed with its client');
    const snapshot = await userSnapshot(ctx.storage, user);
    await ctx.storage.users.delete(user.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER', `users/${user.id}`, undefined, snapshot);
    return reply.code(204).send();
  });

  app.put('/realms/:realm/users/:id/reset-password', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, user } = await load(request);
    await requireMayChangeAccount(ctx, callerOf(request), user.id);
    const credential = parsePasswordCredential(request.body);
    // As Keycloak: temporary adds UPDATE_PASSWORD (a new password at the next sign-in), otherwise it is removed.
    await ctx.storage.transaction(async (trx) => {
      await setPassword(ctx, realm, user, credential.value, trx);
      await markPasswordTemporary(ctx.storage, user.id, credential.temporary, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/reset-password`);
    return reply.code(204).send();
  });

  // Credentials: the password and the OTP credentials; the secrets are never answered -----------------------

  /**
   * The user's credentials in Keycloak's order: by priority (the password's 10 unless moved), then by creation. The
   * password sorts before a stored credential of the same priority.
   */
  const orderedCredentials = async (user: User) => {
    const password = passwordCredentialRep(user, { withData: true });
    const stored = await ctx.storage.credentials.ofUser(user.id);
    const rows = [
      ...(password ? [{ priority: await ctx.storage.credentials.passwordPriority(user.id), created: password.createdDate, first: 0, rep: password as Record<string, unknown> & { id: string } }] : []),
      ...stored.map((c) => ({ priority: c.priority, created: c.createdDate, first: 1, rep: credentialRep(c) as Record<string, unknown> & { id: string } })),
    ];
    rows.sort((a, b) => a.priority - b.priority || a.first - b.first || a.created - b.created);
    return { password, reps: rows.map((r) => r.rep) };
  };

  app.get('/realms/:realm/users/:id/credentials', async (request: AdminRequest<{ realm: string; id: string }>) => (await orderedCredentials((await load(request)).user)).reps);

  /**
   * Keycloak's credential moves (the console's Credentials tab, dragging a row): the credential goes first, or right
   * after another of the user's; every credential then gets the priority of its place, as Keycloak renumbers them.
   */
  const moveCredential = async (request: AdminRequest<{ realm: string; id: string; credentialId: string; newPreviousCredentialId?: string }>, reply: FastifyReply, after: string | null) => {
    const { realm, user } = await load(request);
    await requireMayChangeAccount(ctx, callerOf(request), user.id);
    const credentialId = pathId(request.params.credentialId, 'Credential');
    const { password, reps } = await orderedCredentials(user);
    const ids = reps.map((r) => r.id);
    // Keycloak 26.7.3 answers 204 and changes nothing for a previous credential the user does not have; refused
    // here as the unknown id it is (test/keycloak/differences.ts).
    if (!ids.includes(credentialId) || (after !== null && !ids.includes(after))) throw notFound('Credential not found');
    // After itself: where it is already (Keycloak's 204 too).
    if (after !== credentialId) {
      const rest = ids.filter((id) => id !== credentialId);
      rest.splice(after === null ? 0 : rest.indexOf(after) + 1, 0, credentialId);
      await ctx.storage.transaction((trx) => ctx.storage.credentials.setOrder(user.id, rest, password?.id ?? null, trx));
    }
    const path = `users/${user.id}/credentials/${credentialId}/${after === null ? 'moveToFirst' : `moveAfter/${after}`}`;
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', path);
    return reply.code(204).send();
  };
  app.post('/realms/:realm/users/:id/credentials/:credentialId/moveToFirst', (request: AdminRequest<{ realm: string; id: string; credentialId: string }>, reply) => moveCredential(request, reply, null));
  app.post('/realms/:realm/users/:id/credentials/:credentialId/moveAfter/:newPreviousCredentialId', (request: AdminRequest<{ realm: string; id: string; credentialId: string; newPreviousCredentialId: string }>, reply) =>
    moveCredential(request, reply, pathId(request.params.newPreviousCredentialId, 'Credential')),
  );

  // Keycloak's credential types a user's storage provider (LDAP, Kerberos) keeps for the user: this server has no
  // user storage federation, so none (Keycloak answers [] for a local user too).
  app.get('/realms/:realm/users/:id/configured-user-storage-credential-types', async (request: AdminRequest<{ realm: string; id: string }>) => {
    await load(request);
    return [];
  });

  // A credential's label, sent as a bare text/plain body (the console labels a new password "My password"). Only
  // this route reads text/plain, so its parser is registered in a scope of its own.
  app.register(async (scoped) => {
    scoped.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: CREDENTIAL_LABEL_LIMIT * 4 }, (_request, body, done) => done(null, body));
    scoped.put('/realms/:realm/users/:id/credentials/:credentialId/userLabel', { config: { textPlainBody: true } }, async (request: AdminRequest<{ realm: string; id: string; credentialId: string }>, reply) => {
      const { realm, user } = await load(request);
      const credentialId = pathId(request.params.credentialId, 'Credential');
      // Keycloak's route consumes text/plain only.
      if (!/^text\/plain\b/i.test(request.headers['content-type'] ?? '') || typeof request.body !== 'string') throw unsupportedMediaType('The label is sent as a text/plain body');
      const label = request.body.trim();
      if (label.length > CREDENTIAL_LABEL_LIMIT) throw badRequest(`The label is at most ${CREDENTIAL_LABEL_LIMIT} characters`, 'userLabel');
      if (/[\u0000-\u001f\u007f]/.test(label)) throw badRequest('The label cannot contain control characters', 'userLabel');
      if (passwordCredentialRep(user)?.id === credentialId) await ctx.storage.users.update({ ...user, passwordLabel: label || null });
      else if (!(await ctx.storage.credentials.setLabel(user.id, credentialId, label || null))) throw notFound('Credential not found');
      await recordAdminEvent(ctx, request, realm, 'UPDATE', 'USER', `users/${user.id}/credentials/${credentialId}/userLabel`);
      return reply.code(204).send();
    });
  });

  // Keycloak removes any credential here, the password too: the user then has none (a password sign-in fails as
  // a wrong password's) until reset-password sets one. A reset keeps the password credential's id (Keycloak updates
  // it in place), so an id read before a reset still names it; one set after a removal is a new credential.
  app.delete('/realms/:realm/users/:id/credentials/:credentialId', async (request: AdminRequest<{ realm: string; id: string; credentialId: string }>, reply) => {
    const { realm, user } = await load(request);
    await requireMayChangeAccount(ctx, callerOf(request), user.id);
    const credentialId = pathId(request.params.credentialId, 'Credential');
    const removed = passwordCredentialRep(user)?.id === credentialId ? await removePassword(ctx.storage, user) : await ctx.storage.credentials.delete(user.id, credentialId);
    if (!removed) throw notFound('Credential not found');
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/credentials/${credentialId}`);
    return reply.code(204).send();
  });

  // Role mappings ---------------------------------------------------------------------------------------

  roleMappingRoutes(app, ctx, {
    prefix: '/realms/:realm/users/:id/role-mappings',
    consoleType: 'users',
    segment: 'role-mappings',
    holder: async (request) => {
      const { realm, user } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, id: user.id, eventPath: `users/${user.id}` };
    },
    resourceTypes: { realm: 'REALM_ROLE_MAPPING', client: 'CLIENT_ROLE_MAPPING' },
    mayMap: (caller, roles) => requireMayMapRoles(ctx, caller, roles),
    mappedIds: (userId) => ctx.storage.roles.userRoleIds(userId),
    effectiveIds: (holder) => heldRoleIds(ctx.storage, holder.id),
    add: (userId, roleIds) => ctx.storage.roles.grant(userId, roleIds),
    remove: (userId, roleIds) => ctx.storage.roles.revoke(userId, roleIds),
  });
}
