import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { JSON_REPRESENTATION } from './negotiation.js';
import { profileRepresentation } from './profile-metadata.js';
import { updateEmailActionEnabled } from '../services/index.js';

/** GET /realms/{realm}/account: the caller's profile (`?userProfileMetadata=false` leaves the metadata out). */
export function profileRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account', { constraints: JSON_REPRESENTATION }, async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    const query = request.query as Record<string, unknown>;
    const withMetadata = query.userProfileMetadata !== 'false';
    return profileRepresentation(caller.user, withMetadata, withMetadata && (await updateEmailActionEnabled(ctx.storage, caller.realm.id)));
  });
}
