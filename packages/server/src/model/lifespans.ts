/**
 * Keycloak 26's realm lifespans besides the SSO and offline session's own, under its names and with its defaults
 * (seconds). The client session ones are applied (model/sessions.ts `clientSessionExpiresAt`; 0: the user session's
 * own); the others are kept and answered (the server README's "Stored, not enforced" table says why).
 */
export interface RealmLifespans {
  clientSessionIdleTimeout: number;
  clientSessionMaxLifespan: number;
  clientOfflineSessionIdleTimeout: number;
  clientOfflineSessionMaxLifespan: number;
  ssoSessionIdleTimeoutRememberMe: number;
  ssoSessionMaxLifespanRememberMe: number;
  accessTokenLifespanForImplicitFlow: number;
  accessCodeLifespanUserAction: number;
  accessCodeLifespanLogin: number;
}

export const defaultLifespans = (): RealmLifespans => ({
  clientSessionIdleTimeout: 0,
  clientSessionMaxLifespan: 0,
  clientOfflineSessionIdleTimeout: 0,
  clientOfflineSessionMaxLifespan: 0,
  ssoSessionIdleTimeoutRememberMe: 0,
  ssoSessionMaxLifespanRememberMe: 0,
  accessTokenLifespanForImplicitFlow: 900,
  accessCodeLifespanUserAction: 300,
  accessCodeLifespanLogin: 1800,
});

export const LIFESPAN_FIELDS = Object.keys(defaultLifespans()) as (keyof RealmLifespans)[];
