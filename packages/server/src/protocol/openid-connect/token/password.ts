import type { FastifyRequest } from 'fastify';
import { answeredAsBadCredentials, completeDirectLogin, refusedUser, runGrantSignIn, type SignInFailure } from '../../../authentication/index.js';
import { oauthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { checkedScope } from './scope.js';
import { formField, formFields } from '../client-auth.js';
import { offlineRequested, openOfflineSession } from '../offline.js';
import { dueRequiredActions } from '../../../services/index.js';

/** Resource-owner password grant (Keycloak's "direct access grants"). */
export async function passwordGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  if (!client.directAccessGrantsEnabled) {
    throw oauthError.unauthorized_client('Client not allowed for direct access grants');
  }
  const username = formField(request.body, 'username');
  const password = formField(request.body, 'password');
  if (!username || password === undefined) throw oauthError.invalid_request('Missing parameter: username or password');
  const info = requestInfo(request);
  const details = { auth_method: 'openid-connect', grant_type: 'password' };
  const scope = await checkedScope(ctx, client, formField(request.body, 'scope'), true, (reason) =>
    ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, error: 'invalid_request', details: { ...details, username, reason }, request: info }),
  );
  const signIn = await runGrantSignIn(ctx, realm, client.clientId, info, details, formFields(request.body));
  const refuse = (error: 'resolve_required_actions' | 'user_disabled' | 'user_temporarily_disabled' | 'invalid_user_credentials' | 'user_not_found', userId: string | null) =>
    ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, userId, error, details: { ...details, username }, request: info });
  if (signIn.status === 'failure') {
    const { failure } = signIn;
    if (failure.kind === 'protector') {
      await ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, error: failure.error, details: { ...details, reason: failure.reason, protector: failure.provider, username }, request: info });
    }
    throw grantRefusal(ctx, failure);
  }
  if (signIn.status !== 'success') {
    // The flow ended without a step's own answer (a user it needs no step to name, a credential the user has not
    // set up, a subflow whose steps cannot pass): Keycloak's AuthenticationFlowException, answered 400.
    await refuse(signIn.status === 'incomplete' && signIn.reason === 'unknown_user' ? 'user_not_found' : 'invalid_user_credentials', signIn.user?.id ?? null);
    throw oauthError.invalid_grant('Invalid user credentials');
  }
  const user = signIn.user;
  const refused = await refusedUser(ctx, realm, user, signIn.env);
  if (refused) {
    await refuse(refused, user.id);
    throw refused === 'user_disabled' ? oauthError.invalid_grant('Account disabled') : oauthError.invalid_grant('Invalid user credentials');
  }
  // Keycloak's answer while a required action (VERIFY_EMAIL, CONFIGURE_TOTP …) is due (services/required-actions.ts:
  // pending, or triggered by the account): the browser flow does it.
  if ((await dueRequiredActions(ctx.storage, realm, user, signIn.requiredActions)).length > 0) {
    await refuse('resolve_required_actions', user.id);
    throw oauthError.invalid_grant('Account is not fully set up');
  }
  // Keycloak refuses the grant for a client that must ask the user's consent: there is no page to ask it on.
  if (client.consentRequired) {
    await ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, userId: user.id, error: 'consent_denied', details: { ...details, username }, request: info });
    throw oauthError.invalid_client('Client requires user consent', { status: 400 });
  }
  const offline = await offlineRequested(ctx, realm, client, user, scope, () =>
    ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: client.clientId, userId: user.id, error: 'not_allowed', details: { ...details, username }, request: info }),
  );
  return completeDirectLogin(ctx, realm, client, user, { scope, details, request: info }, async (session) => {
    // With offline_access the tokens belong to an offline session beside the one the login opened.
    const held = offline ? await openOfflineSession(ctx, realm, client, user, scope, info.ipAddress) : session;
    return ctx.tokens.issue(
      { base: baseUrl(request, ctx.config.hostname), realm, client, user: user, sessionId: held.id, sessionStarted: held.started, scope, refreshTokenId: held.refreshTokenId, authTime: Math.floor(session.started / 1000), offline },
      true,
    );
  });
}

/** A step's refusal as Keycloak's direct grant answers it (the step recorded its event). */
function grantRefusal(ctx: ProtocolContext, failure: SignInFailure): Error {
  if (failure.kind === 'protector') {
    return failure.status === 503
      ? oauthError.invalid_grant('The server is busy, try again later', { status: 503, headers: { 'retry-after': String(failure.retryAfterSeconds ?? 5) } })
      : oauthError.invalid_grant('Proof of the client could not be verified');
  }
  // A locked-out user is told what a wrong password is told (Keycloak's answer), the same status included.
  if (failure.kind === 'otp' || failure.kind === 'webauthn' || failure.kind === 'recovery-code') {
    if (failure.error === 'ip_temporarily_blocked') return tooManyFromAddress(ctx);
    return oauthError.invalid_grant('Invalid user credentials');
  }
  const { result } = failure;
  if (answeredAsBadCredentials(result)) return oauthError.invalid_grant('Invalid user credentials');
  if (result.error === 'ip_temporarily_blocked') return tooManyFromAddress(ctx);
  if (result.error === 'user_disabled') return oauthError.invalid_grant('Account disabled');
  return oauthError.invalid_grant('Invalid user credentials');
}

const tooManyFromAddress = (ctx: ProtocolContext) =>
  oauthError.invalid_grant('Too many failed logins from this address, try again later', { status: 429, headers: { 'retry-after': String(ctx.config.bruteForceIpWindowSeconds) } });
