/**
 * Keycloak's two realm WebAuthn policies, under the names and with the defaults of Keycloak 26.7.3's
 * RealmRepresentation (a new realm's export): `webAuthnPolicy*` for the second factor (`webauthn-register`,
 * `webauthn-authenticator`) and `webAuthnPolicyPasswordless*` for passkeys (`webauthn-register-passwordless`,
 * `webauthn-authenticator-passwordless`). How they are applied: authentication/webauthn.ts.
 */
export interface WebAuthnPolicy {
  rpEntityName: string;
  signatureAlgorithms: string[];
  /** '' : the host of the server's public URL. */
  rpId: string;
  attestationConveyancePreference: string;
  authenticatorAttachment: string;
  /** Keycloak's older setting ("Yes"/"No"/"not specified"), kept beside `residentKey`. */
  requireResidentKey: string;
  residentKey: string;
  userVerificationRequirement: string;
  /** Seconds the browser waits for the authenticator; 0: the browser's own default. */
  createTimeout: number;
  avoidSameAuthenticatorRegister: boolean;
  acceptableAaguids: string[];
  extraOrigins: string[];
}

export interface WebAuthnPolicies {
  twoFactor: WebAuthnPolicy;
  passwordless: WebAuthnPolicy & { passkeysEnabled: boolean };
}

export const NOT_SPECIFIED = 'not specified';
export const WEBAUTHN_SIGNATURE_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'RS1', 'Ed25519'] as const;
export const ATTESTATION_PREFERENCES = [NOT_SPECIFIED, 'none', 'indirect', 'direct', 'enterprise'] as const;
export const AUTHENTICATOR_ATTACHMENTS = [NOT_SPECIFIED, 'platform', 'cross-platform'] as const;
export const REQUIRE_RESIDENT_KEY = [NOT_SPECIFIED, 'Yes', 'No'] as const;
export const RESIDENT_KEY = [NOT_SPECIFIED, 'discouraged', 'preferred', 'required'] as const;
export const USER_VERIFICATION = [NOT_SPECIFIED, 'required', 'preferred', 'discouraged'] as const;

const base = (): WebAuthnPolicy => ({
  rpEntityName: 'keycloak',
  signatureAlgorithms: ['ES256', 'RS256'],
  rpId: '',
  attestationConveyancePreference: NOT_SPECIFIED,
  authenticatorAttachment: NOT_SPECIFIED,
  requireResidentKey: NOT_SPECIFIED,
  residentKey: NOT_SPECIFIED,
  userVerificationRequirement: NOT_SPECIFIED,
  createTimeout: 0,
  avoidSameAuthenticatorRegister: false,
  acceptableAaguids: [],
  extraOrigins: [],
});

export const defaultWebAuthnPolicies = (): WebAuthnPolicies => ({
  twoFactor: base(),
  passwordless: { ...base(), residentKey: 'required', userVerificationRequirement: 'required', passkeysEnabled: false },
});

/** The policy's own field names (WebAuthnPolicy keys) with Keycloak's representation suffix. */
export const WEBAUTHN_POLICY_SUFFIXES: Record<keyof WebAuthnPolicy, string> = {
  rpEntityName: 'RpEntityName',
  signatureAlgorithms: 'SignatureAlgorithms',
  rpId: 'RpId',
  attestationConveyancePreference: 'AttestationConveyancePreference',
  authenticatorAttachment: 'AuthenticatorAttachment',
  requireResidentKey: 'RequireResidentKey',
  residentKey: 'ResidentKey',
  userVerificationRequirement: 'UserVerificationRequirement',
  createTimeout: 'CreateTimeout',
  avoidSameAuthenticatorRegister: 'AvoidSameAuthenticatorRegister',
  acceptableAaguids: 'AcceptableAaguids',
  extraOrigins: 'ExtraOrigins',
};

export const TWO_FACTOR_PREFIX = 'webAuthnPolicy';
export const PASSWORDLESS_PREFIX = 'webAuthnPolicyPasswordless';
export const PASSKEYS_ENABLED_FIELD = 'webAuthnPolicyPasswordlessPasskeysEnabled';

const keys = Object.keys(WEBAUTHN_POLICY_SUFFIXES) as (keyof WebAuthnPolicy)[];

/** The realm representation's fields of both policies, as Keycloak names them. */
export function webAuthnPolicyRep(policies: WebAuthnPolicies): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) out[`${TWO_FACTOR_PREFIX}${WEBAUTHN_POLICY_SUFFIXES[key]}`] = structuredClone(policies.twoFactor[key]);
  for (const key of keys) out[`${PASSWORDLESS_PREFIX}${WEBAUTHN_POLICY_SUFFIXES[key]}`] = structuredClone(policies.passwordless[key]);
  out[PASSKEYS_ENABLED_FIELD] = policies.passwordless.passkeysEnabled;
  return out;
}

/** Applies the given representation fields (already checked by the realm spec) to a copy of `policies`. */
export function applyWebAuthnPolicyRep(policies: WebAuthnPolicies, rep: Record<string, unknown>): WebAuthnPolicies {
  const next = structuredClone(policies);
  for (const key of keys) {
    const two = rep[`${TWO_FACTOR_PREFIX}${WEBAUTHN_POLICY_SUFFIXES[key]}`];
    if (two !== undefined) (next.twoFactor as unknown as Record<string, unknown>)[key] = two;
    const pl = rep[`${PASSWORDLESS_PREFIX}${WEBAUTHN_POLICY_SUFFIXES[key]}`];
    if (pl !== undefined) (next.passwordless as unknown as Record<string, unknown>)[key] = pl;
  }
  if (typeof rep[PASSKEYS_ENABLED_FIELD] === 'boolean') next.passwordless.passkeysEnabled = rep[PASSKEYS_ENABLED_FIELD];
  return next;
}

/** Reads stored JSON leniently: a field of the wrong kind falls back to the default. */
export function readWebAuthnPolicies(stored: unknown): WebAuthnPolicies {
  const policies = defaultWebAuthnPolicies();
  const s = (stored ?? {}) as { twoFactor?: Record<string, unknown>; passwordless?: Record<string, unknown> };
  for (const [which, target] of [['twoFactor', policies.twoFactor], ['passwordless', policies.passwordless]] as const) {
    const from = s[which] ?? {};
    for (const key of [...keys, 'passkeysEnabled']) {
      const value = from[key];
      const current = (target as unknown as Record<string, unknown>)[key];
      if (current === undefined) continue;
      if (Array.isArray(current) ? Array.isArray(value) && value.every((v) => typeof v === 'string') : typeof value === typeof current) {
        (target as unknown as Record<string, unknown>)[key] = value;
      }
    }
  }
  return policies;
}
