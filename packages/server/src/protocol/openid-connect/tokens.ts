import { createHash, createHmac, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { AccessTokenClaims } from '@realmgate/spi';
import { newId } from '../../credentials/index.js';
import { TOKEN_SIGNATURE_ALGS, type RealmKeys } from '../../keys/index.js';
import { SIGNATURE_HASH, signatureKeyOptions } from '../../keys/jws.js';
import { TokenVerificationError } from '../../model/errors.js';
import { clientSessionExpiresAt, clientSessionsLimited, sessionAlive, sessionExpiresAt } from '../../model/sessions.js';
import type { Client, Realm, User } from '../../model/types.js';
import { clientScopeSet } from '../../services/client-scope-set.js';
import type { Storage } from '../../storage/index.js';
import type { DpopBinding, DpopProof } from './dpop.js';
import { loadMapperData, needsOf, runMappers, scopePlan, type Claims, type ScopePlan } from './mappers/index.js';

/** `Offline`: the refresh token of an offline session (`offline_access`), as Keycloak types it. */
export type TokenType = 'Bearer' | 'Refresh' | 'Offline' | 'ID';

export const issuerOf = (base: string, realmName: string) => `${base}/realms/${encodeURIComponent(realmName)}`;

export interface IssuedTokens {
  access_token: string;
  expires_in: number;
  refresh_expires_in: number;
  refresh_token?: string;
  /** `N_A` (RFC 8693 2.2.1): a token exchange answering an ID token in `access_token`, which is no access token. */
  token_type: 'Bearer' | 'DPoP' | 'N_A';
  id_token?: string;
  'not-before-policy': 0;
  session_state?: string;
  scope: string;
  /** RFC 8693 2.2.1: what a token exchange issued (the access token's type, or the refresh token's). */
  issued_token_type?: string;
}

export interface TokenRequestContext {
  base: string;
  realm: Realm;
  client: Client;
  user: User;
  /** Absent for service accounts (no session, as Keycloak 26 does for client_credentials). */
  sessionId: string | null;
  sessionStarted?: number;
  /**
   * The request's scope as the grant keeps it (normalizeScope): `openid` and the scope names asked for. The token's
   * `scope` is made from it and the client's scopes (ScopePlan.scope).
   */
  scope: string;
  /** jti for the refresh token, stored by the caller for rotation. */
  refreshTokenId?: string;
  nonce?: string;
  authTime?: number;
  /** The caller's address: a service account's `clientHost` and `clientAddress` session notes. */
  clientAddress?: string | null;
  /** The session is an offline one: the refresh token is `Offline`, kept by the offline timeouts. */
  offline?: boolean;
  /** The refresh token's family: new at sign-in, passed on by every refresh (Keycloak's `reuse_id`). */
  reuseId?: string;
  /** RFC 9449: the access token (and, when `bindRefresh`, the refresh token) bound to this key (`cnf.jkt`). */
  dpop?: DpopBinding;
  /** RFC 8705: the access and refresh tokens bound to the client's certificate (`cnf["x5t#S256"]`, its thumbprint). */
  certificateThumbprint?: string;
  /**
   * Token exchange's `audience`: the access token's `aud` kept to these client ids, each of which the client's own
   * token must have had (its mappers' `aud`); one it would not have is refused (MissingAudience), never added.
   */
  audience?: readonly string[];
  /**
   * Token exchange's `requested_token_type` id_token: an ID token whatever the scope (Keycloak's generateIDToken),
   * without `at_hash` (the access token it would hash is not handed out).
   */
  idTokenAlways?: boolean;
}

/** Requested audiences the client's token would not have (token exchange refuses them: no widening). */
export class MissingAudience extends Error {
  constructor(readonly missing: string[]) {
    super(`Requested audience not available: ${missing.join(', ')}`);
  }
}

export class TokenService {
  constructor(
    private readonly storage: Storage,
    private readonly keys: RealmKeys,
  ) {}

  /**
   * The client's scope set and the plan the request's scope makes of it (applied scopes, the token's `scope`, the
   * mappers per document); the plan is computed once per scope set and request scope.
   */
  async plan(client: Client, scope: string): Promise<ScopePlan> {
    return scopePlan(await clientScopeSet(this.storage, client), scope);
  }

  /**
   * What the mappers of one document (userinfo, introspection) write for an access token's user and client, with
   * the token's scope; the session notes are read back from the token (auth_time, a service account's client_id,
   * clientHost, clientAddress).
   */
  async mappedClaims(kind: 'userinfo' | 'introspection', input: { realm: Realm; client: Client; user: User; token: Record<string, unknown>; base: string }): Promise<Claims> {
    const { realm, client, user, token } = input;
    const plan = await this.plan(client, typeof token.scope === 'string' ? token.scope : '');
    const notes: Record<string, string> = {};
    for (const [note, claim] of [['AUTH_TIME', 'auth_time'], ['client_id', 'client_id'], ['clientHost', 'clientHost'], ['clientAddress', 'clientAddress']]) {
      if (typeof token[claim] === 'string' || typeof token[claim] === 'number') notes[note] = String(token[claim]);
    }
    if (notes.client_id !== undefined && user.serviceAccountClientId === null) delete notes.client_id;
    const data = await loadMapperData(this.storage, plan.needs[kind], { realm, client, user, scopeIds: plan.scopeIds, notes, base: input.base });
    return runMappers(plan.mappers[kind], data, kind);
  }

  async issue(ctx: TokenRequestContext, withRefresh: boolean): Promise<IssuedTokens> {
    const { realm, client, user } = ctx;
    const now = Math.floor(Date.now() / 1000);
    const issuer = issuerOf(ctx.base, realm.name);
    const serviceAccount = user.serviceAccountClientId !== null;
    const plan = await this.plan(client, ctx.scope);
    const withIdToken = ctx.idTokenAlways === true || (plan.openid && !serviceAccount);
    const data = await loadMapperData(this.storage, needsOf(plan, withIdToken ? ['access', 'id'] : ['access']), {
      realm,
      client,
      user,
      scopeIds: plan.scopeIds,
      notes: sessionNotes(ctx),
      base: ctx.base,
    });

    // The token's mechanics are written here; everything else (sub and aud included) by the applied mappers.
    const mapped = restrictAudience(ctx, runMappers(plan.mappers.access, data, 'access'));
    const accessToken = await this.signPayload(realm.id, accessPayload(ctx, plan, mapped, now, issuer), signatureAlgorithm(realm, client, 'access'));

    const result: IssuedTokens = {
      access_token: accessToken,
      expires_in: realm.accessTokenLifespan,
      refresh_expires_in: 0,
      token_type: ctx.dpop ? 'DPoP' : 'Bearer',
      'not-before-policy': 0,
      scope: plan.scope,
    };
    if (ctx.sessionId) result.session_state = ctx.sessionId;

    if (withRefresh && ctx.sessionId && ctx.refreshTokenId) {
      // The refresh token lives as long as its session would if it were not refreshed again. As Keycloak, an
      // Offline token carries an expiry only when the realm limits offline sessions (offlineSessionMaxLifespanEnabled);
      // otherwise it has none (refresh_expires_in 0) and lives while its offline session does.
      // The realm's client session lifespans shorten it further (the client session's start read only then).
      const limited = clientSessionsLimited(realm, ctx.offline);
      const expires = !ctx.offline || realm.offlineSessionMaxLifespanEnabled || limited;
      const userSession = { started: ctx.sessionStarted ?? Date.now(), lastRefresh: now * 1000, offline: ctx.offline };
      const clientStarted = limited ? ((await this.storage.sessions.clientSession(ctx.sessionId, client.id))?.started ?? Date.now()) : 0;
      const expiresAt = limited ? clientSessionExpiresAt(realm, userSession, { started: clientStarted, lastRefresh: now * 1000 }) : sessionExpiresAt(realm, userSession);
      const refreshExp = expires ? Math.floor(expiresAt / 1000) : undefined;
      result.refresh_expires_in = refreshExp === undefined ? 0 : Math.max(0, refreshExp - now);
      // As Keycloak's: MACed with the realm's HS512 key, which only this server holds and reads.
      const key = await this.keys.refreshTokenKey(realm.id);
      if (!key) throw new Error(`realm ${realm.id} has no active key`);
      result.refresh_token = macJws(
        { alg: 'HS512', typ: 'JWT', kid: key.kid },
        {
          ...(refreshExp !== undefined ? { exp: refreshExp } : {}),
          iat: now,
          jti: ctx.refreshTokenId,
          iss: issuer,
          aud: issuer,
          sub: user.id,
          typ: ctx.offline ? 'Offline' : 'Refresh',
          azp: client.clientId,
          sid: ctx.sessionId,
          scope: plan.scope,
          reuse_id: ctx.reuseId ?? newId(),
          ...confirmation(ctx.dpop?.bindRefresh ? ctx.dpop.jkt : undefined, ctx.certificateThumbprint),
        },
        key.secret,
      );
    }

    if (withIdToken) {
      // OIDC Core 3.1.3.6: the left half of the hash of the ID token's own algorithm (SHA-512 for EdDSA, as Keycloak).
      const idAlg = signatureAlgorithm(realm, client, 'id');
      const hash = SIGNATURE_HASH[idAlg] ?? 'sha256';
      const digest = createHash(hash).update(accessToken).digest();
      const atHash = ctx.idTokenAlways ? null : digest.subarray(0, digest.length / 2).toString('base64url');
      const idClaims = runMappers(plan.mappers.id, data, 'id', { aud: [client.clientId] });
      result.id_token = await this.signPayload(realm.id, idPayload(ctx, idClaims, now, issuer, atHash), idAlg);
    }
    return result;
  }

  /**
   * Keycloak's Client scopes → Evaluate: the claims a token of this kind (or the userinfo answer) would carry for
   * `ctx`'s user, client and scope, made by the same plan, mappers and payload as `issue` and the userinfo endpoint,
   * never signed. `ctx.sessionId` stands for the session Keycloak creates for the example and removes.
   */
  async exampleClaims(kind: 'access' | 'id' | 'userinfo', ctx: TokenRequestContext): Promise<Record<string, unknown>> {
    const { realm, client, user } = ctx;
    const now = Math.floor(Date.now() / 1000);
    const plan = await this.plan(client, ctx.scope);
    const data = await loadMapperData(this.storage, plan.needs[kind], { realm, client, user, scopeIds: plan.scopeIds, notes: sessionNotes(ctx), base: ctx.base });
    const issuer = issuerOf(ctx.base, realm.name);
    if (kind === 'access') return accessPayload(ctx, plan, restrictAudience(ctx, runMappers(plan.mappers.access, data, 'access')), now, issuer);
    if (kind === 'id') return idPayload(ctx, runMappers(plan.mappers.id, data, 'id', { aud: [client.clientId] }), now, issuer, null);
    return userinfoClaims(user, runMappers(plan.mappers.userinfo, data, 'userinfo'));
  }

  /** This service with every token it issues bound to a DPoP key (the token endpoint hands it to the grant). */
  withDpop(dpop: DpopBinding): TokenService {
    const bound = Object.create(this) as TokenService;
    bound.issue = (context, withRefresh) => this.issue({ ...context, dpop }, withRefresh);
    return bound;
  }

  /** This service with every token it issues bound to the client's certificate (RFC 8705, `cnf["x5t#S256"]`). */
  withCertificate(thumbprint: string): TokenService {
    const bound = Object.create(this) as TokenService;
    bound.issue = (context, withRefresh) => this.issue({ ...context, certificateThumbprint: thumbprint }, withRefresh);
    return bound;
  }

  /** A document (signed userinfo, a logout token with `typ` logout+jwt) signed with the realm's key of `algorithm`. */
  signDocument(realmId: string, payload: Record<string, unknown>, algorithm: string, typ = 'JWT'): Promise<string> {
    return this.signPayload(realmId, payload, algorithm, typ);
  }

  private async signPayload(realmId: string, payload: Record<string, unknown>, algorithm: string, typ = 'JWT'): Promise<string> {
    const key = await this.keys.signingKey(realmId, algorithm);
    return signJws({ alg: key.algorithm, typ, kid: key.kid }, payload, key.keyObject);
  }

  /**
   * Verifies a token of this realm: RS256 with a key the realm published (HS512 with the realm's refresh-token
   * key for refresh and offline tokens; never `none`), the realm's issuer, not expired, the expected `typ`, not revoked, and its session still alive.
   */
  async verify(
    realm: Realm,
    token: string,
    expectedType: TokenType,
    base: string | null,
    /**
     * `hint`: for an `id_token_hint`, an expired token, or one whose session ended, still names who it was.
     * `dpop` (access tokens): the checked proof of the request, or 'any' (introspection, revocation: the holder's
     * proof is not theirs to check). Without it a DPoP-bound token is refused; with a proof, a token not bound to
     * its key is.
     */
    options: { hint?: boolean; dpop?: DpopProof | 'any' } = {},
  ): Promise<AccessTokenClaims & JWTPayload> {
    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw new TokenVerificationError('malformed', 'malformed token');
    }
    // HS512 only for the tokens the server MACs for itself (refresh and offline); RS256 for every type (refresh
    // tokens issued before they were MACed included); never `none` or another algorithm.
    const macOnly = expectedType === 'Refresh' || expectedType === 'Offline';
    const alg = String(header.alg);
    if (!(TOKEN_SIGNATURE_ALGS as readonly string[]).includes(alg) && !(alg === 'HS512' && macOnly)) {
      throw new TokenVerificationError('algorithm_not_accepted', `token algorithm ${alg.slice(0, 20)} is not accepted`);
    }
    if (typeof header.kid !== 'string') throw new TokenVerificationError('missing_key_id', 'token has no key id');
    let key;
    if (alg === 'HS512') key = (await this.keys.refreshTokenKey(realm.id, header.kid))?.secret;
    else {
      // The key's own algorithm only: a token naming another (RS256 for a PS256 key, say) is not this key's.
      const found = await this.keys.verificationKey(realm.id, header.kid);
      key = found && found.algorithm === alg ? found.key : undefined;
    }
    if (!key) throw new TokenVerificationError('unknown_key', 'token was not signed by a key of this realm');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key, { algorithms: [alg], clockTolerance: options.hint ? Number.MAX_SAFE_INTEGER : 5 }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new TokenVerificationError('expired', 'token expired');
      throw new TokenVerificationError('bad_signature_or_claims', 'invalid token signature or claims');
    }
    const expectedIssuer = base ? issuerOf(base, realm.name) : null;
    const issuerOk = expectedIssuer
      ? payload.iss === expectedIssuer
      : typeof payload.iss === 'string' && payload.iss.endsWith(`/realms/${encodeURIComponent(realm.name)}`);
    if (!issuerOk) throw new TokenVerificationError('wrong_issuer', 'token issued by another realm or server');
    const bearerOrDpop = expectedType === 'Bearer' && payload.typ === 'DPoP';
    if (payload.typ !== expectedType && !bearerOrDpop) throw new TokenVerificationError('wrong_type', `expected a ${expectedType} token`);
    if (expectedType === 'Bearer' && options.dpop !== 'any') {
      const jkt = (payload.cnf as { jkt?: unknown } | undefined)?.jkt;
      if (bearerOrDpop || jkt !== undefined) {
        if (!options.dpop) throw new TokenVerificationError('dpop_binding', 'The access token type is DPoP but Authorization Header is not DPoP');
        if (jkt !== options.dpop.jkt) throw new TokenVerificationError('dpop_binding', "DPoP confirmation doesn't match DPoP proof");
      } else if (options.dpop) throw new TokenVerificationError('dpop_binding', 'The access token type is not DPoP but Authorization Header is DPoP');
    }
    if (typeof payload.jti === 'string' && (await this.storage.sessions.isRevoked(payload.jti))) {
      throw new TokenVerificationError('revoked', 'token revoked');
    }
    if (!options.hint && realm.notBefore && (payload.iat ?? 0) < realm.notBefore) {
      // Keycloak's revocation policy: the realm's logout-all (or its Revocation tab) ends every token issued before.
      throw new TokenVerificationError('not_before', 'token issued before the realm\'s not-before time');
    }
    let sessionUserId: string | null = null;
    if (!options.hint && typeof payload.sid === 'string') {
      const session = await this.storage.sessions.byId(payload.sid);
      sessionUserId = session?.userId ?? null;
      // Ended (logout, revocation) or past the realm's idle or maximum lifetime.
      if (!session || session.realmId !== realm.id || !sessionAlive(realm, session)) throw new TokenVerificationError('session_ended', 'session ended');
      // The client's part of the session too: it ends alone when its refresh token is reused beyond the realm's rule.
      const client = typeof payload.azp === 'string' ? await this.storage.clients.cachedByClientId(realm.id, payload.azp) : null;
      const clientSession = client ? await this.storage.sessions.clientSession(session.id, client.id) : null;
      if (client && !clientSession) throw new TokenVerificationError('session_ended', 'session ended');
      // Past the realm's client session lifespans: idle since the token was issued, or past the client session's maximum.
      if (clientSession && clientSessionsLimited(realm, session.offline) && Date.now() > clientSessionExpiresAt(realm, session, { started: clientSession.started, lastRefresh: (payload.iat ?? 0) * 1000 })) {
        throw new TokenVerificationError('session_ended', 'client session ended');
      }
    }
    if (!options.hint) {
      // Service-account tokens have no session: without these checks they would outlive a disabled or
      // deleted client or user until they expire.
      const client = typeof payload.azp === 'string' ? await this.storage.clients.cachedByClientId(realm.id, payload.azp) : null;
      // An access token of a client without the `basic` scope has no `sub` (as Keycloak's): its subject is the
      // session's user, or for a service account the client's; callers read it from `sub` as for any other token.
      if (typeof payload.sub !== 'string' && client) {
        const subject = sessionUserId ?? (await this.storage.users.cachedServiceAccountOf(client.id))?.id;
        if (subject) payload.sub = subject;
      }
      const user = typeof payload.sub === 'string' ? await this.storage.users.cachedById(realm.id, payload.sub) : null;
      if (!user || !user.enabled) throw new TokenVerificationError('user_disabled', 'user not found or disabled');
      if (!client || !client.enabled) throw new TokenVerificationError('client_disabled', 'client not found or disabled');
      if (client.notBefore && (payload.iat ?? 0) < client.notBefore) throw new TokenVerificationError('not_before', 'token issued before the client\'s not-before time');
    }
    return payload as AccessTokenClaims & JWTPayload;
  }
}

const base64url = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** A compact JWS MACed with HMAC SHA-512 (HS512): microseconds, so on the event loop. */
function macJws(header: { alg: 'HS512'; typ: string; kid: string }, payload: Record<string, unknown>, secret: Buffer): string {
  const input = `${base64url(header)}.${base64url(payload)}`;
  return `${input}.${createHmac('sha512', secret).update(input).digest('base64url')}`;
}

/** Keycloak's client attribute for a signed userinfo answer ("unsigned" or absent: JSON). */
export const USERINFO_ALG_ATTRIBUTE = 'user.info.response.signature.alg';

/** The client attribute naming the algorithm of each signed document, as Keycloak's. */
export const CLIENT_ALG_ATTRIBUTE = { access: 'access.token.signed.response.alg', id: 'id.token.signed.response.alg' } as const;

/** The algorithm a document for `client` is signed with: the client's attribute, else the realm's default (RS256). */
export function signatureAlgorithm(realm: Realm, client: Client, document: keyof typeof CLIENT_ALG_ATTRIBUTE): string {
  return client.attributes[CLIENT_ALG_ATTRIBUTE[document]] || realm.defaultSignatureAlgorithm || 'RS256';
}

/** The algorithms whose signature costs less than a hop to the thread pool and back (ES256, Ed25519: some 50 µs). */
const ON_EVENT_LOOP = new Set(['ES256', 'EdDSA']);

/**
 * A compact JWS: RS* (RSASSA-PKCS1-v1_5), PS* (RSASSA-PSS, salt the hash's length), ES* (ECDSA, the signature as
 * r||s, RFC 7518 3.4), EdDSA (Ed25519); on libuv's thread pool, but ON_EVENT_LOOP's on the event loop.
 */
export function signJws(header: { alg: string; typ: string; kid: string }, payload: Record<string, unknown>, key: KeyObject): Promise<string> {
  const hash = SIGNATURE_HASH[header.alg];
  if (!hash) return Promise.reject(new Error(`signing algorithm ${header.alg} is not supported`));
  const input = `${base64url(header)}.${base64url(payload)}`;
  const options = signatureKeyOptions(header.alg, key);
  const digest = header.alg === 'EdDSA' ? null : hash;
  if (ON_EVENT_LOOP.has(header.alg)) return Promise.resolve(`${input}.${cryptoSign(digest, Buffer.from(input), options).toString('base64url')}`);
  return new Promise((done, fail) => {
    cryptoSign(digest, Buffer.from(input), options, (error, signature) => (error ? fail(error) : done(`${input}.${signature.toString('base64url')}`)));
  });
}

/** The claims the token service writes itself: a mapper's value for one of them is dropped (aud, sub taken apart). */
const MECHANICS = new Set(['exp', 'iat', 'nbf', 'jti', 'iss', 'aud', 'sub', 'typ', 'azp', 'sid', 'nonce', 'at_hash', 'c_hash', 's_hash', 'session_state', 'scope']);

function withoutMechanics(claims: Claims): Claims {
  const rest: Claims = {};
  for (const [key, value] of Object.entries(claims)) if (!MECHANICS.has(key)) rest[key] = value;
  return rest;
}

/** `aud` as Keycloak writes it: absent when empty, a string when one, else the list. */
function audience(aud: unknown): { aud?: string | string[] } {
  if (!Array.isArray(aud) || aud.length === 0) return typeof aud === 'string' ? { aud } : {};
  return { aud: aud.length === 1 ? (aud[0] as string) : (aud as string[]) };
}

/**
 * Keycloak's user session notes the session-note mappers read: AUTH_TIME for a user's login; a service account's
 * client_id, clientHost and clientAddress (Keycloak's host is the caller's address too: no reverse lookups).
 */
export function sessionNotes(ctx: Pick<TokenRequestContext, 'authTime' | 'user' | 'client' | 'clientAddress'>): Record<string, string> {
  const notes: Record<string, string> = {};
  if (ctx.authTime) notes.AUTH_TIME = String(ctx.authTime);
  if (ctx.user.serviceAccountClientId !== null) {
    notes.client_id = ctx.client.clientId;
    if (ctx.clientAddress) notes.clientHost = notes.clientAddress = ctx.clientAddress;
  }
  return notes;
}

/** `aud` kept to the requested audiences, each of which the mappers must have given (MissingAudience otherwise). */
function restrictAudience(ctx: TokenRequestContext, mapped: Claims): Claims {
  if (!ctx.audience) return mapped;
  const had = Array.isArray(mapped.aud) ? (mapped.aud as string[]) : typeof mapped.aud === 'string' ? [mapped.aud] : [];
  const missing = ctx.audience.filter((a) => !had.includes(a));
  if (missing.length) throw new MissingAudience(missing);
  mapped.aud = [...ctx.audience];
  return mapped;
}

/** The access token's payload: its mechanics written here, everything else (sub and aud included) by the mappers. */
function accessPayload(ctx: TokenRequestContext, plan: ScopePlan, mapped: Claims, now: number, issuer: string): Record<string, unknown> {
  return {
    exp: now + ctx.realm.accessTokenLifespan,
    iat: now,
    jti: newId(),
    iss: issuer,
    ...audience(mapped.aud),
    ...(mapped.sub !== undefined ? { sub: mapped.sub } : {}),
    // A DPoP-bound token is typed so, as Keycloak's DpopProtocolMapper does.
    typ: ctx.dpop ? 'DPoP' : 'Bearer',
    azp: ctx.client.clientId,
    ...(ctx.sessionId ? { sid: ctx.sessionId } : {}),
    ...withoutMechanics(mapped),
    ...confirmation(ctx.dpop?.jkt, ctx.certificateThumbprint),
    scope: plan.scope,
  };
}

/** A token's `cnf` (RFC 7800): a DPoP key's thumbprint (`jkt`), a certificate's (`x5t#S256`), both, or none. */
function confirmation(jkt: string | undefined, x5t: string | undefined): { cnf?: Record<string, string> } {
  if (jkt === undefined && x5t === undefined) return {};
  return { cnf: { ...(jkt !== undefined ? { jkt } : {}), ...(x5t !== undefined ? { 'x5t#S256': x5t } : {}) } };
}

/** The ID token's payload; `atHash` null for Keycloak's example ID token (no access token beside it). */
function idPayload(ctx: TokenRequestContext, idClaims: Claims, now: number, issuer: string, atHash: string | null): Record<string, unknown> {
  return {
    exp: now + ctx.realm.accessTokenLifespan,
    iat: now,
    jti: newId(),
    iss: issuer,
    ...audience(idClaims.aud),
    sub: ctx.user.id,
    typ: 'ID',
    azp: ctx.client.clientId,
    ...(ctx.nonce ? { nonce: ctx.nonce } : {}),
    ...(ctx.sessionId ? { sid: ctx.sessionId } : {}),
    ...(atHash !== null ? { at_hash: atHash } : {}),
    ...withoutMechanics(idClaims),
  };
}

/** The userinfo answer's claims: those of the mappers with `userinfo.token.claim`; `sub` always. */
export function userinfoClaims(user: User, mapped: Claims): Record<string, unknown> {
  return { sub: user.id, ...withoutMechanics(mapped) };
}

export { audience as audienceClaim, withoutMechanics };
