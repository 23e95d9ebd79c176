import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { ProtocolContext } from '../context.js';
import type { Realm } from '../../model/types.js';
import { issuerOf } from './tokens.js';

/** Keycloak's `typ` of the two registration tokens (ClientRegistrationTokenUtils). */
export const INITIAL_ACCESS_TOKEN = 'InitialAccessToken';
export const REGISTRATION_ACCESS_TOKEN = 'RegistrationAccessToken';
export type RegistrationTokenType = typeof INITIAL_ACCESS_TOKEN | typeof REGISTRATION_ACCESS_TOKEN;

/** What the database keeps of a token: the SHA-256 of its secret `jti` (the token itself is shown once). */
export const registrationTokenHash = (jti: string) => createHash('sha256').update(jti).digest('base64url');

/**
 * A token as Keycloak makes them: a JWT signed with the realm's key, `typ` its kind, `iss` and `aud` the realm's
 * issuer, `exp` when it expires. Its `jti` is 256 random bits, the secret the database knows only the hash of.
 */
export async function issueRegistrationToken(
  ctx: Pick<ProtocolContext, 'tokens'>,
  realm: Realm,
  base: string,
  typ: RegistrationTokenType,
  options: { expiresAt?: number; registrationAuth?: string; jti?: string } = {},
): Promise<{ token: string; hash: string; jti: string }> {
  const jti = options.jti ?? randomBytes(32).toString('base64url');
  const issuer = issuerOf(base, realm.name);
  const payload: Record<string, unknown> = {
    ...(options.expiresAt ? { exp: options.expiresAt } : {}),
    iat: Math.floor(Date.now() / 1000),
    jti,
    iss: issuer,
    aud: issuer,
    typ,
    ...(options.registrationAuth ? { registration_auth: options.registrationAuth } : {}),
  };
  const token = await ctx.tokens.signDocument(realm.id, payload, 'RS256');
  return { token, hash: registrationTokenHash(jti), jti };
}

/** The `typ` a bearer token says it has (unverified: only to pick how it is verified), or null for a malformed one. */
export function claimedType(token: string): string | null {
  try {
    const typ = decodeJwt(token).typ;
    return typeof typ === 'string' ? typ : '';
  } catch {
    return null;
  }
}

/**
 * A registration or initial access token of this realm, verified: signed by a key of the realm, issued by its issuer
 * at this server's base URL, not expired, of the `typ` asked. Null when it is not.
 */
export async function verifyRegistrationToken(
  ctx: Pick<ProtocolContext, 'keys'>,
  realm: Realm,
  base: string,
  token: string,
  typ: RegistrationTokenType,
): Promise<{ jti: string; kid: string; payload: JWTPayload } | null> {
  try {
    const header = decodeProtectedHeader(token);
    if (typeof header.kid !== 'string' || typeof header.alg !== 'string') return null;
    const found = await ctx.keys.verificationKey(realm.id, header.kid);
    if (!found || found.algorithm !== header.alg) return null;
    const issuer = issuerOf(base, realm.name);
    const { payload } = await jwtVerify(token, found.key, { algorithms: [header.alg], issuer, audience: issuer });
    if (payload.typ !== typ || typeof payload.jti !== 'string') return null;
    return { jti: payload.jti, kid: header.kid, payload };
  } catch {
    return null;
  }
}
