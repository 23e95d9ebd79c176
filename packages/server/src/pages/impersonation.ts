import type { FastifyReply, FastifyRequest } from 'fastify';
import { startSsoSession } from '../authentication/index.js';
import { requestInfo } from '../http/index.js';
import type { EventError } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import type { PagesContext } from './context.js';
import { showPage } from './pages.js';

const refusedText = 'The impersonation link has expired, has already been used or cannot be carried out.';

/**
 * An impersonation link (admin/impersonation.ts) opened in the administrator's browser, as Keycloak's
 * ImpersonateActionTokenHandler: used once; the user must still exist, be enabled and not be a service account. An
 * SSO session of the user starts in this browser (its cookie replaces any other of the realm), IMPERSONATE is recorded
 * with who impersonated, and the browser goes on to the account console. A refusal is IMPERSONATE_ERROR and a page.
 */
export async function redeemImpersonation(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, key: string): Promise<FastifyReply> {
  const info = requestInfo(request);
  const claims = await ctx.actionTokens.read(realm, key, 'impersonate');
  const refuse = async (error: EventError, status: number, userId: string | null = null) => {
    await ctx.events.user(realm, { type: 'IMPERSONATE_ERROR', clientId: null, userId, error, details: claims?.imp ? { impersonator_realm: claims.imp.realm, impersonator: claims.imp.username, impersonator_id: claims.imp.id } : {}, request: info });
    return showPage.error(ctx, reply, realm, refusedText, status);
  };
  if (!claims || !claims.imp || !claims.redirect || !(await ctx.actionTokens.consume(claims))) return refuse('invalid_token', 400);
  const user = await ctx.storage.users.byId(realm.id, claims.sub);
  if (!user) return refuse('user_not_found', 404);
  if (!user.enabled) return refuse('user_disabled', 400, user.id);
  if (user.serviceAccountClientId) return refuse('not_allowed', 400, user.id);
  const session = await startSsoSession(ctx, request, reply, realm, user);
  ctx.authSessions.end(reply, request, realm);
  await ctx.events.user(realm, {
    type: 'IMPERSONATE',
    clientId: null,
    userId: user.id,
    sessionId: session.id,
    details: { impersonator_realm: claims.imp.realm, impersonator: claims.imp.username, impersonator_id: claims.imp.id },
    request: info,
    user: () => userSnapshot(ctx.storage, user),
  });
  return reply.redirect(claims.redirect, 302);
}
