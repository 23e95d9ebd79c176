import type { PasswordPolicyErrorKey as PolicyMessageKey } from '../model/errors.js';
import { passwordHashCost, type PasswordHashCost } from './index.js';

/**
 * A realm's password policy in Keycloak's syntax (`length(12) and upperCase(1) and notUsername`), parsed and
 * checked here, once: the admin API refuses a policy this parser refuses, and services/users.ts setPassword
 * checks every new password against the parsed policy. Pure: no storage, no hashing (the history rule's
 * comparison with earlier hashes is the caller's, since it needs them).
 */

/** Longer passwords are refused whatever the policy, so nobody makes the server hash megabytes. */
export const MAX_PASSWORD_LENGTH = 1024;

/** The Argon2id iterations Realmgate (and Keycloak 26's argon2 provider) use when the policy names none. */
export const DEFAULT_HASH_ITERATIONS = 5;

export interface PasswordPolicy {
  length?: number;
  maxLength?: number;
  upperCase?: number;
  lowerCase?: number;
  digits?: number;
  specialChars?: number;
  notUsername?: true;
  notEmail?: true;
  /** How many passwords (the current one included) a new password may not repeat. */
  passwordHistory?: number;
  /** Days after which a password must be changed at the next login (Keycloak's UPDATE_PASSWORD). */
  forceExpiredPasswordChange?: number;
  hashAlgorithm?: 'argon2';
  hashIterations?: number;
}

type NumericRule = 'length' | 'maxLength' | 'upperCase' | 'lowerCase' | 'digits' | 'specialChars' | 'passwordHistory' | 'forceExpiredPasswordChange' | 'hashIterations';

/** Each numeric rule: Keycloak's value when the rule is given without one, and the values accepted here. */
const numericRules: Record<NumericRule, { default: number; min: number; max: number }> = {
  length: { default: 8, min: 1, max: MAX_PASSWORD_LENGTH },
  maxLength: { default: 64, min: 1, max: MAX_PASSWORD_LENGTH },
  upperCase: { default: 1, min: 1, max: MAX_PASSWORD_LENGTH },
  lowerCase: { default: 1, min: 1, max: MAX_PASSWORD_LENGTH },
  digits: { default: 1, min: 1, max: MAX_PASSWORD_LENGTH },
  specialChars: { default: 1, min: 1, max: MAX_PASSWORD_LENGTH },
  // Each remembered password costs one Argon2id verification when a password is set.
  passwordHistory: { default: 3, min: 1, max: 24 },
  forceExpiredPasswordChange: { default: 365, min: 1, max: 36500 },
  // Each iteration costs every login and every unknown-user attempt its share of CPU.
  hashIterations: { default: DEFAULT_HASH_ITERATIONS, min: 1, max: 20 },
};

/**
 * The rules this server implements as Keycloak's PasswordPolicyTypeRepresentation (the admin console's list of
 * policies to add), with Keycloak's ids and display names.
 */
export function passwordPolicyTypes(): { id: string; displayName: string; configType: 'int' | 'String' | null; defaultValue: string; multipleSupported: boolean }[] {
  const names: Record<NumericRule | 'notUsername' | 'notEmail' | 'hashAlgorithm', string> = {
    length: 'Minimum length',
    maxLength: 'Maximum length',
    upperCase: 'Uppercase characters',
    lowerCase: 'Lowercase characters',
    digits: 'Digits',
    specialChars: 'Special characters',
    notUsername: 'Not username',
    notEmail: 'Not email',
    passwordHistory: 'Not recently used',
    forceExpiredPasswordChange: 'Expire password',
    hashAlgorithm: 'Hashing algorithm',
    hashIterations: 'Hashing iterations',
  };
  return Object.entries(names).map(([id, displayName]) => {
    const numeric = numericRules[id as NumericRule];
    if (numeric) return { id, displayName, configType: 'int' as const, defaultValue: String(numeric.default), multipleSupported: false };
    if (id === 'hashAlgorithm') return { id, displayName, configType: 'String' as const, defaultValue: 'argon2', multipleSupported: false };
    return { id, displayName, configType: null, defaultValue: '', multipleSupported: false };
  });
}

/** Keycloak policy rules this server does not implement: refused by name rather than stored and ignored. */
const unsupportedRules: Record<string, string> = {
  regexPattern: 'not implemented here',
  passwordBlacklist: 'not implemented here',
  notContainsUsername: 'not implemented here',
  maxAuthAge: 'not implemented here',
  passwordAge: 'not implemented here',
};

export type PolicyParse = { ok: true; policy: PasswordPolicy } | { ok: false; rule: string; message: string };

const ruleSyntax = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:\(([^()]*)\))?$/;

/** Parses a policy string; a refusal names the rule (its text as given) and why. An empty string is no policy. */
export function parsePasswordPolicy(text: string): PolicyParse {
  const policy: PasswordPolicy = {};
  if (text.trim() === '') return { ok: true, policy };
  for (const part of text.split(/\s+and\s+/)) {
    const given = part.trim();
    const match = ruleSyntax.exec(given);
    if (!match) return { ok: false, rule: given, message: 'is not a rule of the form name or name(value)' };
    const [, name, rawValue] = match;
    const value = rawValue?.trim();
    if (Object.hasOwn(policy, name)) return { ok: false, rule: given, message: 'is given twice' };
    if (Object.hasOwn(unsupportedRules, name)) return { ok: false, rule: given, message: `is not supported: ${unsupportedRules[name]}` };
    if (name === 'notUsername' || name === 'notEmail') {
      // Keycloak's exports write these with any value (`notUsername(undefined)`): the value means nothing.
      policy[name] = true;
    } else if (name === 'hashAlgorithm') {
      if (value !== undefined && value !== '' && value !== 'argon2') {
        return { ok: false, rule: given, message: 'is not supported: this server hashes with argon2 (Argon2id) only' };
      }
      policy.hashAlgorithm = 'argon2';
    } else if (Object.hasOwn(numericRules, name)) {
      const spec = numericRules[name as NumericRule];
      if (value === undefined || value === '') {
        policy[name as NumericRule] = spec.default;
      } else if (!/^\d{1,7}$/.test(value) || Number(value) < spec.min || Number(value) > spec.max) {
        return { ok: false, rule: given, message: `must be a whole number from ${spec.min} to ${spec.max}` };
      } else {
        policy[name as NumericRule] = Number(value);
      }
    } else {
      return { ok: false, rule: given, message: 'is not a known password policy rule' };
    }
  }
  if (policy.length !== undefined && policy.maxLength !== undefined && policy.length > policy.maxLength) {
    return { ok: false, rule: `length(${policy.length})`, message: `is more than maxLength(${policy.maxLength})` };
  }
  return { ok: true, policy };
}

/** The policy of a realm whose stored policy was checked when it was saved; a broken one fails closed. */
export function realmPasswordPolicy(text: string): PasswordPolicy {
  const parsed = parsePasswordPolicy(text);
  if (!parsed.ok) throw new Error(`stored password policy refused: ${parsed.rule} ${parsed.message}`);
  return parsed.policy;
}

export interface PolicyViolation {
  key: PolicyMessageKey;
  /** The rule's value, as Keycloak's message parameters. */
  params: string[];
}

/** This server's wording of each refusal (`{0}` is the rule's value). */
const messages: Record<PolicyMessageKey, string> = {
  invalidPasswordMinLengthMessage: 'The password needs at least {0} characters.',
  invalidPasswordMaxLengthMessage: 'The password may have at most {0} characters.',
  invalidPasswordMinUpperCaseCharsMessage: 'The password needs at least {0} upper-case letter(s).',
  invalidPasswordMinLowerCaseCharsMessage: 'The password needs at least {0} lower-case letter(s).',
  invalidPasswordMinDigitsMessage: 'The password needs at least {0} digit(s).',
  invalidPasswordMinSpecialCharsMessage: 'The password needs at least {0} character(s) that are neither letters nor digits.',
  invalidPasswordNotUsernameMessage: 'The password may not be the username.',
  invalidPasswordNotEmailMessage: 'The password may not be the e-mail address.',
  invalidPasswordHistoryMessage: 'The password may not be one of the last {0} passwords.',
};

export function policyMessage(violation: PolicyViolation): string {
  return messages[violation.key].replace(/\{(\d+)\}/g, (_, i: string) => violation.params[Number(i)] ?? '');
}

const count = (password: string, pattern: RegExp) => password.match(pattern)?.length ?? 0;

/**
 * The first rule a password breaks (history aside), in the order Keycloak lists its rules, or null. The server's
 * own cap (MAX_PASSWORD_LENGTH) counts as maxLength when the policy has none.
 */
export function checkPassword(policy: PasswordPolicy, password: string, user: { username: string; email: string | null }): PolicyViolation | null {
  // Characters, not UTF-16 units, as a person counts them.
  const length = [...password.slice(0, MAX_PASSWORD_LENGTH * 2 + 2)].length;
  const fail = (key: PolicyMessageKey, value?: number): PolicyViolation => ({ key, params: value === undefined ? [] : [String(value)] });
  const maxLength = Math.min(policy.maxLength ?? MAX_PASSWORD_LENGTH, MAX_PASSWORD_LENGTH);
  if (length > maxLength) return fail('invalidPasswordMaxLengthMessage', maxLength);
  if (policy.length !== undefined && length < policy.length) return fail('invalidPasswordMinLengthMessage', policy.length);
  if (policy.digits !== undefined && count(password, /\p{Nd}/gu) < policy.digits) return fail('invalidPasswordMinDigitsMessage', policy.digits);
  if (policy.lowerCase !== undefined && count(password, /\p{Ll}/gu) < policy.lowerCase) return fail('invalidPasswordMinLowerCaseCharsMessage', policy.lowerCase);
  if (policy.upperCase !== undefined && count(password, /\p{Lu}/gu) < policy.upperCase) return fail('invalidPasswordMinUpperCaseCharsMessage', policy.upperCase);
  if (policy.specialChars !== undefined && count(password, /[^\p{L}\p{Nd}]/gu) < policy.specialChars) return fail('invalidPasswordMinSpecialCharsMessage', policy.specialChars);
  if (policy.notUsername && password.toLowerCase() === user.username.toLowerCase()) return fail('invalidPasswordNotUsernameMessage');
  if (policy.notEmail && user.email && password.toLowerCase() === user.email.toLowerCase()) return fail('invalidPasswordNotEmailMessage');
  return null;
}

/**
 * Whether a password set at `passwordCreated` (epoch ms; null when unknown, as for a password imported without
 * its date) has expired under forceExpiredPasswordChange(days) at `now`.
 */
export function passwordExpired(policy: PasswordPolicy, passwordCreated: number | null, now: number): boolean {
  if (policy.forceExpiredPasswordChange === undefined || passwordCreated === null) return false;
  return now - passwordCreated >= policy.forceExpiredPasswordChange * 86_400_000;
}

/** The Argon2id iterations new hashes get under this policy. */
export const hashIterations = (policy: PasswordPolicy) => policy.hashIterations ?? DEFAULT_HASH_ITERATIONS;

/** The Argon2id cost of new hashes under this policy; `testCost`: the server's test-only passwordHashingTestCost. */
export const policyHashCost = (policy: PasswordPolicy, testCost: boolean): PasswordHashCost => passwordHashCost(hashIterations(policy), testCost);
