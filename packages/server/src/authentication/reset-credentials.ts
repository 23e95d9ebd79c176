import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import { RESET_OTP_REMOVE_ALL, type Authenticator, type FlowResult } from '../flows/index.js';
import { PasswordPolicyError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { CONFIGURE_TOTP, UPDATE_PASSWORD } from '../required-actions/index.js';
import { checkNewPassword, setPassword, userSnapshot } from '../services/index.js';
import type { ActionClaims } from './action-tokens.js';
import { hasOtpCredential, OTP_CREDENTIAL_TYPE } from './otp.js';
import { findLoginUser } from './password.js';
import { signInCondition, take } from './sign-in.js';

/**
 * Keycloak's reset-credentials flow as authenticators under its provider ids, run by the one flow runner
 * (flows/engine.ts) from the realm's bound `resetCredentialsFlow`: the flow decides the order and what is left
 * out (an operator's copy with a step DISABLED is honoured); pages/reset.ts only shows the page a step asks for.
 *
 * Between requests the sign-in carries itself in a reset-credentials action token (signed, single use): the
 * e-mailed link, and the key of any later page. It names the user and what the flow has settled (`done`), so the
 * link resumes the flow at the step after the e-mail. A step that changes the account (the new password) spends
 * it; so does the end of the flow.
 */

type ResetContext = Pick<AuthenticationContext, 'storage' | 'events' | 'config' | 'actionTokens' | 'providers'>;

/** The page a reset step asks for. */
export type ResetChallenge = 'choose-user' | 'email-sent' | 'new-password';

/** What a reset step refused (a field of its page, or a link used meanwhile by another request). */
export type ResetFailure = { kind: 'fields'; page: 'choose-user' | 'new-password'; errors: Record<string, string> } | { kind: 'link-used' };

export interface ResetEnv {
  ctx: ResetContext;
  realm: Realm;
  clientId: string;
  request: RequestInfo;
  /** The fields the page just posted, each taken once by the step whose page it is. */
  submitted: Record<string, string> | null;
  /** The link (or page key) this request came with: verified, not used yet. */
  link: { token: string; claims: ActionClaims } | null;
  /** Set once a step spent the link. */
  linkSpent?: boolean;
  /** Set once reset-password saved a new password. */
  passwordReset?: boolean;
  /** What the choose-user page was sent (kept on its page when refused). */
  login?: string;
  /** Mails the reset link carrying `token` (the page layer knows the mail's text and the public address). */
  mailLink(user: User, token: string): void;
}

type ResetStep = Authenticator<ResetEnv, ResetChallenge, ResetFailure>;

/**
 * Who may be mailed a reset-credentials link for this login name (username or, where allowed, e-mail): an
 * enabled user with an address, not a service account; null for anyone else (the page answers alike).
 */
export async function resetCredentialsUser(ctx: Pick<AuthenticationContext, 'storage'>, realm: Realm, login: string): Promise<User | null> {
  const user = await findLoginUser(ctx, realm, login);
  return user && user.enabled && user.email && !user.serviceAccountClientId ? user : null;
}

const MAX_LOGIN = 255;
const MAX_PASSWORD = 1024;

const resetSteps: Record<string, ResetStep> = {
  'reset-credentials-choose-user': {
    id: 'reset-credentials-choose-user',
    requiresUser: false,
    async authenticate({ env }) {
      // A link names its user already (one mailed before links carried `done` included).
      if (env.link) return { status: 'success' };
      const fields = take(env, ['username']);
      if (!fields) return { status: 'challenge', challenge: 'choose-user' };
      const login = fields.username ?? '';
      env.login = login;
      if (!login || login.length > MAX_LOGIN) {
        const error = login ? `Must be at most ${MAX_LOGIN} characters.` : 'Please enter your username or e-mail address.';
        return { status: 'failure', failure: { kind: 'fields', page: 'choose-user', errors: { username: error } } };
      }
      const user = await resetCredentialsUser(env.ctx, env.realm, login);
      if (user) return { status: 'success', user };
      await env.ctx.events.user(env.realm, { type: 'SEND_RESET_PASSWORD_ERROR', clientId: env.clientId, error: 'user_not_found', details: { username: login }, request: env.request });
      // As Keycloak: no user, and no refusal either; the next step that needs one answers as if mailed.
      return { status: 'success' };
    },
  },
  'reset-credential-email': {
    id: 'reset-credential-email',
    requiresUser: true,
    async authenticate({ env, user, execution, done }) {
      // A link mailed before links carried what the flow settled: following it proved the mailbox.
      if (env.link && !env.link.claims.done) return { status: 'success' };
      const token = await env.ctx.actionTokens.issue(env.realm, 'reset-credentials', user!.id, { azp: env.clientId, done: { ...done, [execution.id]: 'success' } });
      env.mailLink(user!, token);
      await env.ctx.events.user(env.realm, { type: 'SEND_RESET_PASSWORD', clientId: env.clientId, userId: user!.id, details: { email: user!.email ?? '', username: user!.username }, request: env.request });
      return { status: 'challenge', challenge: 'email-sent' };
    },
  },
  'reset-password': {
    id: 'reset-password',
    requiresUser: true,
    async authenticate({ env, user }) {
      const fields = take(env, ['password-new', 'password-confirm']);
      if (!fields) return { status: 'challenge', challenge: 'new-password' };
      const password = fields['password-new'] ?? '';
      const refused = (errors: Record<string, string>) => ({ status: 'failure' as const, failure: { kind: 'fields' as const, page: 'new-password' as const, errors } });
      if (!password) return refused({ 'password-new': 'Please specify password.' });
      if (password.length > MAX_PASSWORD) return refused({ 'password-new': 'Password is too long.' });
      if (password !== fields['password-confirm']) return refused({ 'password-confirm': "Passwords don't match." });
      try {
        // Before the link is spent, so a refused password can be corrected on the same page.
        await checkNewPassword(env.ctx.storage, env.realm, user!, password);
      } catch (error) {
        if (!(error instanceof PasswordPolicyError)) throw error;
        return refused({ 'password-new': error.message });
      }
      if (env.link && !env.linkSpent) {
        if (!(await env.ctx.actionTokens.consume(env.link.claims))) return { status: 'failure', failure: { kind: 'link-used' } };
        env.linkSpent = true;
      }
      const updated = await setPassword(env.ctx, env.realm, user!, password);
      await env.ctx.storage.credentials.removeRequiredAction(user!.id, UPDATE_PASSWORD);
      // The old password may be known to someone else: end every session it opened.
      await env.ctx.storage.sessions.deleteForUser(user!.id);
      env.passwordReset = true;
      const clientId = env.link?.claims.azp ?? env.clientId;
      await env.ctx.events.user(env.realm, { type: 'RESET_PASSWORD', clientId, userId: user!.id, details: { username: user!.username }, request: env.request, user: () => userSnapshot(env.ctx.storage, updated) });
      return { status: 'success', user: updated };
    },
  },
  // Keycloak's ResetOTP: REQUIRED, or in the conditional sub-flow for a user with an OTP credential, the user sets
  // up their app again (CONFIGURE_TOTP at the next sign-in); "Remove all OTPs" removes the old ones first.
  'reset-otp': {
    id: 'reset-otp',
    requiresUser: false,
    configuredFor: (user, env) => hasOtpCredential(env.ctx, user),
    async authenticate({ env, user, execution, config }) {
      if (!user) return { status: 'attempted' };
      if (execution.requirement !== 'REQUIRED' && !(await hasOtpCredential(env.ctx, user))) return { status: 'success' };
      if (config.action_on_otp_reset_flag === RESET_OTP_REMOVE_ALL) {
        for (const credential of await env.ctx.storage.credentials.ofUser(user.id, OTP_CREDENTIAL_TYPE)) await env.ctx.storage.credentials.delete(user.id, credential.id);
      }
      await env.ctx.storage.credentials.addRequiredAction(user.id, CONFIGURE_TOTP);
      return { status: 'success' };
    },
  },
};

/** A form protector in the reset flow: it ran on the form before the flow (pages' protectedPost), so here it has passed. */
const passedProtector = (id: string): ResetStep => ({ id, requiresUser: false, authenticate: async () => ({ status: 'success' }) });

/**
 * The reset adapter's run: the realm's bound reset-credentials flow from the top, with what the link settled and
 * the page just posted given to the step whose page it is.
 */
export async function runResetCredentials(
  ctx: ResetContext & Pick<AuthenticationContext, 'flows'>,
  realm: Realm,
  env: Omit<ResetEnv, 'ctx' | 'realm'>,
  user: User | null,
): Promise<FlowResult<ResetChallenge, ResetFailure> & { env: ResetEnv }> {
  const run: ResetEnv = { ...env, ctx, realm, submitted: env.submitted && { ...env.submitted } };
  const result = await ctx.flows.runBound<ResetEnv, ResetChallenge, ResetFailure>(realm, 'resetCredentialsFlow', {
    env: run,
    authenticator: (id) => resetSteps[id] ?? (ctx.providers.formProtectors.has(id) ? passedProtector(id) : undefined),
    // The sign-in flows' conditions (conditional-user-configured, -role, -attribute) hold here too.
    condition: (id) => signInCondition<ResetEnv>(id),
    done: env.link?.claims.done,
    user,
  });
  return { ...result, env: run };
}
