import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { baseUrl, corsPending, requestInfo } from '../../http/index.js';
import { checkAllowedOrigin } from './cors.js';
import { oauthError, TokenVerificationError } from '../../model/errors.js';
import { postLogoutRedirectAllowed } from '../../model/redirect-uri.js';
import type { Client, Realm, UserSession } from '../../model/types.js';
import { clearSsoCookie, currentSsoSession, sessionProvider, SignedState, takeBrokerLogout, upstreamBrowserLogout, upstreamLogoutSessions } from '../../authentication/index.js';
import { enforceClientPolicies, userSnapshot } from '../../services/index.js';
import { authenticateClient, formField } from './client-auth.js';
import { refreshTokenType } from './offline.js';
import { realmOrError } from './realm-lookup.js';
import { frontchannelFrames, type FrontchannelFrame } from './logout-notifications.js';
import { issuerOf } from './tokens.js';

const issuerPath = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}`;

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
type AliasRequest = FastifyRequest<{ Params: { realm: string; alias: string }; Querystring: Record<string, unknown> }>;
const CONFIRM_LIFETIME_MS = 10 * 60 * 1000;
const CONFIRM_PURPOSE = 'logout-confirm';

function param(request: FastifyRequest, name: string): string | undefined {
  const source = (request.method === 'POST' ? request.body : request.query) as Record<string, unknown> | undefined;
  const value = source?.[name];
  return typeof value === 'string' && value.length <= 4096 ? value : undefined;
}

/**
 * Logout: with a `refresh_token` (back-channel, what adapters and the admin client send), or RP-initiated
 * from the browser with `id_token_hint` and a registered `post_logout_redirect_uri`. Without a hint, or with one
 * whose session is not the browser's, the user confirms first, so a link on another site cannot sign people out.
 */
export function logoutRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const signed = new SignedState(ctx.keys);
  /**
   * Ends a session. Its clients are told first (the notifications need its client sessions): with `browser` as
   * Keycloak's browser logout, the clients with `frontchannelLogout` through the frames returned (for the logout page)
   * and the others by back-channel; otherwise (a refresh token's logout) every client with a back-channel URL.
   */
  const endSession = async (request: FastifyRequest, realm: Realm, sessionId: string, userId: string, clientId: string | null, browser = false): Promise<{ frames: FrontchannelFrame[]; ended: UserSession | null }> => {
    const user = await ctx.storage.users.byId(realm.id, userId);
    const session = await ctx.storage.sessions.byId(sessionId);
    let frames: FrontchannelFrame[] = [];
    let ended: UserSession | null = null;
    if (session && session.realmId === realm.id) {
      const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
      if (browser) frames = await frontchannelFrames(ctx.storage, realm, session, issuer);
      // Committed with the session's end; sent by the background worker (never awaited here).
      await ctx.logoutNotifications.endSessions(realm, [session], issuer, (trx) => ctx.storage.sessions.delete(sessionId, trx), browser ? (client) => !client.frontchannelLogout : undefined);
      ended = session;
    } else await ctx.storage.sessions.delete(sessionId);
    await ctx.events.user(realm, {
      type: 'LOGOUT',
      clientId,
      userId,
      sessionId,
      request: requestInfo(request),
      user: user ? () => userSnapshot(ctx.storage, user) : null,
    });
    return { frames, ended };
  };

  /** The end of a browser logout: the clients' front-channel frames, then the application's redirect, or the "signed out" page. */
  const finishBrowserLogout = (reply: FastifyReply, realm: Realm, frames: FrontchannelFrame[], next: string | null) => {
    if (frames.length > 0) {
      // Keycloak's front-channel logout page: one hidden frame per client; once they have loaded, a script goes on
      // to the redirect (a "Continue" link without scripts). Frames only to those clients' origins.
      const origins = [...new Set(frames.map((frame) => new URL(frame.url).origin))];
      return ctx.pages.send(reply, realm, 'frontchannel-logout', { frames, next, script: `${issuerPath(realm)}/protocol/openid-connect/logout/frontchannel-logout.js` }, 200, { frameSrc: origins });
    }
    if (next) return reply.code(302).header('location', next).send();
    return ctx.forms.info(reply, realm, 'You are signed out', 'You have been signed out.');
  };

  const backChannel = async (request: RealmRequest, reply: FastifyReply, realm: Realm, refreshToken: string) => {
    const client = await authenticateClient(ctx, realm, request);
    checkAllowedOrigin(ctx, request, client);
    await enforceClientPolicies(ctx.storage, realm, { event: 'LOGOUT_REQUEST', client, form: (name) => formField(request.body, name), issuer: issuerOf(baseUrl(request, ctx.config.hostname), realm.name) });
    let claims;
    try {
      claims = await ctx.tokens.verify(realm, refreshToken, refreshTokenType(refreshToken), ctx.config.hostname);
    } catch (error) {
      if (error instanceof TokenVerificationError) throw oauthError.invalid_grant(error.reason === 'session_ended' ? 'Session not active' : 'Invalid refresh token');
      throw error;
    }
    if (claims.azp !== client.clientId) throw oauthError.invalid_grant('Invalid refresh token');
    await endSession(request, realm, claims.sid as string, claims.sub, client.clientId);
    return reply.code(204).send();
  };

  const browser = async (request: RealmRequest, reply: FastifyReply, realm: Realm) => {
    const base = baseUrl(request, ctx.config.hostname);
    const hint = param(request, 'id_token_hint');
    let hintClaims = null;
    if (hint) {
      try {
        hintClaims = await ctx.tokens.verify(realm, hint, 'ID', ctx.config.hostname, { hint: true });
      } catch {
        return ctx.forms.requestError(reply, realm, 'Invalid parameter: id_token_hint');
      }
    }
    const clientId = param(request, 'client_id') ?? (hintClaims?.azp as string | undefined);
    let client: Client | null = null;
    if (clientId) {
      client = await ctx.storage.clients.byClientId(realm.id, clientId);
      if (!client || (hintClaims && hintClaims.azp !== clientId)) return ctx.forms.requestError(reply, realm, 'Invalid parameter: client_id');
    }
    const redirect = param(request, 'post_logout_redirect_uri');
    if (redirect && (!client || !postLogoutRedirectAllowed(client, redirect, base))) {
      return ctx.forms.requestError(reply, realm, 'Invalid redirect uri');
    }
    const state = param(request, 'state');
    const sso = await currentSsoSession(ctx, request, realm);
    // The confirmation is bound to this browser's session: a token fetched elsewhere signs nobody out. It is
    // signed, not stored, so showing the page writes nothing; once the session ends it matches nothing.
    const browserSession = sso?.session.id ?? null;
    const confirmToken = param(request, 'session_code');
    const confirmed = confirmToken !== undefined && (await signed.open<{ sid: string | null }>(realm.id, CONFIRM_PURPOSE, confirmToken, 1024))?.sid === browserSession;
    if (confirmToken !== undefined && !confirmed) {
      return ctx.forms.error(reply, realm, 'This sign-out request has expired or was not sent from this page. Nothing was changed; please try again.', 400);
    }
    // Keycloak's rule: without a hint, or with the hint of a session that is not this browser's, the user
    // confirms; a hint alone (anyone's ID token, on a link from another site) never ends the browser's session.
    const hintIsBrowsers = hintClaims !== null && sso !== null && hintClaims.sid === sso.session.id;
    if (!confirmed && (!hintClaims || (sso && !hintIsBrowsers))) {
      const token = await signed.seal(realm.id, CONFIRM_PURPOSE, { sid: browserSession }, CONFIRM_LIFETIME_MS);
      const hidden: Record<string, string> = {};
      if (clientId) hidden.client_id = clientId;
      if (redirect) hidden.post_logout_redirect_uri = redirect;
      if (state) hidden.state = state;
      return ctx.pages.send(reply, realm, 'logout-confirm', { action: `/realms/${encodeURIComponent(realm.name)}/protocol/openid-connect/logout`, csrf: token, hidden });
    }
    let ending: { frames: FrontchannelFrame[]; ended: UserSession | null } = { frames: [], ended: null };
    if (sso) ending = await endSession(request, realm, sso.session.id, sso.user.id, clientId ?? null, true);
    else if (hintClaims?.sid && (await ctx.storage.sessions.byId(hintClaims.sid as string))) {
      // No session in this browser: the hint's own session ends (the client holding its ID token asks), as Keycloak.
      ending = await endSession(request, realm, hintClaims.sid as string, hintClaims.sub, clientId ?? null, true);
    }
    clearSsoCookie(ctx, request, reply, realm);
    let next: string | null = null;
    if (redirect) {
      const url = new URL(redirect);
      if (state) url.searchParams.set('state', state);
      next = url.href;
    }
    // A brokered session whose provider logs the upstream out through the browser (backchannelSupported off, a
    // logoutUrl): off to the upstream first; its answer at the broker's logout_response finishes (authentication/brokering/browser-logout.ts).
    const provider = ending.ended?.brokerUserId ? sessionProvider(await ctx.storage.federation.cachedProviders(realm.id), ending.ended) : null;
    if (provider && ending.ended) {
      const returnUrl = `${base}${issuerPath(realm)}/broker/${encodeURIComponent(provider.alias)}/endpoint/logout_response`;
      const upstream = await upstreamBrowserLogout(ctx, provider, ending.ended, returnUrl, { realmId: realm.id, alias: provider.alias, next, frames: ending.frames });
      if (upstream) return reply.code(302).header('location', upstream).header('cache-control', 'no-store').send();
    }
    return finishBrowserLogout(reply, realm, ending.frames, next);
  };

  // The upstream's answer to the browser logout above (Keycloak's OIDCEndpoint.logoutResponse): the logout finishes.
  app.get('/realms/:realm/broker/:alias/endpoint/logout_response', async (request: AliasRequest, reply) => {
    const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return ctx.forms.error(reply, null, 'Realm does not exist.', 404);
    const state = typeof request.query?.state === 'string' ? request.query.state : undefined;
    const pending = await takeBrokerLogout(ctx, state, realm.id, request.params.alias.slice(0, 255));
    if (!pending) {
      await ctx.events.user(realm, { type: 'LOGOUT_ERROR', clientId: null, error: 'user_session_not_found', details: { identity_provider: request.params.alias.slice(0, 255), reason: state ? 'state unknown or already used' : 'no state' }, request: requestInfo(request) });
      return ctx.forms.error(reply, realm, 'This sign-out is no longer in progress. You may already be signed out.', 400);
    }
    return finishBrowserLogout(reply, realm, pending.frames, pending.next);
  });

  app.get('/realms/:realm/protocol/openid-connect/logout', async (request: RealmRequest, reply) => {
    const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return ctx.forms.error(reply, null, 'Realm does not exist.', 404);
    return browser(request, reply, realm);
  });

  // An upstream identity provider's back-channel logout (Keycloak's `logout/backchannel-logout`, for this realm as
  // the upstream's client): the brokered sessions its logout token names end, their clients told as at any logout.
  app.post('/realms/:realm/protocol/openid-connect/logout/backchannel-logout', async (request: RealmRequest, reply) => {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const token = formField(request.body, 'logout_token');
    const info = requestInfo(request);
    if (!token || token.length > 16_384) {
      await ctx.events.user(realm, { type: 'LOGOUT_ERROR', clientId: null, error: 'invalid_token', details: { reason: 'no logout token' }, request: info });
      throw oauthError.invalid_request('No logout token');
    }
    const outcome = await upstreamLogoutSessions(ctx, realm, token);
    if (!outcome.ok) {
      await ctx.events.user(realm, { type: 'LOGOUT_ERROR', clientId: null, error: 'invalid_token', details: { reason: outcome.reason.slice(0, 200) }, request: info });
      throw oauthError.invalid_request('The logout token is invalid');
    }
    const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
    for (const session of outcome.sessions) {
      // The upstream that asked is not told back (Keycloak's initiatingIdp).
      await ctx.logoutNotifications.endSessions(realm, [session], issuer, (trx) => ctx.storage.sessions.delete(session.id, trx), undefined, { initiatingIdp: outcome.alias });
      await ctx.events.user(realm, { type: 'LOGOUT', clientId: null, userId: session.userId, sessionId: session.id, details: { identity_provider: outcome.alias }, request: info });
    }
    return reply.code(200).header('cache-control', 'no-store').send();
  });

  app.post('/realms/:realm/protocol/openid-connect/logout', async (request: RealmRequest, reply) => {
    const refreshToken = formField(request.body, 'refresh_token');
    if (refreshToken !== undefined) corsPending(request);
    if (refreshToken !== undefined) return backChannel(request, reply, await realmOrError(ctx.storage, request.params.realm), refreshToken);
    const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return ctx.forms.error(reply, null, 'Realm does not exist.', 404);
    return browser(request, reply, realm);
  });
}
