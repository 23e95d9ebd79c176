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

const CLOCK_SKEW_SECONDS = 5;

const refused = (reason: string) => oauthError.invalid_client(`Client authentication with signed JWT failed: ${reason}`);

/** An assertion taken apart (keys/jws.ts), or null when it is not a compact JWS of JSON objects. */
export const parseAssertion = (assertion: string): ParsedJws | null => parseCompactJws(assertion);

/** The client id an assertion names (`sub`), read before its signature is checked: only to find the client. */
export function assertionSubject(parsed: ParsedJws | null): string | undefined {
  return typeof parsed?.payload.sub === 'string' ? parsed.payload.sub : undefined;
}

/**
 * Checks a `client-jwt` (private_key_jwt) or `client-secret-jwt` assertion (RFC 7523 3, OIDC Core 9) as Keycloak
 * does: the assertion type; the signature, by an algorithm of the client's kind (and its
 * `token.endpoint.auth.signing.alg` when set) with the client's key or secret; `iss` = `sub` = the client id; an
 * audience of this realm (its issuer, its token endpoint, or the endpoint called); not expired; a `jti`, used once
 * across every node (the shared host store, kept until the assertion expires). The signature is checked with
 * node:crypto (keys/jws.ts) against the client's keys as parsed once per key configuration (keys/client-keys.ts).
 */
export async function verifyClientAssertion(
  ctx: ProtocolContext,
  realm: Realm,
  client: Client,
  request: FastifyRequest,
  fields: { type?: string; assertion?: string; parsed?: ParsedJws | null },
): Promise<void> {
  if (fields.type === undefined) throw oauthError.invalid_client('Parameter client_assertion_type is missing');
  if (fields.type !== JWT_BEARER_ASSERTION_TYPE) throw oauthError.invalid_client(`Parameter client_assertion_type has value '${fields.type.slice(0, 100)}' but expected is '${JWT_BEARER_ASSERTION_TYPE}'`);
  if (!fields.assertion) throw oauthError.invalid_client('client_assertion parameter missing');
  const jws = fields.parsed === undefined ? parseAssertion(fields.assertion) : fields.parsed;
  if (!jws) throw refused('the assertion is not a JWS');
  const { header } = jws;
  const alg = typeof header.alg === 'string' ? header.alg : '';
  const bySecret = client.clientAuthenticatorType === 'client-secret-jwt';
  const allowed: readonly string[] = bySecret ? SECRET_ASSERTION_ALGS : ASYMMETRIC_ASSERTION_ALGS;
  const pinned = client.attributes[ASSERTION_ALG_ATTRIBUTE];
  if (!allowed.includes(alg) || (pinned && pinned !== alg)) throw refused(`signature algorithm ${JSON.stringify(alg.slice(0, 20))} is not accepted for this client`);
  // No JWS extension is understood here: one marked critical refuses the assertion (RFC 7515 4.1.11).
  if (header.crit !== undefined) throw refused('the assertion is not a valid JWT');

  let signed = false;
  if (bySecret) {
    if (!client.secret) throw refused('the client has no secret');
    signed = verifyJwsSignature(alg, jws.signingInput, jws.signature, Buffer.from(client.secret, 'utf8'));
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
    signed = keys.some(({ key, alg: keyAlg }) => (keyAlg === null || keyAlg === alg) && verifyJwsSignature(alg, jws.signingInput, jws.signature, key));
  }
  if (!signed) throw refused('signature on the assertion failed validation');

  const payload = jws.payload;
  const now = Math.floor(Date.now() / 1000);
  checkTimes(payload, now);
  if (payload.sub !== client.clientId) throw refused('sub is not the client id');
  if (payload.iss !== client.clientId) throw refused('issuer mismatch: the issuer should match the subject');
  const base = baseUrl(request, ctx.config.hostname);
  const issuer = issuerOf(base, realm.name);
  const called = `${base}${request.url.split('?')[0]}`;
  const audiences = new Set([issuer, `${issuer}/protocol/openid-connect/token`, called]);
  const aud = Array.isArray(payload.aud) ? payload.aud : payload.aud === undefined ? [] : [payload.aud];
  if (!aud.some((a) => typeof a === 'string' && audiences.has(a))) throw refused('invalid token audience');
  if (typeof payload.exp !== 'number') throw refused('the assertion has no exp');
  if (typeof payload.jti !== 'string' || payload.jti === '') throw refused('the assertion has no jti');
  const ttlMs = (payload.exp - now + CLOCK_SKEW_SECONDS) * 1000;
  const fresh = await ctx.hostStore.setIfAbsent(`client-assertion:${realm.id}:${client.id}:${payload.jti.slice(0, 200)}`, '1', Math.max(1000, ttlMs));
  if (!fresh) throw refused('token reuse detected');
}

/**
 * The time claims of a signed assertion, as jose's jwtVerify checked them (RFC 7519 4.1.4-6), CLOCK_SKEW_SECONDS
 * either way: `exp`, `nbf` and `iat`, when present, are numbers; not expired; not before its `nbf`.
 */
function checkTimes(payload: Record<string, unknown>, now: number): void {
  for (const claim of ['iat', 'nbf', 'exp'] as const) {
    if (payload[claim] !== undefined && (typeof payload[claim] !== 'number' || !Number.isFinite(payload[claim]))) throw refused(`token claim ${claim} is not valid`);
  }
  if (typeof payload.nbf === 'number' && payload.nbf > now + CLOCK_SKEW_SECONDS) throw refused('token claim nbf is not valid');
  if (typeof payload.exp === 'number' && payload.exp <= now - CLOCK_SKEW_SECONDS) throw refused('token is not active (expired)');
}
