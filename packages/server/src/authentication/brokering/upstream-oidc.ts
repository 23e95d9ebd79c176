import { createHash, randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, importJWK, importSPKI, importX509, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { OutboundGuard } from '@realmgate/spi';
import { outboundRequest } from '../../http/index.js';
import type { IdentityProvider } from '../../model/types.js';

/**
 * The upstream side of an OpenID Connect identity provider (Keycloak's `oidc` and `keycloak-oidc`): the
 * authorization request the browser is sent with, the code exchange, the ID token's checks and the user info
 * request. Every request to the upstream goes through the outbound guard (http/outbound.ts over http/target-guard.ts). Nothing here logs a
 * secret: errors name the endpoint and the status, never a body that might echo credentials.
 */

/** The OpenID Connect provider ids this server signs in through. */
export const OIDC_PROVIDER_IDS = new Set(['oidc', 'keycloak-oidc']);

/** Why the upstream's answer was refused; the `reason` of the event's error detail. */
export class UpstreamError extends Error {
  constructor(
    /** Keycloak's event error: `identity_provider_error` unless more precise. */
    readonly error: 'identity_provider_error' | 'invalid_token',
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** What the upstream says of the user (Keycloak's BrokeredIdentityContext, the parts mappers read). */
export interface BrokeredIdentity {
  /** The upstream's `sub`: the link's federated user id. */
  id: string;
  /** The local account's username: the upstream's, or what the username mapper made of it (Keycloak's modelUsername). */
  username: string;
  /**
   * The upstream's own username when the username mapper renamed `username` (Keycloak keeps both: the link and the
   * events name the upstream account by its own name); absent: `username` is it. Read through upstreamUsername().
   */
  upstreamUsername?: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  emailVerified: boolean;
  /**
   * The upstream said this address is NOT verified (GitHub's `verified: false`, Bitbucket's `is_confirmed: false`):
   * `trustEmail` does not mark it verified then.
   */
  emailUnverified?: boolean;
  /** The ID token's claims, then the user info's (user info wins), for the mappers. */
  claims: Record<string, unknown>;
  /** The ID token's claims alone (Keycloak's oidc-role-idp-mapper reads the ID token or the access token). */
  idToken: Record<string, unknown>;
  accessTokenClaims: Record<string, unknown> | null;
  /** The token response, kept when the provider stores tokens (storeToken). */
  tokenResponse: Record<string, unknown>;
}

const flag = (value: string | undefined) => value === 'true';
const b64url = (bytes: Buffer) => bytes.toString('base64url');

export interface UpstreamRequest {
  url: string;
  nonce: string;
  /** The PKCE verifier, when the provider asks for PKCE. */
  codeVerifier: string | null;
}

/**
 * The authorization request to the upstream, with a fresh nonce and (pkceEnabled) PKCE. A plain OAuth 2 provider
 * (`oauth2`: GitHub, Microsoft, …) gets its scope as configured and no nonce; `params` are a provider's own (Google's `hd`).
 */
export function authorizationRequest(
  provider: IdentityProvider,
  redirectUri: string,
  state: string,
  extra: { loginHint?: string; prompt?: string; oauth2?: boolean; params?: Record<string, string> } = {},
): UpstreamRequest {
  const c = provider.config;
  if (!c.authorizationUrl) throw new UpstreamError('identity_provider_error', 'the identity provider has no authorization URL');
  let url: URL;
  try {
    url = new URL(c.authorizationUrl);
  } catch {
    throw new UpstreamError('identity_provider_error', 'the identity provider’s authorization URL is not a URL');
  }
  const scope = (c.defaultScope ?? '').trim() || 'openid';
  const nonce = b64url(randomBytes(24));
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: c.clientId ?? '',
    redirect_uri: redirectUri,
    scope: extra.oauth2 || scope.split(/\s+/).includes('openid') ? scope : `openid ${scope}`,
    state,
  };
  if (!extra.oauth2 && !flag(c.disableNonce)) params.nonce = nonce;
  let codeVerifier: string | null = null;
  if (flag(c.pkceEnabled)) {
    codeVerifier = b64url(randomBytes(32));
    const method = c.pkceMethod === 'plain' ? 'plain' : 'S256';
    params.code_challenge = method === 'plain' ? codeVerifier : b64url(createHash('sha256').update(codeVerifier).digest());
    params.code_challenge_method = method;
  }
  if (extra.loginHint && flag(c.loginHint)) params.login_hint = extra.loginHint;
  const prompt = c.prompt && c.prompt !== 'unspecified' ? c.prompt : extra.prompt;
  if (prompt) params.prompt = prompt;
  Object.assign(params, extra.params);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return { url: url.href, nonce, codeVerifier };
}

/** The code exchange at the token endpoint, the client authenticated as the provider's config says. */
export async function exchangeCode(guard: OutboundGuard, provider: IdentityProvider, code: string, redirectUri: string, codeVerifier: string | null): Promise<Record<string, unknown>> {
  const c = provider.config;
  if (!c.tokenUrl) throw new UpstreamError('identity_provider_error', 'the identity provider has no token URL');
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri });
  if (codeVerifier) form.set('code_verifier', codeVerifier);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const method = c.clientAuthMethod || 'client_secret_post';
  if (method === 'client_secret_basic') {
    // RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
    const part = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
    headers.authorization = `Basic ${Buffer.from(`${part(c.clientId ?? '')}:${part(c.clientSecret ?? '')}`).toString('base64')}`;
  } else if (method === 'client_secret_post') {
    form.set('client_id', c.clientId ?? '');
    form.set('client_secret', c.clientSecret ?? '');
  } else {
    throw new UpstreamError('identity_provider_error', `client authentication ${method} towards the identity provider is not supported`);
  }
  let response;
  try {
    response = await outboundRequest(guard, c.tokenUrl, { method: 'POST', headers, body: form.toString() });
  } catch (error) {
    throw new UpstreamError('identity_provider_error', `token endpoint unreachable: ${(error as Error).message}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = null;
  }
  // GitHub answers a refused code with 200 and an `error` field.
  const refused = typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string';
  if (response.status !== 200 || typeof body !== 'object' || body === null || refused) {
    const upstream = typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error.slice(0, 64) : `status ${response.status}`;
    throw new UpstreamError('identity_provider_error', `token endpoint refused the code (${upstream})`);
  }
  return body as Record<string, unknown>;
}

/** JWKS documents by URL, a short while: every login would otherwise fetch it. Refreshed when a kid is not in it. */
const jwksCache = new Map<string, { keys: JSONWebKeySet; at: number }>();
const JWKS_TTL_MS = 5 * 60 * 1000;

async function fetchJwks(guard: OutboundGuard, url: string, refresh: boolean): Promise<JSONWebKeySet> {
  const cached = jwksCache.get(url);
  if (cached && !refresh && Date.now() - cached.at < JWKS_TTL_MS) return cached.keys;
  let response;
  try {
    response = await outboundRequest(guard, url);
  } catch (error) {
    throw new UpstreamError('identity_provider_error', `JWKS endpoint unreachable: ${(error as Error).message}`);
  }
  let keys: JSONWebKeySet;
  try {
    keys = JSON.parse(response.body) as JSONWebKeySet;
  } catch {
    throw new UpstreamError('identity_provider_error', `JWKS endpoint answered no JSON (status ${response.status})`);
  }
  if (response.status !== 200 || !Array.isArray(keys?.keys)) throw new UpstreamError('identity_provider_error', `JWKS endpoint answered status ${response.status}`);
  if (jwksCache.size > 256) jwksCache.clear();
  jwksCache.set(url, { keys, at: Date.now() });
  return keys;
}

/**
 * Keycloak's reload-keys of a provider: its JWKS fetched again now (the cache replaced) when its signatures are
 * checked by its JWKS URL, true; false when they are not (nothing is kept to reload). An unreachable or broken JWKS
 * throws the UpstreamError a sign-in would meet, and the cached keys stay.
 */
export async function reloadUpstreamKeys(guard: OutboundGuard, provider: IdentityProvider): Promise<boolean> {
  const c = provider.config;
  if (!flag(c.validateSignature) || !usesJwksUrl(c) || !c.jwksUrl) return false;
  await fetchJwks(guard, c.jwksUrl, true);
  return true;
}

/** Signatures checked by the JWKS URL: asked for, or a JWKS URL without a configured key (verifyUpstreamJwt's choice). */
const usesJwksUrl = (c: Record<string, string | undefined>) => flag(c.useJwksUrl) || (!c.publicKeySignatureVerifier && !!c.jwksUrl);

/** The configured key (`publicKeySignatureVerifier`): a PEM public key or certificate, or a JWK. */
async function configuredKey(text: string, alg: string) {
  const value = text.trim();
  if (value.startsWith('{')) return importJWK(JSON.parse(value) as Parameters<typeof importJWK>[0], alg);
  if (value.includes('BEGIN CERTIFICATE')) return importX509(value, alg);
  if (value.includes('BEGIN PUBLIC KEY')) return importSPKI(value, alg);
  // Keycloak's console takes the bare base64 of a certificate or a key too.
  try {
    return await importX509(`-----BEGIN CERTIFICATE-----\n${value}\n-----END CERTIFICATE-----`, alg);
  } catch {
    return importSPKI(`-----BEGIN PUBLIC KEY-----\n${value}\n-----END PUBLIC KEY-----`, alg);
  }
}

/**
 * The ID token's checks, as Keycloak's OIDCIdentityProvider makes them: issuer (when configured), audience (the
 * provider's client id), expiry (with `allowedClockSkew`), nonce, and the signature by the JWKS URL or the
 * configured key, unless the operator turned signature validation off.
 */
async function verifyIdToken(guard: OutboundGuard, provider: IdentityProvider, idToken: string, nonce: string): Promise<JWTPayload> {
  const claims = await verifyUpstreamJwt(guard, provider, idToken, 'ID token', ['sub', 'exp']);
  if (!flag(provider.config.disableNonce) && claims.nonce !== nonce) throw new UpstreamError('invalid_token', 'ID token refused: its nonce is not this sign-in’s');
  return claims;
}

/**
 * A JWT the provider signed for this server (an ID token, a back-channel logout token): audience the provider's
 * `clientId`, issuer its `issuer` when set, the clock skew it allows; the signature by its JWKS URL or configured
 * key, unless the operator turned signature validation off (then only the claims are checked). `requiredClaims`
 * must be present (jose's check; `exp` is also checked for expiry when present).
 */
export async function verifyUpstreamJwt(guard: OutboundGuard, provider: IdentityProvider, jwt: string, what: string, requiredClaims: string[]): Promise<JWTPayload> {
  const c = provider.config;
  const skew = Number.parseInt(c.allowedClockSkew ?? '0', 10) || 0;
  const options = { audience: c.clientId ?? '', ...(c.issuer ? { issuer: c.issuer } : {}), clockTolerance: skew, requiredClaims };
  try {
    if (!flag(c.validateSignature)) {
      // Keycloak's default too: the token came straight from the token endpoint over the back channel.
      const claims = decodeJwt(jwt);
      checkClaims(claims, options.audience, c.issuer, skew, what, requiredClaims);
      return claims;
    }
    if (usesJwksUrl(c)) {
      if (!c.jwksUrl) throw new UpstreamError('invalid_token', 'signature validation by JWKS URL without a JWKS URL');
      const { kid } = decodeProtectedHeader(jwt);
      let keys = await fetchJwks(guard, c.jwksUrl, false);
      if (kid && !keys.keys.some((k) => k.kid === kid)) keys = await fetchJwks(guard, c.jwksUrl, true);
      return (await jwtVerify(jwt, createLocalJWKSet(keys), options)).payload;
    }
    if (!c.publicKeySignatureVerifier) throw new UpstreamError('invalid_token', 'signature validation without a key or a JWKS URL');
    const { alg } = decodeProtectedHeader(jwt);
    const key = await configuredKey(c.publicKeySignatureVerifier, alg ?? 'RS256');
    return (await jwtVerify(jwt, key, options)).payload;
  } catch (error) {
    if (error instanceof UpstreamError) throw error;
    throw new UpstreamError('invalid_token', `${what} refused: ${(error as Error).message}`);
  }
}

/** The claim checks when the signature is not checked (jose checks them with the signature otherwise). */
function checkClaims(claims: JWTPayload, audience: string, issuer: string | undefined, skew: number, what: string, required: string[]): void {
  const now = Math.floor(Date.now() / 1000);
  for (const name of required) if (claims[name] === undefined || claims[name] === '') throw new UpstreamError('invalid_token', `${what} refused: no ${name}`);
  if (claims.sub !== undefined && typeof claims.sub !== 'string') throw new UpstreamError('invalid_token', `${what} refused: no sub`);
  if (claims.exp !== undefined && (typeof claims.exp !== 'number' || claims.exp + skew < now)) throw new UpstreamError('invalid_token', `${what} refused: expired`);
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(audience)) throw new UpstreamError('invalid_token', `${what} refused: wrong audience`);
  if (issuer && claims.iss !== issuer) throw new UpstreamError('invalid_token', `${what} refused: wrong issuer`);
}

async function userInfo(guard: OutboundGuard, provider: IdentityProvider, accessToken: string): Promise<Record<string, unknown>> {
  const url = provider.config.userInfoUrl;
  if (!url) return {};
  let response;
  try {
    response = await outboundRequest(guard, url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
  } catch (error) {
    throw new UpstreamError('identity_provider_error', `user info endpoint unreachable: ${(error as Error).message}`);
  }
  if (response.status !== 200) throw new UpstreamError('identity_provider_error', `user info endpoint answered status ${response.status}`);
  try {
    const body = JSON.parse(response.body) as unknown;
    if (typeof body === 'object' && body !== null && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // a signed (JWT) user info answer is not read: the ID token's claims stand
  }
  return {};
}

export const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

/** A provider's own steps in the OpenID Connect path (social-providers.ts): Google's hosted domain, GitLab's profile. */
export interface OidcHooks {
  /** Refuses an ID token (throws UpstreamError) beyond the standard checks. */
  checkIdToken?(claims: Record<string, unknown>): void;
  /** The identity from the ID token and the user info, where the provider does not use the standard claims. */
  identity?(idClaims: Record<string, unknown>, info: Record<string, unknown>): Pick<BrokeredIdentity, 'id' | 'username' | 'email' | 'firstName' | 'lastName' | 'emailVerified'>;
}

/** The callback's work: code → tokens → verified identity. */
export async function completeUpstreamLogin(
  guard: OutboundGuard,
  provider: IdentityProvider,
  code: string,
  redirectUri: string,
  pending: { nonce: string; codeVerifier: string | null },
  hooks: OidcHooks = {},
): Promise<BrokeredIdentity> {
  const tokens = await exchangeCode(guard, provider, code, redirectUri, pending.codeVerifier);
  const idToken = typeof tokens.id_token === 'string' ? tokens.id_token : null;
  if (!idToken) throw new UpstreamError('invalid_token', 'the token response has no ID token');
  const idClaims = { ...(await verifyIdToken(guard, provider, idToken, pending.nonce)) } as Record<string, unknown>;
  hooks.checkIdToken?.(idClaims);
  const accessToken = typeof tokens.access_token === 'string' ? tokens.access_token : null;
  const info = accessToken && provider.config.disableUserInfo !== 'true' ? await userInfo(guard, provider, accessToken) : {};
  // The user info answer must be about the same user (OpenID Connect Core 5.3.2).
  if (info.sub !== undefined && info.sub !== idClaims.sub) throw new UpstreamError('invalid_token', 'user info is about another subject than the ID token');
  let accessTokenClaims: Record<string, unknown> | null = null;
  try {
    accessTokenClaims = accessToken ? (decodeJwt(accessToken) as Record<string, unknown>) : null;
  } catch {
    accessTokenClaims = null;
  }
  const claims = { ...idClaims, ...info };
  const id = String(idClaims.sub);
  const standard = {
    id,
    username: text(claims.preferred_username) ?? text(claims.email) ?? id,
    email: text(claims.email),
    firstName: text(claims.given_name),
    lastName: text(claims.family_name),
    emailVerified: claims.email_verified === true || claims.email_verified === 'true',
  };
  return {
    ...(hooks.identity ? hooks.identity(idClaims, info) : standard),
    claims,
    idToken: idClaims,
    accessTokenClaims,
    tokenResponse: tokens,
  };
}

/** The name the upstream knows its account by (the federated link's userName, the events' identity_provider_identity). */
export const upstreamUsername = (identity: Pick<BrokeredIdentity, 'username' | 'upstreamUsername'>): string => identity.upstreamUsername ?? identity.username;
