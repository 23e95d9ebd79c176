import type { FastifyRequest } from 'fastify';
import { compactDecrypt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { ProtocolContext } from '../context.js';
import { baseUrl } from '../../http/index.js';
import { ClientKeyError } from '../../keys/client-keys.js';
import type { Client, Realm } from '../../model/types.js';
import { ASYMMETRIC_ASSERTION_ALGS, SECRET_ASSERTION_ALGS } from './client-assertion.js';
import { issuerOf } from './tokens.js';

/** Keycloak's client attribute naming the one algorithm the client's request objects must use (`any`: none pinned). */
export const REQUEST_OBJECT_ALG_ATTRIBUTE = 'request.object.signature.alg';
/** What a request object may be signed with: the client's keys, its secret, or (as Keycloak, unless pinned) not at all. */
export const REQUEST_OBJECT_ALGS = [...ASYMMETRIC_ASSERTION_ALGS, ...SECRET_ASSERTION_ALGS, 'none'];
/** Keycloak's client attributes pinning how the client's request objects are encrypted (unset: any accepted here). */
export const REQUEST_OBJECT_ENCRYPTION_ALG_ATTRIBUTE = 'request.object.encryption.alg';
export const REQUEST_OBJECT_ENCRYPTION_ENC_ATTRIBUTE = 'request.object.encryption.enc';
/**
 * What an encrypted request object may use: RSA-OAEP to the realm's RSA encryption keys (RSA1_5, which Keycloak also
 * takes, is refused: PKCS#1 v1.5 decryption is open to padding oracles), and the six content encryptions of RFC 7518.
 */
export const REQUEST_OBJECT_ENCRYPTION_ALGS = ['RSA-OAEP', 'RSA-OAEP-256'];
export const REQUEST_OBJECT_ENCRYPTION_ENCS = ['A128GCM', 'A192GCM', 'A256GCM', 'A128CBC-HS256', 'A192CBC-HS384', 'A256CBC-HS512'];
/** A request object is a JWT in a parameter: longer than the other parameters may be, not without bound. */
export const MAX_REQUEST_OBJECT = 16_384;

/** Keycloak's client attribute saying whether (and how) the client must send its authorization request as an object. */
export const REQUEST_OBJECT_REQUIRED_ATTRIBUTE = 'request.object.required';

/**
 * Keycloak's `request.object.required` (OIDCAdvancedConfigWrapper), checked at the authorization and device endpoints
 * (AuthorizationEndpointRequestParserProcessor): `request or request_uri`, `request only`, `request_uri only`; unset
 * or `not required` asks nothing. Null when the request may go on, else Keycloak's reason (the error page's event
 * detail). Both parameters at once are refused whatever the setting.
 */
export function requestObjectRequiredProblem(client: Client, hasRequest: boolean, hasRequestUri: boolean): string | null {
  if (hasRequest && hasRequestUri) return "Illegal to use both 'request' and 'request_uri' parameters together";
  const required = client.attributes[REQUEST_OBJECT_REQUIRED_ATTRIBUTE];
  if (required === 'request or request_uri' && !hasRequest && !hasRequestUri) return "Client is required to use 'request' or 'request_uri' parameter.";
  if (required === 'request only' && !hasRequest) return "Client is required to use 'request' parameter.";
  if (required === 'request_uri only' && !hasRequestUri) return "Client is required to use 'request_uri' parameter.";
  return null;
}

/**
 * The same setting at the PAR endpoint (Keycloak's ParEndpointRequestParserProcessor): a push must carry `request`
 * when the client requires `request or request_uri` or `request only` (the push is what makes the request_uri);
 * `request_uri only` asks nothing of the push.
 */
export function pushedRequestObjectProblem(client: Client, hasRequest: boolean): string | null {
  const required = client.attributes[REQUEST_OBJECT_REQUIRED_ATTRIBUTE];
  return (required === 'request or request_uri' || required === 'request only') && !hasRequest ? "Client is required to use 'request' parameter." : null;
}

const CLOCK_SKEW_SECONDS = 5;
/** The JWT's own claims, not authorization request parameters. */
const JWT_CLAIMS = new Set(['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub']);

export type RequestObjectResult = { ok: true; params: Record<string, string> } | { ok: false; reason: string };

/**
 * A request object (`request`, RFC 9101 / OIDC Core 6.1) as Keycloak 26 reads it: signed with an algorithm the client
 * allows (`request.object.signature.alg`; unset or `any`: any, `none` included) by the client's keys (asymmetric) or
 * secret (HS*); its `client_id`, `iss` and `aud`, when present, must be the client, the client and this realm; not
 * expired. Its claims are authorization request parameters that take precedence over the query's.
 */
export async function readRequestObject(ctx: ProtocolContext, request: FastifyRequest, realm: Realm, client: Client, object: string): Promise<RequestObjectResult> {
  if (object.length > MAX_REQUEST_OBJECT) return { ok: false, reason: 'the request object is too long' };
  // RFC 9101 4: an encrypted object (a JWE, five parts) holds the signed one, encrypted to one of the realm's keys.
  let jwt = object;
  if (object.split('.').length === 5) {
    const decrypted = await decryptRequestObject(ctx, realm, client, object);
    if (!decrypted.ok) return decrypted;
    jwt = decrypted.jwt;
  }
  let alg: string;
  let kid: string | undefined;
  try {
    const header = decodeProtectedHeader(jwt);
    alg = typeof header.alg === 'string' ? header.alg : '';
    kid = typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return { ok: false, reason: 'the request object is not a JWT' };
  }
  const pinned = client.attributes[REQUEST_OBJECT_ALG_ATTRIBUTE];
  if (!REQUEST_OBJECT_ALGS.includes(alg)) return { ok: false, reason: 'request object signature algorithm not accepted' };
  if (pinned && pinned !== 'any' && pinned !== alg) return { ok: false, reason: 'request object signed with a different algorithm than the client requested' };
  const payload = alg === 'none' ? unsecured(jwt) : await signedPayload(ctx, client, jwt, alg, kid);
  if (typeof payload === 'string') return { ok: false, reason: payload };
  const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
  if (payload.client_id !== undefined && payload.client_id !== client.clientId) return { ok: false, reason: 'the client_id of the request object is not the client' };
  if (payload.iss !== undefined && payload.iss !== client.clientId) return { ok: false, reason: 'the issuer of the request object is not the client' };
  const aud = payload.aud === undefined ? [] : Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (payload.aud !== undefined && !aud.includes(issuer)) return { ok: false, reason: 'the audience of the request object is not this realm' };
  if (typeof payload.exp === 'number' && payload.exp + CLOCK_SKEW_SECONDS < Date.now() / 1000) return { ok: false, reason: 'the request object has expired' };
  // As Keycloak: an object must not point at another (no chains of request_uri).
  if (payload.request_uri !== undefined) return { ok: false, reason: 'The request_uri claim should not be set in the request object' };
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(payload)) {
    if (JWT_CLAIMS.has(name) || value === null || value === undefined) continue;
    params[name] = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
  }
  return { ok: true, params };
}

/**
 * An encrypted request object as Keycloak 26 takes one (DefaultTokenManager.decodeClientJWT): a compact JWE whose
 * `kid` names an enabled encryption key of the realm (an `rsa-enc-generated` key) of the header's `alg`, with the
 * algorithms the client pins (`request.object.encryption.alg` / `.enc`) when it pins them. Its plaintext is the
 * (signed) request object, read as any other; a JWE inside is not unwrapped again.
 */
async function decryptRequestObject(ctx: ProtocolContext, realm: Realm, client: Client, jwe: string): Promise<{ ok: true; jwt: string } | { ok: false; reason: string }> {
  let header;
  try {
    header = decodeProtectedHeader(jwe);
  } catch {
    return { ok: false, reason: 'the request object is not a JWE' };
  }
  const alg = typeof header.alg === 'string' ? header.alg : '';
  const enc = typeof header.enc === 'string' ? header.enc : '';
  if (!REQUEST_OBJECT_ENCRYPTION_ALGS.includes(alg) || !REQUEST_OBJECT_ENCRYPTION_ENCS.includes(enc)) return { ok: false, reason: 'request object encryption algorithm not accepted' };
  const pinnedAlg = client.attributes[REQUEST_OBJECT_ENCRYPTION_ALG_ATTRIBUTE];
  if (pinnedAlg && pinnedAlg !== alg) return { ok: false, reason: 'Request object encrypted with different algorithm than client requested algorithm' };
  const pinnedEnc = client.attributes[REQUEST_OBJECT_ENCRYPTION_ENC_ATTRIBUTE];
  if (pinnedEnc && pinnedEnc !== enc) return { ok: false, reason: 'Request object content encrypted with different algorithm than client requested algorithm' };
  const key = typeof header.kid === 'string' ? await ctx.keys.decryptionKey(realm.id, header.kid) : null;
  if (!key || key.algorithm !== alg) return { ok: false, reason: 'no encryption key of the realm for the request object' };
  try {
    const { plaintext } = await compactDecrypt(jwe, key.key, { keyManagementAlgorithms: [alg], contentEncryptionAlgorithms: [enc] });
    const jwt = new TextDecoder().decode(plaintext);
    return jwt.split('.').length === 3 ? { ok: true, jwt } : { ok: false, reason: 'the encrypted request object does not hold a JWT' };
  } catch {
    return { ok: false, reason: 'failed to decrypt the request object' };
  }
}

/** An unsecured JWT's claims (`alg: none`, RFC 7519 6): the payload of a token with an empty signature. */
function unsecured(jwt: string): JWTPayload | string {
  const parts = jwt.split('.');
  if (parts.length !== 3 || parts[2] !== '') return 'an unsigned request object must have an empty signature';
  try {
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    return typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as JWTPayload) : 'the request object is not a JSON object';
  } catch {
    return 'the request object is not a JWT';
  }
}

async function signedPayload(ctx: ProtocolContext, client: Client, jwt: string, alg: string, kid: string | undefined): Promise<JWTPayload | string> {
  const verify = async (key: Parameters<typeof jwtVerify>[1]) => {
    try {
      return (await jwtVerify(jwt, key, { algorithms: [alg], clockTolerance: CLOCK_SKEW_SECONDS })).payload;
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) return 'the request object has expired';
      if (error instanceof joseErrors.JWTClaimValidationFailed) return `request object claim ${error.claim} is not valid`;
      return null;
    }
  };
  if ((SECRET_ASSERTION_ALGS as readonly string[]).includes(alg)) {
    if (!client.secret || client.publicClient) return 'the client has no secret to verify the request object with';
    return (await verify(new TextEncoder().encode(client.secret))) ?? 'failed to verify the signature of the request object';
  }
  let keys;
  try {
    keys = await ctx.clientKeys.keysFor(client.attributes, kid);
  } catch (error) {
    if (error instanceof ClientKeyError) return error.message;
    throw error;
  }
  for (const { key, alg: keyAlg } of keys) {
    if (keyAlg !== null && keyAlg !== alg) continue;
    const payload = await verify(key);
    if (payload !== null) return payload;
  }
  return 'failed to verify the signature of the request object';
}
