import { AppError } from '../model/errors.js';
import type { AuthExecution, AuthFlow } from './model.js';
import type { RealmFlows } from './realm-flows.js';

/** Why a flow cannot run: an execution whose provider is not installed and that a sign-in through the flow cannot do without. */
export interface FlowBlocker {
  execution: AuthExecution;
  /** The flow the execution belongs to. */
  parent: AuthFlow;
  provider: string;
}

/** A condition of a conditional subflow (Keycloak's `conditional-*` authenticators): decides, is not a step. */
export const isCondition = (e: AuthExecution) => !e.subFlowId && isConditionProvider(e.authenticator ?? '');

/** Keycloak names its conditions (ConditionalAuthenticator) `conditional-…`. */
export const isConditionProvider = (providerId: string) => providerId.startsWith('conditional-');

/**
 * Never an alternative a page can take: auth-cookie is satisfied by an SSO session only, and
 * identity-provider-redirector only sends the browser away (the upstream sign-in ends outside this flow).
 */
const NOT_A_PAGE = new Set(['auth-cookie', 'identity-provider-redirector']);

/**
 * The first execution, in Keycloak's order, whose provider is not installed and without which a sign-in through
 * the flow cannot succeed; null when the flow runs with what is installed. Walked as Keycloak evaluates a flow:
 *
 * - DISABLED executions do not count; a condition that is not installed counts as met (the stricter reading), so it
 *   never blocks;
 * - where a level has REQUIRED (or CONDITIONAL) executions, each must be able to run (a CONDITIONAL subflow is
 *   counted as entered, since its conditions may hold; one without an enabled condition never runs), and the
 *   ALTERNATIVE ones beside them are ignored, as Keycloak ignores them;
 * - where a level has only ALTERNATIVE executions, one that can run is enough (`auth-cookie` and
 *   `identity-provider-redirector` do not count: the SSO session, a redirect, never a page): a missing alternative is then skipped, which removes a way in and never lowers
 *   the bar. When none can run, the level cannot.
 *
 * Keycloak fails a login as soon as it evaluates a level holding any enabled execution without a provider
 * ("Unable to find factory for AuthenticatorFactory"), alternatives included; Realmgate skips such an alternative
 * where another one remains, since a realm file can name Keycloak providers this server will never have.
 */
export function flowBlocker(flows: RealmFlows, flowId: string, installed: (providerId: string) => boolean): FlowBlocker | null {
  const entered = new Set<string>();
  const levelBlocker = (flow: AuthFlow): FlowBlocker | null => {
    // A subflow reached twice would mean a cycle in damaged data: once is enough to judge it.
    if (entered.has(flow.id)) return null;
    entered.add(flow.id);
    const enabled = flows.executionsOf(flow.id).filter((e) => e.requirement !== 'DISABLED' && !isCondition(e));
    const required = enabled.filter((e) => e.requirement === 'REQUIRED' || e.requirement === 'CONDITIONAL');
    if (required.length > 0) {
      for (const execution of required) {
        if (execution.requirement === 'CONDITIONAL' && execution.subFlowId && !hasEnabledCondition(flows, execution.subFlowId)) continue;
        const blocker = executionBlocker(execution, flow);
        if (blocker) return blocker;
      }
      return null;
    }
    let first: FlowBlocker | null = null;
    for (const execution of enabled) {
      const blocker = executionBlocker(execution, flow);
      if (!blocker && (execution.subFlowId || !NOT_A_PAGE.has(execution.authenticator ?? ''))) return null;
      first ??= blocker;
    }
    return first;
  };
  const executionBlocker = (execution: AuthExecution, parent: AuthFlow): FlowBlocker | null => {
    if (execution.subFlowId) {
      const subflow = flows.flow(execution.subFlowId);
      return subflow ? levelBlocker(subflow) : null;
    }
    if (execution.authenticator && !installed(execution.authenticator)) return { execution, parent, provider: execution.authenticator };
    return null;
  };
  const root = flows.flow(flowId);
  return root ? levelBlocker(root) : null;
}

function hasEnabledCondition(flows: RealmFlows, flowId: string): boolean {
  return flows.executionsOf(flowId).some((e) => e.requirement !== 'DISABLED' && isCondition(e));
}

/** How a blocker reads in a message: `authenticator "custom-mfa" (REQUIRED, in flow "my forms") is not installed`. */
export const describeBlocker = (blocker: FlowBlocker) =>
  `authenticator "${blocker.provider}" (${blocker.execution.requirement}, in flow "${blocker.parent.alias}") is not installed`;

/**
 * A sign-in through a flow that cannot run: refused, never run without the missing step (500, as Keycloak's
 * "unexpected error" for a provider it cannot find). The details go to the server log, not to the browser.
 */
export class FlowCannotRunError extends AppError {
  constructor(
    readonly flow: string,
    readonly blocker: FlowBlocker,
  ) {
    super('internal_error', 'This realm cannot sign anyone in through this flow right now: one of its steps is not installed on the server. Please contact the administrator.');
    this.name = 'FlowCannotRunError';
  }
}

/**
 * A sign-in for a client whose flow override names a flow the realm does not have (damaged data: deleting a flow in
 * use is refused): refused (500), never run through the realm's flow instead, which may ask for less.
 */
export class FlowOverrideMissingError extends AppError {
  constructor(
    readonly client: string,
    readonly binding: string,
  ) {
    super('internal_error', "This application's sign-in is not set up correctly on the server. Please contact the administrator.");
    this.name = 'FlowOverrideMissingError';
  }
}
