import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  accountLinkHash,
  authBindingOf,
  brokeredIdentityOf,
  canLink,
  completeBrokerLogin,
  currentSsoSession,
  linkedUser,
  linkFirstLogin,
  newUpstreamState,
  rememberUpstream,
  updateLinkedUser,
  UpstreamError,
  upstreamAuthorizationRequest,
  upstreamUsername,
  type AuthSession,
  type PendingUpstream,
} from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { secretsEqual } from '../credentials/index.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { ACCOUNT } from '../model/defaults.js';
import type { EventError } from '../model/errors.js';
import { redirectUriAllowed } from '../model/redirect-uri.js';
import type { IdentityProvider, Realm, User } from '../model/types.js';
import { IDP_LINK } from '../required-actions/index.js';
import { effectiveRoles } from '../services/index.js';
import { brokerPath, providerName } from './broker-links.js';
import { showPage } from './pages.js';

/**
 * Client-initiated account linking (Keycloak's IdentityBrokerService.clientInitiatedAccountLinking):
 * `GET /realms/{r}/broker/{alias}/link?client_id&redirect_uri&nonce&hash` links an upstream account to the user
 * signed in in this browser. The hash (accountLinkHash) proves the application holds the SSO session's id; the
 * session must have signed in to that client, whose token must carry the account client's manage-account(-links).
 * A bad client or redirect URI is a page (nothing is sent to an unchecked URI); after that, refusals go back to
 * the redirect URI as `link_error` with the `nonce`, as Keycloak's. On the callback (linkCallback) the upstream
 * account is linked to that user, never to another: an account already linked to someone else is refused.
 */

type LinkRequest = FastifyRequest<{ Params: { realm: string; alias: string }; Querystring: Record<string, unknown> }>;

export const brokerEndpointUri = (ctx: PagesContext, request: FastifyRequest, realm: Realm, alias: string) => `${baseUrl(request, ctx.config.hostname)}${brokerPath(realm, alias, 'endpoint')}`;

/** Whether the user holds the account client's `role` within `client`'s scope (without a client: at all). */
export async function holdsAccountRole(ctx: PagesContext, realm: Realm, user: User, roles: string[], client?: Parameters<typeof effectiveRoles>[3]) {
  const held = (await effectiveRoles(ctx.storage, realm.id, user.id, client)).clientRoles[ACCOUNT] ?? [];
  return roles.some((role) => held.includes(role));
}

export function accountLinkRoutes(app: FastifyInstance, ctx: PagesContext): void {
  app.get('/realms/:realm/broker/:alias/link', async (request: LinkRequest, reply) => {
    const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
    const query = (name: string) => {
      const value = request.query?.[name];
      return typeof value === 'string' && value.length <= 4096 ? value : undefined;
    };
    const alias = request.params.alias.slice(0, 255);
    const info = requestInfo(request);
    const clientId = query('client_id') ?? '';
    const event = (error: EventError | null, extra: Record<string, string> = {}, userId: string | null = null, sessionId: string | null = null) =>
      ctx.events.user(realm, { type: error ? 'CLIENT_INITIATED_ACCOUNT_LINKING_ERROR' : 'CLIENT_INITIATED_ACCOUNT_LINKING', clientId: clientId.slice(0, 255) || null, userId, sessionId, ...(error ? { error } : {}), details: { identity_provider: alias, ...extra }, request: info });
    const client = clientId ? await ctx.storage.clients.cachedByClientId(realm.id, clientId) : null;
    if (!client || !client.enabled) {
      await event('invalid_client');
      return showPage.error(ctx, reply, realm, 'Client not found.', 400);
    }
    const redirectUri = query('redirect_uri');
    if (!redirectUri || !redirectUriAllowed(client, redirectUri, baseUrl(request, ctx.config.hostname))) {
      await event('invalid_redirect_uri');
      return showPage.error(ctx, reply, realm, 'Invalid parameter: redirect_uri', 400);
    }
    const nonce = query('nonce');
    const hash = query('hash');
    if (!nonce || !hash) {
      await event('invalid_redirect_uri', { redirect_uri: redirectUri });
      return showPage.error(ctx, reply, realm, 'Invalid request', 400);
    }
    const back = (error: string) => {
      const url = new URL(redirectUri);
      url.searchParams.append('link_error', error);
      url.searchParams.append('nonce', nonce);
      return reply.code(302).header('location', url.href).header('cache-control', 'no-store').send();
    };
    const sso = await currentSsoSession(ctx, request, realm);
    if (!sso) {
      await event('not_logged_in', { redirect_uri: redirectUri });
      return back('not_logged_in');
    }
    const { session, user } = sso;
    // The hash names this session and this client, and the session signed in to the client.
    const expected = accountLinkHash(nonce, session.id, client.clientId, alias);
    if (!secretsEqual(hash, expected) || !(await ctx.storage.sessions.clientSession(session.id, client.id))) {
      await event('invalid_token', { redirect_uri: redirectUri }, user.id, session.id);
      return back('invalid_token');
    }
    if (client.clientId !== ACCOUNT && !(await holdsAccountRole(ctx, realm, user, ['manage-account', 'manage-account-links'], client))) {
      await event('not_allowed', { redirect_uri: redirectUri }, user.id, session.id);
      return back('not_allowed');
    }
    const provider = await ctx.storage.federation.providerByAlias(realm.id, alias);
    if (!provider || !canLink(provider)) {
      await event('identity_provider_not_found', { redirect_uri: redirectUri }, user.id, session.id);
      return back('unknown_identity_provider');
    }
    const state = newUpstreamState();
    let upstream;
    try {
      upstream = upstreamAuthorizationRequest(ctx.config, provider, brokerEndpointUri(ctx, request, realm, provider.alias), state, { prompt: undefined });
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      await event(error.error, { reason: error.message }, user.id, session.id);
      return showPage.error(ctx, reply, realm, `Linking ${providerName(provider)} is not set up correctly. Please contact your administrator.`, 400);
    }
    await rememberUpstream(ctx, state, {
      alias: provider.alias,
      auth: '',
      clientId: client.clientId,
      nonce: upstream.nonce,
      codeVerifier: upstream.codeVerifier,
      link: { sessionId: session.id, userId: user.id, redirectUri },
    });
    await event(null, { redirect_uri: redirectUri, username: user.username }, user.id, session.id);
    return reply.code(302).header('location', upstream.url).header('cache-control', 'no-store').send();
  });
}

/** Why linking an upstream account failed: the event's error and reason, and the page's text and status. */
interface LinkFailure {
  error: EventError;
  reason: string;
  text: string;
  status: number;
  extra?: Record<string, string>;
  cancelled?: boolean;
}

/**
 * The upstream's answer to a link request, linked to `user` (Keycloak's performAccountLinking), written once for
 * client-initiated linking and the idp_link action: the code exchanged and the identity checked, the account linked
 * to this user and never to another (an account already linked to someone else is refused, and so is a second
 * account of the provider for this user). The user must hold one of `roles` of the account client (within
 * `client`'s scope when given). Null on success (FEDERATED_IDENTITY_LINK recorded by linkFirstLogin).
 */
async function linkUpstreamAccount(ctx: PagesContext, request: FastifyRequest, realm: Realm, provider: IdentityProvider, pending: PendingUpstream, user: User, code: string | undefined, upstreamError: string | undefined, roles: { names: string[]; client?: Parameters<typeof effectiveRoles>[3] }): Promise<LinkFailure | null> {
  const info = requestInfo(request);
  if (upstreamError !== undefined || !code) {
    const cancelled = upstreamError === 'access_denied';
    return { error: cancelled ? 'rejected_by_user' : 'identity_provider_error', reason: (upstreamError ?? 'no code').slice(0, 64), text: cancelled ? `Linking ${providerName(provider)} was cancelled.` : `Linking ${providerName(provider)} failed.`, status: 400, cancelled };
  }
  if (!(await holdsAccountRole(ctx, realm, user, roles.names, roles.client))) return { error: 'not_allowed', reason: `no ${roles.names.join(' or ')}`, text: 'You do not have permission to link this account.', status: 403 };
  let identity;
  try {
    identity = await brokeredIdentityOf(ctx, realm, provider, await completeBrokerLogin(ctx.outbound, ctx.config, provider, code, brokerEndpointUri(ctx, request, realm, provider.alias), pending, info.ipAddress ?? null));
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    ctx.logger.warn({ realm: realm.name, provider: provider.alias, reason: error.message }, 'identity provider link refused');
    return { error: error.error, reason: error.message.slice(0, 200), text: `Linking ${providerName(provider)} failed.`, status: 400 };
  }
  const extra = { identity_provider_identity: upstreamUsername(identity) };
  const owner = await linkedUser(ctx, realm, provider, identity);
  if (owner && owner.user.id !== user.id) {
    return { error: 'federated_identity_account_exists', reason: 'identity provider already linked', text: `Federated identity returned by ${providerName(provider)} is already linked to another user.`, status: 400, extra };
  }
  if (owner) await updateLinkedUser(ctx, realm, provider, identity, owner);
  else if (!(await linkFirstLogin(ctx, realm, provider, identity, user, { clientId: pending.clientId, request: info }))) {
    return { error: 'federated_identity_account_exists', reason: 'user already linked to this provider', text: `Your account is already linked to another ${providerName(provider)} account.`, status: 400, extra };
  }
  return null;
}

const linkFailed = (ctx: PagesContext, request: FastifyRequest, realm: Realm, provider: IdentityProvider, clientId: string, user: User, sessionId: string | null, failure: Pick<LinkFailure, 'error' | 'reason' | 'extra'>) =>
  ctx.events.user(realm, { type: 'FEDERATED_IDENTITY_LINK_ERROR', clientId, userId: user.id, sessionId, error: failure.error, details: { identity_provider: provider.alias, reason: failure.reason, ...failure.extra }, request: requestInfo(request) });

/**
 * The upstream's answer to a client-initiated link request (the state bound to this browser's SSO session, checked
 * by takeUpstream): the account linked to the signed-in user, then the application's redirect URI. As Keycloak,
 * the user must hold manage-account (whatever client asked).
 */
export async function linkCallback(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, provider: IdentityProvider, pending: PendingUpstream & { link: NonNullable<PendingUpstream['link']> }, user: User, code: string | undefined, upstreamError: string | undefined): Promise<FastifyReply> {
  const failure: LinkFailure | null =
    user.id !== pending.link.userId
      ? { error: 'invalid_code', reason: 'another user', text: 'This link request is no longer valid. Please start again from the application.', status: 400 }
      : await linkUpstreamAccount(ctx, request, realm, provider, pending, user, code, upstreamError, { names: ['manage-account'] });
  if (!failure) return reply.code(302).header('location', pending.link.redirectUri).header('cache-control', 'no-store').send();
  await linkFailed(ctx, request, realm, provider, pending.clientId, user, pending.link.sessionId, failure);
  return showPage.error(ctx, reply, realm, failure.text, failure.status);
}

/**
 * Keycloak 26's idp_link action (`kc_action=idp_link:{alias}`): why this user may not link that provider through
 * this application, or null. As Keycloak's IdpLinkAction: the provider must exist (and be one that links here), and
 * the user must hold the account client's manage-account, or manage-account-links, within the client's scope.
 */
export async function idpLinkRefusal(ctx: PagesContext, realm: Realm, auth: AuthSession, user: User): Promise<{ error: EventError; provider: IdentityProvider | null } | null> {
  const alias = auth.kcActionParameter;
  const provider = alias ? await ctx.storage.federation.providerByAlias(realm.id, alias) : null;
  if (!provider || !canLink(provider)) return { error: 'identity_provider_not_found', provider: null };
  const client = await ctx.storage.clients.cachedByClientId(realm.id, auth.clientId);
  if (!client || !(await holdsAccountRole(ctx, realm, user, ['manage-account', 'manage-account-links'], client))) return { error: 'not_allowed', provider };
  return null;
}

/** The idp_link action confirmed: off to the upstream, the state bound to this auth session and its user. */
export async function startIdpLink(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, user: User, provider: IdentityProvider): Promise<FastifyReply> {
  const state = newUpstreamState();
  let upstream;
  try {
    upstream = upstreamAuthorizationRequest(ctx.config, provider, brokerEndpointUri(ctx, request, realm, provider.alias), state, { prompt: undefined });
  } catch (error) {
    if (!(error instanceof UpstreamError)) throw error;
    await linkFailed(ctx, request, realm, provider, auth.clientId, user, null, { error: error.error, reason: error.message });
    return showPage.error(ctx, reply, realm, `Linking ${providerName(provider)} is not set up correctly. Please contact your administrator.`, 400);
  }
  await rememberUpstream(ctx, state, { alias: provider.alias, auth: authBindingOf(auth), clientId: auth.clientId, nonce: upstream.nonce, codeVerifier: upstream.codeVerifier, aiaLink: { userId: user.id } });
  return reply.code(302).header('location', upstream.url).header('cache-control', 'no-store').send();
}

/**
 * The upstream's answer to an idp_link action (the state bound to this auth session, checked by takeUpstream): the
 * account linked to the action's user, the roles checked again (they may have changed since the page). Success or
 * a cancel at the upstream go on with the action's outcome (`next`, Keycloak's context.success / cancel); any other
 * failure is an error page, as Keycloak's.
 */
export async function idpLinkCallback(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, provider: IdentityProvider, pending: PendingUpstream & { aiaLink: NonNullable<PendingUpstream['aiaLink']> }, code: string | undefined, upstreamError: string | undefined, next: (user: User, status: 'success' | 'cancelled') => Promise<FastifyReply>): Promise<FastifyReply> {
  const user = await ctx.storage.users.byId(realm.id, pending.aiaLink.userId);
  if (!user || !user.enabled || auth.kcAction !== IDP_LINK || auth.kcActionParameter !== provider.alias || auth.kcActionStatus) {
    return showPage.error(ctx, reply, realm, 'This link request is no longer valid. Please start again from the application.', 400);
  }
  const client = await ctx.storage.clients.cachedByClientId(realm.id, auth.clientId);
  const failure = client
    ? await linkUpstreamAccount(ctx, request, realm, provider, pending, user, code, upstreamError, { names: ['manage-account', 'manage-account-links'], client })
    : { error: 'invalid_client' as const, reason: 'client gone', text: 'Client not found.', status: 400 };
  if (!failure) return next(user, 'success');
  await linkFailed(ctx, request, realm, provider, auth.clientId, user, null, failure);
  if ('cancelled' in failure && failure.cancelled) return next(user, 'cancelled');
  return showPage.error(ctx, reply, realm, failure.text, failure.status);
}
