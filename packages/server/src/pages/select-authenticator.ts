import type { FastifyInstance } from 'fastify';
import { runBrowserSignIn, SignedState } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { answerSignIn } from './otp.js';
import { actionUrl, showPage } from './pages.js';
import { formValues } from './protection.js';
import { SELECT_PURPOSE, WAYS, type SelectClaims } from './another-way.js';
import { authBinding, stepExpired, type ShowNewPassword } from './step-pages.js';

/**
 * "Try another way" (Keycloak's select-authenticator): a step page whose step has alternatives the user could take
 * (the flow runner names them, flows/engine.ts) carries a link to this page, which lists them; the one chosen goes
 * back to the flow runner (runBrowserSignIn's `selected`), which asks for it. The link's key, sealed with the
 * realm's state secret, carries where the sign-in stands (as the step page's own key) and the ways offered: only
 * one of those can be chosen, and only in this auth session.
 */

export function selectAuthenticatorRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): void {
  loginActionForm(app, ctx, SELECT_PURPOSE, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['key', 'session_code', 'tryAnotherWay', 'authenticationExecution']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const claims = await new SignedState(ctx.keys).open<SelectClaims>(realm.id, SELECT_PURPOSE, form.key, 8192);
      const expired = () => stepExpired(ctx, request, reply, realm, auth);
      if (!claims || claims.azp !== auth.clientId || claims.auth !== authBinding(auth) || !Array.isArray(claims.ways)) return expired();
      const user = typeof claims.sub === 'string' ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
      if (claims.sub !== null && !user?.enabled) return expired();
      const chosen = claims.ways.find((way) => way.execution === form.authenticationExecution);
      if (!chosen) {
        const ways = claims.ways.map((way) => ({ execution: way.execution, ...(WAYS[way.authenticator] ?? { name: way.authenticator, help: '' }) }));
        return ctx.pages.send(reply, realm, 'select-authenticator', { action: actionUrl(realm, SELECT_PURPOSE), csrf: auth.csrf, key: form.key, ways }, form.authenticationExecution ? 400 : 200);
      }
      // The choice goes to the flow runner with where the sign-in stood; it asks for the chosen step.
      const progress = { user, done: claims.done ?? {}, requiredActions: claims.setup ?? [], login: claims.login, passwordChecked: claims.checked, selected: chosen.execution };
      const signIn = await runBrowserSignIn(ctx, realm, auth.clientId, requestInfo(request), progress, null);
      return answerSignIn(ctx, request, reply, realm, auth, signIn, newPasswordPage, {});
    },
  });
}
