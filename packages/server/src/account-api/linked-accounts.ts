import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/** GET /account/linked-accounts: identity providers linked to the caller. No identity brokering here: an empty list. */
export function linkedAccountsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/linked-accounts', async (request: AccountRequest) => {
    await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    return [];
  });
}
