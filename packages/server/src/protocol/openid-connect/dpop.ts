/**
 * DPoP (RFC 9449) as Keycloak 26 checks it (DPoPUtil): a proof is a JWT of `typ` dpop+jwt, signed with an asymmetric
 * algorithm by the public key its header carries (`jwk`, no private part), with `jti`, `htm` (the request's method),
 * `htu` (the request's URL without query and fragment), `iat` within the proof lifetime (10 s) and clock skew (15 s),
 * `ath` (the hash of the access token) when it comes with one; each `jti` and `htu` is used once, across nodes (the
 * shared store). What binds a token to the key is the key's JWK SHA-256 thumbprint (`cnf.jkt`).
 */
import { createHash, type KeyObject } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { calculateJwkThumbprint, decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import type { ServerConfig } from '../../config/index.js';
import type { HostStore } from '../../store/index.js';
import { baseUrl } from '../../http/index.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Realm } from '../../model/types.js';

/** Keycloak's client attribute: the client's access tokens must be DPoP-bound (a proof at every token request). */
export const DPOP_BOUND_ATTRIBUTE = 'dpop.bound.access.tokens';
/** The asymmetric algorithms a proof may use (Keycloak: every asymmetric SignatureProvider), as discovery lists them. */
export const DPOP_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const PROOF_LIFETIME_S = 10;
const CLOCK_SKEW_S = 15;
const MAX_PROOF_CHARS = 8192;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

export interface DpopProof {
  /** The proof key's JWK SHA-256 thumbprint (RFC 7638), what `cnf.jkt` names. */
  jkt: string;
}

/** What a token request binds: the proof's key, and whether the refresh token is bound too (public clients). */
export interface DpopBinding {
  jkt: string;
  bindRefresh: boolean;
}

export const dpopRequired = (client: Client) => client.attributes[DPOP_BOUND_ATTRIBUTE] === 'true';

/** The request's URL as a proof's `htu` must name it: this server's base (hostname, proxy) and the path, no query. */
export function requestUrl(ctx: { config: Pick<ServerConfig, 'hostname'> }, request: FastifyRequest): string {
  return `${baseUrl(request, ctx.config.hostname)}${request.url.split('?')[0]}`;
}

function normalizedUrl(text: string): string | null {
  try {
    const url = new URL(text);
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    return null;
  }
}

/** The request's one `DPoP` header, undefined when absent; two or more are refused (RFC 9449 4.3, check 1). */
export function dpopHeader(request: FastifyRequest): string | undefined {
  const value = request.headers.dpop;
  if (Array.isArray(value)) throw oauthError.invalid_dpop_proof('More than one DPoP proof');
  return value;
}

/**
 * Checks the request's DPoP proof for `method` and the request's URL (with `accessToken`: its `ath`), uses its
 * `jti` up (shared store), and answers its key's thumbprint. Throws `invalid_dpop_proof` (400, or `status`).
 */
export async function verifyDpopProof(
  ctx: { config: Pick<ServerConfig, 'hostname'>; hostStore: HostStore },
  realm: Realm,
  request: FastifyRequest,
  options: { accessToken?: string; status?: number } = {},
): Promise<DpopProof> {
  const refuse = (description: string) =>
    oauthError.invalid_dpop_proof(description, options.status ? { status: options.status, headers: { 'www-authenticate': `DPoP algs="${DPOP_ALGS.join(' ')}", error="invalid_dpop_proof"` } } : {});
  const proof = dpopHeader(request);
  if (!proof || !proof.trim()) throw refuse('DPoP proof is missing');
  if (proof.length > MAX_PROOF_CHARS) throw refuse('DPoP proof is too large');
  let header;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw refuse('DPoP header verification failure');
  }
  if (header.typ !== 'dpop+jwt') throw refuse(`Invalid or missing type in DPoP header: ${String(header.typ).slice(0, 40)}`);
  const alg = String(header.alg);
  if (!DPOP_ALGS.includes(alg)) throw refuse(`Unsupported DPoP algorithm: ${alg.slice(0, 20)}`);
  const jwk = header.jwk as JWK | undefined;
  if (!jwk || typeof jwk !== 'object') throw refuse('No JWK in DPoP header');
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw refuse('Private key is present in DPoP header');
  const imported = await importedKey(jwk, alg);
  if (!imported) throw refuse('Unsupported key type in DPoP header');
  const { key, jkt } = imported;
  let payload;
  try {
    ({ payload } = await jwtVerify(proof, key, { algorithms: [alg], typ: 'dpop+jwt', clockTolerance: CLOCK_SKEW_S }));
  } catch {
    throw refuse('DPoP verification failure: invalid signature or claims');
  }
  const { iat, jti, htm, htu, ath } = payload as Record<string, unknown>;
  if (typeof iat !== 'number' || typeof jti !== 'string' || !jti || typeof htm !== 'string' || !htm || typeof htu !== 'string' || !htu) {
    throw refuse('DPoP mandatory claims are missing');
  }
  const expected = normalizedUrl(requestUrl(ctx, request));
  if (normalizedUrl(htu) === null || normalizedUrl(htu) !== expected) throw refuse('DPoP HTTP URL mismatch');
  if (htm !== request.method) throw refuse('DPoP HTTP method mismatch');
  const now = Math.floor(Date.now() / 1000);
  if (!(iat <= now + CLOCK_SKEW_S && iat >= now - PROOF_LIFETIME_S - CLOCK_SKEW_S)) throw refuse('DPoP proof is not active');
  if (options.accessToken !== undefined) {
    if (typeof ath !== 'string') throw refuse('No access token hash in DPoP proof');
    if (ath !== createHash('sha256').update(options.accessToken).digest('base64url')) throw refuse('DPoP proof access token hash mismatch');
  }
  // Single use across nodes for as long as it could pass the time check, as Keycloak's DPoPReplayCheck.
  const replayKey = createHash('sha256').update(`${jti}\n${htu}`).digest('base64url');
  const ttlMs = Math.max(1, iat + PROOF_LIFETIME_S + CLOCK_SKEW_S - now) * 1000;
  if (!(await ctx.hostStore.setIfAbsent(`dpop:${realm.id}:${replayKey}`, '1', ttlMs))) throw refuse('DPoP proof has already been used');
  return { jkt };
}

/**
 * A proof key as jose imports it, with its thumbprint, by the JWK's text and algorithm: a client signs its proofs
 * with one key for many requests, and importing and hashing it each time cost more than verifying the proof. At most
 * KEY_CACHE_SIZE keys, the oldest forgotten first; only keys that imported as public keys are kept.
 */
const KEY_CACHE_SIZE = 1000;
const keyCache = new Map<string, { key: CryptoKey | KeyObject; jkt: string }>();

async function importedKey(jwk: JWK, alg: string): Promise<{ key: CryptoKey | KeyObject; jkt: string } | null> {
  const cacheKey = `${alg}\n${JSON.stringify(jwk)}`;
  const cached = keyCache.get(cacheKey);
  if (cached) return cached;
  let key;
  try {
    key = await importJWK(jwk, alg);
  } catch {
    return null;
  }
  if (key instanceof Uint8Array || key.type !== 'public') return null;
  const entry = { key, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
  if (keyCache.size >= KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value!);
  keyCache.set(cacheKey, entry);
  return entry;
}

/** The proof a token request carried, checked once by the token endpoint (token/index.ts) for its grant to read. */
const tokenRequestProofs = new WeakMap<FastifyRequest, DpopProof>();

export function rememberTokenRequestProof(request: FastifyRequest, proof: DpopProof): void {
  tokenRequestProofs.set(request, proof);
}

export function tokenRequestProof(request: FastifyRequest): DpopProof | undefined {
  return tokenRequestProofs.get(request);
}

/** The access token's scheme and value from `Authorization` (Bearer or DPoP), or null. */
export function authorizationToken(request: FastifyRequest): { scheme: 'Bearer' | 'DPoP'; token: string } | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  if (!match) return null;
  return { scheme: match[1].toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: match[2] };
}
