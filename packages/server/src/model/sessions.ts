import type { Realm, UserSession } from './types.js';

/**
 * When a user session ends by the realm's timeouts, in milliseconds since the epoch: an SSO session
 * `ssoSessionIdleTimeout` after its last refresh or `ssoSessionMaxLifespan` after it started; an offline session
 * `offlineSessionIdleTimeout` after its last refresh, and `offlineSessionMaxLifespan` after it started when
 * `offlineSessionMaxLifespanEnabled`.
 */
export function sessionExpiresAt(realm: Realm, session: Pick<UserSession, 'started' | 'lastRefresh' | 'offline'>): number {
  if (session.offline) {
    const idle = session.lastRefresh + realm.offlineSessionIdleTimeout * 1000;
    return realm.offlineSessionMaxLifespanEnabled ? Math.min(idle, session.started + realm.offlineSessionMaxLifespan * 1000) : idle;
  }
  return Math.min(session.lastRefresh + realm.ssoSessionIdleTimeout * 1000, session.started + realm.ssoSessionMaxLifespan * 1000);
}

export const sessionAlive = (realm: Realm, session: Pick<UserSession, 'started' | 'lastRefresh' | 'offline'>, now = Date.now()): boolean =>
  now <= sessionExpiresAt(realm, session);
