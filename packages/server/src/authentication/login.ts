import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticationContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User, UserSession } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import type { AuthSession } from './auth-session.js';
import type { ConsentDetail } from './consent.js';
import { issueAuthorizationCode } from './authorization-code.js';
import { holdDeviceConsent } from './device-code.js';
import { recordLoginSuccess } from './brute-force.js';
import { startSsoSession } from './sso-session.js';

/**
 * The end of every successful browser login (form, registration, SSO): SSO session started or touched, auth
 * session ended, LOGIN event, a single-use code; the login protocol then answers the client with it.
 */
export async function completeLogin(
  ctx: Pick<AuthenticationContext, 'storage' | 'config' | 'keys' | 'events' | 'hostStore' | 'authSessions' | 'loginProtocol'>,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  existing?: UserSession,
  /** A consentRequired client's sign-in: whether the user granted it now or had already (Keycloak's `consent` detail). */
  consent?: ConsentDetail,
): Promise<FastifyReply> {
  // The whole login succeeded (password and any OTP): brute-force detection forgets the user's failures.
  await recordLoginSuccess(ctx, realm, user);
  const session = existing ?? (await startSsoSession(ctx, request, reply, realm, user, auth.broker));
  if (existing) await ctx.storage.sessions.touch(existing.id, Date.now());
  ctx.authSessions.end(reply, request, realm);
  await ctx.events.user(realm, {
    type: 'LOGIN',
    clientId: auth.clientId,
    userId: user.id,
    sessionId: session.id,
    details: { auth_method: 'openid-connect', auth_type: 'code', redirect_uri: auth.redirectUri, username: user.username, ...(existing ? { remember_me: 'false', sso: 'true' } : {}), ...(consent ? { consent } : {}) },
    request: requestInfo(request),
    user: () => userSnapshot(ctx.storage, user),
  });
  // A device-page sign-in issues no code: the grant waits for the consent page (the protocol shows it with this token).
  const code = auth.device ? ((await holdDeviceConsent(ctx, auth.device, session, user.id)) ?? '') : await issueAuthorizationCode(ctx, auth, session, user.id, realm.accessCodeLifespan ?? 60);
  return ctx.loginProtocol.authenticated(request, reply, realm, auth, session, code);
}
