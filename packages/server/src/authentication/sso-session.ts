import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { clearCookie, readCookie, requestInfo, secureCookies, setCookie } from '../http/index.js';
import { sessionAlive } from '../model/sessions.js';
import type { Realm, User, UserSession } from '../model/types.js';
import { pendingRequiredActions } from '../services/index.js';
import { realmCookiePath } from './auth-session.js';

const SSO_COOKIE = 'REALMGATE_SESSION';

type SsoContext = Pick<ServerContext, 'storage' | 'config'>;

/** The browser's SSO session for the realm, when it is still alive and its user may log in. */
export async function currentSsoSession(ctx: SsoContext, request: FastifyRequest, realm: Realm): Promise<{ session: UserSession; user: User } | null> {
  const id = readCookie(request, SSO_COOKIE);
  if (!id || id.length > 64) return null;
  const session = await ctx.storage.sessions.byId(id);
  if (!session || session.realmId !== realm.id || session.offline) return null;
  if (!sessionAlive(realm, session)) {
    await ctx.storage.sessions.delete(session.id);
    return null;
  }
  const user = await ctx.storage.users.byId(realm.id, session.userId);
  // An unverified address in a verifyEmail realm must go through the login page, which sends the link.
  if (!user || !user.enabled || (realm.verifyEmail && user.email && !user.emailVerified)) return null;
  // A required action an administrator set since (CONFIGURE_TOTP …) is carried out through the login page too.
  if ((await pendingRequiredActions(ctx.storage, realm.id, user.id)).length > 0) return null;
  return { session, user };
}

export async function startSsoSession(ctx: SsoContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, user: User): Promise<UserSession> {
  const now = Date.now();
  const session: UserSession = { id: newId(), realmId: realm.id, userId: user.id, ipAddress: requestInfo(request).ipAddress, started: now, lastRefresh: now };
  await ctx.storage.sessions.create(session);
  setCookie(reply, SSO_COOKIE, session.id, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
  return session;
}

export function clearSsoCookie(ctx: Pick<ServerContext, 'config'>, request: FastifyRequest, reply: FastifyReply, realm: Realm): void {
  clearCookie(reply, SSO_COOKIE, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
}
