import type { FastifyReply, FastifyRequest } from 'fastify';
import { SignedState, type AuthSession } from '../authentication/index.js';
import { authenticationOptions, registrationOptions, type WebAuthnKind } from '../authentication/webauthn.js';
import type { PagesContext } from './context.js';
import type { Alternative, ExecutionStatus } from '../flows/index.js';
import { anotherWay } from './another-way.js';
import { ceremonyOf } from './binding.js';
import type { Realm, User } from '../model/types.js';
import { actionUrl } from './pages.js';
import type { FieldErrors } from './render.js';
import { authBinding, STEP_LIFETIME_MS } from './step-pages.js';

/**
 * The WebAuthn pages: the assertion page of `webauthn-authenticator` / `webauthn-authenticator-passwordless` and the
 * registration page of `webauthn-register` / `webauthn-register-passwordless`. The options are made by
 * authentication/webauthn.ts and put in the form (data-options); the browser side is our own static script
 * (static/webauthn.js) over @simplewebauthn/browser's bundle, both served from this origin (the pages' CSP allows
 * no inline script). Between pages the server keeps only the challenge (shared store); the page's `key`, sealed
 * with the realm's state secret, names the user (or none: a passkey alone names them), this auth session and what
 * the flow settled, as the OTP page's does.
 */

export interface WebAuthnClaims {
  sub: string | null;
  azp: string;
  auth: string;
  kind: WebAuthnKind;
  done?: Record<string, ExecutionStatus>;
  setup?: string[];
  login?: string;
  checked?: boolean;
  ways?: Alternative[];
}

export const LOGIN_PURPOSE = 'login-webauthn';
export const REGISTER_PURPOSE = 'webauthn-register';
export const MAX_RESPONSE = 32768;

export { ceremonyOf };

export async function openKey(ctx: PagesContext, realm: Realm, purpose: string, auth: AuthSession, key: string): Promise<{ claims: WebAuthnClaims; user: User | null } | null> {
  const claims = await new SignedState(ctx.keys).open<WebAuthnClaims>(realm.id, purpose, key, 8192);
  if (!claims || claims.azp !== auth.clientId || claims.auth !== authBinding(auth) || (claims.kind !== 'two-factor' && claims.kind !== 'passwordless')) return null;
  if (claims.sub === null) return { claims, user: null };
  const user = typeof claims.sub === 'string' ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
  return user && user.enabled ? { claims, user } : null;
}

/** The assertion page for where the flow stands (a `webauthn` or `webauthn-passwordless` challenge). */
export async function webauthnChallengePage(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  signIn: { challenge: 'webauthn' | 'webauthn-passwordless'; user: User | null; done: Record<string, ExecutionStatus>; requiredActions: string[]; alternatives?: Alternative[]; env: { login?: string; passwordChecked?: boolean } },
  message?: { type: string; text: string },
  status = 200,
  /** The page shown again: its key, whose attempts go on counting. */
  sameKey?: string,
): Promise<FastifyReply> {
  const kind: WebAuthnKind = signIn.challenge === 'webauthn-passwordless' ? 'passwordless' : 'two-factor';
  const claims: WebAuthnClaims = { sub: signIn.user?.id ?? null, azp: auth.clientId, auth: authBinding(auth), kind, done: signIn.done, setup: signIn.requiredActions, login: signIn.env.login, checked: signIn.env.passwordChecked, ways: signIn.alternatives };
  const key = sameKey ?? (await new SignedState(ctx.keys).seal(realm.id, LOGIN_PURPOSE, claims, STEP_LIFETIME_MS));
  const options = await authenticationOptions(ctx, realm, signIn.user, kind, ceremonyOf(ctx, request, auth));
  return ctx.pages.send(reply, realm, 'webauthn-authenticate', { action: actionUrl(realm, LOGIN_PURPOSE), csrf: auth.csrf, key, options: JSON.stringify(options), passwordless: kind === 'passwordless', message, anotherWay: await anotherWay(ctx, realm, auth, claims) }, status);
}

/** The registration page of `webauthn-register` / `webauthn-register-passwordless` (`aia`: it can be cancelled). */
export async function webauthnRegisterPage(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  kind: WebAuthnKind,
  aia: boolean,
  state: { values?: Record<string, string>; errors?: FieldErrors; message?: { type: string; text: string }; status?: number } = {},
): Promise<FastifyReply> {
  const claims: WebAuthnClaims = { sub: user.id, azp: auth.clientId, auth: authBinding(auth), kind };
  const key = await new SignedState(ctx.keys).seal(realm.id, REGISTER_PURPOSE, claims, STEP_LIFETIME_MS);
  const options = await registrationOptions(ctx, realm, user, kind, ceremonyOf(ctx, request, auth));
  return ctx.pages.send(
    reply,
    realm,
    'webauthn-register',
    { action: actionUrl(realm, REGISTER_PURPOSE), csrf: auth.csrf, key, options: JSON.stringify(options), passwordless: kind === 'passwordless', cancelAia: aia, values: state.values ?? {}, errors: state.errors ?? {}, message: state.message },
    state.status ?? 200,
  );
}

