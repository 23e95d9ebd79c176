import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { redirectUriAllowed } from '../model/redirect-uri.js';
import { executeActionsMail, mailTranslator, sendInBackground } from '../pages/emails.js';
import { actionTokenUrl, sendVerification } from '../pages/verify-email.js';
import { queryInt, queryString } from './query.js';
import { ADMIN_LINK_LIFETIME_S } from '../authentication/index.js';
import type { Realm } from '../model/types.js';
import { SUPPORTED_REQUIRED_ACTIONS } from '../representations/user.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type Params = { realm: string; id: string };


/**
 * The e-mails an administrator sends a user, as Keycloak's: `execute-actions-email` (a link that carries out the
 * required actions given — the invitation of a new user is `["UPDATE_PASSWORD"]`) and `send-verify-email`. Both
 * answer 204 once the mail is queued (it is sent in the background, a failure is logged and counted).
 */
/**
 * How long an administrator's link lives: the request's `lifespan` (seconds, at most 30 days), else the realm's
 * actionTokenGeneratedByAdminLifespan (Keycloak's 12 hours by default).
 */
export function adminLinkLifetime(query: Record<string, unknown>, realm: Realm): number {
  const fallback = realm.actionTokenGeneratedByAdminLifespan ?? ADMIN_LINK_LIFETIME_S;
  return queryInt(query, 'lifespan', fallback, 30 * 24 * 60 * 60) || fallback;
}

export function userActionEmailRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const target = async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    if (!user.email) throw badRequest('User email missing');
    if (!user.enabled) throw badRequest('User is disabled');
    // A redirect needs its client, and must be one of the client's redirect URIs (as at the authorization endpoint).
    const clientId = queryString(request.query, 'client_id') ?? null;
    const redirect = queryString(request.query, 'redirect_uri', 2048) ?? null;
    const client = clientId !== null ? await ctx.storage.clients.byClientId(realm.id, clientId) : null;
    if (clientId !== null && (!client || !client.enabled)) throw badRequest(`Client doesn't exist`, 'client_id');
    if (redirect !== null && (!client || !redirectUriAllowed(client, redirect, baseUrl(request, ctx.config.hostname)))) {
      throw badRequest(client ? 'Invalid redirect uri.' : 'Client id missing.', 'redirect_uri');
    }
    return { realm, user, clientId, redirect };
  };

  app.put('/realms/:realm/users/:id/execute-actions-email', async (request: AdminRequest<Params>, reply) => {
    const { realm, user, clientId, redirect } = await target(request);
    const body = request.body;
    if (!Array.isArray(body) || !body.every((a) => typeof a === 'string')) throw badRequest('The body must be a list of required actions');
    const actions = [...new Set(body as string[])];
    for (const action of actions) {
      if (!SUPPORTED_REQUIRED_ACTIONS.includes(action)) {
        throw badRequest(`Provided invalid required actions: "${action.slice(0, 64)}" is not supported (${SUPPORTED_REQUIRED_ACTIONS.join(', ')})`);
      }
    }
    const lifetime = adminLinkLifetime(request.query, realm);
    const token = await ctx.actionTokens.issue(
      realm,
      'execute-actions',
      user.id,
      { act: actions, ...(clientId ? { azp: clientId } : {}), ...(redirect ? { redirect } : {}) },
      lifetime,
    );
    sendInBackground(ctx, realm, mailTranslator(ctx, realm, user).then((t) => executeActionsMail(t, realm, user, actionTokenUrl(request, ctx, realm, token), actions, lifetime)));
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/execute-actions-email`, actions);
    return reply.code(204).send();
  });

  app.put('/realms/:realm/users/:id/send-verify-email', async (request: AdminRequest<Params>, reply) => {
    const { realm, user, clientId, redirect } = await target(request);
    const lifetime = adminLinkLifetime(request.query, realm);
    await sendVerification(ctx, request, realm, user, user.email!, clientId, lifetime, redirect);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/send-verify-email`);
    return reply.code(204).send();
  });
}
