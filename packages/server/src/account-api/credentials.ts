import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { User } from '../model/types.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/** A stable id for the user's password credential: it changes when the password does, as a new Keycloak credential's. */
function passwordCredentialId(user: User): string {
  const hex = createHash('sha256').update(`password:${user.id}:${user.passwordCreated ?? 0}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * GET /realms/{realm}/account/credentials: the credential types the user can have, as Keycloak's account console
 * lists them; here only the password (`?type=` filters, `?user-credentials=false` leaves the user's own out).
 */
export function credentialsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/credentials', async (request: AccountRequest) => {
    const { user } = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    const query = request.query as Record<string, unknown>;
    if (typeof query.type === 'string' && query.type !== 'password') return [];
    const hasPassword = user.passwordHash !== null;
    const own = hasPassword ? [{ credential: { id: passwordCredentialId(user), type: 'password', createdDate: user.passwordCreated ?? user.createdTimestamp } }] : [];
    return [
      {
        type: 'password',
        category: 'basic-authentication',
        displayName: 'password-display-name',
        helptext: 'password-help-text',
        iconCssClass: 'kcAuthenticatorPasswordClass',
        ...(hasPassword ? { updateAction: 'UPDATE_PASSWORD' } : { createAction: 'UPDATE_PASSWORD' }),
        removeable: false,
        ...(query['user-credentials'] === 'false' ? {} : { userCredentialMetadatas: own }),
      },
    ];
  });
}
