import type { KeyObject } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { ProtocolContext } from '../context.js';
import { baseUrl } from '../../http/index.js';
import { ClientKeyError } from '../../keys/client-keys.js';
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

/** The client id an assertion names (`sub`), read before its signature is checked: only to find the client. */
export function assertionSubject(assertion: string): string | undefined {
  try {
    const { sub } = decodeJwt(assertion);
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a `client-jwt` (private_key_jwt) or `client-secret-jwt` assertion (RFC 7523 3, OIDC Core 9) as Keycloak
 * does: the assertion type; the signature, by an algorithm of the client's kind (and its
 * `token.endpoint.auth.signing.alg` when set) with the client's key or secret; `iss` = `sub` = the client id; an
 * audience of this realm (its issuer, its token endpoint, or the endpoint called); not expired; a `jti`, used once
 * across every node (the shared host store, kept until the assertion expires).
 */
export async function verifyClientAssertion(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest, fields: { type?: string; assertion?: string }): Promise<void> {
  if (fields.type === undefined) throw oauthError.invalid_client('Parameter client_assertion_type is missing');
  if (fields.type !== JWT_BEARER_ASSERTION_TYPE) throw oauthError.invalid_client(`Parameter client_assertion_type has value '${fields.type.slice(0, 100)}' but expected is '${JWT_BEARER_ASSERTION_TYPE}'`);
  if (!fields.assertion) throw oauthError.invalid_client('client_assertion parameter missing');
  let header;
  try {
    header = decodeProtectedHeader(fields.assertion);
  } catch {
    throw refused('the assertion is not a JWS');
  }
  const alg = typeof header.alg === 'string' ? header.alg : '';
  const bySecret = client.clientAuthenticatorType === 'client-secret-jwt';
  const allowed: readonly string[] = bySecret ? SECRET_ASSERTION_ALGS : ASYMMETRIC_ASSERTION_ALGS;
  const pinned = client.attributes[ASSERTION_ALG_ATTRIBUTE];
  if (!allowed.includes(alg) || (pinned && pinned !== alg)) throw refused(`signature algorithm ${JSON.stringify(alg.slice(0, 20))} is not accepted for this client`);

  let payload: JWTPayload | undefined;
  if (bySecret) {
    if (!client.secret) throw refused('the client has no secret');
    payload = (await verified(fields.assertion, new TextEncoder().encode(client.secret), alg)) ?? undefined;
    if (!payload) throw refused('signature on the assertion failed validation');
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
    for (const { key, alg: keyAlg } of keys) {
      if (keyAlg !== null && keyAlg !== alg) continue;
      payload = (await verified(fields.assertion, key, alg)) ?? undefined;
      if (payload) break;
    }
    if (!payload) throw refused('signature on the assertion failed validation');
  }

  if (payload.sub !== client.clientId) throw refused('sub is not the client id');
  if (payload.iss !== client.clientId) throw refused('issuer mismatch: the issuer should match the subject');
  const base = baseUrl(request, ctx.config.hostname);
  const issuer = issuerOf(base, realm.name);
  const called = `${base}${request.url.split('?')[0]}`;
  const audiences = new Set([issuer, `${issuer}/protocol/openid-connect/token`, called]);
  const aud = Array.isArray(payload.aud) ? payload.aud : payload.aud === undefined ? [] : [payload.aud];
  if (!aud.some((a) => audiences.has(a))) throw refused('invalid token audience');
  if (typeof payload.exp !== 'number') throw refused('the assertion has no exp');
  if (typeof payload.jti !== 'string' || payload.jti === '') throw refused('the assertion has no jti');
  const now = Math.floor(Date.now() / 1000);
  const ttlMs = (payload.exp - now + CLOCK_SKEW_SECONDS) * 1000;
  const fresh = await ctx.hostStore.setIfAbsent(`client-assertion:${realm.id}:${client.id}:${payload.jti.slice(0, 200)}`, '1', Math.max(1000, ttlMs));
  if (!fresh) throw refused('token reuse detected');
}

/** The payload when `key` verifies the assertion; null when it does not (or cannot: a key of another type); refused when a claim is bad. */
async function verified(assertion: string, key: KeyObject | Uint8Array, alg: string): Promise<JWTPayload | null> {
  try {
    return (await jwtVerify(assertion, key, { algorithms: [alg], clockTolerance: CLOCK_SKEW_SECONDS })).payload;
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) throw refused('token is not active (expired)');
    if (error instanceof joseErrors.JWTClaimValidationFailed) throw refused(`token claim ${error.claim} is not valid`);
    if (error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JWTInvalid) throw refused('the assertion is not a valid JWT');
    return null;
  }
}
