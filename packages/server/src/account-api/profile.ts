import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { JSON_REPRESENTATION } from './negotiation.js';
import { profileRepresentation } from './profile-metadata.js';

/** GET /realms/{realm}/account: the caller's profile (`?userProfileMetadata=false` leaves the metadata out). */
export function profileRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account', { constraints: JSON_REPRESENTATION }, async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    const query = request.query as Record<string, unknown>;
    return profileRepresentation(caller.user, query.userProfileMetadata !== 'false');
  });
}
