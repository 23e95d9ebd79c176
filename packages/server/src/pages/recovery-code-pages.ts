import type { FastifyReply } from 'fastify';
import { SignedState, type AuthSession } from '../authentication/index.js';
import { FEW_RECOVERY_CODES_LEFT, nextRecoveryCode } from '../authentication/recovery-codes.js';
import type { PagesContext } from './context.js';
import { hashRecoveryCode, newRecoveryCodes } from '../credentials/recovery-codes.js';
import type { Alternative, ExecutionStatus } from '../flows/index.js';
import { anotherWay } from './another-way.js';
import type { Realm, User } from '../model/types.js';
import { actionUrl } from './pages.js';
import type { FieldErrors } from './render.js';
import { authBinding, STEP_LIFETIME_MS } from './step-pages.js';

/**
 * The recovery-code pages: `auth-recovery-authn-code-form`'s (the next code) and CONFIGURE_RECOVERY_AUTHN_CODES'
 * (the 12 new codes, shown once). The setup page's sealed key carries only the codes' hashes: what is stored.
 */

export interface RecoveryClaims {
  sub: string;
  azp: string;
  auth: string;
  done?: Record<string, ExecutionStatus>;
  setup?: string[];
  login?: string;
  checked?: boolean;
  hashes?: string[];
  ways?: Alternative[];
}

export const RECOVERY_LOGIN = 'login-recovery-authn-code';
export const RECOVERY_SETUP = 'recovery-authn-codes-config';

export async function openRecoveryKey(ctx: PagesContext, realm: Realm, purpose: string, auth: AuthSession, key: string): Promise<{ claims: RecoveryClaims; user: User } | null> {
  const claims = await new SignedState(ctx.keys).open<RecoveryClaims>(realm.id, purpose, key, 8192);
  if (!claims || claims.azp !== auth.clientId || claims.auth !== authBinding(auth) || typeof claims.sub !== 'string') return null;
  const user = await ctx.storage.users.byId(realm.id, claims.sub);
  return user && user.enabled ? { claims, user } : null;
}

/** The page asking for the user's next recovery code. */
export async function recoveryCodePage(
  ctx: PagesContext,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  signIn: { user: User; done: Record<string, ExecutionStatus>; requiredActions: string[]; alternatives?: Alternative[]; env: { login?: string; passwordChecked?: boolean } },
  state: { errors?: FieldErrors; status?: number; message?: { type: string; text: string }; key?: string } = {},
): Promise<FastifyReply> {
  const claims: RecoveryClaims = { sub: signIn.user.id, azp: auth.clientId, auth: authBinding(auth), done: signIn.done, setup: signIn.requiredActions, login: signIn.env.login, checked: signIn.env.passwordChecked, ways: signIn.alternatives };
  const key = state.key ?? (await new SignedState(ctx.keys).seal(realm.id, RECOVERY_LOGIN, claims, STEP_LIFETIME_MS));
  const next = await nextRecoveryCode(ctx, signIn.user);
  const warning = next && next.remaining <= FEW_RECOVERY_CODES_LEFT ? { type: 'warning', text: `You have ${next.remaining} recovery code${next.remaining === 1 ? '' : 's'} left. Set up new ones soon.` } : undefined;
  return ctx.pages.send(reply, realm, 'login-recovery-authn-code-input', { action: actionUrl(realm, RECOVERY_LOGIN), csrf: auth.csrf, key, number: next?.number ?? 1, errors: state.errors ?? {}, message: state.message ?? warning, anotherWay: await anotherWay(ctx, realm, auth, claims) }, state.status ?? 200);
}

/** CONFIGURE_RECOVERY_AUTHN_CODES: new codes, shown once. */
export async function recoveryCodesSetupPage(ctx: PagesContext, reply: FastifyReply, realm: Realm, auth: AuthSession, user: User, aia: boolean, status = 200, message?: { type: string; text: string }): Promise<FastifyReply> {
  const codes = newRecoveryCodes();
  const claims: RecoveryClaims = { sub: user.id, azp: auth.clientId, auth: authBinding(auth), hashes: codes.map(hashRecoveryCode) };
  const key = await new SignedState(ctx.keys).seal(realm.id, RECOVERY_SETUP, claims, STEP_LIFETIME_MS);
  return ctx.pages.send(reply, realm, 'login-recovery-authn-code-config', { action: actionUrl(realm, RECOVERY_SETUP), csrf: auth.csrf, key, codes: codes.map((c) => c.replace(/(.{4})(?=.)/g, '$1-')), cancelAia: aia, message }, status);
}
