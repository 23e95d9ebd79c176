import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { secretsEqual } from '../credentials/index.js';
import { readCookie, secureCookies, setCookie, clearCookie } from '../http/index.js';
import type { RealmKeys } from '../keys/index.js';
import type { Realm } from '../model/types.js';
import { SignedState } from './signed-state.js';

/** What the authorization request asked for, kept while the user is on the login pages. */
export interface AuthSession {
  realmId: string;
  clientId: string;
  redirectUri: string;
  responseMode: 'query' | 'fragment' | 'form_post';
  scope: string;
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  /** RFC 9449 10 (`dpop_jkt`): the code this request ends in is redeemed only with a DPoP proof of this key. */
  dpopJkt?: string;
  /** Keycloak's `kc_action`: the required action the application asked the user to carry out (AIA). */
  kcAction?: string;
  /** Keycloak 26's parameter of the action (`kc_action=idp_link:{alias}`: the identity provider's alias). */
  kcActionParameter?: string;
  /** What became of `kcAction` (sent back to the client as `kc_action_status`); absent while it is still to be run. */
  kcActionStatus?: KcActionStatus;
  /** Keycloak's `kc_idp_hint`: the identity provider the application wants the user sent to (identity-provider-redirector). */
  idpHint?: string;
  /** OIDC's `ui_locales`: the languages the application asks the pages to be in (pages/i18n.ts), space separated. */
  uiLocales?: string;
  /**
   * Set once an identity provider signed the user in: the upstream session and user (`{alias}.{sid}`,
   * `{alias}.{sub}`) the SSO session records, so the upstream's back-channel logout can end it.
   */
  broker?: { sessionId: string | null; userId: string; idTokenRef?: string };
  /** A sign-in the device page started (RFC 8628): the device grant's id; it ends on the consent page, not at a redirect URI. */
  device?: string;
  /**
   * An organization's invitation (`token` of Keycloak's registration link, typ `invite-org`): the registration page
   * is open for it even where the realm has registration off, the address is the invitation's, and the new user joins.
   */
  invitation?: string;
  /** Synchronizer token every form on these pages must echo back. */
  csrf: string;
  createdAt: number;
}

/** Keycloak's kc_action_status. */
export type KcActionStatus = 'success' | 'cancelled' | 'error';

/** The parameters of an authorization request the auth endpoint accepted. */
export type AuthRequest = Omit<AuthSession, 'csrf' | 'createdAt' | 'realmId'>;

const AUTH_SESSION_COOKIE = 'AUTH_SESSION';
const PURPOSE = 'auth-session';
const LIFETIME_MS = 30 * 60 * 1000;
/** Browsers keep a cookie of up to 4096 bytes, name and value together. */
const MAX_COOKIE_VALUE = 4096 - AUTH_SESSION_COOKIE.length - 1;

export const realmCookiePath = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}/`;
const token = () => randomBytes(24).toString('base64url');

/**
 * Login-page state lives in the browser, not in the server: a cookie holding the authorization request and the
 * CSRF token, MACed with a secret derived from the realm's key (see SignedState), valid 30 minutes. Opening the
 * login page therefore writes nothing to the shared store, and any server process can continue the login.
 */
export class AuthSessions {
  private readonly signed: SignedState;

  constructor(
    keys: RealmKeys,
    private readonly hostname: string | null,
  ) {
    this.signed = new SignedState(keys);
  }

  /** An auth session that is never sent to the browser: a login that completes in the same request (SSO). */
  create(realm: Realm, request: AuthRequest): AuthSession {
    return { ...request, realmId: realm.id, csrf: token(), createdAt: Date.now() };
  }

  /**
   * A new auth session in this browser's cookie; null when the request's parameters are too long to fit in
   * a cookie (browsers would drop it, and the login could not continue).
   */
  async start(reply: FastifyReply, request: FastifyRequest, realm: Realm, fields: AuthRequest): Promise<AuthSession | null> {
    const session = this.create(realm, fields);
    const value = await this.signed.seal(realm.id, PURPOSE, session, LIFETIME_MS);
    if (value.length > MAX_COOKIE_VALUE) return null;
    setCookie(reply, AUTH_SESSION_COOKIE, value, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname), maxAgeSeconds: LIFETIME_MS / 1000 });
    return session;
  }

  /** The same auth session with changed fields (its CSRF token kept), sealed again into this browser's cookie. */
  async save(reply: FastifyReply, request: FastifyRequest, realm: Realm, session: AuthSession): Promise<AuthSession> {
    const value = await this.signed.seal(realm.id, PURPOSE, session, LIFETIME_MS);
    setCookie(reply, AUTH_SESSION_COOKIE, value, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname), maxAgeSeconds: LIFETIME_MS / 1000 });
    return session;
  }

  /** The auth session of this browser for this realm, or null when it expired, was tampered with or never existed. */
  async current(request: FastifyRequest, realm: Realm): Promise<AuthSession | null> {
    const session = await this.signed.open<AuthSession>(realm.id, PURPOSE, readCookie(request, AUTH_SESSION_COOKIE), MAX_COOKIE_VALUE);
    if (!session || session.realmId !== realm.id || typeof session.csrf !== 'string') return null;
    const { exp: _exp, ...fields } = session;
    return fields;
  }

  /** True when a form post carries this session's CSRF token. */
  csrfValid(session: AuthSession, submitted: unknown): boolean {
    return typeof submitted === 'string' && secretsEqual(submitted, session.csrf);
  }

  /** The login is over: the browser forgets the request (a copy kept elsewhere can only start a new login). */
  end(reply: FastifyReply, request: FastifyRequest, realm: Realm): void {
    clearCookie(reply, AUTH_SESSION_COOKIE, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname) });
  }
}
