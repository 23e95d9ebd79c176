import type { FastifyInstance } from 'fastify';
import { bruteForceStatus, clearLoginFailures, clearRealmLoginFailures } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { notFound } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type Params = { realm: string; id: string };

/**
 * Keycloak's attack-detection resource: a user's brute-force status, and clearing the login failures of one user
 * or of every user of the realm (which ends temporary lockouts; a permanently locked-out user stays disabled until
 * an administrator enables it, as in Keycloak). An unknown user id is 404, as everywhere in this admin API (Keycloak
 * answers it as a user without failures).
 */
export function attackDetectionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const base = '/realms/:realm/attack-detection/brute-force/users';

  const userOf = async (request: AdminRequest<Params>): Promise<{ realm: Realm; user: User }> => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    return { realm, user };
  };

  app.get(`${base}/:id`, async (request: AdminRequest<Params>) => {
    const { realm, user } = await userOf(request);
    return bruteForceStatus(ctx, realm, user);
  });

  app.delete(`${base}/:id`, async (request: AdminRequest<Params>, reply) => {
    const { realm, user } = await userOf(request);
    await clearLoginFailures(ctx, realm.id, user.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER_LOGIN_FAILURE', `attack-detection/brute-force/users/${user.id}`);
    return reply.code(204).send();
  });

  app.delete(base, async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    await clearRealmLoginFailures(ctx, realm.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER_LOGIN_FAILURE', 'attack-detection/brute-force/users');
    return reply.code(204).send();
  });
}
