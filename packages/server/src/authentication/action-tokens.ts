import { SignJWT, decodeProtectedHeader, jwtVerify } from 'jose';
import type { SharedStore } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import type { RealmKeys } from '../keys/index.js';
import type { ExecutionStatus } from '../flows/index.js';
import type { Realm } from '../model/types.js';

/** `update-password`: not e-mailed; the expired-password page's proof that its user has just signed in. */
/** `execute-actions`: an administrator's e-mail (`execute-actions-email`) asking the user to carry out `act`. */
/** `impersonate`: an administrator's impersonation link (admin/impersonation.ts), opened in the administrator's browser. */
/** `invite-org`: an organization's invitation e-mail (admin/organization-invitations.ts); `sub` is empty for an address with no user yet. */
/** `idp-verify-account-via-email`: the first broker login's mail to an existing account (Keycloak's token type). */
export type ActionType = 'reset-credentials' | 'verify-email' | 'update-password' | 'execute-actions' | 'impersonate' | 'invite-org' | 'idp-verify-account-via-email';

export interface ActionClaims {
  jti: string;
  sub: string;
  typ: ActionType;
  /** For verify-email of a changed address: the address being confirmed. */
  email?: string;
  /** The client the flow started from, for the event. */
  azp?: string;
  /** For execute-actions: the required actions asked for, and where to send the user afterwards. */
  act?: string[];
  redirect?: string;
  /** For a page of an execute-actions link asking for an authenticator app: the secret the page shows. */
  totpSecret?: string;
  /** For reset-credentials: what the flow settled before the link (execution id → status), so it resumes after it. */
  done?: Record<string, ExecutionStatus>;
  /** For impersonate: who impersonates (their id, username and realm), for the IMPERSONATE event. */
  imp?: { id: string; username: string; realm: string };
  /** For invite-org: the organization and the invitation (its row goes once the invitation is accepted, deleted or resent). */
  org?: string;
  inv?: string;
  /**
   * For idp-verify-account-via-email: the provider's alias and the upstream account (Keycloak's `idpa`, `idpu`), the
   * upstream account's id, and the key of the brokered sign-in's progress the link confirms.
   */
  idpa?: string;
  idpu?: string;
  xid?: string;
  bpk?: string;
  exp: number;
}

/** Lifetime of e-mailed links, Keycloak's default for user-initiated actions. */
export const ACTION_TOKEN_LIFETIME_S = 300;

/**
 * The lifetime of a link of this type a user's action mails, as Keycloak's realm.getActionTokenGeneratedByUserLifespan(type):
 * the realm attribute `actionTokenGeneratedByUserLifespan.{type}` (the console's "Override action tokens", kept as
 * Keycloak keeps it), else the realm's `actionTokenGeneratedByUserLifespan` (300 seconds unless set). An override that
 * is not a positive whole number is passed over.
 */
export function userActionTokenLifespan(realm: Pick<Realm, 'attributes' | 'actionTokenGeneratedByUserLifespan'>, type: ActionType): number {
  const positive = (value: string | undefined) => (value !== undefined && /^[1-9][0-9]{0,9}$/.test(value.trim()) ? Number(value.trim()) : null);
  return positive(realm.attributes[`actionTokenGeneratedByUserLifespan.${type}`]) ?? realm.actionTokenGeneratedByUserLifespan ?? ACTION_TOKEN_LIFETIME_S;
}

/** Keycloak's default lifetime of a link an administrator has sent (the realm's actionTokenGeneratedByAdminLifespan). */
export const ADMIN_LINK_LIFETIME_S = 12 * 60 * 60;

/**
 * E-mailed links are JWTs signed with the realm's key (as Keycloak's action tokens): stateless to issue,
 * verifiable by any process; single use is enforced in the shared store when the action is carried out.
 */
export class ActionTokens {
  constructor(
    private readonly keys: RealmKeys,
    private readonly store: SharedStore,
  ) {}

  async issue(
    realm: Realm,
    typ: ActionType,
    userId: string,
    extra: Pick<ActionClaims, 'email' | 'azp' | 'act' | 'redirect' | 'totpSecret' | 'done' | 'imp' | 'org' | 'inv' | 'idpa' | 'idpu' | 'xid' | 'bpk'> = {},
    /** Seconds; by default the realm's actionTokenGeneratedByUserLifespan (Keycloak's 300). */
    lifetimeSeconds = realm.actionTokenGeneratedByUserLifespan ?? ACTION_TOKEN_LIFETIME_S,
  ): Promise<string> {
    const key = await this.keys.signingKey(realm.id);
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ typ, ...extra })
      .setProtectedHeader({ alg: key.algorithm, kid: key.kid })
      .setJti(newId())
      .setSubject(userId)
      .setAudience(`realm:${realm.id}`)
      .setIssuedAt(now)
      .setExpirationTime(now + lifetimeSeconds)
      .sign(key.key);
  }

  /** The claims of a valid, unexpired, not yet used link of this realm and type; null otherwise. */
  async read(realm: Realm, token: string, typ: ActionType): Promise<ActionClaims | null> {
    try {
      if (token.length > 4096) return null;
      const { kid, alg } = decodeProtectedHeader(token);
      if (alg !== 'RS256' || typeof kid !== 'string') return null;
      const key = await this.keys.verificationKey(realm.id, kid);
      if (!key || key.algorithm !== 'RS256') return null;
      const { payload } = await jwtVerify(token, key.key, { algorithms: ['RS256'], audience: `realm:${realm.id}` });
      if (payload.typ !== typ || typeof payload.jti !== 'string' || typeof payload.sub !== 'string') return null;
      if (await this.store.get(`action-used:${payload.jti}`)) return null;
      return payload as unknown as ActionClaims;
    } catch {
      return null;
    }
  }

  /** Marks the link used; false when another request used it first. */
  consume(claims: ActionClaims): Promise<boolean> {
    const ttl = Math.max(1000, claims.exp * 1000 - Date.now() + 60_000);
    return this.store.setIfAbsent(`action-used:${claims.jti}`, '1', ttl);
  }
}
