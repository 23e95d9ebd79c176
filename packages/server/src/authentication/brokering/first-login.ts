import { upstreamUsername } from './upstream-oidc.js';
import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from '../context.js';
import type { Authenticator, FlowResult, StepOutcome } from '../../flows/index.js';
import type { IdentityProvider, Realm, User } from '../../model/types.js';
import { UPDATE_PASSWORD } from '../../required-actions/index.js';
import { createUser, userSnapshot } from '../../services/index.js';
import { userActionTokenLifespan } from '../action-tokens.js';
import { authenticatePassword, type PasswordResult } from '../password.js';
import type { SecondFactorError } from '../second-factor.js';
import { otpForm, take, type SignInEnv } from '../sign-in.js';
import { dropLinkProof, linkConfirmed, takeLinkProof, type BrokerProgress } from './broker-state.js';
import { runBrokerFlow } from './run-flow.js';

/**
 * The first broker login flow's authenticators (Keycloak's idp-* providers), run by the one flow runner over the
 * flow the identity provider names (`firstBrokerLoginFlowAlias`, Keycloak's `first broker login` by default). The
 * rule they keep: an upstream account whose e-mail or username is a local user's is never signed in as that user
 * on the upstream's word. idp-create-user-if-unique only creates a user where none has that e-mail or username;
 * where one has, the flow goes on to `Handle Existing Account`: the user confirms the link, then proves they own the
 * local account (its password, and its code when it has OTP). `trustEmail` does not change that, as in Keycloak
 * (it marks the new user's e-mail verified). Or, where the realm can send mail, the owner proves it by following a link
 * mailed to the existing account's address (idp-email-verification, Keycloak's IdpEmailVerificationAuthenticator).
 */

/** The page a first-login step asks to show. */
export type BrokerChallenge = 'review-profile' | 'confirm-link' | 'email-link' | 'reauth-password' | 'otp';

export type BrokerFailure =
  | { kind: 'password'; result: Extract<PasswordResult, { ok: false }> }
  | { kind: 'otp'; error: SecondFactorError }
  | { kind: 'profile'; errors: Record<string, string> };

type BrokerContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config' | 'providers' | 'flows' | 'logger' | 'actionTokens'>;

/** What the page layer gives a first broker login run: its progress key, and the mailer of the link. */
export interface BrokerPages {
  /** The key of the sign-in's progress (the e-mailed link names it). */
  key: string;
  /** Mails the link carrying `token` to the existing account; true once handed to SMTP, false when that failed. */
  mailLink(user: User, token: string, lifetimeSeconds: number): Promise<boolean>;
}

export interface BrokerEnv extends SignInEnv, BrokerPages {
  ctx: BrokerContext;
  provider: IdentityProvider;
  progress: BrokerProgress;
  /** The fields the page just posted, each taken once by the step whose page it is. */
  submitted: Record<string, string> | null;
}

type Step = Authenticator<BrokerEnv, BrokerChallenge, BrokerFailure>;
type Outcome = StepOutcome<BrokerChallenge, BrokerFailure>;


const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_FIELD = 255;

/** Keycloak's `update.profile.on.first.login`: on, off, or missing (only when a required field is empty). */
function reviewNeeded(env: BrokerEnv, config: Readonly<Record<string, string>>): boolean {
  const mode = config['update.profile.on.first.login'] ?? (env.provider.rest.updateProfileFirstLoginMode as string | undefined) ?? 'missing';
  if (mode === 'off') return false;
  if (mode === 'on') return true;
  const { identity } = env.progress;
  return !identity.username || !identity.email || !identity.firstName || !identity.lastName;
}

const reviewProfile: Step = {
  id: 'idp-review-profile',
  requiresUser: false,
  async authenticate({ env, config }) {
    if (env.progress.reviewed || !reviewNeeded(env, config)) return { status: 'success' };
    const fields = take(env, ['username', 'email', 'firstName', 'lastName']);
    if (!fields) return { status: 'challenge', challenge: 'review-profile' };
    const errors: Record<string, string> = {};
    const value = (name: string) => (fields[name] ?? '').trim();
    if (!value('username')) errors.username = 'Please specify username.';
    if (!value('email')) errors.email = 'Please specify email.';
    else if (!EMAIL.test(value('email'))) errors.email = 'Invalid email address.';
    for (const name of ['username', 'email', 'firstName', 'lastName']) if (value(name).length > MAX_FIELD) errors[name] = `Must be at most ${MAX_FIELD} characters.`;
    if (Object.keys(errors).length) return { status: 'failure', failure: { kind: 'profile', errors } };
    const { identity } = env.progress;
    // A changed address is no longer the one the upstream vouched for.
    const emailVerified = identity.emailVerified && value('email').toLowerCase() === (identity.email ?? '').toLowerCase();
    if (value('username') !== identity.username || value('email').toLowerCase() !== (identity.email ?? '').toLowerCase()) env.progress.reviewChanged = true;
    env.progress.identity = { ...identity, username: value('username'), email: value('email'), firstName: value('firstName') || null, lastName: value('lastName') || null, emailVerified };
    env.progress.reviewed = true;
    return { status: 'success' };
  },
};

/** The local user with the brokered user's e-mail (where e-mails are unique) or username, Keycloak's checkExistingUser. */
async function existingUser(env: BrokerEnv): Promise<User | null> {
  const { identity } = env.progress;
  const { storage } = env.ctx;
  if (identity.email && !env.realm.duplicateEmailsAllowed) {
    const byEmail = await storage.users.byEmail(env.realm.id, identity.email.toLowerCase());
    if (byEmail) return byEmail;
  }
  return storage.users.byUsername(env.realm.id, identity.username.toLowerCase());
}

const createUserIfUnique: Step = {
  id: 'idp-create-user-if-unique',
  requiresUser: false,
  async authenticate({ env, config }) {
    const existing = await existingUser(env);
    // The owner of that account followed the e-mailed link for this upstream account in another browser
    // (Keycloak's runIfUserVerified): this sign-in links it, once.
    if (existing && (await takeLinkProof(env.ctx, existing.id, env.provider.alias, env.progress.identity.id))) return { status: 'success', user: existing };
    if (existing) {
      env.progress.existingUserId = existing.id;
      return { status: 'attempted' };
    }
    const { identity } = env.progress;
    const { ctx, realm, provider } = env;
    const user = await ctx.storage.transaction((trx) =>
      createUser(
        ctx.storage,
        realm,
        {
          username: identity.username,
          email: identity.email,
          firstName: identity.firstName,
          lastName: identity.lastName,
          // Keycloak: a trusted provider's address is taken as verified (not one the upstream itself says is unverified).
          emailVerified: provider.rest.trustEmail === true && identity.emailUnverified !== true,
        },
        trx,
      ),
    );
    if (config['require.password.update.after.registration'] === 'true') await ctx.storage.credentials.addRequiredAction(user.id, UPDATE_PASSWORD);
    env.progress.newUser = true;
    await ctx.events.user(realm, {
      type: 'REGISTER',
      clientId: env.clientId,
      userId: user.id,
      details: { identity_provider: provider.alias, identity_provider_identity: upstreamUsername(identity), register_method: 'broker', username: user.username, ...(user.email ? { email: user.email } : {}) },
      request: env.request,
      user: () => userSnapshot(ctx.storage, user),
    });
    return { status: 'success', user };
  },
};

const confirmLink: Step = {
  id: 'idp-confirm-link',
  requiresUser: false,
  async authenticate({ env }) {
    if (!env.progress.existingUserId) return { status: 'attempted' };
    const fields = take(env, ['submitAction']);
    if (!fields || fields.submitAction !== 'linkAccount') return { status: 'challenge', challenge: 'confirm-link' };
    return { status: 'success' };
  },
};

/**
 * Keycloak's idp-email-verification: a link to the existing account's address; following it (confirmLinkMail, in
 * pages/broker.ts) proves the mailbox, and the flow goes on with that account. Attempted (re-authentication beside it
 * is the way in) when the realm cannot send mail, the review page changed the username or e-mail, or the account has
 * no address. The page's "send again" mails a new link; a page posted again without it does not.
 */
/** The existing account idp-email-verification can mail, or null where it passes itself over. */
async function mailableExisting(env: BrokerEnv): Promise<User | null> {
  const { ctx, realm, progress } = env;
  const existing = progress.existingUserId ? await ctx.storage.users.byId(realm.id, progress.existingUserId) : null;
  return !existing || !realm.smtpServer.host || progress.reviewChanged || !existing.email ? null : existing;
}

const emailVerification: Step = {
  id: 'idp-email-verification',
  requiresUser: false,
  // "Try another way" between it and re-authentication (Keycloak's Account verification options), both directions.
  selectable: true,
  offered: async (env) => (await mailableExisting(env)) !== null,
  async authenticate({ env }) {
    const { ctx, realm, progress, provider } = env;
    const existing = await mailableExisting(env);
    if (!existing?.email) return { status: 'attempted' };
    const { identity } = progress;
    if (await linkConfirmed(ctx, env.key, identity.id)) {
      await dropLinkProof(ctx, existing.id, provider.alias, identity.id);
      return { status: 'success', user: existing };
    }
    if (take(env, ['emailLink'])?.emailLink === 'resend') progress.linkMailedTo = null;
    if (progress.linkMailedTo === existing.email) return { status: 'challenge', challenge: 'email-link' };
    progress.linkMailedTo = existing.email;
    const lifespan = userActionTokenLifespan(realm, 'idp-verify-account-via-email');
    const token = await ctx.actionTokens.issue(realm, 'idp-verify-account-via-email', existing.id, { email: existing.email, azp: env.clientId, idpa: provider.alias, idpu: upstreamUsername(identity), xid: identity.id, bpk: env.key }, lifespan);
    const details = { identity_provider: provider.alias, identity_provider_identity: upstreamUsername(identity), username: existing.username, email: existing.email };
    const event = { clientId: env.clientId, userId: existing.id, details, request: env.request };
    // Recorded once SMTP took the mail or refused it; the page does not wait for it.
    void env
      .mailLink(existing, token, lifespan)
      .then((sent) => ctx.events.user(realm, sent ? { type: 'SEND_IDENTITY_PROVIDER_LINK', ...event } : { type: 'SEND_IDENTITY_PROVIDER_LINK_ERROR', error: 'email_send_failed', ...event }))
      .catch((error: unknown) => ctx.logger.error({ err: error, realm: realm.name }, 'recording the identity provider link mail failed'));
    return { status: 'challenge', challenge: 'email-link' };
  },
};

const reauthenticate: Step = {
  id: 'idp-username-password-form',
  requiresUser: false,
  selectable: true,
  offered: async (env) => env.progress.existingUserId !== null,
  async authenticate({ env }) {
    const existingId = env.progress.existingUserId;
    const existing = existingId ? await env.ctx.storage.users.byId(env.realm.id, existingId) : null;
    if (!existing) return { status: 'attempted' };
    const fields = take(env, ['password']);
    if (!fields) return { status: 'challenge', challenge: 'reauth-password' };
    const result = await authenticatePassword(env.ctx, env.realm, { username: existing.username, password: fields.password ?? '', clientId: env.clientId, details: env.details, request: env.request });
    if (!result.ok) return { status: 'failure', failure: { kind: 'password', result } };
    // The password named the account found, never another.
    if (result.user.id !== existing.id) return { status: 'attempted' };
    env.passwordChecked = true;
    return { status: 'success', user: result.user };
  },
};

/** Organizations are not brokered here: the step has nothing to add. */
const addOrganizationMember: Step = { id: 'idp-add-organization-member', requiresUser: false, authenticate: async () => ({ status: 'success' }) };

const steps: Record<string, Step> = Object.fromEntries(
  [reviewProfile, createUserIfUnique, confirmLink, emailVerification, reauthenticate, otpForm, addOrganizationMember].map((step) => [step.id, step]),
);

/** The broker login's authenticators by provider id (the lead's catalog lists the same ids). */
export const BROKER_AUTHENTICATOR_IDS = Object.keys(steps);

/**
 * Runs the provider's first broker login flow from the top with what earlier pages settled (`progress`, which the
 * steps update in place); null when the realm has no flow of that alias.
 */
export async function runFirstBrokerLogin(
  ctx: BrokerContext,
  realm: Realm,
  provider: IdentityProvider,
  clientId: string,
  request: RequestInfo,
  progress: BrokerProgress,
  submitted: Record<string, string> | null,
  pages: BrokerPages,
  selected?: string,
): Promise<(FlowResult<BrokerChallenge, BrokerFailure> & { env: BrokerEnv }) | null> {
  const alias = typeof provider.rest.firstBrokerLoginFlowAlias === 'string' && provider.rest.firstBrokerLoginFlowAlias ? provider.rest.firstBrokerLoginFlowAlias : 'first broker login';
  const env: BrokerEnv = { ctx, realm, clientId, request, provider, progress, ...pages, submitted: submitted && { ...submitted }, details: { auth_method: 'openid-connect', identity_provider: provider.alias, identity_provider_identity: upstreamUsername(progress.identity) } };
  const user = progress.userId ? await ctx.storage.users.byId(realm.id, progress.userId) : null;
  const result = await runBrokerFlow<BrokerEnv, BrokerChallenge, BrokerFailure>(ctx, realm, alias, env, (id) => steps[id], progress, user, selected);
  if (!result) return null;
  progress.userId = result.user?.id ?? progress.userId;
  return { ...result, env };
}
