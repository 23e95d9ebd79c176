import { createHash, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { AccessTokenClaims } from '@realmgate/spi';
import { newId } from '../../credentials/index.js';
import type { RealmKeys } from '../../keys/index.js';
import { TokenVerificationError } from '../../model/errors.js';
import { sessionAlive, sessionExpiresAt } from '../../model/sessions.js';
import type { Client, Realm, User } from '../../model/types.js';
import { effectiveRoles } from '../../services/index.js';
import type { Storage } from '../../storage/index.js';

/** `Offline`: the refresh token of an offline session (`offline_access`), as Keycloak types it. */
export type TokenType = 'Bearer' | 'Refresh' | 'Offline' | 'ID';

export const issuerOf = (base: string, realmName: string) => `${base}/realms/${encodeURIComponent(realmName)}`;

export interface IssuedTokens {
  access_token: string;
  expires_in: number;
  refresh_expires_in: number;
  refresh_token?: string;
  token_type: 'Bearer';
  id_token?: string;
  'not-before-policy': 0;
  session_state?: string;
  scope: string;
}

export interface TokenRequestContext {
  base: string;
  realm: Realm;
  client: Client;
  user: User;
  /** Absent for service accounts (no session, as Keycloak 26 does for client_credentials). */
  sessionId: string | null;
  sessionStarted?: number;
  scope: string;
  /** jti for the refresh token, stored by the caller for rotation. */
  refreshTokenId?: string;
  nonce?: string;
  authTime?: number;
  /** The session is an offline one: the refresh token is `Offline`, kept by the offline timeouts. */
  offline?: boolean;
  /** The refresh token's family: new at sign-in, passed on by every refresh (Keycloak's `reuse_id`). */
  reuseId?: string;
}

/** Scopes this server knows; anything else requested is dropped, as Keycloak ignores unknown scopes. */
const knownScopes = new Set(['openid', 'profile', 'email', 'roles', 'web-origins', 'offline_access', 'basic', 'acr', 'organization']);

/** The scopes granted for a request; `offline_access` only where the caller allows it (the user holds the role). */
export function grantedScope(requested: string | undefined, offlineAllowed = false): string {
  const scopes = new Set(['profile', 'email']);
  for (const s of (requested ?? '').split(' ')) if (knownScopes.has(s) && (s !== 'offline_access' || offlineAllowed)) scopes.add(s);
  const ordered = [...scopes].sort((a, b) => (a === 'openid' ? -1 : b === 'openid' ? 1 : a.localeCompare(b)));
  return ordered.join(' ');
}

export class TokenService {
  constructor(
    private readonly storage: Storage,
    private readonly keys: RealmKeys,
  ) {}

  async issue(ctx: TokenRequestContext, withRefresh: boolean): Promise<IssuedTokens> {
    const { realm, client, user } = ctx;
    const now = Math.floor(Date.now() / 1000);
    const issuer = issuerOf(ctx.base, realm.name);
    const roles = await effectiveRoles(this.storage, realm.id, user.id, client);
    const resourceAccess: Record<string, { roles: string[] }> = {};
    for (const [clientId, names] of Object.entries(roles.clientRoles)) resourceAccess[clientId] = { roles: names };
    const audience = Object.keys(resourceAccess).filter((c) => c !== client.clientId);
    const fullName = [user.firstName, user.lastName].filter(Boolean).join(' ');
    const scopes = ctx.scope.split(' ');
    const profile = scopes.includes('profile');
    const email = scopes.includes('email');
    // The profile and email scopes' claims, in both the access token and the ID token.
    const userClaims = {
      ...(profile && fullName ? { name: fullName } : {}),
      ...(profile ? { preferred_username: user.username } : {}),
      ...(profile && user.firstName ? { given_name: user.firstName } : {}),
      ...(profile && user.lastName ? { family_name: user.lastName } : {}),
      ...(email && user.email ? { email: user.email } : {}),
    };
    const serviceAccount = user.serviceAccountClientId !== null;

    const accessClaims: Record<string, unknown> = {
      jti: newId(),
      typ: 'Bearer',
      azp: client.clientId,
      ...(ctx.sessionId ? { sid: ctx.sessionId } : {}),
      ...(ctx.authTime ? { auth_time: ctx.authTime } : {}),
      acr: '1',
      'allowed-origins': client.webOrigins,
      realm_access: { roles: roles.realmRoles },
      resource_access: resourceAccess,
      scope: ctx.scope,
      ...(email ? { email_verified: user.emailVerified } : {}),
      ...(serviceAccount ? { client_id: client.clientId } : {}),
      ...userClaims,
    };
    const accessToken = await this.sign(realm.id, accessClaims, {
      issuer,
      subject: user.id,
      audience: audience.length ? (audience.length === 1 ? audience[0] : audience) : undefined,
      iat: now,
      exp: now + realm.accessTokenLifespan,
    });

    const result: IssuedTokens = {
      access_token: accessToken,
      expires_in: realm.accessTokenLifespan,
      refresh_expires_in: 0,
      token_type: 'Bearer',
      'not-before-policy': 0,
      scope: ctx.scope,
    };
    if (ctx.sessionId) result.session_state = ctx.sessionId;

    if (withRefresh && ctx.sessionId && ctx.refreshTokenId) {
      // The refresh token lives as long as its session would if it were not refreshed again. As Keycloak, an
      // Offline token carries an expiry only when the realm limits offline sessions (offlineSessionMaxLifespanEnabled);
      // otherwise it has none (refresh_expires_in 0) and lives while its offline session does.
      const expires = !ctx.offline || realm.offlineSessionMaxLifespanEnabled;
      const refreshExp = expires ? Math.floor(sessionExpiresAt(realm, { started: ctx.sessionStarted ?? Date.now(), lastRefresh: now * 1000, offline: ctx.offline }) / 1000) : undefined;
      result.refresh_expires_in = refreshExp === undefined ? 0 : Math.max(0, refreshExp - now);
      result.refresh_token = await this.sign(
        realm.id,
        { jti: ctx.refreshTokenId, typ: ctx.offline ? 'Offline' : 'Refresh', azp: client.clientId, sid: ctx.sessionId, scope: ctx.scope, reuse_id: ctx.reuseId ?? newId() },
        { issuer, subject: user.id, audience: issuer, iat: now, exp: refreshExp },
      );
    }

    if (scopes.includes('openid') && !serviceAccount) {
      const atHash = createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
      result.id_token = await this.sign(
        realm.id,
        {
          jti: newId(),
          typ: 'ID',
          azp: client.clientId,
          ...(ctx.sessionId ? { sid: ctx.sessionId } : {}),
          ...(ctx.authTime ? { auth_time: ctx.authTime } : {}),
          ...(ctx.nonce ? { nonce: ctx.nonce } : {}),
          at_hash: atHash,
          acr: '1',
          ...(email ? { email_verified: user.emailVerified } : {}),
          ...userClaims,
        },
        { issuer, subject: user.id, audience: client.clientId, iat: now, exp: now + realm.accessTokenLifespan },
      );
    }
    return result;
  }

  private async sign(
    realmId: string,
    claims: Record<string, unknown>,
    std: { issuer: string; subject: string; audience?: string | string[]; iat: number; exp?: number },
  ): Promise<string> {
    const key = await this.keys.signingKey(realmId);
    // The JWS jose's SignJWT made before, byte for byte (header and claim order): node:crypto's sign on libuv's
    // pool is the faster path measured (`npm run bench token`), and keeps the event loop free while it runs.
    const payload: Record<string, unknown> = { ...claims, iss: std.issuer, sub: std.subject, iat: std.iat };
    if (std.exp !== undefined) payload.exp = std.exp;
    if (std.audience) payload.aud = std.audience;
    return signJws({ alg: key.algorithm, typ: 'JWT', kid: key.kid }, payload, key.keyObject);
  }

  /**
   * Verifies a token of this realm: RS256 only (never `none` or an HMAC), a key the realm published,
   * the realm's issuer, not expired, the expected `typ`, not revoked, and its session still alive.
   */
  async verify(
    realm: Realm,
    token: string,
    expectedType: TokenType,
    base: string | null,
    /** For an `id_token_hint`: an expired token, or one whose session ended, still names who it was. */
    options: { hint?: boolean } = {},
  ): Promise<AccessTokenClaims & JWTPayload> {
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw new TokenVerificationError('malformed', 'malformed token');
    }
    if (header.alg !== 'RS256') throw new TokenVerificationError('algorithm_not_accepted', `token algorithm ${String(header.alg)} is not accepted`);
    if (typeof header.kid !== 'string') throw new TokenVerificationError('missing_key_id', 'token has no key id');
    const key = await this.keys.verificationKey(realm.id, header.kid);
    if (!key) throw new TokenVerificationError('unknown_key', 'token was not signed by a key of this realm');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, { algorithms: ['RS256'], clockTolerance: options.hint ? Number.MAX_SAFE_INTEGER : 5 }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new TokenVerificationError('expired', 'token expired');
      throw new TokenVerificationError('bad_signature_or_claims', 'invalid token signature or claims');
    }
    const expectedIssuer = base ? issuerOf(base, realm.name) : null;
    const issuerOk = expectedIssuer
      ? payload.iss === expectedIssuer
      : typeof payload.iss === 'string' && payload.iss.endsWith(`/realms/${encodeURIComponent(realm.name)}`);
    if (!issuerOk) throw new TokenVerificationError('wrong_issuer', 'token issued by another realm or server');
    if (payload.typ !== expectedType) throw new TokenVerificationError('wrong_type', `expected a ${expectedType} token`);
    if (typeof payload.jti === 'string' && (await this.storage.sessions.isRevoked(payload.jti))) {
      throw new TokenVerificationError('revoked', 'token revoked');
    }
    if (!options.hint && typeof payload.sid === 'string') {
      const session = await this.storage.sessions.byId(payload.sid);
      // Ended (logout, revocation) or past the realm's idle or maximum lifetime.
      if (!session || session.realmId !== realm.id || !sessionAlive(realm, session)) throw new TokenVerificationError('session_ended', 'session ended');
      // The client's part of the session too: it ends alone when its refresh token is reused beyond the realm's rule.
      const client = typeof payload.azp === 'string' ? await this.storage.clients.cachedByClientId(realm.id, payload.azp) : null;
      if (client && !(await this.storage.sessions.clientSession(session.id, client.id))) throw new TokenVerificationError('session_ended', 'session ended');
    }
    if (!options.hint) {
      // Service-account tokens have no session: without these checks they would outlive a disabled or
      // deleted client or user until they expire.
      const user = typeof payload.sub === 'string' ? await this.storage.users.cachedById(realm.id, payload.sub) : null;
      if (!user || !user.enabled) throw new TokenVerificationError('user_disabled', 'user not found or disabled');
      const client = typeof payload.azp === 'string' ? await this.storage.clients.cachedByClientId(realm.id, payload.azp) : null;
      if (!client || !client.enabled) throw new TokenVerificationError('client_disabled', 'client not found or disabled');
    }
    return payload as AccessTokenClaims & JWTPayload;
  }
}

const base64url = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** A compact JWS (RS256: RSASSA-PKCS1-v1_5 with SHA-256) signed on libuv's thread pool. */
export function signJws(header: { alg: string; typ: string; kid: string }, payload: Record<string, unknown>, key: KeyObject): Promise<string> {
  if (header.alg !== 'RS256') return Promise.reject(new Error(`signing algorithm ${header.alg} is not supported`));
  const input = `${base64url(header)}.${base64url(payload)}`;
  return new Promise((done, fail) => {
    cryptoSign('sha256', Buffer.from(input), key, (error, signature) => (error ? fail(error) : done(`${input}.${signature.toString('base64url')}`)));
  });
}
