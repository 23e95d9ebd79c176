import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import qrcode from 'qrcode-generator';
import {
  answeredAsBadCredentials,
  CONFIGURE_TOTP,
  completeLogin,
  configureOtp,
  newOtpSetup,
  pendingSignInAction,
  refusedUser,
  runBrowserSignIn,
  SignedState,
  takeStepAttempt,
  type AuthSession,
  type FormState,
  type PendingAction,
  type SecondFactorError,
} from '../authentication/index.js';
import type { ExecutionStatus } from '../flows/index.js';
import type { ServerContext } from '../context.js';
import { otpauthUri } from '../credentials/otp.js';
import { passwordExpired, realmPasswordPolicy } from '../credentials/password-policy.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import { pendingRequiredActions } from '../services/index.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import { PROFILE_FORM_FIELDS, saveProfileForm } from './profile-form.js';
import { formValues } from './protection.js';
import type { FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

/**
 * The browser login after the password: Keycloak's order, the flow's authenticators first (the OTP form of the
 * conditional OTP subflow), then the required actions (UPDATE_PASSWORD, VERIFY_EMAIL, CONFIGURE_TOTP, UPDATE_PROFILE), then the
 * login completes. Between pages the server keeps nothing: each page carries a `key` sealed with the realm's state
 * secret (authentication/signed-state.ts) naming the user, the auth session (a hash of its CSRF token) and what is
 * still pending; the CONFIGURE_TOTP page's key also carries the new secret until a code proves the app has it.
 */

const STEP_LIFETIME_MS = 10 * 60 * 1000;
export const INVALID_CODE = 'Invalid one-time code.';
export const MAX_LABEL = 255;

interface StepClaims {
  sub: string;
  azp: string;
  /** sha256 of the auth session's CSRF token: the key works in this login only. */
  auth: string;
  pending: PendingAction | null;
  /** CONFIGURE_TOTP: the secret shown on the page. */
  secret?: string;
  /** login-otp: what the flow settled before the code page (execution id → status), and its pending setup actions. */
  done?: Record<string, ExecutionStatus>;
  setup?: string[];
  login?: string;
  checked?: boolean;
}

type StepPurpose = 'login-otp' | 'config-totp' | 'update-profile';

const authBinding = (auth: AuthSession) => createHash('sha256').update(auth.csrf).digest('base64url');

function stepState(ctx: ServerContext) {
  const signed = new SignedState(ctx.keys);
  return {
    seal: (realm: Realm, purpose: StepPurpose, claims: StepClaims) => signed.seal(realm.id, purpose, claims, STEP_LIFETIME_MS),
    /** The step's user when `key` is this login's, still enabled; null otherwise. */
    async open(realm: Realm, purpose: StepPurpose, auth: AuthSession, key: string): Promise<{ claims: StepClaims; user: User } | null> {
      const claims = await signed.open<StepClaims>(realm.id, purpose, key, 8192);
      if (!claims || claims.azp !== auth.clientId || claims.auth !== authBinding(auth) || typeof claims.sub !== 'string') return null;
      const user = await ctx.storage.users.byId(realm.id, claims.sub);
      return user && user.enabled ? { claims, user } : null;
    },
  };
}

/**
 * An inline SVG QR code of `text` (no script, no external image: the pages' CSP allows neither); '' when the text
 * is too long for any QR code (the page then shows the key only).
 */
export function qrSvg(text: string): string {
  let qr: ReturnType<typeof qrcode> | null = null;
  for (const level of ['M', 'L'] as const) {
    try {
      qr = qrcode(0, level);
      qr.addData(text);
      qr.make();
      break;
    } catch {
      qr = null;
    }
  }
  if (!qr) return '';
  const size = qr.getModuleCount();
  const margin = 4;
  let path = '';
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) if (qr.isDark(row, col)) path += `M${col + margin},${row + margin}h1v1h-1z`;
  }
  const full = size + 2 * margin;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${full} ${full}" role="img" aria-label="QR code of the authenticator key" shape-rendering="crispEdges"><rect width="${full}" height="${full}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}

/** The manual key in groups of four, as apps show and take it. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

export interface LoginProgress {
  pending: PendingAction | null;
}

export type ShowNewPassword = (reply: FastifyReply, realm: Realm, auth: AuthSession, key: string, errors: FieldErrors, status?: number, message?: { type: string; text: string }) => Promise<FastifyReply>;

/**
 * The page for where a browser sign-in's flow stands (runBrowserSignIn): the page a step asks for, a step's
 * refusal, or, once the flow has succeeded, the required actions (continueLogin). `otpRefused` answers a wrong
 * code on the code page, which counts its attempts.
 */
export async function answerSignIn(
  ctx: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  signIn: Awaited<ReturnType<typeof runBrowserSignIn>>,
  newPasswordPage: ShowNewPassword,
  answers: { values?: Record<string, string>; otpRefused?: (error: SecondFactorError) => Promise<FastifyReply> },
): Promise<FastifyReply> {
  const values = answers.values ?? {};
  const loginPage = (state: FormState) => showPage.login(ctx, request, reply, realm, auth, { values, ...state });
  switch (signIn.status) {
    case 'success': {
      // Keycloak's setRequiredActions: a step the user has not set up (CONFIGURE_TOTP) becomes their required action.
      for (const action of signIn.requiredActions) await ctx.storage.credentials.addRequiredAction(signIn.user.id, action);
      const refused = await refusedUser(ctx, realm, signIn.user, signIn.env);
      if (refused) return loginPage({ message: { type: 'error', text: refused === 'user_disabled' ? 'Account is disabled, contact your administrator.' : 'Invalid username or password.' }, status: refused === 'user_disabled' ? 403 : 401 });
      return continueLogin(ctx, request, reply, realm, auth, signIn.user, { pending: await pendingSignInAction(ctx, realm, signIn.user, 'perform') }, newPasswordPage);
    }
    case 'challenge': {
      if (signIn.challenge !== 'otp' || !signIn.user) return loginPage({});
      const claims: StepClaims = {
        sub: signIn.user.id,
        azp: auth.clientId,
        auth: authBinding(auth),
        pending: null,
        done: signIn.done,
        setup: signIn.requiredActions,
        login: signIn.env.login,
        checked: signIn.env.passwordChecked,
      };
      const key = await stepState(ctx).seal(realm, 'login-otp', claims);
      return otpPage(ctx, reply, realm, auth, key, {}, 200);
    }
    case 'failure': {
      const { failure } = signIn;
      if (failure.kind === 'otp' && answers.otpRefused) return answers.otpRefused(failure.error);
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

/**
 * Where a browser login goes once its flow has succeeded (and again after each required action's page): the
 * pending required action's page, the CONFIGURE_TOTP page, or the end of the login.
 */
export async function continueLogin(
  ctx: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  progress: LoginProgress,
  newPasswordPage: ShowNewPassword,
): Promise<FastifyReply> {
  const state = stepState(ctx);
  if (progress.pending === 'UPDATE_PASSWORD') {
    const key = await ctx.actionTokens.issue(realm, 'update-password', user.id, { azp: auth.clientId });
    const expired = passwordExpired(realmPasswordPolicy(realm.passwordPolicy), user.passwordCreated, Date.now());
    const text = expired ? 'Your password has expired. Choose a new one to continue.' : 'You need to choose a new password to continue.';
    return newPasswordPage(reply, realm, auth, key, {}, 200, { type: 'info', text });
  }
  // Keycloak's VERIFY_EMAIL required action: no session and no code until the address is confirmed. The auth
  // session stays, so signing in again after opening the link goes back to the application.
  if (progress.pending === 'VERIFY_EMAIL') {
    await sendVerification(ctx, request, realm, user, user.email!, auth.clientId);
    return showPage.info(
      ctx,
      reply,
      realm,
      'Verify your e-mail address',
      `You need to verify your e-mail address to activate your account. We sent a link to ${user.email}: open it, then sign in again.`,
      { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' },
    );
  }
  const stored = await pendingRequiredActions(ctx.storage, realm.id, user.id);
  if (stored.includes(CONFIGURE_TOTP)) {
    const { secret } = newOtpSetup(realm);
    const key = await state.seal(realm, 'config-totp', { sub: user.id, azp: auth.clientId, auth: authBinding(auth), pending: null, secret });
    return configPage(ctx, reply, realm, signInStep(realm, auth, 'config-totp'), user, key, secret, {}, {}, 200);
  }
  if (stored.includes(UPDATE_PROFILE)) {
    const key = await state.seal(realm, 'update-profile', { sub: user.id, azp: auth.clientId, auth: authBinding(auth), pending: null });
    return updateProfilePage(ctx, reply, realm, signInStep(realm, auth, 'update-profile'), user, key, profileValues(user), {}, 200);
  }
  return completeLogin(ctx, request, reply, realm, auth, user);
}

const UPDATE_PROFILE = 'UPDATE_PROFILE';

/** The profile form's first values: what the user has. */
export const profileValues = (user: User): Record<string, string> => ({ firstName: user.firstName ?? '', lastName: user.lastName ?? '', email: user.email ?? '' });

/** Where a required action's page posts: the sign-in's step (its auth session's CSRF token), or an e-mailed link's. */
export interface StepForm {
  action: string;
  csrf: string;
}

const signInStep = (realm: Realm, auth: AuthSession, step: string): StepForm => ({ action: actionUrl(realm, step), csrf: auth.csrf });

export const updateProfilePage = (ctx: ServerContext, reply: FastifyReply, realm: Realm, form: StepForm, user: User, key: string, values: Record<string, string>, errors: FieldErrors, status: number) =>
  ctx.pages.send(reply, realm, 'login-update-profile', { ...form, key, username: user.username, values, errors }, status);

const otpPage = (ctx: ServerContext, reply: FastifyReply, realm: Realm, auth: AuthSession, key: string, errors: FieldErrors, status: number, message?: { type: string; text: string }) =>
  ctx.pages.send(reply, realm, 'login-otp', { action: actionUrl(realm, 'login-otp'), csrf: auth.csrf, key, errors, message }, status);

export function configPage(ctx: ServerContext, reply: FastifyReply, realm: Realm, form: StepForm, user: User, key: string, secret: string, values: Record<string, string>, errors: FieldErrors, status: number) {
  const { data } = newOtpSetup(realm);
  return ctx.pages.send(
    reply,
    realm,
    'config-totp',
    {
      ...form,
      key,
      // The realm's display name as the app's issuer, unless it is long (the realm's name then: at most 100 characters).
      qrSvg: qrSvg(otpauthUri(realm.displayName && realm.displayName.length <= 64 ? realm.displayName : realm.name, user.username, secret, data)),
      manualKey: grouped(secret),
      algorithm: data.algorithm.replace('Hmac', ''),
      digits: data.digits,
      period: data.period,
      values,
      errors,
    },
    status,
  );
}

export function otpRoutes(app: FastifyInstance, ctx: ServerContext, newPasswordPage: ShowNewPassword): void {
  const state = stepState(ctx);
  const expired = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) =>
    showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'This page has expired. Please sign in again.' }, status: 400 });

  // auth-otp-form: the code of the user the password step named.
  loginActionForm(app, ctx, 'login-otp', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['otp', 'key', 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await state.open(realm, 'login-otp', auth, form.key);
      if (!step) return expired(request, reply, realm, auth);
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
            return otpPage(ctx, reply, realm, auth, form.key, {}, 429, { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' });
          }
          if (left === 0) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many wrong codes. Please sign in again.' }, status: 401 });
          // A wrong code and a locked-out user get the same answer (as the password page does), so it tells nothing.
          return otpPage(ctx, reply, realm, auth, form.key, { otp: INVALID_CODE }, 401);
        },
      });
    },
  });

  // CONFIGURE_TOTP: the code proves the app holds the secret shown; then the credential is stored.
  loginActionForm(app, ctx, 'config-totp', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['totp', 'userLabel', 'key', 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await state.open(realm, 'config-totp', auth, form.key);
      if (!step || typeof step.claims.secret !== 'string') return expired(request, reply, realm, auth);
      const { user, claims } = step;
      const label = form.userLabel.trim();
      const again = (errors: FieldErrors) => configPage(ctx, reply, realm, signInStep(realm, auth, 'config-totp'), user, form.key, claims.secret!, { userLabel: label.slice(0, MAX_LABEL) }, errors, 400);
      if (label.length > MAX_LABEL) return again({ userLabel: `Must be at most ${MAX_LABEL} characters.` });
      const code = form.totp.trim();
      if (!code) return again({ totp: 'Please enter the code from your app.' });
      const info = requestInfo(request);
      const saved = await configureOtp(ctx, realm, user, { secret: claims.secret!, code, userLabel: label || null }, { clientId: auth.clientId, details: { auth_method: 'openid-connect' }, request: info });
      if (!saved) return again({ totp: INVALID_CODE });
      return continueLogin(ctx, request, reply, realm, auth, user, { pending: null }, newPasswordPage);
    },
  });

  // UPDATE_PROFILE: the user confirms or corrects their names and address, under the same rules as the account page.
  loginActionForm(app, ctx, 'update-profile', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, [...PROFILE_FORM_FIELDS, 'key', 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await state.open(realm, 'update-profile', auth, form.key);
      if (!step) return expired(request, reply, realm, auth);
      const saved = await saveProfileForm(ctx, request, realm, step.user, form, { clientId: auth.clientId, sessionId: null, details: { custom_required_action: UPDATE_PROFILE } });
      if (!saved.ok) return updateProfilePage(ctx, reply, realm, signInStep(realm, auth, 'update-profile'), step.user, form.key, saved.values, saved.errors, 400);
      await ctx.storage.credentials.removeRequiredAction(step.user.id, UPDATE_PROFILE);
      return continueLogin(ctx, request, reply, realm, auth, saved.user, { pending: null }, newPasswordPage);
    },
  });
}
