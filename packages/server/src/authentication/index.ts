/**
 * The authentication layer, below `pages/` and `protocol/` (Keycloak's `authentication/`): password
 * authentication, auth sessions, SSO sessions, authorization codes and action tokens, one operation per file.
 * It imports neither `pages/` nor `protocol/`; they reach each other only through the ports in ports.ts.
 */
export { ActionTokens, ACTION_TOKEN_LIFETIME_S, ADMIN_LINK_LIFETIME_S, userActionTokenLifespan, type ActionClaims, type ActionType } from './action-tokens.js';
export { AuthSessions, realmCookiePath, type AuthRequest, type AuthSession, type KcActionStatus } from './auth-session.js';
export { issueAuthorizationCode, pkceRefusal, redeemAuthorizationCode, type CodeGrant, type CodeRedemption, type CodeRefusal, type PkceRefusal } from './authorization-code.js';
export { answerDeviceConsent, denyDeviceGrant, deviceGrantByUserCode, normalizeUserCode, pollDeviceGrant, startDeviceGrant, type DeviceGrant, type DevicePoll } from './device-code.js';
export { completeDirectLogin, type DirectSession } from './direct-login.js';
export { completeLogin } from './login.js';
export { clientConsentText, consentToAsk, consentText, grantConsent, type ConsentDetail, type ConsentScope } from './consent.js';
export { authenticatePassword, answeredAsBadCredentials, findLoginUser, verifyCurrentPassword, type PasswordAttempt, type PasswordError, type PasswordResult, type PendingAction } from './password.js';
export { configureOtp, hasOtpCredential, newOtpSetup, OTP_CREDENTIAL_TYPE, verifyOtp, type OtpAttempt, type OtpResult } from './otp.js';
export { bruteForceStatus, clearLoginFailures, clearRealmLoginFailures, loginLockout, recordLoginFailure, recordLoginSuccess, type BruteForceStatus } from './brute-force.js';
export type { FormState, LoginForms, LoginProtocol, PageLink } from './ports.js';
export { REGISTRATION_FIELDS, runRegistration, type RegistrationFailure } from './registration.js';
export { resetCredentialsUser, runResetCredentials, type ResetChallenge, type ResetEnv, type ResetFailure } from './reset-credentials.js';
export { checkSecondFactor, STEP_ATTEMPTS, takeStepAttempt, type SecondFactorAttempt, type SecondFactorError, type SecondFactorResult } from './second-factor.js';
export { SignedState } from './signed-state.js';
export { refusedUser, runBrowserSignIn, runGrantSignIn, type BrowserChallenge, type BrowserProgress, type SignInFailure } from './sign-in.js';
export { clearSsoCookie, currentSsoSession, keepBrokerIdToken, startSsoSession } from './sso-session.js';
export * from './brokering/index.js';
