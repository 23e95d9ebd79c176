import { createHash, randomBytes } from 'node:crypto';
import type { AuthenticationContext } from '../context.js';
import type { Alternative, ExecutionStatus } from '../../flows/index.js';
import type { AuthSession } from '../auth-session.js';
import type { BrokeredIdentity } from './upstream-oidc.js';

/**
 * What a brokered sign-in keeps between requests, on the server (the shared store), never in the browser: the
 * upstream request's nonce and PKCE verifier (they must not travel with the code), and later the upstream's
 * answer while the first broker login flow asks the user things. Each is bound to the auth session that started
 * it (a hash of its CSRF token), so a `state` or a page key from another browser's sign-in opens nothing here.
 */

type BrokerStore = Pick<AuthenticationContext, 'hostStore'>;

const LIFETIME_MS = 30 * 60 * 1000;
const random = () => randomBytes(24).toString('base64url');
/** The auth session a record belongs to: its CSRF token, hashed. */
export const authBindingOf = (auth: AuthSession) => createHash('sha256').update(`broker\n${auth.csrf}`).digest('base64url');

export interface PendingUpstream {
  alias: string;
  auth: string;
  clientId: string;
  nonce: string;
  codeVerifier: string | null;
  /**
   * Client-initiated account linking: the upstream account is linked to the user of this SSO session (bound to it
   * instead of an auth session), then the browser goes to the application's `redirectUri`.
   */
  link?: { sessionId: string; userId: string; redirectUri: string };
  /**
   * Keycloak 26's `kc_action=idp_link:{alias}`: the upstream account is linked to this user of the auth session
   * (bound to it as a sign-in's state is), then the application-initiated action goes on.
   */
  aiaLink?: { userId: string };
}

/**
 * Keycloak's client-initiated account linking hash: base64url(SHA-256(nonce + SSO session id + client id + provider
 * alias)); only a holder of the session's id (a token's `sid`) and the nonce can make it.
 */
export const accountLinkHash = (nonce: string, sessionId: string, clientId: string, alias: string) => createHash('sha256').update(`${nonce}${sessionId}${clientId}${alias}`, 'utf8').digest('base64url');

/** A new upstream request's `state`: an unguessable id of what the callback needs (rememberUpstream). */
export const newUpstreamState = random;

export async function rememberUpstream(ctx: BrokerStore, state: string, pending: PendingUpstream): Promise<void> {
  await ctx.hostStore.set(`broker-state:${state}`, JSON.stringify(pending), LIFETIME_MS);
}

export type UpstreamStateRefusal = 'unknown' | 'other_session' | 'other_provider';

/**
 * The callback's `state`, taken once: a replay finds it used. Refused when it belongs to another browser's sign-in
 * (swapped state: an attacker's code fed to a victim) or to another provider.
 */
export async function takeUpstream(ctx: BrokerStore, state: string, auth: AuthSession | null, alias: string, ssoSessionId: string | null = null): Promise<PendingUpstream | UpstreamStateRefusal> {
  if (!/^[A-Za-z0-9_-]{32}$/.test(state)) return 'unknown';
  const key = `broker-state:${state}`;
  const stored = await ctx.hostStore.get(key);
  if (!stored || stored === 'used') return 'unknown';
  // Atomic: of two callbacks with one state, one takes it.
  if (!(await ctx.hostStore.compareAndSet(key, stored, 'used', LIFETIME_MS))) return 'unknown';
  const pending = JSON.parse(stored) as PendingUpstream;
  if (pending.link) {
    // A link belongs to the SSO session that asked for it: another browser's (or a later) session opens nothing.
    if (ssoSessionId === null || pending.link.sessionId !== ssoSessionId) return 'other_session';
  } else if (!auth || pending.auth !== authBindingOf(auth) || pending.clientId !== auth.clientId) return 'other_session';
  if (pending.alias !== alias) return 'other_provider';
  return pending;
}

/** Where a first (or post) broker login stands between its pages. */
export interface BrokerProgress {
  /** Which flow the pages are in: the first broker login (absent: it), or the post broker login flow. */
  phase?: 'first' | 'post';
  alias: string;
  auth: string;
  identity: BrokeredIdentity;
  /** The flow's executions settled so far, and the user they named. */
  done: Record<string, ExecutionStatus>;
  userId: string | null;
  /** The account idp-create-user-if-unique found with the upstream user's e-mail or username. */
  existingUserId: string | null;
  /** idp-create-user-if-unique created the user in this sign-in. */
  newUser: boolean;
  requiredActions: string[];
  /** The review page was shown (its values are the identity's now). */
  reviewed: boolean;
  /** The review page changed the upstream's username or e-mail (Keycloak's UPDATE_PROFILE_*_CHANGED notes). */
  reviewChanged?: boolean;
  /** idp-email-verification mailed its link to this address (Keycloak's note that keeps a refresh from mailing again). */
  linkMailedTo?: string | null;
  /** "Try another way": the ways the page shown last offered (the asking one first); only one of these can be chosen. */
  ways?: Alternative[];
}

/** Keeps the progress under a new id (or `id`), the page's key to it. */
export async function keepProgress(ctx: BrokerStore, progress: BrokerProgress, id: string = random()): Promise<string> {
  await ctx.hostStore.set(`broker-progress:${id}`, JSON.stringify(progress), LIFETIME_MS);
  return id;
}

/** The progress of this auth session's brokered sign-in under `id`, or null. */
export async function openProgress(ctx: BrokerStore, id: unknown, auth: AuthSession): Promise<BrokerProgress | null> {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{32}$/.test(id)) return null;
  const stored = await ctx.hostStore.get(`broker-progress:${id}`);
  if (!stored) return null;
  const progress = JSON.parse(stored) as BrokerProgress;
  return progress.auth === authBindingOf(auth) ? progress : null;
}

export const dropProgress = (ctx: BrokerStore, id: string) => ctx.hostStore.delete(`broker-progress:${id}`);

/** The progress under `id` whoever asks (the e-mailed link's handler checks the browser itself), or null. */
export async function progressByKey(ctx: BrokerStore, id: unknown): Promise<BrokerProgress | null> {
  if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{32}$/.test(id)) return null;
  const stored = await ctx.hostStore.get(`broker-progress:${id}`);
  return stored ? (JSON.parse(stored) as BrokerProgress) : null;
}

/**
 * idp-email-verification's proof, kept apart from the progress (a page of the sign-in saving its progress meanwhile
 * cannot undo it): the owner of the existing account followed the link for this sign-in's upstream account
 * (Keycloak's VERIFY_ACCOUNT_IDP_USERNAME note).
 */
export const markLinkConfirmed = (ctx: BrokerStore, id: string, upstreamId: string) => ctx.hostStore.set(`broker-link-confirmed:${id}`, upstreamId, LIFETIME_MS);

export const linkConfirmed = async (ctx: BrokerStore, id: string, upstreamId: string) => (await ctx.hostStore.get(`broker-link-confirmed:${id}`)) === upstreamId;

/**
 * The link followed in another browser: a proof for a later first login of the same upstream account to the same
 * user (Keycloak's `kc.brokering.user.verified.*` single-use object), taken once.
 */
const proofKey = (userId: string, alias: string, upstreamId: string) => `broker-link-verified:${userId}:${alias}:${createHash('sha256').update(upstreamId).digest('base64url')}`;

export const keepLinkProof = (ctx: BrokerStore, userId: string, alias: string, upstreamId: string, lifetimeMs: number) => ctx.hostStore.set(proofKey(userId, alias, upstreamId), '1', lifetimeMs);

export async function takeLinkProof(ctx: BrokerStore, userId: string, alias: string, upstreamId: string): Promise<boolean> {
  const key = proofKey(userId, alias, upstreamId);
  if ((await ctx.hostStore.get(key)) !== '1') return false;
  return ctx.hostStore.compareAndSet(key, '1', 'used', 60_000);
}

export const dropLinkProof = (ctx: BrokerStore, userId: string, alias: string, upstreamId: string) => ctx.hostStore.delete(proofKey(userId, alias, upstreamId));
