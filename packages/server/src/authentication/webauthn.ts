import { createHash } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { AuthenticationContext } from './context.js';
import { newId } from '../credentials/index.js';
import { backupFlagsOf, readWebAuthnData, storedBackupFlags, WEBAUTHN_CREDENTIAL_TYPE, WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE, webAuthnCredentialData } from '../credentials/webauthn.js';
import type { Realm, User } from '../model/types.js';
import { NOT_SPECIFIED, type WebAuthnPolicy } from '../model/webauthn-policy.js';
import { WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS } from '../required-actions/index.js';
import type { StoredCredential } from '../storage/index.js';
import { checkSecondFactor, recordCredentialSetUp, type SecondFactorAttempt, type SecondFactorError } from './second-factor.js';

/**
 * @simplewebauthn/server when a ceremony first needs it: its import is about a sixth of the whole server's, paid by
 * every process (and every isolated test file) though most realms never see a passkey.
 */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined;
const webAuthnLibrary = () => (library ??= import('@simplewebauthn/server'));

/**
 * WebAuthn as Keycloak has it, on @simplewebauthn/server (no CBOR or attestation parsing of our own): the
 * registration (required actions `webauthn-register`, `webauthn-register-passwordless`) and the assertion
 * (`webauthn-authenticator` after the password, `webauthn-authenticator-passwordless` after the username or alone).
 *
 * How the realm's two policies apply (the second factor's `webAuthnPolicy*`, the passkeys'
 * `webAuthnPolicyPasswordless*`, model/webauthn-policy.ts):
 * - webAuthnPolicyRpEntityName / webAuthnPolicyPasswordlessRpEntityName: the RP name of the registration options;
 * - webAuthnPolicySignatureAlgorithms / webAuthnPolicyPasswordlessSignatureAlgorithms: the algorithms offered, and
 *   the only ones a new credential may use;
 * - webAuthnPolicyRpId / webAuthnPolicyPasswordlessRpId: the RP id, checked in every response (empty: the host of
 *   the server's public URL, `hostname` or the request's);
 * - webAuthnPolicyAttestationConveyancePreference / webAuthnPolicyPasswordlessAttestationConveyancePreference: the
 *   options' `attestation` (attestation statements are verified by the library; trust anchors are not configured);
 * - webAuthnPolicyAuthenticatorAttachment / webAuthnPolicyPasswordlessAuthenticatorAttachment: asked, and a new
 *   credential whose reported attachment differs is refused (Keycloak's PolicyVerifier);
 * - webAuthnPolicyResidentKey / webAuthnPolicyPasswordlessResidentKey: the options' `residentKey`;
 * - webAuthnPolicyUserVerificationRequirement / webAuthnPolicyPasswordlessUserVerificationRequirement: asked, and
 *   when "required" a response without the UV flag is refused (registration and assertion);
 * - webAuthnPolicyCreateTimeout / webAuthnPolicyPasswordlessCreateTimeout: the options' timeout (seconds), and the
 *   challenge lives at least that long;
 * - webAuthnPolicyAvoidSameAuthenticatorRegister / webAuthnPolicyPasswordlessAvoidSameAuthenticatorRegister: the
 *   user's credentials of that type are excluded from a new registration;
 * - webAuthnPolicyAcceptableAaguids / webAuthnPolicyPasswordlessAcceptableAaguids: when not empty, a new
 *   credential's AAGUID must be one of them;
 * - webAuthnPolicyExtraOrigins / webAuthnPolicyPasswordlessExtraOrigins: origins accepted besides the server's.
 *
 * Challenges: 32 random bytes, kept in the shared store (every node sees them) with the realm, the auth session
 * (a hash of its CSRF token), the ceremony, the kind and the user they were issued for; taken once (compare-and-set,
 * so two nodes cannot both take one), for at most CHALLENGE_LIFETIME_MS (or the policy's timeout when longer).
 */

export type WebAuthnKind = 'two-factor' | 'passwordless';

export const CHALLENGE_LIFETIME_MS = 5 * 60 * 1000;

export const credentialTypeOf = (kind: WebAuthnKind) => (kind === 'passwordless' ? WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE : WEBAUTHN_CREDENTIAL_TYPE);
export const registerActionOf = (kind: WebAuthnKind) => (kind === 'passwordless' ? WEBAUTHN_REGISTER_PASSWORDLESS : WEBAUTHN_REGISTER);
export const policyOf = (realm: Realm, kind: WebAuthnKind): WebAuthnPolicy => (kind === 'passwordless' ? realm.webAuthnPolicies.passwordless : realm.webAuthnPolicies.twoFactor);

type WebAuthnContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config'>;

/** Where the ceremony runs: the server's public origin (hostname, or the request's), and the auth session it belongs to. */
export interface Ceremony {
  origin: string;
  /** sha256 of the auth session's CSRF token. */
  session: string;
}

const COSE_ALGORITHMS: Record<string, number> = { ES256: -7, ES384: -35, ES512: -36, RS256: -257, RS384: -258, RS512: -259, RS1: -65535, Ed25519: -8 };

const algorithmIds = (policy: WebAuthnPolicy) => {
  const ids = policy.signatureAlgorithms.map((a) => COSE_ALGORITHMS[a]).filter((id): id is number => id !== undefined);
  return ids.length > 0 ? ids : [-7, -257];
};

const rpIdOf = (policy: WebAuthnPolicy, origin: string) => policy.rpId || new URL(origin).hostname;
const originsOf = (policy: WebAuthnPolicy, origin: string) => [origin, ...policy.extraOrigins];
const specified = <T extends string>(value: string): T | undefined => (value === NOT_SPECIFIED ? undefined : (value as T));
const lifetimeOf = (policy: WebAuthnPolicy) => Math.max(CHALLENGE_LIFETIME_MS, policy.createTimeout * 1000);

export async function hasWebAuthnCredential(ctx: Pick<AuthenticationContext, 'storage'>, user: User, kind: WebAuthnKind): Promise<boolean> {
  return (await ctx.storage.credentials.cachedTypes(user.id)).includes(credentialTypeOf(kind));
}

interface ChallengeRecord {
  realm: string;
  session: string;
  ceremony: 'register' | 'authenticate';
  kind: WebAuthnKind;
  user: string | null;
}

const challengeKey = (challenge: string) => `webauthn-challenge:${createHash('sha256').update(challenge).digest('base64url')}`;

async function issueChallenge(ctx: WebAuthnContext, record: ChallengeRecord, lifetimeMs: number): Promise<string> {
  const challenge = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
  await ctx.hostStore.set(challengeKey(challenge), JSON.stringify(record), lifetimeMs);
  return challenge;
}

/** Takes the challenge once: true only for the first taker, and only when it was issued for exactly `expected`. */
async function takeChallenge(ctx: WebAuthnContext, challenge: string, expected: ChallengeRecord): Promise<boolean> {
  if (typeof challenge !== 'string' || challenge.length > 200) return false;
  const key = challengeKey(challenge);
  const stored = await ctx.hostStore.get(key);
  if (!stored || stored === 'used') return false;
  if (!(await ctx.hostStore.compareAndSet(key, stored, 'used', CHALLENGE_LIFETIME_MS))) return false;
  let record: ChallengeRecord;
  try {
    record = JSON.parse(stored) as ChallengeRecord;
  } catch {
    return false;
  }
  return record.realm === expected.realm && record.session === expected.session && record.ceremony === expected.ceremony && record.kind === expected.kind && record.user === expected.user;
}

/**
 * The user's WebAuthn user handle (Keycloak's: the user id's UTF-8 bytes): their id in the realm file their first
 * credential came from (kept in its secretData, never exported), else their id here; every new credential gets it.
 */
export async function userHandleOf(ctx: Pick<AuthenticationContext, 'storage'>, user: User): Promise<string> {
  for (const type of [WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE, WEBAUTHN_CREDENTIAL_TYPE]) {
    for (const c of await ctx.storage.credentials.ofUser(user.id, type)) if (typeof c.secretData.userHandle === 'string') return c.secretData.userHandle;
  }
  return user.id;
}

// ---------------------------------------------------------------------------------------------------------------
// Registration

export async function registrationOptions(ctx: WebAuthnContext, realm: Realm, user: User, kind: WebAuthnKind, ceremony: Ceremony): Promise<Record<string, unknown>> {
  const policy = policyOf(realm, kind);
  const challenge = await issueChallenge(ctx, { realm: realm.id, session: ceremony.session, ceremony: 'register', kind, user: user.id }, lifetimeOf(policy));
  const existing = policy.avoidSameAuthenticatorRegister ? await ctx.storage.credentials.ofUser(user.id, credentialTypeOf(kind)) : [];
  const residentKey = specified<'discouraged' | 'preferred' | 'required'>(policy.residentKey) ?? (policy.requireResidentKey === 'Yes' ? 'required' : policy.requireResidentKey === 'No' ? 'discouraged' : undefined);
  const options = await (await webAuthnLibrary()).generateRegistrationOptions({
    rpName: policy.rpEntityName || 'keycloak',
    rpID: rpIdOf(policy, ceremony.origin),
    userName: user.username,
    userID: new TextEncoder().encode(await userHandleOf(ctx, user)),
    userDisplayName: [user.firstName, user.lastName].filter(Boolean).join(' ') || user.username,
    challenge: Buffer.from(challenge, 'base64url'),
    ...(policy.createTimeout > 0 ? { timeout: policy.createTimeout * 1000 } : {}),
    attestationType: 'none',
    excludeCredentials: existing.flatMap((c) => {
      const data = readWebAuthnData(c.credentialData);
      return data ? [{ id: data.id, transports: data.transports }] : [];
    }),
    authenticatorSelection: {
      ...(specified<'platform' | 'cross-platform'>(policy.authenticatorAttachment) ? { authenticatorAttachment: policy.authenticatorAttachment as 'platform' | 'cross-platform' } : {}),
      ...(residentKey ? { residentKey, requireResidentKey: residentKey === 'required' } : {}),
      userVerification: specified<'required' | 'preferred' | 'discouraged'>(policy.userVerificationRequirement) ?? 'preferred',
    },
    supportedAlgorithmIDs: algorithmIds(policy),
  });
  const attestation = specified<string>(policy.attestationConveyancePreference);
  return { ...options, ...(attestation ? { attestation } : {}) };
}

export type RegistrationResult = { ok: true; credential: StoredCredential } | { ok: false; reason: string };

/**
 * Verifies a registration response against the challenge issued to this user in this auth session and the realm's
 * policy, and stores the credential (removing the required action). Nothing is stored on a refusal.
 */
export async function completeRegistration(
  ctx: WebAuthnContext,
  realm: Realm,
  user: User,
  kind: WebAuthnKind,
  ceremony: Ceremony,
  responseJson: string,
  label: string | null,
  attempt: SecondFactorAttempt,
): Promise<RegistrationResult> {
  const policy = policyOf(realm, kind);
  const response = parseJson<RegistrationResponseJSON>(responseJson);
  const expected: ChallengeRecord = { realm: realm.id, session: ceremony.session, ceremony: 'register', kind, user: user.id };
  const refuse = async (reason: string): Promise<RegistrationResult> => {
    await ctx.events.user(realm, {
      type: 'UPDATE_CREDENTIAL_ERROR',
      clientId: attempt.clientId,
      userId: user.id,
      error: 'invalid_user_credentials',
      details: { ...attempt.details, credential_type: credentialTypeOf(kind), username: user.username, web_authn_registration_error: reason },
      request: attempt.request,
    });
    return { ok: false, reason };
  };
  if (!response || typeof response.id !== 'string' || typeof response.response !== 'object' || response.response === null) return refuse('malformed response');
  let verified: Awaited<ReturnType<typeof import('@simplewebauthn/server').verifyRegistrationResponse>>;
  try {
    verified = await (await webAuthnLibrary()).verifyRegistrationResponse({
      response,
      expectedChallenge: (challenge) => takeChallenge(ctx, challenge, expected),
      expectedOrigin: originsOf(policy, ceremony.origin),
      expectedRPID: rpIdOf(policy, ceremony.origin),
      requireUserVerification: policy.userVerificationRequirement === 'required',
      supportedAlgorithmIDs: algorithmIds(policy),
    });
  } catch (error) {
    return refuse(error instanceof Error ? error.message.slice(0, 200) : 'verification failed');
  }
  if (!verified.verified) return refuse('verification failed');
  const info = verified.registrationInfo;
  if (policy.acceptableAaguids.length > 0 && !policy.acceptableAaguids.some((a) => a.toLowerCase() === info.aaguid.toLowerCase())) return refuse(`AAGUID ${info.aaguid} is not acceptable`);
  const attachment = specified<string>(policy.authenticatorAttachment);
  if (attachment && response.authenticatorAttachment && response.authenticatorAttachment !== attachment) return refuse(`authenticator attachment ${response.authenticatorAttachment} is not ${attachment}`);
  const credentialId = Buffer.from(info.credential.id, 'base64url').toString('base64');
  const handle = await userHandleOf(ctx, user);
  const credential: StoredCredential = {
    id: newId(),
    userId: user.id,
    type: credentialTypeOf(kind),
    userLabel: label,
    // The backup flags (BE fixed for the credential's life, BS as it is now) beside the imported user handle (credentials/webauthn.ts).
    secretData: { ...(handle !== user.id ? { userHandle: handle } : {}), ...backupFlagsOf(info) },
    credentialData: { ...webAuthnCredentialData({ aaguid: info.aaguid, id: info.credential.id, publicKey: info.credential.publicKey, counter: info.credential.counter, fmt: info.fmt, transports: response.response.transports ?? [] }) },
    createdDate: Date.now(),
    priority: 30,
  };
  const saved = await ctx.storage.transaction(async (trx) => {
    // One credential id once per user and type: a second registration of the same authenticator is refused.
    const same = (await ctx.storage.credentials.ofUser(user.id, credential.type, trx)).some((c) => readWebAuthnData(c.credentialData)?.credentialId === credentialId);
    if (same) return false;
    await ctx.storage.credentials.insert(credential, trx);
    await ctx.storage.credentials.removeRequiredAction(user.id, registerActionOf(kind), trx);
    return true;
  });
  if (!saved) return refuse('this authenticator is registered already');
  await recordCredentialSetUp(ctx, realm, user, credential.type, attempt, { public_key_credential_aaguid: info.aaguid, ...(label ? { public_key_credential_label: label } : {}) });
  return { ok: true, credential };
}

// ---------------------------------------------------------------------------------------------------------------
// Assertion

/** The options of an assertion: the user's credentials of this kind when the user is known, else any passkey. */
export async function authenticationOptions(ctx: WebAuthnContext, realm: Realm, user: User | null, kind: WebAuthnKind, ceremony: Ceremony): Promise<Record<string, unknown>> {
  const policy = policyOf(realm, kind);
  const challenge = await issueChallenge(ctx, { realm: realm.id, session: ceremony.session, ceremony: 'authenticate', kind, user: user?.id ?? null }, lifetimeOf(policy));
  const credentials = user ? await ctx.storage.credentials.ofUser(user.id, credentialTypeOf(kind)) : [];
  return { ...(await (await webAuthnLibrary()).generateAuthenticationOptions({
    rpID: rpIdOf(policy, ceremony.origin),
    challenge: Buffer.from(challenge, 'base64url'),
    ...(policy.createTimeout > 0 ? { timeout: policy.createTimeout * 1000 } : {}),
    allowCredentials: credentials.flatMap((c) => {
      const data = readWebAuthnData(c.credentialData);
      return data ? [{ id: data.id, transports: data.transports }] : [];
    }),
    userVerification: specified<'required' | 'preferred' | 'discouraged'>(policy.userVerificationRequirement) ?? 'preferred',
  })) };
}

export type AssertionResult = { ok: true; user: User } | { ok: false; error: SecondFactorError; user: User | null; reason: string };

/**
 * Verifies an assertion: the user is the one the flow named (when it named one) and the one the user handle names
 * (passwordless: the credential's owner in this realm, so a credential of another realm or user names nobody here);
 * the credential is one of theirs of this kind; the challenge is this auth session's, for this user, taken once;
 * origin, RP id, signature, user verification per policy, a sign counter that moved forward (a clone's going
 * backwards is refused, as Keycloak refuses it) and a backup eligibility (BE) that did not change. The new counter
 * and backup state are stored only if no other sign-in stored a counter first.
 */
export async function verifyAssertion(
  ctx: WebAuthnContext,
  realm: Realm,
  named: User | null,
  kind: WebAuthnKind,
  ceremony: Ceremony,
  responseJson: string,
  attempt: SecondFactorAttempt,
): Promise<AssertionResult> {
  const policy = policyOf(realm, kind);
  const type = credentialTypeOf(kind);
  const response = parseJson<AuthenticationResponseJSON>(responseJson);
  const valid = response !== null && typeof response.id === 'string' && /^[A-Za-z0-9_-]{1,1400}$/.test(response.id) && typeof response.response === 'object' && response.response !== null;
  if (!valid) {
    if (!named) return { ok: false, error: 'invalid_user_credentials', user: null, reason: 'malformed response' };
    const counted = await checkSecondFactor(ctx, realm, named, attempt, async () => false);
    return { ok: false, error: counted.ok ? 'invalid_user_credentials' : counted.error, user: named, reason: 'malformed response' };
  }
  const credentialId = Buffer.from(response.id, 'base64url').toString('base64');
  // The user: the one named before this step; without one (a passkey alone), the owner of the credential in this realm.
  let user = named;
  let stored: StoredCredential | null = null;
  if (!user) {
    stored = await ctx.storage.credentials.byWebAuthnId(realm.id, type, credentialId);
    const owner = stored ? await ctx.storage.users.byId(realm.id, stored.userId) : null;
    user = owner && owner.enabled ? owner : null;
    if (!user) return { ok: false, error: 'invalid_user_credentials', user: null, reason: 'no user of this realm has this credential' };
  }
  const signer = user;
  const handle = typeof response.response.userHandle === 'string' && response.response.userHandle ? Buffer.from(response.response.userHandle, 'base64url').toString('utf8') : null;
  let reason = 'verification failed';
  // The refusal's event (recorded by checkSecondFactor) carries what Keycloak's carries when its WebAuthn library
  // refuses the assertion (a cloned authenticator's counter, a bad signature, the origin …): the error key and why.
  const details: Record<string, string> = { ...attempt.details };
  const verificationFailed = (why: string) => {
    reason = why.slice(0, 200);
    details.web_authn_authentication_error = 'webauthn-error-auth-verification';
    details.web_authn_authentication_error_detail = reason;
    return false;
  };
  const result = await checkSecondFactor(ctx, realm, signer, { ...attempt, details }, async () => {
    stored ??= (await ctx.storage.credentials.ofUser(signer.id, type)).find((c) => readWebAuthnData(c.credentialData)?.credentialId === credentialId) ?? null;
    const data = stored && stored.userId === signer.id ? readWebAuthnData(stored.credentialData) : null;
    if (!stored || !data) {
      reason = 'not a credential of this user';
      return false;
    }
    // The user handle (a discoverable credential's) names this user: their id, or their id in the realm file it came from.
    if (handle !== null && handle !== signer.id && handle !== stored.secretData.userHandle) {
      reason = 'user handle does not match the user';
      return false;
    }
    try {
      const verified = await (await webAuthnLibrary()).verifyAuthenticationResponse({
        response,
        expectedChallenge: (challenge) => takeChallenge(ctx, challenge, { realm: realm.id, session: ceremony.session, ceremony: 'authenticate', kind, user: named?.id ?? null }),
        expectedOrigin: originsOf(policy, ceremony.origin),
        expectedRPID: rpIdOf(policy, ceremony.origin),
        credential: { id: data.id, publicKey: new Uint8Array(data.publicKey), counter: data.counter, transports: data.transports },
        requireUserVerification: policy.userVerificationRequirement === 'required',
      });
      if (!verified.verified) return verificationFailed(reason);
      // WebAuthn L3: BE is fixed for a credential, so an assertion whose BE differs from the one stored is refused;
      // BS may change and is stored. Flags not known yet (a credential from a realm file) are learnt now.
      const flags = backupFlagsOf(verified.authenticationInfo);
      const known = storedBackupFlags(stored.secretData);
      if (known && known.backupEligible !== flags.backupEligible) return verificationFailed(`backup eligibility (BE) changed from ${known.backupEligible} to ${flags.backupEligible}`);
      const counted = await ctx.storage.credentials.replaceData(signer.id, stored.id, stored.credentialData, { ...stored.credentialData, counter: verified.authenticationInfo.newCounter }, { ...stored.secretData, ...flags });
      if (!counted) reason = 'the credential was used concurrently';
      return counted;
    } catch (error) {
      return verificationFailed(error instanceof Error ? error.message : reason);
    }
  });
  if (result.ok) return { ok: true, user: signer };
  return { ok: false, error: result.error, user: signer, reason };
}

function parseJson<T>(text: string): T | null {
  if (typeof text !== 'string' || text.length === 0 || text.length > 65536) return null;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as T) : null;
  } catch {
    return null;
  }
}
