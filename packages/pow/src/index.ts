export { createProviders, escapeHtml, FIELDS, PROVIDER_ID } from './provider.js';
export { ProofOfWork } from './verifier.js';
export type { ChallengeRequest, ProofOfWorkOptions, RejectReason, Submission, Verdict } from './verifier.js';
export { decodeChallenge, encodeChallenge, loadKey, newChallengeId, verifyChallenge } from './challenge.js';
export type { Challenge, ChallengeAlgorithm, ChallengeParseFailure } from './challenge.js';
export { argon2idHash, leadingZeroBits, sha256Hash, solutionHash } from './hash.js';
export { solve } from './solver.js';
export type { Solution, SolveOptions } from './solver.js';
export {
  currentAttempts,
  difficultyFor,
  difficultyRange,
  rateKey,
  RATE_WINDOW_MS,
  recordAttempt,
} from './difficulty.js';
export { VerificationPool } from './pool.js';
export type { Lease, PoolOptions } from './pool.js';
export {
  DEFAULT_LIMITS,
  DEFAULT_SETTINGS,
  envName,
  flowConfigProblems,
  LIMIT_KEYS,
  LIMIT_RULES,
  limitOf,
  PowSettingsError,
  PROFILES,
  resolveLimits,
  resolveServerOptions,
  resolveSettings,
  resolveSettingsReport,
  SETTING_KEYS,
  SETTING_RULES,
} from './settings.js';
export type {
  HashAlgorithm,
  LimitKey,
  PowLimits,
  PowServerOptions,
  PowSettings,
  ProfileName,
  ResolvedSettings,
  SettingKey,
} from './settings.js';

import { createProviders } from './provider.js';

/** What the server loads: the form protector and its asset resource, both with id `ext-pow` (createProviders,
 * exported above, makes them anew for each server); the same as one shared list, for hosts that import it. */
export const providers = createProviders();
