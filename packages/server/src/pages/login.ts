import type { FastifyInstance, FastifyReply } from 'fastify';
import { userLocaleHint } from './user-locale.js';
import { runBrowserSignIn } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import { PasswordPolicyError } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import type { AuthSession } from '../authentication/index.js';
import { checkNewPassword, setPassword, userSnapshot } from '../services/index.js';
import { csrfRejected, loginActionForm, protectedPost } from './login-context.js';
import { formValues } from './protection.js';
import { actionUrl, showPage } from './pages.js';
import type { FieldErrors } from './render.js';
import { answerSignIn, otpRoutes } from './otp.js';
import { brokerRoutes, type FollowLinkMail } from './broker.js';
import { endAction, requiredActionRoutes } from './required-actions.js';
import { consentRoutes } from './consent.js';
import { openStepPost, stepExpired, stepState, type ShowNewPassword } from './step-pages.js';
import { PASSWORD_PURPOSE, passwordPage } from './password-page.js';
import { webauthnRoutes } from './webauthn.js';
import { ceremonyOf, MAX_RESPONSE } from './webauthn-pages.js';
import { WEBAUTHN_FIELDS } from '../authentication/sign-in.js';
import { recoveryCodeRoutes } from './recovery-codes.js';
import { selectAuthenticatorRoutes } from './select-authenticator.js';
import { UPDATE_PASSWORD } from '../required-actions/index.js';

const MAX_USERNAME = 255;
const MAX_PASSWORD = 1024;

/** Registers the sign-in pages; answers the handler of the first broker login's e-mailed link (for the action-token route). */
export function loginRoutes(app: FastifyInstance, ctx: PagesContext): FollowLinkMail {
  loginActionForm(app, ctx, 'authenticate', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await protectedPost(ctx, request, reply, realm, auth, {
        form: 'login',
        fields: ['username', 'password', 'response'],
        errorEvent: 'LOGIN_ERROR',
        refusedText: 'We could not verify this sign-in. Please try again.',
        show: (state) => showPage.login(ctx, request, reply, realm, auth, state),
      });
      if (!posted) return reply;
      const { form, values, info } = posted;
      // A passkey picked in the username field's autofill (realms with passkeys on): its assertion goes to the flow's username step instead of a name.
      if (form.response && realm.webAuthnPolicies.passwordless.passkeysEnabled) {
        if (form.response.length > MAX_RESPONSE) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Failed to authenticate by the passkey or security key.' }, status: 400 });
        const ceremony = ceremonyOf(ctx, request, auth);
        const submitted = { [WEBAUTHN_FIELDS[0]]: form.response, [WEBAUTHN_FIELDS[1]]: ceremony.origin, [WEBAUTHN_FIELDS[2]]: ceremony.session };
        return answerSignIn(ctx, request, reply, realm, auth, await runBrowserSignIn(ctx, realm, auth.clientId, info, null, submitted), newPasswordPage, {});
      }
      if (!form.username || !form.password || form.username.length > MAX_USERNAME || form.password.length > MAX_PASSWORD) {
        const errors: FieldErrors = {};
        if (!form.username) errors.username = 'Please enter your username.';
        else if (form.username.length > MAX_USERNAME) errors.username = `Must be at most ${MAX_USERNAME} characters.`;
        if (!form.password) errors.password = 'Please enter your password.';
        else if (form.password.length > MAX_PASSWORD) errors.password = 'Password is too long.';
        return showPage.login(ctx, request, reply, realm, auth, { values, errors, status: 400 });
      }
      // The flow from the top, with the name and password this page posted for its step; what comes next is the flow's.
      const signIn = await runBrowserSignIn(ctx, realm, auth.clientId, info, null, { username: values.username, password: form.password });
      // A local sign-in in an auth session a brokered one left (abandoned at a required action's page) is not brokered:
      // its session must not record the upstream's ids (which an upstream's back-channel logout names).
      const local = auth.broker ? await ctx.authSessions.save(reply, request, realm, { ...auth, broker: undefined }) : auth;
      return answerSignIn(ctx, request, reply, realm, local, signIn, newPasswordPage, { values });
    },
  });

  const newPasswordPage = showNewPassword(ctx);

  // auth-password-form for a user the flow knows (password-page.ts): the password, then the same run goes on.
  loginActionForm(app, ctx, PASSWORD_PURPOSE, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['password', 'key', 'session_code']);
      // The key takes a few passwords (STEP_ATTEMPTS; the brute-force limits count each too), then the sign-in starts again.
      const opened = await openStepPost(ctx, request, reply, realm, auth, form, (key) => stepState(ctx).open(realm, PASSWORD_PURPOSE, auth, key));
      if ('answered' in opened) return opened.answered;
      const { step, left } = opened;
      const { claims, user } = step;
      userLocaleHint(request, user);
      const again = (password: string, status: number) => passwordPage(ctx, reply, realm, auth, user, claims, { key: form.key, errors: { password }, status });
      if (!form.password) return again('Please enter your password.', 400);
      if (form.password.length > MAX_PASSWORD) return again('Password is too long.', 400);
      const progress = { user, done: claims.done ?? {}, requiredActions: claims.setup ?? [], login: claims.login, passwordChecked: claims.checked };
      const signIn = await runBrowserSignIn(ctx, realm, auth.clientId, requestInfo(request), progress, { password: form.password });
      return answerSignIn(ctx, request, reply, realm, auth, signIn, newPasswordPage, {
        passwordRefused: async () =>
          left === 0 ? showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many failed attempts. Please sign in again.' }, status: 401 }) : again('Invalid password.', 401),
      });
    },
  });

  // The expired password's new one: the auth session's CSRF token, and the page's single-use proof of sign-in.
  loginActionForm(app, ctx, 'update-password', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['password-new', 'password-confirm', 'session_code', 'key', 'cancel-aia']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const claims = await ctx.actionTokens.read(realm, form.key, 'update-password');
      const user = claims && claims.azp === auth.clientId ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
      if (user) userLocaleHint(request, user);
      const expired = () => stepExpired(ctx, request, reply, realm, auth);
      if (!claims || !user || !user.enabled) return expired();
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, UPDATE_PASSWORD, 'cancelled', user, newPasswordPage);
      const page = (errors: FieldErrors) => newPasswordPage(reply, realm, auth, form.key, errors, 400, undefined, auth.kcAction === UPDATE_PASSWORD && !auth.kcActionStatus);
      if (!form['password-new']) return page({ 'password-new': 'Please specify password.' });
      if (form['password-new'] !== form['password-confirm']) return page({ 'password-confirm': "Passwords don't match." });
      try {
        await checkNewPassword(ctx.storage, realm, user, form['password-new']);
      } catch (error) {
        if (!(error instanceof PasswordPolicyError)) throw error;
        return page({ 'password-new': error.message });
      }
      if (!(await ctx.actionTokens.consume(claims))) return expired();
      const updated = await setPassword(ctx, realm, user, form['password-new']);
      await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_PASSWORD);
      await ctx.events.user(realm, { type: 'UPDATE_PASSWORD', clientId: auth.clientId, userId: user.id, details: { username: user.username }, request: requestInfo(request), user: () => userSnapshot(ctx.storage, updated) });
      // This page is shown only after the OTP step; other required actions may still be pending.
      return endAction(ctx, request, reply, realm, auth, UPDATE_PASSWORD, 'success', updated, newPasswordPage);
    },
  });

  otpRoutes(app, ctx, newPasswordPage);
  const followLinkMail = brokerRoutes(app, ctx, newPasswordPage);
  requiredActionRoutes(app, ctx, newPasswordPage);
  consentRoutes(app, ctx);
  webauthnRoutes(app, ctx, newPasswordPage);
  recoveryCodeRoutes(app, ctx, newPasswordPage);
  selectAuthenticatorRoutes(app, ctx, newPasswordPage);
  return followLinkMail;
}

/** The new-password page of a signed-in user (an expired password, an UPDATE_PASSWORD required action). */
export const showNewPassword =
  (ctx: PagesContext): ShowNewPassword =>
  (reply: FastifyReply, realm: Realm, auth: AuthSession, key: string, errors: FieldErrors, status = 400, message?: { type: string; text: string }, cancelAia = false) =>
    ctx.pages.send(reply, realm, 'update-password', { action: actionUrl(realm, 'update-password'), csrf: auth.csrf, key, errors, message, cancelAia }, status);
