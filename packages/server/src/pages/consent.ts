import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { completeLogin, consentToAsk, currentSsoSession, grantConsent, type AuthSession, type ConsentScope } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Client, Realm, User, UserSession } from '../model/types.js';
import { loginActionForm } from './login-context.js';
import { showPage } from './pages.js';
import { authBinding, signInStep, stepExpired, stepState } from './step-pages.js';

/**
 * Keycloak's consent screen (`login-oauth-grant`) of a browser sign-in to a consentRequired client, after the
 * required actions and before the code: "Grant Access to <client>", the client scopes not yet granted, Yes / No.
 * Yes stores them on the user's consent (merged) and the sign-in completes (LOGIN with `consent: consent_granted`);
 * No sends the application `error=access_denied` (LOGIN_ERROR `rejected_by_user`). Nothing is kept on the server
 * between the page and its answer: the page's key names the user, this sign-in, the scopes shown and the SSO
 * session the sign-in completes in.
 */
export async function completeWithConsent(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  existing?: UserSession,
): Promise<FastifyReply> {
  const consent = await consentToAsk(ctx.storage, realm, auth, user.id);
  if (consent.detail !== undefined) return completeLogin(ctx, request, reply, realm, auth, user, existing, consent.detail ?? undefined);
  return consentPage(ctx, reply, realm, auth, user, consent.client, consent.ask, existing);
}

async function consentPage(ctx: PagesContext, reply: FastifyReply, realm: Realm, auth: AuthSession, user: User, client: Client, ask: ConsentScope[], existing?: UserSession): Promise<FastifyReply> {
  const key = await stepState(ctx).seal(realm, 'consent', {
    sub: user.id,
    azp: auth.clientId,
    auth: authBinding(auth),
    pending: null,
    scopes: ask.map((s) => s.name),
    ...(existing ? { sso: existing.id } : {}),
  });
  return ctx.pages.send(reply, realm, 'login-oauth-grant', { ...signInStep(realm, auth, 'consent'), key, clientName: client.name || client.clientId, scopes: ask.map((s) => s.text) }, 200);
}

export function consentRoutes(app: FastifyInstance, ctx: PagesContext): void {
  const state = stepState(ctx);
  loginActionForm(app, ctx, 'consent', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'consent', ['accept', 'cancel']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      const { user, claims } = step;
      const client = await ctx.storage.clients.cachedByClientId(realm.id, auth.clientId);
      if (!client || !client.enabled) return stepExpired(ctx, request, reply, realm, auth);
      // The SSO session named by the page, when it is still this browser's and the same user's.
      const sso = claims.sso ? await currentSsoSession(ctx, request, realm) : null;
      if (claims.sso && (!sso || sso.session.id !== claims.sso || sso.user.id !== user.id)) return stepExpired(ctx, request, reply, realm, auth);
      if (form.cancel || !form.accept) {
        ctx.authSessions.end(reply, request, realm);
        await ctx.events.user(realm, {
          type: 'LOGIN_ERROR',
          clientId: auth.clientId,
          userId: user.id,
          error: 'rejected_by_user',
          details: { auth_method: 'openid-connect', redirect_uri: auth.redirectUri, username: user.username },
          request: requestInfo(request),
        });
        return ctx.loginProtocol.refused(request, reply, realm, auth, 'access_denied');
      }
      await grantConsent(ctx.storage, realm, client, user.id, claims.scopes ?? []);
      // Scopes may have been added to the client since the page was shown: asked again for those, else completed.
      const again = await consentToAsk(ctx.storage, realm, auth, user.id);
      if (again.detail === undefined) return consentPage(ctx, reply, realm, auth, user, again.client, again.ask, sso?.session);
      return completeLogin(ctx, request, reply, realm, auth, user, sso?.session, 'consent_granted');
    },
  });
}
