import { createHash, randomBytes } from 'node:crypto';
import type { AuthenticationContext } from './context.js';
import { secretsEqual } from '../credentials/index.js';
import type { RequestInfo } from '@realmgate/spi';
import type { EventError } from '../model/errors.js';
import type { Client, Realm, User, UserSession } from '../model/types.js';
import type { AuthSession } from './auth-session.js';

/** Keycloak's default: the realm's accessCodeLifespan, in seconds. */
const CODE_LIFETIME_S = 60;

/** What an authorization code stands for until the client redeems it (once). */
export interface CodeGrant {
  realmId: string;
  clientId: string;
  redirectUri: string;
  sessionId: string;
  userId: string;
  scope: string;
  nonce: string | null;
  codeChallenge: string | null;
  /** The DPoP key thumbprint the authorization request bound the code to (`dpop_jkt`), checked by the token endpoint. */
  dpopJkt?: string;
  authTime: number;
}

const codeKey = (code: string) => `code:${createHash('sha256').update(code).digest('base64url')}`;

/**
 * A new single-use code for the login that `session` stands for, kept (hashed) in the shared store for the realm's
 * accessCodeLifespan (Keycloak's 60 s by default).
 */
export async function issueAuthorizationCode(ctx: Pick<AuthenticationContext, 'hostStore'>, auth: AuthSession, session: UserSession, userId: string, lifetimeSeconds = CODE_LIFETIME_S): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  const grant: CodeGrant = {
    realmId: auth.realmId,
    clientId: auth.clientId,
    redirectUri: auth.redirectUri,
    sessionId: session.id,
    userId,
    scope: auth.scope,
    nonce: auth.nonce,
    codeChallenge: auth.codeChallenge,
    ...(auth.dpopJkt !== undefined ? { dpopJkt: auth.dpopJkt } : {}),
    authTime: Math.floor(session.started / 1000),
  };
  await ctx.hostStore.set(codeKey(code), JSON.stringify(grant), lifetimeSeconds * 1000);
  return code;
}

/** Why a code was refused; the protocol words each for the client. */
export type CodeRefusal = 'not_valid' | 'redirect_uri' | 'verifier_malformed' | 'verifier_mismatch' | 'verifier_unexpected' | 'session_not_active';

/** Why a PKCE verifier (RFC 7636 4.6) is refused for a grant of `challenge` (S256, or none); null when it passes. */
export type PkceRefusal = Extract<CodeRefusal, 'verifier_malformed' | 'verifier_mismatch' | 'verifier_unexpected'>;

/** The one PKCE verifier check, for authorization codes and device codes alike. */
export function pkceRefusal(challenge: string | null | undefined, verifier: string | undefined): PkceRefusal | null {
  if (challenge) {
    if (!verifier || !/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return 'verifier_malformed';
    const computed = createHash('sha256').update(verifier).digest('base64url');
    return secretsEqual(computed, challenge) ? null : 'verifier_mismatch';
  }
  return verifier !== undefined ? 'verifier_unexpected' : null;
}

export type CodeRedemption =
  | { ok: true; grant: CodeGrant; session: UserSession; user: User }
  /** `error` is Keycloak's event error name, already recorded with CODE_TO_TOKEN_ERROR. */
  | { ok: false; error: Extract<EventError, 'invalid_code' | 'invalid_client_credentials' | 'invalid_redirect_uri' | 'invalid_code_verifier'>; reason: CodeRefusal };

export interface CodeRedemptionInput {
  code: string;
  redirectUri: string | undefined;
  codeVerifier: string | undefined;
}

/**
 * Redeems a code once: same realm and client, same redirect_uri, PKCE verifier matching the challenge, session
 * and user still alive. The code is claimed before anything is checked, so it never works twice, even when
 * the first attempt is refused or two arrive together. A refusal is recorded as CODE_TO_TOKEN_ERROR.
 */
export async function redeemAuthorizationCode(
  ctx: Pick<AuthenticationContext, 'hostStore' | 'storage' | 'events'>,
  realm: Realm,
  client: Client,
  input: CodeRedemptionInput,
  info: RequestInfo,
): Promise<CodeRedemption> {
  const refuse = async (reason: CodeRefusal, error: Extract<CodeRedemption, { ok: false }>['error'] = 'invalid_code'): Promise<CodeRedemption> => {
    await ctx.events.user(realm, { type: 'CODE_TO_TOKEN_ERROR', clientId: client.clientId, error, request: info });
    return { ok: false, error, reason };
  };
  if (input.code.length > 256) return refuse('not_valid');
  const key = codeKey(input.code);
  const raw = await ctx.hostStore.get(key);
  // Claimed before anything else, so two concurrent redemptions cannot both succeed.
  if (!raw || !(await ctx.hostStore.setIfAbsent(`${key}:used`, '1', 120_000))) return refuse('not_valid');
  await ctx.hostStore.delete(key);
  const grant = JSON.parse(raw) as CodeGrant;
  if (grant.realmId !== realm.id || grant.clientId !== client.clientId) return refuse('not_valid', 'invalid_client_credentials');
  if (input.redirectUri !== grant.redirectUri) return refuse('redirect_uri', 'invalid_redirect_uri');
  const pkce = pkceRefusal(grant.codeChallenge, input.codeVerifier);
  if (pkce) return refuse(pkce, 'invalid_code_verifier');
  const session = await ctx.storage.sessions.byId(grant.sessionId);
  const user = session ? await ctx.storage.users.byId(realm.id, grant.userId) : null;
  if (!session || !user || !user.enabled) return refuse('session_not_active');
  return { ok: true, grant, session, user };
}
