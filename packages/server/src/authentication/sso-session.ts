import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticationContext } from './context.js';
import { newId, newSecret, secretsEqual } from '../credentials/index.js';
import { clearCookie, readCookie, requestInfo, secureCookies, setCookie } from '../http/index.js';
import { sessionAlive } from '../model/sessions.js';
import type { IdentityProvider, Realm, User, UserSession } from '../model/types.js';
import { pendingRequiredActions } from '../services/index.js';
import { realmCookiePath } from './auth-session.js';
import { SignedState } from './signed-state.js';
import { keepsUpstreamIdToken } from './brokering/browser-logout.js';

const SSO_COOKIE = 'REALMGATE_SESSION';
const PURPOSE = 'sso-session';
/** A sealed `{sid, key}` is under 300 characters; anything much longer is not one of ours. */
const MAX_COOKIE_VALUE = 1024;

type SsoContext = Pick<AuthenticationContext, 'storage' | 'config' | 'keys' | 'hostStore'>;

/** Where a brokered sign-in leaves the upstream's ID token until its session is made (the auth session is a cookie: too small). */
const brokerIdTokenKey = (ref: string) => `broker-id-token:${ref}`;
const BROKER_ID_TOKEN_MS = 30 * 60 * 1000;
const MAX_BROKER_ID_TOKEN = 16_384;

/**
 * Keeps the upstream's raw ID token of a brokered sign-in for its session (returns the reference the auth session
 * carries), only where a logout towards the upstream sends it (by back-channel, `backchannelSupported`, or as the
 * browser logout's `id_token_hint`: keepsUpstreamIdToken), the one use of it; otherwise nothing is kept.
 */
export async function keepBrokerIdToken(ctx: Pick<AuthenticationContext, 'hostStore'>, provider: IdentityProvider, idToken: unknown): Promise<string | undefined> {
  if (!keepsUpstreamIdToken(provider) || typeof idToken !== 'string' || !idToken || idToken.length > MAX_BROKER_ID_TOKEN) return undefined;
  const ref = newSecret(24);
  await ctx.hostStore.set(brokerIdTokenKey(ref), idToken, BROKER_ID_TOKEN_MS);
  return ref;
}

/** What the cookie carries: the session, and the random value only the sign-in that started it knew. */
interface SsoCookie {
  sid: string;
  key: string;
}

const keyHash = (key: string) => createHash('sha256').update(key).digest('base64url');

/**
 * The browser's SSO session for the realm, when it is still alive and its user may log in.
 *
 * The cookie is the one check of every entry point (authorization, account pages, logout, login-status frame): a
 * SignedState token of this realm for this purpose, naming a session a browser signed in to and carrying the random
 * value whose hash that session keeps. The session's id alone (a token's `sid`, `session_state`, an id the admin
 * API lists, events) opens nothing, nor does a session started by the password grant (it has no hash).
 */
export async function currentSsoSession(ctx: SsoContext, request: FastifyRequest, realm: Realm): Promise<{ session: UserSession; user: User } | null> {
  const sealed = await new SignedState(ctx.keys).open<Partial<SsoCookie>>(realm.id, PURPOSE, readCookie(request, SSO_COOKIE), MAX_COOKIE_VALUE);
  if (!sealed || typeof sealed.sid !== 'string' || typeof sealed.key !== 'string') return null;
  const found = await ctx.storage.sessions.browserSession(sealed.sid);
  if (!found || !secretsEqual(keyHash(sealed.key), found.ssoCookieHash)) return null;
  const { session } = found;
  if (session.realmId !== realm.id || session.offline) return null;
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

/**
 * A new session for a browser sign-in, and its cookie: every sign-in (prompt=login over a live session included)
 * starts a session with a fresh random value, so the cookie changes and a value planted earlier names nothing.
 */
export async function startSsoSession(ctx: SsoContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, user: User, broker?: { sessionId: string | null; userId: string; idTokenRef?: string }): Promise<UserSession> {
  const now = Date.now();
  const idToken = broker?.idTokenRef ? await ctx.hostStore.get(brokerIdTokenKey(broker.idTokenRef)) : null;
  if (broker?.idTokenRef) await ctx.hostStore.delete(brokerIdTokenKey(broker.idTokenRef));
  const session: UserSession = {
    id: newId(),
    realmId: realm.id,
    userId: user.id,
    ipAddress: requestInfo(request).ipAddress,
    started: now,
    lastRefresh: now,
    ...(broker ? { brokerSessionId: broker.sessionId, brokerUserId: broker.userId } : {}),
    ...(idToken ? { brokerIdToken: idToken } : {}),
  };
  const cookie: SsoCookie = { sid: session.id, key: newSecret(32) };
  // Sealed before anything is stored: a realm without an active key fails here, not with an orphan session.
  const value = await new SignedState(ctx.keys).seal(realm.id, PURPOSE, cookie, realm.ssoSessionMaxLifespan * 1000);
  await ctx.storage.sessions.createBrowserSession(session, keyHash(cookie.key));
  setCookie(reply, SSO_COOKIE, value, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
  return session;
}

export function clearSsoCookie(ctx: Pick<AuthenticationContext, 'config'>, request: FastifyRequest, reply: FastifyReply, realm: Realm): void {
  clearCookie(reply, SSO_COOKIE, { path: realmCookiePath(realm), secure: secureCookies(request, ctx.config.hostname) });
}
