import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { corsPending } from '../../http/index.js';
import { baseUrl } from '../../http/index.js';
import { oauthError } from '../../model/errors.js';
import { redirectUriAllowed } from '../../model/redirect-uri.js';
import type { Client, Realm } from '../../model/types.js';
import { clientScopeSet, enforceClientPolicies } from '../../services/index.js';
import { issuerOf } from './tokens.js';
import { authenticateClient, formFields, isFormRequest } from './client-auth.js';
import { checkAllowedOrigin } from './cors.js';
import { dpopHeader, verifyDpopProof } from './dpop.js';
import { unknownScopes } from './mappers/index.js';
import { realmOrError } from './realm-lookup.js';
import { pushedRequestObjectProblem, readRequestObject } from './request-object.js';

/** RFC 9126's URN prefix; Keycloak puts a random UUID after it. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';
/** Keycloak's default `parRequestUriLifespan`. */
const DEFAULT_LIFESPAN_S = 60;
/** As the authorization endpoint: no parameter longer than this. */
const MAX_PARAM = 2048;

/** Keycloak's per-client `require.pushed.authorization.requests`: the authorization endpoint takes only a pushed request. */
export const parRequired = (client: Client) => client.attributes['require.pushed.authorization.requests'] === 'true';

interface PushedRequest {
  realmId: string;
  clientId: string;
  params: Record<string, string>;
}

const parKey = (id: string) => `par:${id}`;

/**
 * RFC 9126 as Keycloak 26.7.3: an authenticated client pushes its authorization request and gets a `request_uri`,
 * single-use and short-lived (realm attribute `parRequestUriLifespan`, 60 s), kept in the shared store so any node
 * can take it. The authorization endpoint (auth.ts) takes it with `takePushedRequest`.
 */
export function parRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/ext/par/request', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    if (!isFormRequest(request)) throw oauthError.invalid_request('The pushed authorization request must be a form (application/x-www-form-urlencoded)');
    const client = await authenticateClient(ctx, realm, request);
    checkAllowedOrigin(ctx, request, client);
    const params = formFields(request.body);
    // Keycloak's client policies (PUSHED_AUTHORIZATION_REQUEST), on the pushed form as it came.
    await enforceClientPolicies(ctx.storage, realm, { event: 'PUSHED_AUTHORIZATION_REQUEST', client, form: (name) => params[name], issuer: issuerOf(baseUrl(request, ctx.config.hostname), realm.name) });
    if (params.request_uri !== undefined) throw oauthError.invalid_request('It is not allowed to include request_uri to PAR.');
    // RFC 9449 10.1, as Keycloak: a DPoP proof sent with the push (checked as at the token endpoint, for this URL)
    // binds the code to its key, over any `dpop_jkt` the request names (which must then be the same key).
    const proof = dpopHeader(request) !== undefined ? await verifyDpopProof(ctx, realm, request) : undefined;
    // Keycloak's `request.object.required`: a client that must send request objects pushes one.
    const objectProblem = pushedRequestObjectProblem(client, params.request !== undefined);
    if (objectProblem) throw oauthError.invalid_request(objectProblem);
    // A request object's claims are the pushed parameters, over the form's (Keycloak's ParEndpointRequestObjectParser).
    if (params.request !== undefined) {
      const read = await readRequestObject(ctx, request, realm, client, params.request);
      if (!read.ok) throw oauthError.invalid_request_object(read.reason);
      delete params.request;
      Object.assign(params, read.params);
    }
    const long = Object.entries(params).find(([, value]) => value.length > MAX_PARAM);
    if (long) throw oauthError.invalid_request(`Invalid parameter: ${long[0].slice(0, 40)} is too long`);
    // The checks Keycloak's PAR endpoint makes before it stores; the authorization endpoint makes all of its own again.
    if (!params.redirect_uri || !redirectUriAllowed(client, params.redirect_uri, baseUrl(request, ctx.config.hostname))) {
      throw oauthError.invalid_request('Invalid parameter: redirect_uri');
    }
    if (params.response_type !== 'code') throw oauthError.invalid_request('Unsupported response type');
    if (unknownScopes(await clientScopeSet(ctx.storage, client), params.scope).length) throw oauthError.invalid_request(`Invalid scopes: ${params.scope}`);
    if (proof) {
      if (params.dpop_jkt !== undefined && params.dpop_jkt !== proof.jkt) throw oauthError.invalid_request('DPoP Proof public key thumbprint does not match dpop_jkt.');
      params.dpop_jkt = proof.jkt;
    }
    const lifespan = requestUriLifespan(realm);
    const id = randomUUID();
    const pushed: PushedRequest = { realmId: realm.id, clientId: client.clientId, params: { ...params, client_id: client.clientId } };
    // Client credentials are not part of the authorization request.
    for (const secret of ['client_secret', 'client_assertion', 'client_assertion_type']) delete pushed.params[secret];
    await ctx.hostStore.set(parKey(id), JSON.stringify(pushed), lifespan * 1000);
    return reply.code(201).header('cache-control', 'no-store').send({ request_uri: `${REQUEST_URI_PREFIX}${id}`, expires_in: lifespan });
  });
}

function requestUriLifespan(realm: Realm): number {
  const n = Number(realm.attributes.parRequestUriLifespan);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_LIFESPAN_S;
}

/** The parameter names of the pushed request a `request_uri` names for `client`, without taking it (null: none). */
export async function peekPushedRequest(ctx: Pick<ProtocolContext, 'hostStore'>, realm: Realm, client: Client, requestUri: string): Promise<string[] | null> {
  const id = pushedId(requestUri);
  const raw = id ? await ctx.hostStore.get(parKey(id)) : null;
  if (!raw) return null;
  const pushed = JSON.parse(raw) as PushedRequest;
  return pushed.realmId === realm.id && pushed.clientId === client.clientId ? Object.keys(pushed.params) : null;
}

/** Spends the pushed request a `request_uri` names for `client` (a refused authorization request cannot be retried with it). */
export async function dropPushedRequest(ctx: Pick<ProtocolContext, 'hostStore'>, realm: Realm, client: Client, requestUri: string): Promise<void> {
  await takePushedRequest(ctx, realm, client, requestUri);
}

function pushedId(requestUri: string): string | null {
  if (!requestUri.startsWith(REQUEST_URI_PREFIX)) return null;
  const id = requestUri.slice(REQUEST_URI_PREFIX.length);
  return /^[0-9a-f-]{36}$/.test(id) ? id : null;
}

/**
 * The pushed request a `request_uri` names, for `client` only, taken once across nodes: another client's is refused
 * without being spent (so it cannot be burned by a client that learns it), an unknown, expired or spent one is null.
 */
export async function takePushedRequest(ctx: Pick<ProtocolContext, 'hostStore'>, realm: Realm, client: Client, requestUri: string): Promise<Record<string, string> | null> {
  const id = pushedId(requestUri);
  if (!id) return null;
  const raw = await ctx.hostStore.get(parKey(id));
  if (!raw) return null;
  const pushed = JSON.parse(raw) as PushedRequest;
  if (pushed.realmId !== realm.id || pushed.clientId !== client.clientId) return null;
  if (!(await ctx.hostStore.setIfAbsent(`${parKey(id)}:used`, '1', requestUriLifespan(realm) * 1000))) return null;
  await ctx.hostStore.delete(parKey(id));
  return pushed.params;
}
