import type { RequestInfo } from '@realmgate/spi';
import type { PagesContext } from './context.js';
import { realmInfo } from '../events/index.js';
import { providerEventError, type ProviderEventError } from '../model/errors.js';
import type { Realm } from '../model/types.js';

export interface ProfileRefusal {
  /** Event error code of the first refusing action, e.g. `invalid_email_domain`. */
  error: ProviderEventError;
  fieldErrors: Record<string, string>;
}

/**
 * Asks the form actions of the realm's bound registration flow that judge profile changes (`validateProfile`)
 * about a change a user makes to their own profile: what registration refuses (a disposable address, say)
 * cannot be set afterwards. Every place where users edit themselves calls this one function.
 */
export async function profileRefusal(
  ctx: PagesContext,
  realm: Realm,
  clientId: string,
  profile: { email: string; firstName: string; lastName: string; username: string },
  request: RequestInfo,
): Promise<ProfileRefusal | null> {
  const steps = await ctx.flows.registrationSteps(realm);
  let refusal: ProfileRefusal | null = null;
  for (const action of steps.formActions) {
    if (!action.instance.validateProfile) continue;
    const result = await action.instance.validateProfile({ realm: realmInfo(realm), clientId, form: profile, config: action.config, request });
    if (result.ok) continue;
    refusal ??= { error: providerEventError(result.error), fieldErrors: {} };
    for (const fieldError of result.fieldErrors) refusal.fieldErrors[fieldError.field] ??= fieldError.message;
  }
  return refusal;
}
