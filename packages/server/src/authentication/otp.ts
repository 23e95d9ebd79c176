import type { AuthenticationContext } from './context.js';
import { newId } from '../credentials/index.js';
import { base32Decode, matchTotp, MAX_OTP_LENGTH, newOtpSecret, OTP_CREDENTIAL_TYPE, otpCredentialData, storedOtpData, type OtpCredentialData } from '../credentials/otp.js';
import type { Realm, User } from '../model/types.js';
import type { StoredCredential } from '../storage/index.js';
import { checkSecondFactor, recordCredentialSetUp, type SecondFactorAttempt, type SecondFactorError, type SecondFactorResult } from './second-factor.js';
import { CONFIGURE_TOTP } from '../required-actions/index.js';

/**
 * The OTP step, written once for the browser's OTP form and the password grant's `totp` parameter, through the
 * limits every second factor goes through (second-factor.ts: the address, the realm's lockout, the per-user cap;
 * a refused user is answered as a wrong code, without checking it): the code against each of the user's OTP
 * credentials within the realm's look-ahead window; a matched time step is claimed in the shared store
 * (set-if-absent, kept while the code could still match) unless `otpPolicyCodeReusable`, so a code works once
 * across every process. A wrong code counts for those limits and is recorded as LOGIN_ERROR
 * `invalid_user_credentials`. The failures are forgotten only when the whole login completes.
 */

type OtpContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config'>;

export { OTP_CREDENTIAL_TYPE };

/** The required action that sets up an authenticator app. */

export type OtpAttempt = Pick<SecondFactorAttempt, 'clientId' | 'details' | 'request'>;

export type OtpError = SecondFactorError;

export type OtpResult = SecondFactorResult;

export async function hasOtpCredential(ctx: Pick<AuthenticationContext, 'storage'>, user: User): Promise<boolean> {
  return (await ctx.storage.credentials.cachedTypes(user.id)).includes(OTP_CREDENTIAL_TYPE);
}

/** The parameters a stored OTP credential was made with (the realm's policy at the time). */
const credentialData = (credential: StoredCredential): OtpCredentialData => storedOtpData(credential.credentialData);

/** Claims `step` of `credentialId` for as long as a code of it could still be accepted; false when already claimed. */
async function claimStep(ctx: OtpContext, realm: Realm, credentialId: string, step: number, period: number): Promise<boolean> {
  if (realm.otpPolicy.otpPolicyCodeReusable) return true;
  const ttl = ((2 * realm.otpPolicy.otpPolicyLookAheadWindow + 2) * period + 5) * 1000;
  return ctx.hostStore.setIfAbsent(`otp-used:${credentialId}:${step}`, '1', ttl);
}

/** The step `code` matches for `secret`, or null (wrong length, non-digits, no match, too long to look at). */
function match(secret: unknown, code: string, data: OtpCredentialData, window: number): number | null {
  if (typeof secret !== 'string' || code.length > MAX_OTP_LENGTH) return null;
  const key = base32Decode(secret);
  return key && key.length > 0 ? matchTotp(key, code, Date.now(), data, window) : null;
}

/** Checks a one-time code of `user` (see above). */
export async function verifyOtp(ctx: OtpContext, realm: Realm, user: User, code: string, attempt: OtpAttempt): Promise<OtpResult> {
  return checkSecondFactor(ctx, realm, user, attempt, async () => {
    const window = realm.otpPolicy.otpPolicyLookAheadWindow;
    for (const credential of await ctx.storage.credentials.ofUser(user.id, OTP_CREDENTIAL_TYPE)) {
      const data = credentialData(credential);
      const step = match(credential.secretData.value, code, data, window);
      if (step !== null && (await claimStep(ctx, realm, credential.id, step, data.period))) return true;
    }
    return false;
  });
}

/** A new secret for the CONFIGURE_TOTP page, with the parameters the credential will get (the realm's policy now). */
export function newOtpSetup(realm: Realm): { secret: string; data: OtpCredentialData } {
  return { secret: newOtpSecret(), data: otpCredentialData(realm.otpPolicy) };
}

/**
 * CONFIGURE_TOTP: stores the credential when `code` is the app's current code for `secret` (the code is then
 * used up, so it cannot sign in a second time), removes the required action, records UPDATE_CREDENTIAL.
 * False when the code does not match; nothing is stored then.
 */
export async function configureOtp(
  ctx: OtpContext,
  realm: Realm,
  user: User,
  setup: { secret: string; code: string; userLabel: string | null },
  attempt: OtpAttempt,
): Promise<boolean> {
  const data = otpCredentialData(realm.otpPolicy);
  const step = match(setup.secret, setup.code, data, realm.otpPolicy.otpPolicyLookAheadWindow);
  if (step === null) return false;
  const credential: StoredCredential = {
    id: newId(),
    userId: user.id,
    type: OTP_CREDENTIAL_TYPE,
    userLabel: setup.userLabel,
    secretData: { value: setup.secret },
    credentialData: { ...data },
    createdDate: Date.now(),
    priority: 20,
  };
  if (!(await claimStep(ctx, realm, credential.id, step, data.period))) return false;
  await ctx.storage.transaction(async (trx) => {
    await ctx.storage.credentials.insert(credential, trx);
    await ctx.storage.credentials.removeRequiredAction(user.id, CONFIGURE_TOTP, trx);
  });
  await recordCredentialSetUp(ctx, realm, user, OTP_CREDENTIAL_TYPE, attempt);
  return true;
}
