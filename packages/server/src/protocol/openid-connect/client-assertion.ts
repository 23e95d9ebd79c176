import type { FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { baseUrl } from '../../http/index.js';
import { ClientKeyError } from '../../keys/client-keys.js';
import { parseCompactJws, verifyJwsSignature, type ParsedJws } from '../../keys/jws.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Realm } from '../../model/types.js';
import { issuerOf } from './tokens.js';

export const JWT_BEARER_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** What a `client-jwt` client may sign its assertions with (never `none`, never a MAC). */
export const ASYMMETRIC_ASSERTION_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
/** What a `client-secret-jwt` client MACs its assertions with, its secret the key. */
export const SECRET_ASSERTION_ALGS = ['HS256', 'HS384', 'HS512'] as const;

/** Keycloak's client attribute naming the one algorithm the client's assertions must use. */
export const ASSERTION_ALG_ATTRIBUTE = 'token.endpoint.auth.signing.alg';

/** Keycloak's client attribute bounding how long an assertion may be used after its `iat` (seconds, default 60). */
export const ASSERTION_MAX_EXP_ATTRIBUTE = 'token.endpoint.auth.signing.max.exp';
const DEFAULT_ASSERTION_MAX_EXP_SECONDS = 60;
/** The clock skew Keycloak 26.7.3 allows an assertion's `iat` and `nbf` (its `exp` has none). */
const CLOCK_SKEW_SECONDS = 15;

/**
 * Keycloak 26.7.3's answers, measured (test/keycloak/client-auth.keycloak.ts): an assertion that names its client but
 * fails a check is 400 `invalid_client` (credentials in the body, so no 401 challenge: RFC 6749 5.2), a
 * client_secret_jwt assertion whose MAC or algorithm fails is 400 `unauthorized_client`, and an assertion that does
 * not identify a client (`iss` other than `sub`, either missing) is 401 `invalid_client`, as an unknown client.
 */
const refused = (reason: string) => oauthError.invalid_client(`Client authentication with signed JWT failed: ${reason}`, { status: 400 });
const refusedBySecret = (reason: string) => oauthError.unauthorized_client(`Client authentication with client secret signed JWT failed: ${reason}`);
const notIdentified = (reason: string) => oauthError.invalid_client(`Invalid client or Invalid client credentials: ${reason}`);

/** The client's `token.endpoint.auth.signing.max.exp`: a positive whole number of seconds, else Keycloak's 60. */
export function assertionMaxExpSeconds(client: Client): number {
  const value = Number(client.attributes[ASSERTION_MAX_EXP_ATTRIBUTE]);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_ASSERTION_MAX_EXP_SECONDS;
}

/** An assertion taken apart (keys/jws.ts), or null when it is not a compact JWS of JSON objects. */
export const parseAssertion = (assertion: string): ParsedJws | null => parseCompactJws(assertion);

/** The client id an assertion names (`sub`), read before its signature is checked: only to find the client. */
export function assertionSubject(parsed: ParsedJws | null): string | undefined {
  return typeof parsed?.payload.sub === 'string' ? parsed.payload.sub : undefined;
}

/**
 * Checks a `client-jwt` (private_key_jwt) or `client-secret-jwt` assertion (RFC 7523 3, OIDC Core 9) as Keycloak
 * 26.7.3 does (facts measured against it, test/keycloak/client-auth.keycloak.ts): the assertion type; `iss` = `sub`
 * = the client id; the signature, by an algorithm of the client's kind (and its `token.endpoint.auth.signing.alg`
 * when set) with the client's key or secret; one audience, this realm's issuer or an endpoint that takes assertions
 * (token, introspection, PAR); the time claims (checkTimes); a `jti`, used once across every node (the shared host
 * store, kept while the assertion could be used). The signature is checked with node:crypto (keys/jws.ts) against the
 * client's keys as parsed once per key configuration (keys/client-keys.ts).
 */
export async function verifyClientAssertion(
  ctx: ProtocolContext,
  realm: Realm,
  client: Client,
  request: FastifyRequest,
  fields: { type?: string; assertion?: string; parsed?: ParsedJws | null },
): Promise<void> {
  const missing = (description: string) => oauthError.invalid_client(description, { status: 400 });
  if (fields.type === undefined) throw missing('Parameter client_assertion_type is missing');
  if (fields.type !== JWT_BEARER_ASSERTION_TYPE) throw missing(`Parameter client_assertion_type has value '${fields.type.slice(0, 100)}' but expected is '${JWT_BEARER_ASSERTION_TYPE}'`);
  if (!fields.assertion) throw missing('client_assertion parameter missing');
  const jws = fields.parsed === undefined ? parseAssertion(fields.assertion) : fields.parsed;
  if (!jws) throw refused('the assertion is not a JWS');
  const { header, payload } = jws;
  // Who the assertion says it is comes first: one that names no client, or two, identifies none.
  if (typeof payload.sub !== 'string' || payload.sub === '') throw notIdentified('the assertion has no sub');
  if (payload.iss !== payload.sub) throw notIdentified('issuer mismatch: the issuer should match the subject');
  if (payload.sub !== client.clientId) throw refused('sub is not the client id');

  const alg = typeof header.alg === 'string' ? header.alg : '';
  const bySecret = client.clientAuthenticatorType === 'client-secret-jwt';
  const pinned = client.attributes[ASSERTION_ALG_ATTRIBUTE];
  const unaccepted = () => `signature algorithm ${JSON.stringify(alg.slice(0, 20))} is not accepted for this client`;
  if (pinned && pinned !== alg) throw refused(unaccepted());
  if (bySecret ? !(SECRET_ASSERTION_ALGS as readonly string[]).includes(alg) : !(ASYMMETRIC_ASSERTION_ALGS as readonly string[]).includes(alg)) {
    throw bySecret ? refusedBySecret(unaccepted()) : refused(unaccepted());
  }
  // No JWS extension is understood here: one marked critical refuses the assertion (RFC 7515 4.1.11).
  if (header.crit !== undefined) throw refused('the assertion is not a valid JWT');

  if (bySecret) {
    if (!client.secret) throw refusedBySecret('the client has no secret');
    if (!verifyJwsSignature(alg, jws.signingInput, jws.signature, Buffer.from(client.secret, 'utf8'))) throw refusedBySecret('signature on the assertion failed validation');
  } else {
    let keys;
    try {
      keys = await ctx.clientKeys.keysFor(client.attributes, typeof header.kid === 'string' ? header.kid : undefined);
    } catch (error) {
      if (error instanceof ClientKeyError) throw refused(error.message);
      throw error;
    }
    if (keys.length === 0) throw refused('no key of the client verifies it');
    // A JWKS may hold several keys without kids: the first that verifies it.
    const signed = keys.some(({ key, alg: keyAlg }) => (keyAlg === null || keyAlg === alg) && verifyJwsSignature(alg, jws.signingInput, jws.signature, key));
    if (!signed) throw refused('signature on the assertion failed validation');
  }

  const base = baseUrl(request, ctx.config.hostname);
  const issuer = issuerOf(base, realm.name);
  // Keycloak's audiences: the issuer and the endpoints that take an assertion for themselves (never one for another
  // endpoint, revocation's say), and one audience only (an assertion for several could be replayed at another).
  const endpoint = (path: string) => `${issuer}/protocol/openid-connect/${path}`;
  const audiences = new Set([issuer, endpoint('token'), endpoint('token/introspect'), endpoint('ext/par/request')]);
  const aud = Array.isArray(payload.aud) ? payload.aud : payload.aud === undefined ? [] : [payload.aud];
  if (!aud.some((a) => typeof a === 'string' && audiences.has(a))) throw refused('invalid token audience');
  if (aud.length > 1) throw refused('multiple audiences not allowed');
  const now = Math.floor(Date.now() / 1000);
  const lifetime = checkTimes(payload, now, assertionMaxExpSeconds(client));
  if (typeof payload.jti !== 'string' || payload.jti === '') throw refused('the assertion has no jti');
  const fresh = await ctx.hostStore.setIfAbsent(`client-assertion:${realm.id}:${client.id}:${payload.jti.slice(0, 200)}`, '1', Math.max(1000, (lifetime + CLOCK_SKEW_SECONDS) * 1000));
  if (!fresh) throw refused('token reuse detected');
}

/**
 * The time claims of an assertion as Keycloak 26.7.3 checks them (RFC 7519 4.1.4-6): `exp`, `nbf` and `iat`, when
 * present, are numbers; `exp` is required and not passed; `nbf` not ahead (CLOCK_SKEW_SECONDS); an assertion is used
 * within `maxExp` seconds of its `iat` (and an `iat` is not ahead), or, without `iat`, expires within `maxExp`. The
 * seconds the assertion stays usable: how long its `jti` is remembered.
 */
function checkTimes(payload: Record<string, unknown>, now: number, maxExp: number): number {
  for (const claim of ['iat', 'nbf', 'exp'] as const) {
    if (payload[claim] !== undefined && (typeof payload[claim] !== 'number' || !Number.isFinite(payload[claim]))) throw refused(`token claim ${claim} is not valid`);
  }
  const { exp, nbf, iat } = payload as { exp?: number; nbf?: number; iat?: number };
  if (exp === undefined) throw refused('token exp claim is required');
  if (exp < now) throw refused('token is not active (expired)');
  if (nbf !== undefined && nbf > now + CLOCK_SKEW_SECONDS) throw refused('token is not active (its nbf is ahead)');
  if (iat === undefined) {
    if (exp - now > maxExp) throw refused('token expiration is too far in the future and iat claim not present in token');
    return exp - now;
  }
  if (iat - CLOCK_SKEW_SECONDS > now) throw refused('token was issued in the future');
  if (now > iat + maxExp) throw refused('token was issued too far in the past to be used now');
  const lifetime = Math.min(exp - now, maxExp);
  if (lifetime <= 0) throw refused('token is not active (expired)');
  return lifetime;
}
