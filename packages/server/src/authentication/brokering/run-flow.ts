import type { AuthenticationContext } from '../context.js';
import type { Authenticator, FlowResult } from '../../flows/index.js';
import type { Realm, User } from '../../model/types.js';
import { realmRequiredActions } from '../../services/index.js';
import { signInCondition, type SignInEnv } from '../sign-in.js';
import type { BrokerProgress } from './broker-state.js';

/**
 * Runs one of a brokered sign-in's flows (the first or the post broker login flow) from the top through the one
 * flow runner, with what earlier pages settled (`progress`, updated in place); null when the realm has no flow of
 * that alias.
 */
export async function runBrokerFlow<Env extends SignInEnv, Challenge, Failure>(
  ctx: Pick<AuthenticationContext, 'storage' | 'flows'>,
  realm: Realm,
  alias: string,
  env: Env,
  authenticator: (id: string) => Authenticator<Env, Challenge, Failure> | undefined,
  progress: BrokerProgress,
  user: User | null,
  /** "Try another way": the alternative execution the user chose on the page that offered it. */
  selected?: string,
): Promise<FlowResult<Challenge, Failure> | null> {
  const result = await ctx.flows.runNamedFlow<Env, Challenge, Failure>(realm, alias, {
    env,
    authenticator,
    condition: (id) => signInCondition(id),
    done: progress.done,
    user,
    requiredActions: progress.requiredActions,
    ...(selected ? { selected } : {}),
    actionEnabled: async (action) => (await realmRequiredActions(ctx.storage, realm.id)).some((a) => a.alias === action && a.enabled),
  });
  if (result && (result.status === 'success' || result.status === 'challenge')) {
    progress.done = result.done;
    progress.requiredActions = result.requiredActions;
  }
  return result;
}
