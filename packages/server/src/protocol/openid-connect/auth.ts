import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { baseUrl, requestInfo } from '../../http/index.js';
import { isAuthorizationError, OAuthError, type AuthorizationErrorCode } from '../../model/errors.js';
import { redirectUriAllowed } from '../../model/redirect-uri.js';
import { completeLogin, consentToAsk, currentSsoSession, runBrowserSignIn, type AuthRequest, type AuthSession } from '../../authentication/index.js';
import { redirectToClient } from './authorization-response.js';
import { issuerOf } from './tokens.js';
import { dropPushedRequest, parRequired, peekPushedRequest, takePushedRequest } from './par.js';
import { pkceChallengeProblem } from './pkce.js';
import { readRequestObject, requestObjectRequiredProblem } from './request-object.js';
import { normalizeScope, unknownScopes } from './mappers/index.js';
import { clientScopeSet, enforceClientPolicies, requiredActionMaxAuthAge } from '../../services/index.js';

const MAX_PARAM = 2048;

type Params = Record<string, unknown> | undefined;

const paramsOf = (request: FastifyRequest) => (request.method === 'POST' ? request.body : request.query) as Params;

function paramOf(params: Params, name: string): string | undefined {
  const value = params?.[name];
  return typeof value === 'string' && value.length <= MAX_PARAM ? value : undefined;
}

/**
 * The authorization endpoint (and Keycloak's `registrations` entry point). Problems with the client or the
 * redirect URI are shown on an error page, never sent to an unverified URI; the rest go back to the client.
 */
export function authorizationRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const handler = (entry: 'login' | 'registration') => async (request: FastifyRequest<{ Params: { realm: string } }>, reply: FastifyReply) => {
    const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return ctx.forms.error(reply, null, 'Realm does not exist.', 404);
    const clientId = paramOf(paramsOf(request), 'client_id');
    const client = clientId ? await ctx.storage.clients.cachedByClientId(realm.id, clientId) : null;
    if (!client || !client.enabled) return ctx.forms.requestError(reply, realm, 'Client not found.');
    // RFC 9126: with a request_uri the request is the one the client pushed (par.ts), and only that one; the query's
    // other parameters are not read. One of another client, unknown, spent or expired is refused here, as Keycloak.
    // Keycloak's PRE_AUTHORIZATION_REQUEST, before the request is read: a refusal is an error page (never a redirect to
    // a redirect_uri it found wanting), 400 with the executor's description.
    try {
      const query = (name: string) => paramOf(paramsOf(request), name);
      await enforceClientPolicies(ctx.storage, realm, {
        event: 'PRE_AUTHORIZATION_REQUEST',
        client,
        param: query,
        queryNames: Object.keys(paramsOf(request) ?? {}),
        pushedRequest: () => peekPushedRequest(ctx, realm, client, query('request_uri') ?? ''),
        dropPushedRequest: () => dropPushedRequest(ctx, realm, client, query('request_uri') ?? ''),
      });
    } catch (error) {
      if (error instanceof OAuthError) return ctx.forms.requestError(reply, realm, error.description);
      throw error;
    }
    const requestUri = paramOf(paramsOf(request), 'request_uri');
    // Keycloak's `request.object.required` (and never `request` with `request_uri`): an error page, as Keycloak's.
    const objectProblem = requestObjectRequiredProblem(client, paramsOf(request)?.request !== undefined, paramsOf(request)?.request_uri !== undefined);
    if (objectProblem) return ctx.forms.requestError(reply, realm, `Invalid request: ${objectProblem}`);
    let params = paramsOf(request);
    if (requestUri !== undefined) {
      const pushed = await takePushedRequest(ctx, realm, client, requestUri);
      if (!pushed) return ctx.forms.requestError(reply, realm, 'Invalid parameter: request_uri');
      params = pushed;
    }
    // A request object (JAR, `request`): its claims are the request's parameters, over the query's (request-object.ts).
    const requestObject = paramsOf(request)?.request;
    if (requestUri === undefined && requestObject !== undefined) {
      const read = typeof requestObject === 'string' ? await readRequestObject(ctx, request, realm, client, requestObject) : ({ ok: false, reason: 'given more than once' } as const);
      if (!read.ok) return ctx.forms.requestError(reply, realm, `Invalid parameter: request (${read.reason})`);
      const { request: _object, ...query } = params ?? {};
      params = { ...query, ...read.params };
    }
    const param = (name: string) => paramOf(params, name);
    const base = baseUrl(request, ctx.config.hostname);
    // Keycloak's invitation link (registrations?client_id=account&token=…) names no redirect URI: the client's base URL is taken.
    const invitationBase = entry === 'registration' && param('token') && client.baseUrl ? new URL(client.baseUrl, `${base}/`).toString() : undefined;
    const redirectUri = param('redirect_uri') ?? invitationBase;
    if (!redirectUri || !redirectUriAllowed(client, redirectUri, base)) {
      return ctx.forms.requestError(reply, realm, 'Invalid parameter: redirect_uri');
    }
    // Dropping an over-long state would send the client a response it cannot match: refuse the request here.
    const oversized = Object.entries(params ?? {}).find(([, value]) => typeof value === 'string' && value.length > MAX_PARAM);
    if (oversized) return ctx.forms.requestError(reply, realm, `Invalid parameter: ${oversized[0].slice(0, 40)} is too long.`);
    const responseMode = (param('response_mode') ?? 'query') as AuthSession['responseMode'];
    const state = param('state') ?? null;
    const fail = (error: AuthorizationErrorCode, description: string) =>
      redirectToClient(reply, redirectUri, ['query', 'fragment', 'form_post'].includes(responseMode) ? responseMode : 'query', {
        error,
        error_description: description,
        ...(state !== null ? { state } : {}),
        iss: issuerOf(base, realm.name),
      });
    if (!['query', 'fragment', 'form_post'].includes(responseMode)) return fail('invalid_request', 'Invalid parameter: response_mode');
    if (param('response_type') !== 'code') return fail('unsupported_response_type', 'Client is not allowed to initiate browser login with given response_type. Only code is supported.');
    if (parRequired(client) && requestUri === undefined) return fail('invalid_request', 'Pushed Authorization Request is only allowed.');
    if (!client.standardFlowEnabled) return fail('unauthorized_client', 'Client is not allowed to initiate browser login with given response_type. Standard flow is disabled for the client.');
    // An invitation's registration link (Keycloak's, without PKCE) is no application's request: its code gets a
    // challenge whose verifier nobody has, so it can never be redeemed; the user lands signed in at the base URL.
    const unredeemable = invitationBase !== undefined && param('code_challenge') === undefined;
    const challenge = unredeemable ? createHash('sha256').update(randomBytes(32)).digest('base64url') : param('code_challenge');
    const pkceProblem = pkceChallengeProblem(challenge, unredeemable ? 'S256' : param('code_challenge_method'), client.publicClient || client.attributes['pkce.code.challenge.method'] === 'S256');
    if (pkceProblem) return fail('invalid_request', pkceProblem);
    // Keycloak's client policies (AUTHORIZATION_REQUEST): a refusal goes back to the client as its executor says.
    try {
      await enforceClientPolicies(ctx.storage, realm, { event: 'AUTHORIZATION_REQUEST', client, param, scope: param('scope') });
    } catch (error) {
      if (error instanceof OAuthError && isAuthorizationError(error.error)) return fail(error.error, error.description);
      throw error;
    }
    // As Keycloak: a scope that is neither openid nor one of the client's client scopes is refused.
    const requestedScope = param('scope');
    if (unknownScopes(await clientScopeSet(ctx.storage, client), requestedScope).length) return fail('invalid_scope', `Invalid scopes: ${requestedScope}`);
    const prompt = param('prompt') ?? '';
    const auth: AuthRequest = {
      clientId: client.clientId,
      redirectUri,
      responseMode,
      // offline_access is asked for here; whether the user may have it is decided when the code is redeemed.
      scope: normalizeScope(requestedScope, true),
      state,
      nonce: param('nonce') ?? null,
      codeChallenge: challenge ?? null,
    };
    // RFC 9449 10: the code is bound to this DPoP key (from a pushed request: the key of the push's proof, par.ts).
    const dpopJkt = param('dpop_jkt');
    if (dpopJkt) auth.dpopJkt = dpopJkt;
    // Keycloak's application-initiated action: the user carries out this required action, then goes back to the
    // client with kc_action_status (pages/required-actions.ts). An action the realm does not have answers error there.
    // Keycloak 26: `action:parameter` (idp_link:{alias}) names the action and its parameter.
    const [kcAction, kcActionParameter] = splitKcAction(param('kc_action')?.slice(0, 255));
    if (kcAction) auth.kcAction = kcAction;
    if (kcAction && kcActionParameter) auth.kcActionParameter = kcActionParameter;
    const idpHint = param('kc_idp_hint')?.slice(0, 255);
    // Kept even when empty: as Keycloak's redirector, an empty hint asks for no provider, not the default one.
    if (idpHint !== undefined) auth.idpHint = idpHint;
    // Keycloak's registration link of an organization's invitation carries its token (checked by the registration page).
    const invitation = entry === 'registration' ? param('token') : undefined;
    if (invitation) auth.invitation = invitation;
    const uiLocales = param('ui_locales')?.slice(0, 255);
    if (uiLocales) auth.uiLocales = uiLocales;
    let sso = prompt.split(' ').includes('login') ? null : await currentSsoSession(ctx, request, realm);
    // A signed-in user whose sign-in is older than the action's max_auth_age signs in again first (Keycloak's
    // re-authentication for an AIA), so a session left open does not let anyone change the password.
    const maxAuthAge = sso && kcAction ? await requiredActionMaxAuthAge(ctx.storage, realm.id, kcAction) : null;
    if (sso && maxAuthAge !== null && Date.now() - sso.session.started > maxAuthAge * 1000) sso = null;
    // The SSO session counts only where the client's browser flow takes it (an enabled auth-cookie the walk
    // reaches, Keycloak's CookieAuthenticator).
    if (sso && (await runBrowserSignIn(ctx, realm, client.clientId, requestInfo(request), null, null, sso.user)).status !== 'success') sso = null;
    // A consentRequired client the signed-in user has not consented to (enough) asks first, on the sign-in's pages.
    const consent = sso ? await consentToAsk(ctx.storage, realm, auth, sso.user.id) : null;
    // prompt=none shows no page: OIDC Core's consent_required, as Keycloak answers.
    if (consent && consent.detail === undefined && prompt.split(' ').includes('none')) return fail('consent_required', 'Consent required');
    if (sso && (kcAction || consent?.detail === undefined)) {
      const session = await ctx.authSessions.start(reply, request, realm, auth);
      if (!session) return ctx.forms.requestError(reply, realm, 'Invalid request: its parameters (state, nonce, redirect_uri, scope) are too long together.');
      return reply.code(302).header('location', `/realms/${encodeURIComponent(realm.name)}/login-actions/required-action`).header('cache-control', 'no-store').send();
    }
    // Signed in already: the login completes in this request, and nothing about it is kept anywhere.
    if (sso) return completeLogin(ctx, request, reply, realm, ctx.authSessions.create(realm, auth), sso.user, sso.session, consent?.detail ?? undefined);
    if (prompt.split(' ').includes('none')) return fail('login_required', 'Login required');
    // The request waits for the user in a signed cookie, not in the shared store: an anonymous GET writes nothing.
    const session = await ctx.authSessions.start(reply, request, realm, auth);
    if (!session) return ctx.forms.requestError(reply, realm, 'Invalid request: its parameters (state, nonce, redirect_uri, scope) are too long together.');
    if (entry === 'registration' && auth.invitation) return reply.code(302).header('location', `/realms/${encodeURIComponent(realm.name)}/login-actions/registration`).header('cache-control', 'no-store').send();
    if (entry === 'registration' && realm.registrationAllowed) return ctx.forms.registration(request, reply, realm, session, {});
    return ctx.forms.firstPage(request, reply, realm, session);
  };
  app.get('/realms/:realm/protocol/openid-connect/auth', handler('login'));
  app.post('/realms/:realm/protocol/openid-connect/auth', handler('login'));
  app.get('/realms/:realm/protocol/openid-connect/registrations', handler('registration'));
}

/** `kc_action` as Keycloak 26 reads it: the action, and after the first `:` its parameter (idp_link:{alias}). */
function splitKcAction(value: string | undefined): [string | undefined, string | undefined] {
  if (!value) return [undefined, undefined];
  const colon = value.indexOf(':');
  return colon < 0 ? [value, undefined] : [value.slice(0, colon) || undefined, value.slice(colon + 1) || undefined];
}
