import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SharedStore } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { clearCookie, readCookie, requestInfo, secureCookies, setCookie } from '../http/index.js';
import type { Realm, User, UserSession } from '../model/types.js';
import type { AuthSession } from './auth-session.js';
import { realmCookiePath } from './auth-session.js';

const SSO_COOKIE = 'REALMGATE_SESSION';
const CODE_LIFETIME_MS = 60_000;

/** What an authorization code stands for until the client redeems it (once). */
export interface CodeGrant {
  realmId: string;
  clientId: string;
  redirectUri: string;
  sessionId: string;
  userId: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  authTime: number;
}

export const codeKey = (code: string) => `code:${createHash('sha256').update(code).digest('base64url')}`;

/** The browser's SSO session for the realm, when it is still alive and its user may log in. */
export async function currentSsoSession(ctx: ServerContext, request: FastifyRequest, realm: Realm): Promise<{ session: UserSession; user: User } | null> {
  const id = readCookie(request, SSO_COOKIE);
  if (!id || id.length > 64) return null;
  const session = await ctx.storage.sessions.byId(id);
  if (!session || session.realmId !== realm.id) return null;
  const now = Date.now();
  if (now - session.lastRefresh > realm.ssoSessionIdleTimeout * 1000 || now - session.started > realm.ssoSessionMaxLifespan * 1000) {
    await ctx.storage.sessions.delete(session.id);
    return null;
  }
  const user = await ctx.storage.users.byId(realm.id, session.userId);
  // An unverified address in a verifyEmail realm must go through the login page, which sends the link.
  if (!user || !user.enabled || (realm.verifyEmail && user.email && !user.emailVerified)) return null;
  return { session, user };
}

export async function startSsoSession(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, user: User): Promise<UserSession> {
  const now = Date.now();
  const session: UserSession = { id: newId(), realmId: realm.id, userId: user.id, ipAddress: requestInfo(request).ipAddress, started: now, lastRefresh: now };
  await ctx.storage.sessions.create(session);
  setCookie(reply, SSO_COOKIE, session.id, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
  return session;
}

export function clearSsoCookie(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, realm: Realm): void {
  clearCookie(reply, SSO_COOKIE, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
}

/** Issues a single-use code and sends the browser back to the client (query, fragment or form_post). */
export async function redirectWithCode(
  store: SharedStore,
  reply: FastifyReply,
  issuer: string,
  auth: AuthSession,
  session: UserSession,
  userId: string,
): Promise<FastifyReply> {
  const code = randomBytes(32).toString('base64url');
  const grant: CodeGrant = {
    realmId: auth.realmId,
    clientId: auth.clientId,
    redirectUri: auth.redirectUri,
    sessionId: session.id,
    userId,
    scope: auth.scope,
    nonce: auth.nonce,
    codeChallenge: auth.codeChallenge,
    authTime: Math.floor(session.started / 1000),
  };
  await store.set(codeKey(code), JSON.stringify(grant), CODE_LIFETIME_MS);
  const params: Record<string, string> = { code, session_state: session.id, iss: issuer };
  if (auth.state !== null) params.state = auth.state;
  return redirectToClient(reply, auth.redirectUri, auth.responseMode, params);
}

export function redirectToClient(reply: FastifyReply, redirectUri: string, responseMode: AuthSession['responseMode'], params: Record<string, string>): FastifyReply {
  if (responseMode === 'form_post') {
    const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    const inputs = Object.entries(params).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('');
    // The only inline script on these pages; a hash would pin it, but the form also works with a click.
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(`<!doctype html><html><body><form method="post" action="${escape(redirectUri)}">${inputs}<noscript><button type="submit">Continue</button></noscript></form><script>document.forms[0].submit()</script></body></html>`);
  }
  const url = new URL(redirectUri);
  const encoded = new URLSearchParams(params).toString();
  if (responseMode === 'fragment') url.hash = encoded;
  else for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return reply.code(302).header('location', url.href).header('cache-control', 'no-store').send();
}
