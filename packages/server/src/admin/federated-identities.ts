import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { conflict, notFound } from '../model/errors.js';
import type { FederatedIdentity } from '../model/types.js';
import { parseFederatedIdentity } from '../services/realm-import/federated-identities.js';
import { isUniqueViolation } from '../storage/index.js';
import { requireMayChangeAccount } from './permissions.js';
import { callerOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type UserParams = { realm: string; id: string };
type LinkParams = UserParams & { provider: string };

/** Keycloak's FederatedIdentityRepresentation; `userName` left out when there is none, as Keycloak's JSON leaves nulls out. */
export const linkRep = ({ userName, ...link }: FederatedIdentity) => ({ ...link, ...(userName !== null ? { userName } : {}) });

/**
 * A user's links to identity providers (Keycloak 26's `users/{id}/federated-identity`, the console's "Identity
 * provider links" tab), kept as data: nobody signs in through them, Realmgate has no brokering. Listing needs
 * view-users, linking and unlinking manage-users, checked before the user is looked up (who may not see users
 * learns nothing of their ids). A link names an identity provider the realm has (else 404, where Keycloak would
 * store a link it then never shows), goes with its provider, and follows a renamed alias.
 */
export function federatedIdentityRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const load = async (request: AdminRequest<UserParams>, role: 'view-users' | 'manage-users') => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    // A link is a way to sign in once brokering exists: not to be added to (or taken from) a greater administrator.
    if (role === 'manage-users') await requireMayChangeAccount(ctx, callerOf(request), user.id);
    return { realm, user };
  };
  /** An alias in a path: longer than Keycloak's column or holding NUL, it names no provider. */
  const aliasOf = (request: AdminRequest<LinkParams>) => {
    const alias = request.params.provider;
    return alias.length <= 255 && !alias.includes('\u0000') ? alias : null;
  };

  app.get('/realms/:realm/users/:id/federated-identity', async (request: AdminRequest<UserParams>) => {
    const { user } = await load(request, 'view-users');
    return (await ctx.storage.federation.links(user.id)).map(linkRep);
  });

  app.post('/realms/:realm/users/:id/federated-identity/:provider', async (request: AdminRequest<LinkParams>, reply) => {
    const { realm, user } = await load(request, 'manage-users');
    const alias = aliasOf(request);
    const link = parseFederatedIdentity(request.body, 'federatedIdentity', alias ?? request.params.provider);
    const provider = alias !== null ? await ctx.storage.federation.providerByAlias(realm.id, alias) : null;
    if (!provider) throw notFound('Could not find identity provider');
    try {
      await ctx.storage.federation.addLink(realm.id, user.id, provider.internalId, link);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('User is already linked with provider');
      throw error;
    }
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'USER', `users/${user.id}/federated-identity/${provider.alias}`, linkRep(link));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/users/:id/federated-identity/:provider', async (request: AdminRequest<LinkParams>, reply) => {
    const { realm, user } = await load(request, 'manage-users');
    const alias = aliasOf(request);
    if (alias === null || !(await ctx.storage.federation.removeLink(realm.id, user.id, alias))) throw notFound('Link not found');
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER', `users/${user.id}/federated-identity/${alias}`);
    return reply.code(204).send();
  });
}
