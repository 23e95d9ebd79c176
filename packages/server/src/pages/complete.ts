import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import type { Realm, User, UserSession } from '../model/types.js';
import { issuerOf } from '../protocol/openid-connect/tokens.js';
import { userSnapshot } from '../services/index.js';
import type { AuthSession } from './auth-session.js';
import { redirectWithCode, startSsoSession } from './sso.js';

/** The end of every successful browser login: SSO session, LOGIN event, code back to the client. */
export async function completeLogin(
  ctx: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  existing?: UserSession,
): Promise<FastifyReply> {
  const session = existing ?? (await startSsoSession(ctx, request, reply, realm, user));
  if (existing) await ctx.storage.sessions.touch(existing.id, Date.now());
  ctx.authSessions.end(reply, request, realm);
  await ctx.events.user(realm, {
    type: 'LOGIN',
    clientId: auth.clientId,
    userId: user.id,
    sessionId: session.id,
    details: { auth_method: 'openid-connect', auth_type: 'code', redirect_uri: auth.redirectUri, username: user.username, ...(existing ? { remember_me: 'false', sso: 'true' } : {}) },
    request: requestInfo(request),
    user: await userSnapshot(ctx.storage, user),
  });
  return redirectWithCode(ctx.hostStore, reply, issuerOf(baseUrl(request, ctx.config.hostname), realm.name), auth, session, user.id);
}
