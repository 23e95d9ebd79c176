/**
 * Keycloak's realm OTP policy, under the names and with the defaults of Keycloak 26's RealmRepresentation
 * (`otpPolicy*`). How it is applied: credentials/otp.ts computes and checks codes, authentication/otp.ts runs the
 * OTP step. Only time-based codes are supported: `otpPolicyType` "hotp" is refused on the admin API.
 */
export interface OtpPolicy {
  otpPolicyType: 'totp';
  otpPolicyAlgorithm: OtpAlgorithm;
  otpPolicyDigits: number;
  otpPolicyPeriod: number;
  /** Time steps accepted before and after the current one (clock drift). */
  otpPolicyLookAheadWindow: number;
  /** Off: a code is accepted once only. */
  otpPolicyCodeReusable: boolean;
  /** HOTP's first counter; without HOTP it has no effect. */
  otpPolicyInitialCounter: number;
}

export const OTP_ALGORITHMS = ['HmacSHA1', 'HmacSHA256', 'HmacSHA512'] as const;
export type OtpAlgorithm = (typeof OTP_ALGORITHMS)[number];

export const defaultOtpPolicy = (): OtpPolicy => ({
  otpPolicyType: 'totp',
  otpPolicyAlgorithm: 'HmacSHA1',
  otpPolicyDigits: 6,
  otpPolicyPeriod: 30,
  otpPolicyLookAheadWindow: 1,
  otpPolicyCodeReusable: false,
  otpPolicyInitialCounter: 0,
});

export const OTP_POLICY_FIELDS = Object.keys(defaultOtpPolicy()) as (keyof OtpPolicy)[];
