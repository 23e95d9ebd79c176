import { upstreamUsername } from './upstream-oidc.js';
import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from '../context.js';
import type { FlowResult } from '../../flows/index.js';
import type { IdentityProvider, Realm, User } from '../../model/types.js';
import { knownUserStep, type BrowserChallenge, type BrowserEnv, type SignInFailure } from '../sign-in.js';
import type { BrokerProgress } from './broker-state.js';
import { runBrokerFlow } from './run-flow.js';

/**
 * Keycloak's post broker login flow (`postBrokerLoginFlowAlias` of the identity provider): after the upstream
 * signed the user in and the local user is known (a linked account, or the end of the first broker login, its link
 * stored), that flow runs for this user before any session exists, through the one flow runner. It may ask what a
 * known user is asked on a page here (the code of their authenticator app, their password: knownUserStep); a step
 * it requires that this server cannot run for it makes the flow incomplete, and the sign-in is refused. The
 * progress between its pages is the broker's (`phase: 'post'`), bound to the auth session like the first login's.
 */

type PostLoginContext = Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config' | 'providers' | 'flows'>;

/** The provider's post broker login flow alias, or null when it names none (Keycloak's postBrokerLoginFlowAlias). */
export function postBrokerLoginFlowOf(provider: IdentityProvider): string | null {
  const alias = provider.rest.postBrokerLoginFlowAlias;
  return typeof alias === 'string' && alias.trim() ? alias : null;
}

/**
 * Runs the provider's post broker login flow from the top for `user`, with what earlier pages settled (`progress`,
 * updated in place) and the fields the page just posted; null when the realm has no flow of that alias (the
 * sign-in is then refused: the operator asked for a flow, and none runs instead).
 */
export async function runPostBrokerLogin(
  ctx: PostLoginContext,
  realm: Realm,
  provider: IdentityProvider,
  user: User,
  clientId: string,
  request: RequestInfo,
  progress: BrokerProgress,
  submitted: Record<string, string> | null,
): Promise<(FlowResult<BrowserChallenge, SignInFailure> & { env: BrowserEnv }) | null> {
  const alias = postBrokerLoginFlowOf(provider);
  if (!alias) return null;
  const env: BrowserEnv = {
    ctx,
    realm,
    clientId,
    request,
    submitted: submitted && { ...submitted },
    login: user.username,
    details: { auth_method: 'openid-connect', identity_provider: provider.alias, identity_provider_identity: upstreamUsername(progress.identity) },
  };
  const result = await runBrokerFlow<BrowserEnv, BrowserChallenge, SignInFailure>(ctx, realm, alias, env, knownUserStep, progress, user);
  if (!result) return null;
  return { ...result, env };
}
