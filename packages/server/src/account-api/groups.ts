import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/** GET /account/groups: the caller's groups. Groups do not exist in this server yet: always an empty list. */
export function groupsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/groups', async (request: AccountRequest) => {
    await accountCallerWith(ctx, request, 'manage-account', 'view-groups');
    return [];
  });
}
