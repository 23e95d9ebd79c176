import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/**
 * GET /account/supportedLocales (manage-account or view-profile): the realm's supported locales, which the account
 * console offers on the personal-info page. This server keeps no supported locales (a realm's `supportedLocales`
 * is accepted and not used), so the list is empty and the console shows no language choice.
 */
export function supportedLocalesRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/supportedLocales', async (request: AccountRequest) => {
    await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    return [];
  });
}
