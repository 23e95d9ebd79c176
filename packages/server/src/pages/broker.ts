import { setPageClient } from './render.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  keepBrokerIdToken,
  keepLinkProof,
  answeredAsBadCredentials,
  authBindingOf,
  canLink,
  canSignIn,
  brokeredIdentityOf,
  currentSsoSession,
  completeBrokerLogin,
  dropProgress,
  keepProgress,
  linkedUser,
  linkConfirmed,
  linkFirstLogin,
  markLinkConfirmed,
  newUpstreamState,
  openProgress,
  postBrokerLoginFlowOf,
  progressByKey,
  refusedUser,
  rememberUpstream,
  runBrowserSignIn,
  runFirstBrokerLogin,
  runPostBrokerLogin,
  takeUpstream,
  updateLinkedUser,
  UpstreamError,
  upstreamAuthorizationRequest,
  upstreamUsername,
  type AuthSession,
  type BrokerProgress,
  type FormState,
} from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import type { EventError } from '../model/errors.js';
import type { IdentityProvider, Realm, User } from '../model/types.js';
import { IDP_LINK } from '../required-actions/index.js';
import { userSnapshot } from '../services/index.js';
import { identityProviderLinkMail, mailTranslator, sendInBackground } from './emails.js';
import { userLocaleHint } from './user-locale.js';
import { actionTokenUrl } from './verify-email.js';
import { accountLinkRoutes, idpLinkCallback, linkCallback } from './broker-account-link.js';
import { brokerLoginUrl, brokerPath, providerName } from './broker-links.js';
import { csrfRejected, loginContext } from './login-context.js';
import { webauthnChallengePage } from './webauthn-pages.js';
import { actionUrl, showPage } from './pages.js';
import { formValues } from './protection.js';
import { WAYS } from './another-way.js';
import { aiaOutcome, nextRequiredAction } from './required-actions.js';
import type { ShowNewPassword } from './step-pages.js';

/**
 * Signing in through an identity provider (Keycloak's IdentityBrokerService, OpenID Connect providers): the login
 * page's buttons and the identity-provider-redirector send the browser to `/broker/{alias}/login`, which sends it
 * to the upstream with a single-use `state` bound to this browser's auth session; the upstream sends it back to
 * `/broker/{alias}/endpoint`, where the code is exchanged and the ID token checked (authentication/brokering/). A
 * known link signs its user in; a first login runs the provider's first broker login flow, whose pages post to
 * `login-actions/first-broker-login`. An upstream error, a cancel or a refused answer is a page here (or the login
 * page again), never a 5xx.
 */

type AliasRequest = FastifyRequest<{ Params: { realm: string; alias: string }; Querystring: Record<string, unknown> }>;

/**
 * The authorization request's first page: the browser flow's walk (identity-provider-redirector may send the browser
 * to a provider: kc_idp_hint or its defaultProvider), else the login page.
 */
export async function firstPage(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession): Promise<FastifyReply> {
  const walk = await runBrowserSignIn(ctx, realm, auth.clientId, requestInfo(request), null, null, undefined, { idpHint: auth.idpHint });
  if (walk.status === 'challenge' && typeof walk.challenge === 'object') {
    return reply.code(302).header('location', brokerLoginUrl(realm, auth, walk.challenge.identityProvider)).header('cache-control', 'no-store').send();
  }
  // A flow that starts with a passkey (webauthn-authenticator-passwordless before any username step): its page.
  if (walk.status === 'challenge' && (walk.challenge === 'webauthn-passwordless' || walk.challenge === 'webauthn')) return webauthnChallengePage(ctx, request, reply, realm, auth, { ...walk, challenge: walk.challenge });
  return showPage.login(ctx, request, reply, realm, auth, {});
}

/** Follows idp-email-verification's e-mailed link (`confirmed`: the other browser's "link the accounts" was posted). */
export type FollowLinkMail = (request: FastifyRequest, reply: FastifyReply, realm: Realm, token: string, confirmed: boolean) => Promise<FastifyReply>;

export function brokerRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): FollowLinkMail {
  accountLinkRoutes(app, ctx);
  const redirectUri = (request: FastifyRequest, realm: Realm, alias: string) => `${baseUrl(request, ctx.config.hostname)}${brokerPath(realm, alias, 'endpoint')}`;
  const query = (request: AliasRequest, name: string) => {
    const value = request.query?.[name];
    return typeof value === 'string' ? value.slice(0, 4096) : undefined;
  };
  // Through the configuration cache: the callback reads it at every brokered sign-in.
  const loadProvider = async (realm: Realm, alias: string) => (alias.length <= 255 ? ((await ctx.storage.federation.cachedProviders(realm.id)).find((p) => p.alias === alias) ?? null) : null);
  const loginPage = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState) => showPage.login(ctx, request, reply, realm, auth, state);
  const brokerError = (request: FastifyRequest, realm: Realm, auth: AuthSession | null, provider: IdentityProvider | null, error: EventError, extra: Record<string, string> = {}) =>
    ctx.events.user(realm, {
      type: 'IDENTITY_PROVIDER_LOGIN_ERROR',
      clientId: auth?.clientId ?? null,
      error,
      details: { ...(provider ? { identity_provider: provider.alias } : {}), ...extra },
      request: requestInfo(request),
    });

  // The login page's button: off to the upstream, with state, nonce and (pkceEnabled) PKCE.
  app.get('/realms/:realm/broker/:alias/login', async (request: AliasRequest, reply) => {
    const c = await loginContext(ctx, request, reply);
    if (!('realm' in c)) return c;
    const { realm, auth } = c;
    const rejected = csrfRejected(ctx, reply, realm, auth, { session_code: query(request, 'session_code') ?? '' });
    if (rejected) return rejected;
    const provider = await loadProvider(realm, request.params.alias);
    if (!provider || !canSignIn(provider)) {
      await brokerError(request, realm, auth, provider, 'identity_provider_not_found', { identity_provider: request.params.alias.slice(0, 255) });
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text: 'Could not find an identity provider to sign in with.' }, status: 400 });
    }
    const state = newUpstreamState();
    let upstream;
    try {
      upstream = upstreamAuthorizationRequest(ctx.config, provider, redirectUri(request, realm, provider.alias), state, { prompt: undefined });
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      await brokerError(request, realm, auth, provider, error.error, { reason: error.message });
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text: `Sign-in with ${providerName(provider)} is not set up correctly. Please contact your administrator.` }, status: 400 });
    }
    await rememberUpstream(ctx, state, { alias: provider.alias, auth: authBindingOf(auth), clientId: auth.clientId, nonce: upstream.nonce, codeVerifier: upstream.codeVerifier });
    return reply.code(302).header('location', upstream.url).header('cache-control', 'no-store').send();
  });

  // The upstream's answer.
  app.get('/realms/:realm/broker/:alias/endpoint', async (request: AliasRequest, reply) => {
    const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
    const provider = await loadProvider(realm, request.params.alias);
    const auth = await ctx.authSessions.current(request, realm);
    if (auth) setPageClient(request, auth.clientId);
    const state = query(request, 'state') ?? '';
    const sso = await currentSsoSession(ctx, request, realm);
    const pending = provider && canLink(provider) ? await takeUpstream(ctx, state, auth, provider.alias, sso?.session.id ?? null) : 'unknown';
    const info = requestInfo(request);
    // Client-initiated account linking: the signed-in user's (takeUpstream checked the SSO session).
    if (typeof pending !== 'string' && pending.link && provider && sso) return linkCallback(ctx, request, reply, realm, provider, { ...pending, link: pending.link }, sso.user, query(request, 'code'), query(request, 'error'));
    // Keycloak 26's idp_link action: this auth session's user (takeUpstream checked the auth session), then the
    // action's outcome and what follows it (the remaining actions, the application).
    if (typeof pending !== 'string' && pending.aiaLink && provider && auth) {
      return idpLinkCallback(ctx, request, reply, realm, auth, provider, { ...pending, aiaLink: pending.aiaLink }, query(request, 'code'), query(request, 'error'), async (user, status) =>
        finish(request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, IDP_LINK, status), user),
      );
    }
    if (typeof pending === 'string' || pending.link || pending.aiaLink || !provider || !canSignIn(provider) || !auth) {
      // Someone else's state (swapped), a used one (replayed), an expired sign-in: nothing is exchanged.
      await brokerError(request, realm, auth, provider, 'invalid_code', { reason: `state ${pending === 'unknown' ? 'unknown or already used' : pending === 'other_session' ? 'of another sign-in' : 'of another provider'}` });
      return showPage.error(ctx, reply, realm, 'This sign-in is no longer valid. Please start again from the application.', 400);
    }
    const upstreamError = query(request, 'error');
    if (upstreamError !== undefined) {
      const cancelled = upstreamError === 'access_denied';
      await brokerError(request, realm, auth, provider, cancelled ? 'rejected_by_user' : 'identity_provider_error', { reason: upstreamError.slice(0, 64) });
      const text = cancelled ? `Sign-in with ${providerName(provider)} was cancelled.` : `Sign-in with ${providerName(provider)} failed. Please try again or sign in another way.`;
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text }, status: 400 });
    }
    const code = query(request, 'code');
    if (!code) {
      await brokerError(request, realm, auth, provider, 'identity_provider_error', { reason: 'no code' });
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text: `Sign-in with ${providerName(provider)} failed. Please try again or sign in another way.` }, status: 400 });
    }
    let identity;
    try {
      identity = await brokeredIdentityOf(ctx, realm, provider, await completeBrokerLogin(ctx.outbound, ctx.config, provider, code, redirectUri(request, realm, provider.alias), pending, info.ipAddress ?? null));
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error;
      ctx.logger.warn({ realm: realm.name, provider: provider.alias, reason: error.message }, 'identity provider sign-in refused');
      await brokerError(request, realm, auth, provider, error.error, { reason: error.message.slice(0, 200) });
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text: `Sign-in with ${providerName(provider)} failed. Please try again or sign in another way.` }, status: 400 });
    }
    const details = { identity_provider: provider.alias, identity_provider_identity: upstreamUsername(identity) };
    const link = await linkedUser(ctx, realm, provider, identity);
    if (link) {
      const linked = link.user;
      if (!linked.enabled) {
        await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_LOGIN_ERROR', clientId: auth.clientId, userId: linked.id, error: 'user_disabled', details, request: info });
        return loginPage(request, reply, realm, auth, { message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
      }
      const user = await updateLinkedUser(ctx, realm, provider, identity, link);
      await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_LOGIN', clientId: auth.clientId, userId: user.id, details: { ...details, username: user.username }, request: info });
      return afterUpstream(request, reply, realm, auth, provider, identity, user);
    }
    if (provider.rest.linkOnly === true) {
      await brokerError(request, realm, auth, provider, 'identity_provider_error', { reason: 'link only' });
      return loginPage(request, reply, realm, auth, { message: { type: 'error', text: `${providerName(provider)} can only be linked to an account you are signed in to.` }, status: 400 });
    }
    await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_FIRST_LOGIN', clientId: auth.clientId, userId: null, details, request: info });
    const progress: BrokerProgress = { alias: provider.alias, auth: authBindingOf(auth), identity, done: {}, userId: null, existingUserId: null, newUser: false, requiredActions: [], reviewed: false };
    return runAndAnswer(request, reply, realm, auth, provider, progress, await keepProgress(ctx, progress), null);
  });

  // An answer by form_post (Apple's with any scope): the upstream's page posts it from its own site, and a cross-site
  // POST carries no SameSite=Lax cookie, so it is sent on as a GET of the same endpoint (a top-level navigation, which
  // carries them), where the auth session and the state are checked as for any answer. Nothing is done here.
  app.post('/realms/:realm/broker/:alias/endpoint', async (request: FastifyRequest<{ Params: { realm: string; alias: string } }>, reply) => {
    const form = formValues(request.body, []);
    const answer = new URLSearchParams();
    for (const name of ['code', 'state', 'error', 'error_description']) if (form[name]) answer.set(name, form[name].slice(0, 4096));
    const path = `/realms/${encodeURIComponent(request.params.realm.slice(0, 255))}/broker/${encodeURIComponent(request.params.alias.slice(0, 255))}/endpoint`;
    return reply.code(303).header('location', `${path}?${answer}`).header('cache-control', 'no-store').send();
  });

  // The first broker login flow's pages.
  app.post('/realms/:realm/login-actions/first-broker-login', async (request: FastifyRequest<{ Params: { realm: string } }>, reply) => {
    const c = await loginContext(ctx, request, reply);
    if (!('realm' in c)) return c;
    const { realm, auth } = c;
    const form = formValues(request.body, ['key', 'session_code', 'username', 'email', 'firstName', 'lastName', 'submitAction', 'password', 'otp', 'emailLink', 'tryAnotherWay', 'authenticationExecution']);
    const rejected = csrfRejected(ctx, reply, realm, auth, form);
    if (rejected) return rejected;
    const progress = await openProgress(ctx, form.key, auth);
    const provider = progress ? await loadProvider(realm, progress.alias) : null;
    // A post broker login flow's key opens nothing here: its pages post to post-broker-login, and only its flow ends it.
    if (!progress || progress.phase === 'post' || !provider || !canSignIn(provider)) return expiredPage(request, reply, realm, auth);
    // "Try another way" (Keycloak's select-authenticator inside the first broker login): the ways the last page
    // offered, listed; the one chosen goes to the flow runner, which asks for it. Only a way offered can be chosen.
    const ways = progress.ways ?? [];
    if (ways.length > 1 && (form.tryAnotherWay === 'on' || form.authenticationExecution)) {
      const chosen = ways.find((way) => way.execution === form.authenticationExecution);
      if (chosen) return runAndAnswer(request, reply, realm, auth, provider, progress, form.key, null, chosen.execution);
      const listed = ways.map((way) => ({ execution: way.execution, ...(WAYS[way.authenticator] ?? { name: way.authenticator, help: '' }) }));
      return ctx.pages.send(reply, realm, 'select-authenticator', { action: actionUrl(realm, 'first-broker-login'), csrf: auth.csrf, key: form.key, ways: listed }, form.authenticationExecution ? 400 : 200);
    }
    const raw = (request.body ?? {}) as Record<string, unknown>;
    // Only the fields this page sent reach the steps (a step whose field is absent asks for its page).
    const submitted = Object.fromEntries(['username', 'email', 'firstName', 'lastName', 'submitAction', 'password', 'otp', 'emailLink'].filter((name) => typeof raw[name] === 'string').map((name) => [name, form[name]]));
    return runAndAnswer(request, reply, realm, auth, provider, progress, form.key, submitted);
  });

  /** The flow from the top with this page's fields; its answer: a page, an error, or the signed-in user. */
  async function runAndAnswer(
    request: FastifyRequest,
    reply: FastifyReply,
    realm: Realm,
    auth: AuthSession,
    provider: IdentityProvider,
    progress: BrokerProgress,
    key: string,
    submitted: Record<string, string> | null,
    selected?: string,
  ): Promise<FastifyReply> {
    const info = requestInfo(request);
    const mailLink = (user: User, token: string, lifetimeSeconds: number) =>
      sendInBackground(ctx, realm, mailTranslator(ctx, realm, user, request).then((t) => identityProviderLinkMail(t, realm, user, providerName(provider), upstreamUsername(progress.identity), actionTokenUrl(request, ctx, realm, token), lifetimeSeconds)));
    const run = await runFirstBrokerLogin(ctx, realm, provider, auth.clientId, info, progress, submitted, { key, mailLink }, selected);
    if (!run) {
      await brokerError(request, realm, auth, provider, 'identity_provider_error', { reason: 'no first broker login flow' });
      return showPage.error(ctx, reply, realm, 'Cannot sign in: the first broker login flow of this identity provider does not exist.', 400);
    }
    const action = actionUrl(realm, 'first-broker-login');
    const page = { action, csrf: auth.csrf, key, providerName: providerName(provider) };
    switch (run.status) {
      case 'success': {
        await dropProgress(ctx, key);
        for (const action of run.requiredActions) await ctx.storage.credentials.addRequiredAction(run.user.id, action);
        const refused = await refusedUser(ctx, realm, run.user, run.env);
        if (refused) return loginPage(request, reply, realm, auth, { message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
        const user = await linkFirstLogin(ctx, realm, provider, progress.identity, run.user, { clientId: auth.clientId, request: info });
        if (!user) {
          await brokerError(request, realm, auth, provider, 'identity_provider_error', { reason: 'federated identity already linked' });
          return loginPage(request, reply, realm, auth, { message: { type: 'error', text: `This account is already linked to another ${providerName(provider)} account, or that account to another user.` }, status: 409 });
        }
        return afterUpstream(request, reply, realm, auth, provider, progress.identity, user);
      }
      case 'challenge':
        progress.ways = run.alternatives;
        await keepProgress(ctx, progress, key);
        return challengePage(reply, realm, provider, progress, run.challenge, page, {}, 200);
      case 'failure': {
        const { failure } = run;
        const status = failure.kind === 'profile' ? 400 : 401;
        if (failure.kind === 'profile') return challengePage(reply, realm, provider, progress, 'review-profile', { ...page, values: { ...profileOf(progress), ...formValues(request.body, ['username', 'email', 'firstName', 'lastName']) } }, failure.errors, status);
        if (failure.kind === 'password' && !answeredAsBadCredentials(failure.result) && failure.result.error === 'ip_temporarily_blocked') {
          reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
          return challengePage(reply, realm, provider, progress, 'reauth-password', page, { password: 'Too many failed sign-ins from your network. Please try again later.' }, 429);
        }
        if (failure.kind === 'otp') return challengePage(reply, realm, provider, progress, 'otp', page, { otp: 'Invalid authenticator code.' }, status);
        return challengePage(reply, realm, provider, progress, 'reauth-password', page, { password: 'Invalid username or password.' }, status);
      }
      case 'incomplete':
        await brokerError(request, realm, auth, provider, 'invalid_user_credentials', { reason: run.reason });
        return showPage.error(ctx, reply, realm, 'Cannot sign in: this sign-in cannot be completed.', 400, { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' });
    }
  }

  // The post broker login flow's pages.
  app.post('/realms/:realm/login-actions/post-broker-login', async (request: FastifyRequest<{ Params: { realm: string } }>, reply) => {
    const c = await loginContext(ctx, request, reply);
    if (!('realm' in c)) return c;
    const { realm, auth } = c;
    const form = formValues(request.body, ['key', 'session_code', 'password', 'otp']);
    const rejected = csrfRejected(ctx, reply, realm, auth, form);
    if (rejected) return rejected;
    const progress = await openProgress(ctx, form.key, auth);
    const provider = progress ? await loadProvider(realm, progress.alias) : null;
    const user = progress?.phase === 'post' && progress.userId ? await ctx.storage.users.byId(realm.id, progress.userId) : null;
    if (!progress || !user || !provider || !canSignIn(provider)) return expiredPage(request, reply, realm, auth);
    const raw = (request.body ?? {}) as Record<string, unknown>;
    const submitted = Object.fromEntries(['password', 'otp'].filter((name) => typeof raw[name] === 'string').map((name) => [name, form[name]]));
    return runPostAndAnswer(request, reply, realm, auth, provider, user, progress, form.key, submitted);
  });

  const expiredPage = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) =>
    loginPage(request, reply, realm, auth, { message: { type: 'error', text: 'This page has expired. Please sign in again.' }, status: 400 });

  /**
   * The upstream signed the user in and the local user is known (linked, or linked just now): the provider's post
   * broker login flow when it names one (Keycloak's finishOrRedirectToPostBrokerLogin), else the required actions
   * and the application. No session exists before that flow has succeeded.
   */
  async function afterUpstream(request: FastifyRequest, reply: FastifyReply, realm: Realm, signingIn: AuthSession, provider: IdentityProvider, identity: BrokerProgress['identity'], user: User): Promise<FastifyReply> {
    // The SSO session will record the upstream session and user (Keycloak's brokerSessionId / brokerUserId): the
    // ID token's `sid`, else the token response's `session_state`.
    const sid = typeof identity.idToken.sid === 'string' ? identity.idToken.sid : typeof identity.tokenResponse.session_state === 'string' ? identity.tokenResponse.session_state : null;
    const idTokenRef = await keepBrokerIdToken(ctx, provider, identity.tokenResponse.id_token);
    const broker = { sessionId: sid ? `${provider.alias}.${sid.slice(0, 255)}` : null, userId: `${provider.alias}.${identity.id}`, ...(idTokenRef ? { idTokenRef } : {}) };
    const auth = await ctx.authSessions.save(reply, request, realm, { ...signingIn, broker });
    if (!postBrokerLoginFlowOf(provider)) return finish(request, reply, realm, auth, user);
    const progress: BrokerProgress = { phase: 'post', alias: provider.alias, auth: authBindingOf(auth), identity, done: {}, userId: user.id, existingUserId: null, newUser: false, requiredActions: [], reviewed: true };
    return runPostAndAnswer(request, reply, realm, auth, provider, user, progress, await keepProgress(ctx, progress), null);
  }

  /** The post broker login flow from the top with this page's fields; its answer: a page, an error, or the application. */
  async function runPostAndAnswer(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, provider: IdentityProvider, user: User, progress: BrokerProgress, key: string, submitted: Record<string, string> | null): Promise<FastifyReply> {
    const run = await runPostBrokerLogin(ctx, realm, provider, user, auth.clientId, requestInfo(request), progress, submitted);
    if (!run) {
      await dropProgress(ctx, key);
      await brokerError(request, realm, auth, provider, 'identity_provider_error', { reason: 'no post broker login flow' });
      return showPage.error(ctx, reply, realm, 'Cannot sign in: the post broker login flow of this identity provider does not exist.', 400);
    }
    const page = { action: actionUrl(realm, 'post-broker-login'), csrf: auth.csrf, key, providerName: providerName(provider) };
    const reauth = { ...page, username: user.username, hint: `Sign in as ${user.username} to finish signing in with ${providerName(provider)}.` };
    switch (run.status) {
      case 'success': {
        await dropProgress(ctx, key);
        // The flow's user is the brokered one, never another (a step that names a user names this one).
        if (run.user.id !== user.id) {
          await brokerError(request, realm, auth, provider, 'invalid_user_credentials', { reason: 'post broker login flow named another user' });
          return showPage.error(ctx, reply, realm, 'Cannot sign in: this sign-in cannot be completed.', 400, { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' });
        }
        for (const action of run.requiredActions) await ctx.storage.credentials.addRequiredAction(user.id, action);
        const current = (await ctx.storage.users.byId(realm.id, user.id)) ?? user;
        if (await refusedUser(ctx, realm, current, run.env)) return loginPage(request, reply, realm, auth, { message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
        return finish(request, reply, realm, auth, current);
      }
      case 'challenge':
        await keepProgress(ctx, progress, key);
        if (run.challenge === 'otp') return ctx.pages.send(reply, realm, 'login-otp', { ...page, errors: {} }, 200);
        if (run.challenge === 'password') return ctx.pages.send(reply, realm, 'idp-reauth', { ...reauth, errors: {} }, 200);
        break;
      case 'failure': {
        const { failure } = run;
        if (failure.kind === 'otp') return ctx.pages.send(reply, realm, 'login-otp', { ...page, errors: { otp: 'Invalid authenticator code.' } }, 401);
        if (failure.kind === 'password') {
          if (!answeredAsBadCredentials(failure.result) && failure.result.error === 'ip_temporarily_blocked') {
            reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
            return ctx.pages.send(reply, realm, 'idp-reauth', { ...reauth, errors: { password: 'Too many failed sign-ins from your network. Please try again later.' } }, 429);
          }
          return ctx.pages.send(reply, realm, 'idp-reauth', { ...reauth, errors: { password: 'Invalid username or password.' } }, 401);
        }
        break;
      }
      case 'incomplete':
        break;
    }
    // A step this server cannot run for it, a page it has not, a flow that does not succeed: refused, never passed.
    await dropProgress(ctx, key);
    await brokerError(request, realm, auth, provider, 'invalid_user_credentials', { reason: `post broker login flow: ${run.status === 'incomplete' ? run.reason : run.status}` });
    return showPage.error(ctx, reply, realm, 'Cannot sign in: this sign-in cannot be completed.', 400, { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' });
  }

  const profileOf = (progress: BrokerProgress) => ({
    username: progress.identity.username,
    email: progress.identity.email ?? '',
    firstName: progress.identity.firstName ?? '',
    lastName: progress.identity.lastName ?? '',
  });

  async function challengePage(
    reply: FastifyReply,
    realm: Realm,
    provider: IdentityProvider,
    progress: BrokerProgress,
    challenge: string,
    asked: { action: string; csrf: string; key: string; providerName: string; values?: Record<string, string> },
    errors: Record<string, string>,
    status: number,
  ): Promise<FastifyReply> {
    // The layout's "try another way" posts back here with the page's key (the ways are kept in the progress).
    const anotherWay = (progress.ways?.length ?? 0) > 1 ? { action: asked.action, csrf: asked.csrf, key: asked.key } : null;
    const page = { ...asked, anotherWay };
    switch (challenge) {
      case 'review-profile':
        return ctx.pages.send(reply, realm, 'idp-review-profile', { ...page, values: page.values ?? profileOf(progress), errors }, status);
      case 'confirm-link': {
        const existing = progress.existingUserId ? await ctx.storage.users.byId(realm.id, progress.existingUserId) : null;
        const sameEmail = Boolean(existing?.email && progress.identity.email && existing.email === progress.identity.email.toLowerCase());
        return ctx.pages.send(reply, realm, 'idp-confirm-link', { ...page, duplicateField: sameEmail ? 'e-mail' : 'username', errors }, status);
      }
      case 'email-link':
        return ctx.pages.send(reply, realm, 'login-idp-link-email', { ...page, identityUsername: upstreamUsername(progress.identity), errors }, status);
      case 'reauth-password': {
        const existing = progress.existingUserId ? await ctx.storage.users.byId(realm.id, progress.existingUserId) : null;
        return ctx.pages.send(reply, realm, 'idp-reauth', { ...page, username: existing?.username ?? '', errors }, status);
      }
      default:
        return ctx.pages.send(reply, realm, 'login-otp', { ...page, errors }, status);
    }
  }

  /**
   * idp-email-verification's link (Keycloak's IdpVerifyAccountLinkActionTokenHandler). Valid only for the sign-in it
   * was mailed for (its progress, upstream account, provider and existing user, whose address must still be the one
   * mailed), once, before it expires. In the browser of that sign-in it confirms the account and the sign-in goes on;
   * in another browser it asks first ("link the accounts", posted), then confirms and sends the user back to the first
   * browser (whose "continue" goes on), leaving a proof a new first login of the same upstream account takes once.
   */
  const followLinkMail: FollowLinkMail = async (request, reply, realm, token, confirmed) => {
    const info = requestInfo(request);
    const claims = await ctx.actionTokens.read(realm, token, 'idp-verify-account-via-email');
    const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
    if (user) userLocaleHint(request, user);
    const progress = claims ? await progressByKey(ctx, claims.bpk) : null;
    const provider = progress ? await loadProvider(realm, progress.alias) : null;
    const details = { identity_provider: claims?.idpa ?? '', identity_provider_identity: claims?.idpu ?? '', ...(user?.email ? { email: user.email } : {}) };
    const refused = async (error: EventError) => {
      await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_LINK_ACCOUNT_ERROR', clientId: claims?.azp ?? null, userId: user?.id ?? null, error, details, request: info });
      return showPage.error(ctx, reply, realm, 'This link has expired or has already been used. Please sign in again from the application.', 400);
    };
    if (!claims || !claims.bpk || !user || !user.enabled || user.email !== claims.email || !progress || progress.phase === 'post') return refused('invalid_token');
    if (!provider || !canSignIn(provider) || provider.alias !== claims.idpa || progress.identity.id !== claims.xid || progress.existingUserId !== user.id) return refused('invalid_token');
    const t = await ctx.pages.pageTranslator(reply, realm);
    if (await linkConfirmed(ctx, claims.bpk, progress.identity.id)) {
      await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_LINK_ACCOUNT_ERROR', clientId: claims.azp ?? null, userId: user.id, error: 'email_already_verified', details, request: info });
      return showPage.info(ctx, reply, realm, t.msg('emailVerifiedTitle'), t.msg('emailVerifiedAlreadyMessage'));
    }
    const auth = await ctx.authSessions.current(request, realm);
    if (auth) setPageClient(request, auth.clientId);
    const sameBrowser = auth !== null && authBindingOf(auth) === progress.auth;
    if (!sameBrowser && !confirmed) {
      const page = { action: actionUrl(realm, 'action-token'), key: token, providerName: providerName(provider), identityUsername: upstreamUsername(progress.identity) };
      return ctx.pages.send(reply, realm, 'login-idp-link-confirm', page, 200);
    }
    if (!(await ctx.actionTokens.consume(claims))) return refused('invalid_token');
    await markLinkConfirmed(ctx, claims.bpk, progress.identity.id);
    // The link came to this address: following it confirms it, as Keycloak's handler does.
    const verified = user.emailVerified ? user : { ...user, emailVerified: true };
    if (!user.emailVerified) await ctx.storage.users.update(verified);
    await ctx.events.user(realm, { type: 'IDENTITY_PROVIDER_LINK_ACCOUNT', clientId: claims.azp ?? null, userId: user.id, details, request: info, user: () => userSnapshot(ctx.storage, verified) });
    if (sameBrowser) return runAndAnswer(request, reply, realm, auth, provider, progress, claims.bpk, null);
    // The proof lives as long as the link would have (Keycloak keeps it until the token's expiry).
    await keepLinkProof(ctx, user.id, provider.alias, progress.identity.id, Math.max(1, claims.exp - Math.floor(Date.now() / 1000)) * 1000);
    return showPage.info(ctx, reply, realm, t.msg('emailVerifiedTitle'), t.msg('identityProviderLinkSuccess'));
  };

  /** The signed-in user's required actions, then the application (nextRequiredAction). */
  function finish(request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, user: Parameters<typeof nextRequiredAction>[5]) {
    return nextRequiredAction(ctx, request, reply, realm, auth, user, newPasswordPage);
  }

  return followLinkMail;
}
