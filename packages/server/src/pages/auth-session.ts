import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SharedStore } from '@realmgate/spi';
import { secretsEqual } from '../credentials/index.js';
import { readCookie, secureCookies, setCookie, clearCookie } from '../http/index.js';
import type { Realm } from '../model/types.js';

/** What the authorization request asked for, kept while the user is on the login pages. */
export interface AuthSession {
  id: string;
  realmId: string;
  clientId: string;
  redirectUri: string;
  responseMode: 'query' | 'fragment' | 'form_post';
  scope: string;
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  /** Synchronizer token every form on these pages must echo back. */
  csrf: string;
  createdAt: number;
}

const AUTH_SESSION_COOKIE = 'AUTH_SESSION_ID';
const LIFETIME_MS = 30 * 60 * 1000;

export const realmCookiePath = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}/`;
const token = () => randomBytes(24).toString('base64url');

/** Login-page state in the shared store (memory or Redis), so any server process can continue it. */
export class AuthSessions {
  constructor(
    private readonly store: SharedStore,
    private readonly hostname: string | null,
  ) {}

  async start(reply: FastifyReply, request: FastifyRequest, realm: Realm, fields: Omit<AuthSession, 'id' | 'csrf' | 'createdAt' | 'realmId'>): Promise<AuthSession> {
    const session: AuthSession = { ...fields, id: token(), realmId: realm.id, csrf: token(), createdAt: Date.now() };
    await this.store.set(`auth-session:${session.id}`, JSON.stringify(session), LIFETIME_MS);
    setCookie(reply, AUTH_SESSION_COOKIE, session.id, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname), maxAgeSeconds: LIFETIME_MS / 1000 });
    return session;
  }

  /** The auth session of this browser for this realm, or null when it expired or never existed. */
  async current(request: FastifyRequest, realm: Realm): Promise<AuthSession | null> {
    const id = readCookie(request, AUTH_SESSION_COOKIE);
    if (!id || id.length > 64) return null;
    const raw = await this.store.get(`auth-session:${id}`);
    if (!raw) return null;
    const session = JSON.parse(raw) as AuthSession;
    return session.realmId === realm.id ? session : null;
  }

  /** True when a form post carries this session's CSRF token. */
  csrfValid(session: AuthSession, submitted: unknown): boolean {
    return typeof submitted === 'string' && secretsEqual(submitted, session.csrf);
  }

  async end(reply: FastifyReply, request: FastifyRequest, realm: Realm, session: AuthSession): Promise<void> {
    await this.store.delete(`auth-session:${session.id}`);
    clearCookie(reply, AUTH_SESSION_COOKIE, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname) });
  }
}
