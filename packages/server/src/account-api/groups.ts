import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { GroupTree } from '../services/index.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/** GET /account/groups: the groups the caller is a member of (directly), with their paths. */
export function groupsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/groups', async (request: AccountRequest) => {
    const { realm, user } = await accountCallerWith(ctx, request, 'manage-account', 'view-groups');
    const ids = await ctx.storage.groups.userGroupIds(user.id);
    if (ids.length === 0) return [];
    const tree = await GroupTree.load(ctx.storage, realm.id);
    return ids
      .map((id) => tree.get(id))
      .filter((g) => g !== undefined)
      // Keycloak's account GroupRepresentation has `subGroups`, always empty here (only the groups joined directly).
      .map((g) => ({ id: g.id, name: g.name, path: tree.path(g.id), subGroups: [] }))
      .sort((a, b) => a.path.localeCompare(b.path));
  });
}
