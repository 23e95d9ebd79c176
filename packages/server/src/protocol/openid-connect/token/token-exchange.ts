import type { FastifyRequest } from 'fastify';
import { newId } from '../../../credentials/index.js';
import { oauthError, TokenVerificationError, type EventError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import { MissingAudience, type IssuedTokens } from '../tokens.js';
import { formField } from '../client-auth.js';
import { tokenRequestProof } from '../dpop.js';
import { normalizeScope } from '../mappers/index.js';

/** The names a `scope` parameter lists. */
const names = (scope: string | undefined) => (scope ?? '').split(' ').filter(Boolean);
import { checkedScope } from './scope.js';
import { CERTIFICATE_MISMATCH, presentedWithItsCertificate } from '../mtls.js';
import { clientScopeSet } from '../../../services/index.js';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const REFRESH_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
/** Keycloak's client attributes: the switch (off by default) and whether a refresh token may be asked for (NO by default). */
export const STANDARD_EXCHANGE_ATTRIBUTE = 'standard.token.exchange.enabled';
export const EXCHANGE_REFRESH_ATTRIBUTE = 'standard.token.exchange.enableRefreshRequestedTokenType';

/** Parameters of the exchanges Keycloak's standard (V2) exchange does not do: impersonation, external, delegation. */
const UNSUPPORTED = ['requested_subject', 'requested_issuer', 'subject_issuer', 'actor_token', 'actor_token_type'];

/** A form parameter that may be repeated (RFC 8693 `audience`): every value, in order. */
function formValues(body: unknown, name: string): string[] {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined;
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v !== '');
}

/**
 * RFC 8693 token exchange as Keycloak 26's standard (V2) one: internal to internal. The requesting client (the
 * switch on, confidential) trades a user's access token of this realm, in whose audience it is, for its own token,
 * with `audience` kept to clients its own token would have and `scope` to the subject token's and its own scopes.
 */
export async function tokenExchangeGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  const body = request.body;
  const details: Record<string, string> = { grant_type: TOKEN_EXCHANGE_GRANT };
  let userId: string | null = null;
  let sessionId: string | null = null;
  const refuse = async (reason: string, error: EventError = 'invalid_request') => {
    await ctx.events.user(realm, { type: 'TOKEN_EXCHANGE_ERROR', clientId: client.clientId, userId, sessionId, error, details: { ...details, reason }, request: info });
  };
  const invalidRequest = async (description: string, error: EventError = 'invalid_request') => {
    await refuse(description, error);
    return oauthError.invalid_request(description);
  };

  for (const name of UNSUPPORTED) {
    if (formValues(body, name).length) throw await invalidRequest(`Parameter '${name}' is not supported for standard token exchange`);
  }
  if (client.attributes[STANDARD_EXCHANGE_ATTRIBUTE] !== 'true') throw await invalidRequest('Standard token exchange is not enabled for the requested client', 'not_allowed');
  const subjectToken = formField(body, 'subject_token');
  if (!subjectToken) throw await invalidRequest("Parameter 'subject_token' required for standard token exchange");
  const subjectTokenType = formField(body, 'subject_token_type');
  if (!subjectTokenType) throw await invalidRequest("Parameter 'subject_token_type' required for standard token exchange");
  if (subjectTokenType !== ACCESS_TOKEN_TYPE) throw await invalidRequest("Parameter 'subject_token' supports access tokens only");

  // The subject token: an access token of this realm, signed by it, not expired, its session and user alive.
  let claims;
  try {
    claims = await ctx.tokens.verify(realm, subjectToken, 'Bearer', ctx.config.hostname ? ctx.config.hostname : null, { dpop: 'any' });
  } catch (error) {
    if (!(error instanceof TokenVerificationError)) throw error;
    await refuse('subject_token validation failure', 'invalid_token');
    throw oauthError.invalid_request('Invalid token');
  }
  userId = typeof claims.sub === 'string' ? claims.sub : null;
  sessionId = typeof claims.sid === 'string' ? claims.sid : null;
  details.subject_token_client_id = String(claims.azp);

  // A sender-constrained subject token (RFC 9449 cnf.jkt) only by the client it was issued to, with a proof of its key.
  const jkt = (claims.cnf as { jkt?: unknown } | undefined)?.jkt;
  if (claims.cnf !== undefined) {
    if (claims.azp !== client.clientId) throw await invalidRequest('Sender-constrained token exchange rejected as the token was not issued for the requesting client');
    // RFC 8705: a certificate-bound one only over a connection with that certificate (Keycloak's MtlsHoKTokenUtil).
    if ((claims.cnf as Record<string, unknown>)['x5t#S256'] !== undefined && !presentedWithItsCertificate(ctx, claims, request)) throw await invalidRequest(CERTIFICATE_MISMATCH);
    if (jkt !== undefined) {
      const proof = tokenRequestProof(request);
      if (!proof) throw await invalidRequest('DPoP proof is missing');
      if (proof.jkt !== jkt) throw await invalidRequest("DPoP confirmation doesn't match DPoP proof");
    }
  }

  const requestedTokenType = formField(body, 'requested_token_type') ?? ACCESS_TOKEN_TYPE;
  details.requested_token_type = requestedTokenType;
  const refreshAllowed = client.attributes['use.refresh.tokens'] !== 'false' && (client.attributes[EXCHANGE_REFRESH_ATTRIBUTE] ?? 'NO') !== 'NO';
  // Keycloak's StandardTokenExchangeProvider: access and ID tokens always, a refresh token where the client allows it.
  if (requestedTokenType !== ACCESS_TOKEN_TYPE && requestedTokenType !== ID_TOKEN_TYPE && !(requestedTokenType === REFRESH_TOKEN_TYPE && refreshAllowed)) {
    throw await invalidRequest('requested_token_type unsupported');
  }

  const audience = formValues(body, 'audience');
  for (const clientId of audience) {
    const target = await ctx.storage.clients.cachedByClientId(realm.id, clientId);
    if (!target) {
      await refuse('audience not found', 'client_not_found');
      throw oauthError.invalid_client('Audience not found', { status: 400 });
    }
    if (!target.enabled) {
      await refuse('audience client disabled', 'client_disabled');
      throw oauthError.invalid_client('Client disabled', { status: 400 });
    }
  }
  if (client.publicClient) {
    await refuse('Public client is not allowed to exchange token', 'invalid_client');
    throw oauthError.invalid_client('Public client is not allowed to exchange token', { status: 400 });
  }
  // Keycloak's rule: the requester must be an audience of the subject token (or the client it was issued to).
  const subjectAudience = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
  if (claims.azp !== client.clientId && !subjectAudience.includes(client.clientId)) {
    await refuse('client is not within the token audience', 'not_allowed');
    throw oauthError.access_denied('Client is not within the token audience', { status: 403 });
  }

  // Scope: names of the requester's client scopes (as Keycloak), and beyond Keycloak none the subject token lacks.
  const requestedScope = formField(body, 'scope');
  // offline_access stays a name in the scope, as Keycloak answers it; no offline session is ever made (below).
  const scope = await checkedScope(ctx, client, requestedScope, true, refuse);
  const subjectScope = new Set(typeof claims.scope === 'string' ? claims.scope.split(' ') : []);
  const widened = normalizeScope(requestedScope, false).split(' ').filter((name) => name !== '' && name !== 'openid' && !subjectScope.has(name));
  if (widened.length) {
    const reason = `Invalid scopes: ${requestedScope}`;
    await refuse(reason);
    throw oauthError.invalid_scope(reason);
  }

  const user = userId ? await ctx.storage.users.cachedById(realm.id, userId) : null;
  if (!user) throw await invalidRequest('Invalid token', 'invalid_token');
  const session = sessionId ? await ctx.storage.sessions.byId(sessionId) : null;
  const online = session !== null && !session.offline;
  if (requestedTokenType === REFRESH_TOKEN_TYPE && !online) {
    throw await invalidRequest('Refresh token not valid as requested_token_type because creating a new session is needed');
  }
  // Keycloak 26.7.3: an exchange never makes an offline token. A refresh token is refused when offline_access is among
  // the scopes the new token would have (asked for, or a default scope of the requester); an access or ID token keeps
  // the name in its `scope` (as Keycloak's), which gives nothing offline: no refresh token comes with it.
  if (requestedTokenType === REFRESH_TOKEN_TYPE && (names(scope).includes('offline_access') || (await clientScopeSet(ctx.storage, client)).defaultScopes.some((s) => s.name === 'offline_access'))) {
    throw await invalidRequest('Scope offline_access not allowed for token exchange');
  }
  // In an online session the requester gets its part of it (kept if it had one); otherwise a token without session.
  const withRefresh = requestedTokenType === REFRESH_TOKEN_TYPE;
  const refreshTokenId = withRefresh ? newId() : undefined;
  let created: string | null = null;
  if (online) {
    const existing = await ctx.storage.sessions.clientSession(session.id, client.id);
    if (!existing || withRefresh) {
      const id = existing?.id ?? newId();
      await ctx.storage.sessions.upsertClientSession({ id, sessionId: session.id, clientId: client.id, refreshTokenId: refreshTokenId ?? newId(), scope, started: existing?.started ?? Date.now() });
      if (!existing) created = id;
    }
  }
  let tokens: IssuedTokens;
  try {
    tokens = await ctx.tokens.issue(
      {
        base: baseUrl(request, ctx.config.hostname),
        realm,
        client,
        user,
        sessionId: online ? session.id : null,
        sessionStarted: session?.started,
        scope,
        refreshTokenId,
        authTime: session ? Math.floor(session.started / 1000) : undefined,
        clientAddress: info.ipAddress,
        ...(audience.length ? { audience } : {}),
        ...(requestedTokenType === ID_TOKEN_TYPE ? { idTokenAlways: true } : {}),
      },
      withRefresh,
    );
  } catch (error) {
    // Nothing left behind by a refused exchange: the client session made for it goes.
    if (created) await ctx.storage.sessions.deleteClientSession(created);
    if (!(error instanceof MissingAudience)) throw error;
    throw await invalidRequest(error.message);
  }
  await ctx.events.user(realm, {
    type: 'TOKEN_EXCHANGE',
    clientId: client.clientId,
    userId: user.id,
    sessionId: online ? session.id : null,
    details: { ...details, username: user.username, ...(audience.length ? { audience: audience.join(' ') } : {}) },
    request: info,
  });
  if (requestedTokenType === ID_TOKEN_TYPE) {
    // RFC 8693 2.2.1 as Keycloak answers it: the ID token in `access_token`, `token_type` N_A, no other token.
    const { id_token: idToken, access_token: _access, refresh_token: _refresh, ...rest } = tokens;
    return { ...rest, access_token: idToken!, token_type: 'N_A', issued_token_type: requestedTokenType };
  }
  return { ...tokens, issued_token_type: requestedTokenType };
}
