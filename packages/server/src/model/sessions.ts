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

/**
 * When one client's part of a session ends, in milliseconds since the epoch: with the user session at the latest,
 * and sooner by the realm's client session lifespans (Keycloak's clientSessionIdleTimeout and
 * clientSessionMaxLifespan, or the clientOffline… ones for an offline session; 0: none of its own). The idle one
 * counts from `lastRefresh`, the client's last token (its refresh token's `iat`); the maximum from the client
 * session's start.
 */
export function clientSessionExpiresAt(
  realm: Realm,
  session: Pick<UserSession, 'started' | 'lastRefresh' | 'offline'>,
  client: { started: number; lastRefresh: number },
): number {
  const idle = session.offline ? realm.lifespans.clientOfflineSessionIdleTimeout : realm.lifespans.clientSessionIdleTimeout;
  const max = session.offline ? realm.lifespans.clientOfflineSessionMaxLifespan : realm.lifespans.clientSessionMaxLifespan;
  let at = sessionExpiresAt(realm, session);
  if (idle > 0) at = Math.min(at, client.lastRefresh + idle * 1000);
  if (max > 0) at = Math.min(at, client.started + max * 1000);
  return at;
}

/** Whether the realm limits client sessions apart from their user session (then their start is read). */
export const clientSessionsLimited = (realm: Realm, offline: boolean | undefined): boolean =>
  offline
    ? realm.lifespans.clientOfflineSessionIdleTimeout > 0 || realm.lifespans.clientOfflineSessionMaxLifespan > 0
    : realm.lifespans.clientSessionIdleTimeout > 0 || realm.lifespans.clientSessionMaxLifespan > 0;
