import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { userLocaleHint } from './user-locale.js';
import {
  answeredAsBadCredentials,
  configureOtp,
  refusedUser,
  runBrowserSignIn,
  takeStepAttempt,
  type AuthSession,
  type FormState,
  type SecondFactorError,
} from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { CONFIGURE_TOTP, UPDATE_PROFILE } from '../required-actions/index.js';
import { loginActionForm } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import { PROFILE_FORM_FIELDS, saveProfileForm } from './profile-form.js';
import type { FieldErrors } from './render.js';
import { endAction, nextRequiredAction } from './required-actions.js';
import { webauthnChallengePage } from './webauthn-pages.js';
import { recoveryCodePage } from './recovery-code-pages.js';
import { anotherWay } from './another-way.js';
import { passwordPage, stepProgress } from './password-page.js';
import {
  configPage,
  INVALID_CODE,
  MAX_LABEL,
  signInStep,
  STEP_LIFETIME_MS,
  stepState,
  updateProfilePage,
  type ShowNewPassword,
  type StepClaims,
  stepExpired,
} from './step-pages.js';

/**
 * The browser login after the password: Keycloak's order, the flow's authenticators first (the OTP form of the
 * conditional OTP subflow), then the required actions in the realm's priority order (pages/required-actions.ts),
 * then the login completes. Between pages the server keeps nothing: each page carries a `key` sealed with the realm's state
 * secret (authentication/signed-state.ts) naming the user, the auth session (a hash of its CSRF token) and what is
 * still pending; the CONFIGURE_TOTP page's key also carries the new secret until a code proves the app has it.
 */

/**
 * The page for where a browser sign-in's flow stands (runBrowserSignIn): the page a step asks for, a step's
 * refusal, or, once the flow has succeeded, the required actions (nextRequiredAction). `otpRefused` answers a wrong
 * code on the code page, which counts its attempts.
 */
export async function answerSignIn(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  signIn: Awaited<ReturnType<typeof runBrowserSignIn>>,
  newPasswordPage: ShowNewPassword,
  answers: {
    values?: Record<string, string>;
    otpRefused?: (error: SecondFactorError) => Promise<FastifyReply>;
    webauthnRefused?: (error: SecondFactorError) => Promise<FastifyReply>;
    recoveryRefused?: (error: SecondFactorError) => Promise<FastifyReply>;
    /** A wrong password (or a locked-out user, answered alike) on the password page. */
    passwordRefused?: () => Promise<FastifyReply>;
  },
): Promise<FastifyReply> {
  const values = answers.values ?? {};
  const loginPage = (state: FormState) => showPage.login(ctx, request, reply, realm, auth, { values, ...state });
  switch (signIn.status) {
    case 'success': {
      // Keycloak's setRequiredActions: a step the user has not set up (CONFIGURE_TOTP) becomes their required action.
      for (const action of signIn.requiredActions) await ctx.storage.credentials.addRequiredAction(signIn.user.id, action);
      const refused = await refusedUser(ctx, realm, signIn.user, signIn.env);
      if (refused) return loginPage({ message: { type: 'error', text: refused === 'user_disabled' ? 'Account is disabled, contact your administrator.' : 'Invalid username or password.' }, status: refused === 'user_disabled' ? 403 : 401 });
      return nextRequiredAction(ctx, request, reply, realm, auth, signIn.user, newPasswordPage);
    }
    case 'challenge': {
      if (signIn.user) userLocaleHint(request, signIn.user);
      if (signIn.challenge === 'webauthn' || signIn.challenge === 'webauthn-passwordless') return webauthnChallengePage(ctx, request, reply, realm, auth, { ...signIn, challenge: signIn.challenge });
      if (signIn.challenge === 'recovery-code' && signIn.user) return recoveryCodePage(ctx, reply, realm, auth, { ...signIn, user: signIn.user });
      // The password of a user the flow knows already (chosen by "try another way"): its own page, carrying the run.
      if (signIn.challenge === 'password' && signIn.user) return passwordPage(ctx, reply, realm, auth, signIn.user, stepProgress(auth, { ...signIn, user: signIn.user }));
      if (signIn.challenge !== 'otp' || !signIn.user) return loginPage({});
      const claims = stepProgress(auth, { ...signIn, user: signIn.user });
      const key = await stepState(ctx).seal(realm, 'login-otp', claims);
      return otpPage(ctx, reply, realm, auth, key, claims, {}, 200);
    }
    case 'failure': {
      const { failure } = signIn;
      if (failure.kind === 'otp' && answers.otpRefused) return answers.otpRefused(failure.error);
      if (failure.kind === 'recovery-code' && answers.recoveryRefused) return answers.recoveryRefused(failure.error);
      if (failure.kind === 'recovery-code') return loginPage({ message: { type: 'error', text: 'Invalid recovery authentication code.' }, status: 401 });
      if (failure.kind === 'webauthn' && answers.webauthnRefused) return answers.webauthnRefused(failure.error);
      if (failure.kind === 'webauthn') return loginPage({ message: { type: 'error', text: 'Failed to authenticate by the passkey or security key.' }, status: failure.error === 'ip_temporarily_blocked' ? 429 : 401 });
      if (failure.kind === 'password' && answers.passwordRefused && answeredAsBadCredentials(failure.result)) return answers.passwordRefused();
      if (failure.kind === 'otp' || (failure.kind === 'password' && answeredAsBadCredentials(failure.result))) {
        return loginPage({ errors: { username: 'Invalid username or password.' }, status: 401 });
      }
      if (failure.kind === 'protector') return loginPage({ message: { type: 'error', text: 'We could not verify this sign-in. Please try again.' }, status: failure.status ?? 400 });
      if (failure.result.error === 'ip_temporarily_blocked') {
        reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
        return loginPage({ message: { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' }, status: 429 });
      }
      if (failure.result.error === 'user_disabled') return loginPage({ message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
      throw new Error(`login refusal ${failure.result.error} not mapped`);
    }
    case 'incomplete':
      // Keycloak's AuthenticationFlowException (a credential the flow requires and the user has not set up, a
      // subflow whose steps cannot pass): an error page, never a way in.
      await ctx.events.user(realm, {
        type: 'LOGIN_ERROR',
        clientId: auth.clientId,
        userId: signIn.user?.id ?? null,
        error: signIn.reason === 'unknown_user' ? 'user_not_found' : 'invalid_user_credentials',
        details: { auth_method: 'openid-connect', ...(signIn.user ? { username: signIn.user.username } : {}) },
        request: requestInfo(request),
      });
      return showPage.error(ctx, reply, realm, signIn.reason === 'credential_setup_required' ? 'Cannot sign in: a credential this sign-in requires is not set up.' : 'Cannot sign in: this sign-in cannot be completed.', 400, {
        href: actionUrl(realm, 'authenticate'),
        label: 'Back to sign in',
      });
  }
}

const otpPage = async (ctx: PagesContext, reply: FastifyReply, realm: Realm, auth: AuthSession, key: string, claims: StepClaims, errors: FieldErrors, status: number, message?: { type: string; text: string }) =>
  ctx.pages.send(reply, realm, 'login-otp', { action: actionUrl(realm, 'login-otp'), csrf: auth.csrf, key, errors, message, anotherWay: await anotherWay(ctx, realm, auth, claims) }, status);

export function otpRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): void {
  const state = stepState(ctx);
  const expired = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) => stepExpired(ctx, request, reply, realm, auth);

  // auth-otp-form: the code of the user the password step named.
  loginActionForm(app, ctx, 'login-otp', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'login-otp', ['otp']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      // The key takes a few codes (STEP_ATTEMPTS), then the sign-in starts again from the password.
      const left = await takeStepAttempt(ctx, form.key, STEP_LIFETIME_MS);
      if (left === null) return expired(request, reply, realm, auth);
      const { claims } = step;
      const signIn = await runBrowserSignIn(
        ctx,
        realm,
        auth.clientId,
        requestInfo(request),
        { user: step.user, done: claims.done ?? {}, requiredActions: claims.setup ?? [], login: claims.login, passwordChecked: claims.checked },
        { otp: form.otp },
      );
      return answerSignIn(ctx, request, reply, realm, auth, signIn, newPasswordPage, {
        otpRefused: async (error) => {
          if (error === 'ip_temporarily_blocked') {
            reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
            return otpPage(ctx, reply, realm, auth, form.key, claims, {}, 429, { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' });
          }
          if (left === 0) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many wrong codes. Please sign in again.' }, status: 401 });
          // A wrong code and a locked-out user get the same answer (as the password page does), so it tells nothing.
          return otpPage(ctx, reply, realm, auth, form.key, claims, { otp: INVALID_CODE }, 401);
        },
      });
    },
  });

  // CONFIGURE_TOTP: the code proves the app holds the secret shown; then the credential is stored.
  loginActionForm(app, ctx, 'config-totp', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'config-totp', ['totp', 'userLabel', 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      if (typeof step.claims.secret !== 'string') return expired(request, reply, realm, auth);
      const { user, claims } = step;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, CONFIGURE_TOTP, 'cancelled', user, newPasswordPage);
      const label = form.userLabel.trim();
      const again = (errors: FieldErrors) => configPage(ctx, reply, realm, signInStep(realm, auth, 'config-totp', auth.kcAction === CONFIGURE_TOTP && !auth.kcActionStatus), user, form.key, claims.secret!, { userLabel: label.slice(0, MAX_LABEL) }, errors, 400);
      if (label.length > MAX_LABEL) return again({ userLabel: `Must be at most ${MAX_LABEL} characters.` });
      const code = form.totp.trim();
      if (!code) return again({ totp: 'Please enter the code from your app.' });
      const info = requestInfo(request);
      const saved = await configureOtp(ctx, realm, user, { secret: claims.secret!, code, userLabel: label || null }, { clientId: auth.clientId, details: { auth_method: 'openid-connect' }, request: info });
      if (!saved) return again({ totp: INVALID_CODE });
      return endAction(ctx, request, reply, realm, auth, CONFIGURE_TOTP, 'success', user, newPasswordPage);
    },
  });

  // UPDATE_PROFILE: the user confirms or corrects their names and address, under the same rules as the account page.
  loginActionForm(app, ctx, 'update-profile', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'update-profile', [...PROFILE_FORM_FIELDS, 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, UPDATE_PROFILE, 'cancelled', step.user, newPasswordPage);
      const saved = await saveProfileForm(ctx, request, realm, step.user, form, { clientId: auth.clientId, sessionId: null, details: { custom_required_action: UPDATE_PROFILE } });
      if (!saved.ok) return updateProfilePage(ctx, reply, realm, signInStep(realm, auth, 'update-profile', auth.kcAction === UPDATE_PROFILE && !auth.kcActionStatus), step.user, form.key, saved.values, saved.errors, 400);
      await ctx.storage.credentials.removeRequiredAction(step.user.id, UPDATE_PROFILE);
      return endAction(ctx, request, reply, realm, auth, UPDATE_PROFILE, 'success', saved.user, newPasswordPage);
    },
  });
}
