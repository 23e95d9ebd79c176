import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { sessionAlive } from '../model/sessions.js';
import { actionTokenUrl } from '../pages/verify-email.js';
import { issuerOf } from '../protocol/openid-connect/index.js';
import { requireMayChangeAccount } from './permissions.js';
import { callerOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** How long the impersonation link is good for (Keycloak's: 60 s); it is used once. */
const IMPERSONATION_LINK_LIFETIME_S = 60;

/**
 * Keycloak's impersonation (`POST users/{id}/impersonation`, the console's Action → Impersonate): the `impersonation`
 * role over the realm (route-permissions.ts) and, as for every change that could give the caller someone's sign-in,
 * every administrative role the user holds within the caller's power (requireMayChangeAccount). The answer is
 * Keycloak's `{redirect, sameRealm}`: `redirect` is a single-use action-token link (60 s) that, opened in the
 * caller's browser, starts an SSO session of the user there (its cookie), records the IMPERSONATE event and goes on
 * to the account console (pages/impersonation.ts). When the caller signed in to the same realm, its own session ends
 * here (its clients told by back-channel logout), as the browser's SSO cookie is about to become the user's.
 */
export function impersonationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/realms/:realm/users/:id/impersonation', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const caller = callerOf(request);
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    await requireMayChangeAccount(ctx, caller, user.id);
    if (!user.enabled) throw badRequest('User is disabled');
    if (user.serviceAccountClientId) throw badRequest('Service accounts cannot be impersonated');
    const impersonator = await ctx.storage.users.byId(caller.realm.id, caller.userId);
    if (!impersonator) throw notFound('User not found');
    const callerSessionId = typeof caller.claims.sid === 'string' ? caller.claims.sid : null;
    const sameRealm = caller.realm.id === realm.id && callerSessionId !== null;
    // As Keycloak: not when the caller impersonates itself (its session would be the one it is about to get).
    if (sameRealm && user.id !== caller.userId) {
      const session = await ctx.storage.sessions.byId(callerSessionId);
      if (session && session.realmId === realm.id && !session.offline && sessionAlive(realm, session)) {
        await ctx.logoutNotifications.endSessions(realm, [session], issuerOf(baseUrl(request, ctx.config.hostname), realm.name), (trx) => ctx.storage.sessions.delete(session.id, trx));
      }
    }
    const accountUrl = `${baseUrl(request, ctx.config.hostname)}/realms/${encodeURIComponent(realm.name)}/account`;
    const token = await ctx.actionTokens.issue(
      realm,
      'impersonate',
      user.id,
      { redirect: accountUrl, imp: { id: impersonator.id, username: impersonator.username, realm: caller.realm.name } },
      IMPERSONATION_LINK_LIFETIME_S,
    );
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/impersonation`);
    return { sameRealm, redirect: actionTokenUrl(request, ctx, realm, token) };
  });
}
