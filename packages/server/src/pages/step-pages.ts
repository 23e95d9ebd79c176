import type { FastifyReply } from 'fastify';
import qrcode from 'qrcode-generator';
import { newOtpSetup, SignedState, takeStepAttempt, type AuthSession, type PendingAction } from '../authentication/index.js';
import type { Alternative, ExecutionStatus } from '../flows/index.js';
import type { PagesContext } from './context.js';
import { otpauthUri } from '../credentials/otp.js';
import type { Realm, User } from '../model/types.js';
import type { FastifyRequest } from 'fastify';
import { actionUrl, showPage } from './pages.js';
import { authBinding } from './binding.js';
import { csrfRejected } from './login-context.js';
import { formValues } from './protection.js';

export { authBinding };
import type { FieldErrors } from './render.js';

/**
 * What the sign-in's step pages share (the OTP code page, the required actions' pages, an e-mailed link's pages):
 * between pages the server keeps nothing; each page carries a `key` sealed with the realm's state secret
 * (authentication/signed-state.ts) naming the user and the auth session (a hash of its CSRF token); the
 * CONFIGURE_TOTP page's key also carries the new secret until a code proves the app has it.
 */


export const STEP_LIFETIME_MS = 10 * 60 * 1000;

/** A step page's key that is no longer valid (expired, another sign-in's, used up): the login page again. */
export const stepExpired = (ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) =>
  showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'This page has expired. Please sign in again.' }, status: 400 });

/**
 * The start of a sign-in step page's post: the auth session's CSRF token, the page's key (opened by `open`) and one
 * of the answers the key takes (STEP_ATTEMPTS). The step and the answers left after this one, or the page answered.
 */
export async function openStepPost<T>(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  form: Record<string, string>,
  open: (key: string) => Promise<T | null>,
): Promise<{ step: T; left: number } | { answered: FastifyReply }> {
  const rejected = csrfRejected(ctx, reply, realm, auth, form);
  if (rejected) return { answered: await rejected };
  const step = await open(form.key);
  const left = step ? await takeStepAttempt(ctx, form.key, STEP_LIFETIME_MS) : null;
  if (!step || left === null) return { answered: await stepExpired(ctx, request, reply, realm, auth) };
  return { step, left };
}
export const INVALID_CODE = 'Invalid one-time code.';
export const MAX_LABEL = 255;

export interface StepClaims {
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
  /** login-otp: the ways "try another way" offers there (pages/select-authenticator.ts). */
  ways?: Alternative[];
  /** consent: the client scopes the page asks the user to grant, by name. */
  scopes?: string[];
  /** consent: the SSO session the sign-in completes in (a signed-in user asked for consent), when any. */
  sso?: string;
}

type StepPurpose = 'login-otp' | 'login-password' | 'config-totp' | 'update-profile' | 'terms' | 'delete-account' | 'delete-credential' | 'update-email' | 'idp-link' | 'consent';


export function stepState(ctx: PagesContext) {
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
    /**
     * A step page's post: its `fields` (with `key` and `session_code`), the CSRF token checked and the key opened as
     * `purpose`; the page answered (the form expired, or the login page again) when either fails.
     */
    async post(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, purpose: StepPurpose, fields: readonly string[]): Promise<{ form: Record<string, string>; step: { claims: StepClaims; user: User } } | { answered: FastifyReply }> {
      const form = formValues(request.body, [...fields, 'key', 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return { answered: await rejected };
      const step = await this.open(realm, purpose, auth, form.key);
      if (!step) return { answered: await stepExpired(ctx, request, reply, realm, auth) };
      return { form, step };
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
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${full} ${full}" aria-hidden="true" shape-rendering="crispEdges"><rect width="${full}" height="${full}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}

/** The manual key in groups of four, as apps show and take it. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

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

export const updateProfilePage = (ctx: PagesContext, reply: FastifyReply, realm: Realm, form: StepForm, user: User, key: string, values: Record<string, string>, errors: FieldErrors, status: number) =>
  ctx.pages.send(reply, realm, 'login-update-profile', { ...form, key, username: user.username, values, errors }, status);

export function configPage(ctx: PagesContext, reply: FastifyReply, realm: Realm, form: StepForm, user: User, key: string, secret: string, values: Record<string, string>, errors: FieldErrors, status: number) {
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
