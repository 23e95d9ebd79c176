/**
 * Keycloak's brute-force detection settings of a realm, under the names and with the defaults of Keycloak 26's
 * RealmRepresentation. How they are applied: authentication/brute-force.ts.
 */
export interface BruteForceSettings {
  /** Off by default, as in Keycloak: nothing is counted or locked. */
  bruteForceProtected: boolean;
  /** Lock out permanently (the user is disabled) instead of, or after, temporary lockouts. */
  permanentLockout: boolean;
  /** With permanentLockout: temporary lockouts allowed before the permanent one (0: the first is permanent). */
  maxTemporaryLockouts: number;
  /** How the wait grows: MULTIPLE locks at every multiple of failureFactor, LINEAR at every failure from it on. */
  bruteForceStrategy: 'MULTIPLE' | 'LINEAR';
  /** Failures that lock the user ("Max login failures"). */
  failureFactor: number;
  waitIncrementSeconds: number;
  maxFailureWaitSeconds: number;
  /** The failures are forgotten this long after the last one ("Failure reset time"). */
  maxDeltaTimeSeconds: number;
  /** Two failures closer than this lock the user for minimumQuickLoginWaitSeconds. */
  quickLoginCheckMilliSeconds: number;
  minimumQuickLoginWaitSeconds: number;
}

export const defaultBruteForce = (): BruteForceSettings => ({
  bruteForceProtected: false,
  permanentLockout: false,
  maxTemporaryLockouts: 0,
  bruteForceStrategy: 'MULTIPLE',
  failureFactor: 30,
  waitIncrementSeconds: 60,
  maxFailureWaitSeconds: 900,
  maxDeltaTimeSeconds: 43200,
  quickLoginCheckMilliSeconds: 1000,
  minimumQuickLoginWaitSeconds: 60,
});

export const BRUTE_FORCE_FIELDS = Object.keys(defaultBruteForce()) as (keyof BruteForceSettings)[];
