import type { AuthenticationContext } from './context.js';
import { newId } from '../credentials/index.js';
import { RECOVERY_CODES_TYPE, recoveryCodeMatches, recoveryCodesCredential, remainingRecoveryCodes } from '../credentials/recovery-codes.js';
import type { Realm, User } from '../model/types.js';
import { CONFIGURE_RECOVERY_AUTHN_CODES } from '../required-actions/index.js';
import { checkSecondFactor, recordCredentialSetUp, type SecondFactorAttempt, type SecondFactorResult } from './second-factor.js';

/**
 * Keycloak's recovery codes (`auth-recovery-authn-code-form`, `CONFIGURE_RECOVERY_AUTHN_CODES`): the step asks for
 * the user's next unused code (Keycloak's order), checked through the second-factor limits; a right one is removed
 * by compare-and-set on the stored codes, so it works once however many requests race with it.
 */

type RecoveryContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config'>;

/** Keycloak warns when this few codes are left. */
export const FEW_RECOVERY_CODES_LEFT = 3;

export async function hasRecoveryCodes(ctx: Pick<AuthenticationContext, 'storage'>, user: User): Promise<boolean> {
  return (await ctx.storage.credentials.cachedTypes(user.id)).includes(RECOVERY_CODES_TYPE);
}

/** The number of the code the user is asked for, and how many are left; null without codes. */
export async function nextRecoveryCode(ctx: Pick<AuthenticationContext, 'storage'>, user: User): Promise<{ number: number; remaining: number } | null> {
  const [credential] = await ctx.storage.credentials.ofUser(user.id, RECOVERY_CODES_TYPE);
  const codes = credential ? remainingRecoveryCodes(credential.secretData) : [];
  return codes.length > 0 ? { number: codes[0].number, remaining: codes.length } : null;
}

export async function verifyRecoveryCode(ctx: RecoveryContext, realm: Realm, user: User, input: string, attempt: SecondFactorAttempt): Promise<SecondFactorResult> {
  return checkSecondFactor(ctx, realm, user, attempt, async () => {
    const [credential] = await ctx.storage.credentials.ofUser(user.id, RECOVERY_CODES_TYPE);
    const codes = credential ? remainingRecoveryCodes(credential.secretData) : [];
    if (!credential || codes.length === 0 || !recoveryCodeMatches(input, codes[0])) return false;
    const left = codes.slice(1);
    const used = await ctx.storage.credentials.replaceSecret(user.id, credential.id, credential.secretData, { ...credential.secretData, codes: left }, { ...credential.credentialData, remainingCodes: left.length });
    if (used && left.length === 0) await ctx.storage.credentials.addRequiredAction(user.id, CONFIGURE_RECOVERY_AUTHN_CODES);
    return used;
  });
}

/** CONFIGURE_RECOVERY_AUTHN_CODES: the new codes (their hashes) replace the user's old ones; the action is done. */
export async function saveRecoveryCodes(ctx: RecoveryContext, realm: Realm, user: User, hashes: readonly string[], attempt: SecondFactorAttempt): Promise<void> {
  const { secretData, credentialData } = recoveryCodesCredential(hashes);
  await ctx.storage.transaction(async (trx) => {
    for (const old of await ctx.storage.credentials.ofUser(user.id, RECOVERY_CODES_TYPE, trx)) await ctx.storage.credentials.delete(user.id, old.id, trx);
    await ctx.storage.credentials.insert({ id: newId(), userId: user.id, type: RECOVERY_CODES_TYPE, userLabel: null, secretData, credentialData, createdDate: Date.now(), priority: 40 }, trx);
    await ctx.storage.credentials.removeRequiredAction(user.id, CONFIGURE_RECOVERY_AUTHN_CODES, trx);
  });
  await recordCredentialSetUp(ctx, realm, user, RECOVERY_CODES_TYPE, attempt);
}
