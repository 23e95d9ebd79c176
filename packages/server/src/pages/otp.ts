import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import qrcode from 'qrcode-generator';
import {
  configureOtp,
  hasOtpCredential,
  newOtpSetup,
  SignedState,
  takeStepAttempt,
  verifyOtp,
  type AuthSession,
  type PendingAction,
} from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { otpauthUri } from '../credentials/otp.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import { CONFIGURE_TOTP, UPDATE_PROFILE } from '../required-actions/index.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import { PROFILE_FORM_FIELDS, saveProfileForm } from './profile-form.js';
import { formValues } from './protection.js';
import type { FieldErrors } from './render.js';
import { aiaOutcome, nextRequiredAction } from './required-actions.js';

/**
 * The browser login after the password: Keycloak's order, the flow's authenticators first (the OTP form of the
 * conditional OTP subflow), then the required actions in the realm's priority order (pages/required-actions.ts),
 * then the login completes. Between pages the server keeps nothing: each page carries a `key` sealed with the realm's state
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
}

type StepPurpose = 'login-otp' | 'config-totp' | 'update-profile' | 'terms';

export const authBinding = (auth: AuthSession) => createHash('sha256').update(auth.csrf).digest('base64url');

export function stepState(ctx: ServerContext) {
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
  /** The OTP step is behind (passed, or the password page sent no user to it). */
  otpDone: boolean;
  pending: PendingAction | null;
}

export type ShowNewPassword = (
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  key: string,
  errors: FieldErrors,
  status?: number,
  message?: { type: string; text: string },
  /** The page is an application-initiated action (kc_action): it has a Cancel button. */
  cancelAia?: boolean,
) => Promise<FastifyReply>;

/**
 * Where a browser login goes once its password is right (and again after each later step): the OTP page, then
 * the next required action's page in the realm's order (nextRequiredAction), or the end of the login.
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
  const step = await ctx.flows.otpStep(realm, 'browser', await hasOtpCredential(ctx, user), auth.clientId);
  const state = stepState(ctx);
  if (!progress.otpDone && step === 'otp') {
    const key = await state.seal(realm, 'login-otp', { sub: user.id, azp: auth.clientId, auth: authBinding(auth), pending: progress.pending });
    return otpPage(ctx, reply, realm, auth, key, {}, 200);
  }
  // CONFIGURE_TOTP is what the flow's OTP step sets on a user who has no OTP yet (Keycloak's setRequiredActions).
  return nextRequiredAction(ctx, request, reply, realm, auth, user, step === 'configure' ? [CONFIGURE_TOTP] : [], newPasswordPage);
}

/** The profile form's first values: what the user has. */
export const profileValues = (user: User): Record<string, string> => ({ firstName: user.firstName ?? '', lastName: user.lastName ?? '', email: user.email ?? '' });

/** Where a required action's page posts: the sign-in's step (its auth session's CSRF token), or an e-mailed link's. */
export interface StepForm {
  action: string;
  csrf: string;
  /** An application-initiated action (kc_action): the page has a Cancel button. */
  cancelAia?: boolean;
}

export const signInStep = (realm: Realm, auth: AuthSession, step: string, cancelAia = false): StepForm => ({ action: actionUrl(realm, step), csrf: auth.csrf, cancelAia });

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
      const code = form.otp.trim();
      const result = await verifyOtp(ctx, realm, step.user, code, { clientId: auth.clientId, details: { auth_method: 'openid-connect' }, request: requestInfo(request) });
      if (!result.ok && result.error === 'ip_temporarily_blocked') {
        reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
        return otpPage(ctx, reply, realm, auth, form.key, {}, 429, { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' });
      }
      if (!result.ok && left === 0) {
        return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many wrong codes. Please sign in again.' }, status: 401 });
      }
      // A wrong code and a locked-out user get the same answer (as the password page does), so it tells nothing.
      if (!result.ok) return otpPage(ctx, reply, realm, auth, form.key, { otp: INVALID_CODE }, 401);
      return continueLogin(ctx, request, reply, realm, auth, step.user, { otpDone: true, pending: step.claims.pending }, newPasswordPage);
    },
  });

  // CONFIGURE_TOTP: the code proves the app holds the secret shown; then the credential is stored.
  loginActionForm(app, ctx, 'config-totp', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['totp', 'userLabel', 'key', 'session_code', 'cancel-aia']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await state.open(realm, 'config-totp', auth, form.key);
      if (!step || typeof step.claims.secret !== 'string') return expired(request, reply, realm, auth);
      const { user, claims } = step;
      if (form['cancel-aia']) return continueLogin(ctx, request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, CONFIGURE_TOTP, 'cancelled'), user, { otpDone: true, pending: null }, newPasswordPage);
      const label = form.userLabel.trim();
      const again = (errors: FieldErrors) => configPage(ctx, reply, realm, signInStep(realm, auth, 'config-totp', auth.kcAction === CONFIGURE_TOTP && !auth.kcActionStatus), user, form.key, claims.secret!, { userLabel: label.slice(0, MAX_LABEL) }, errors, 400);
      if (label.length > MAX_LABEL) return again({ userLabel: `Must be at most ${MAX_LABEL} characters.` });
      const code = form.totp.trim();
      if (!code) return again({ totp: 'Please enter the code from your app.' });
      const info = requestInfo(request);
      const saved = await configureOtp(ctx, realm, user, { secret: claims.secret!, code, userLabel: label || null }, { clientId: auth.clientId, details: { auth_method: 'openid-connect' }, request: info });
      if (!saved) return again({ totp: INVALID_CODE });
      return continueLogin(ctx, request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, CONFIGURE_TOTP, 'success'), user, { otpDone: true, pending: null }, newPasswordPage);
    },
  });

  // UPDATE_PROFILE: the user confirms or corrects their names and address, under the same rules as the account page.
  loginActionForm(app, ctx, 'update-profile', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, [...PROFILE_FORM_FIELDS, 'key', 'session_code', 'cancel-aia']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await state.open(realm, 'update-profile', auth, form.key);
      if (!step) return expired(request, reply, realm, auth);
      if (form['cancel-aia']) return continueLogin(ctx, request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, UPDATE_PROFILE, 'cancelled'), step.user, { otpDone: true, pending: null }, newPasswordPage);
      const saved = await saveProfileForm(ctx, request, realm, step.user, form, { clientId: auth.clientId, sessionId: null, details: { custom_required_action: UPDATE_PROFILE } });
      if (!saved.ok) return updateProfilePage(ctx, reply, realm, signInStep(realm, auth, 'update-profile', auth.kcAction === UPDATE_PROFILE && !auth.kcActionStatus), step.user, form.key, saved.values, saved.errors, 400);
      await ctx.storage.credentials.removeRequiredAction(step.user.id, UPDATE_PROFILE);
      return continueLogin(ctx, request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, UPDATE_PROFILE, 'success'), saved.user, { otpDone: true, pending: null }, newPasswordPage);
    },
  });
}
