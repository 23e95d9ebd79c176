import type { User } from '../model/types.js';
import type { AuthExecution, AuthFlow } from './model.js';
import type { RealmFlows } from './realm-flows.js';
import { isCondition } from './runnable.js';

/**
 * The one flow runner (Keycloak's DefaultAuthenticationFlow), for every sign-in: the browser's pages and the
 * direct grant run the same authenticators through it, each with its own adapter (a page to show, or an OAuth
 * error). It knows nothing about pages, passwords or HTTP: an authenticator says what happened, the adapter maps
 * it. Keycloak's semantics, level by level:
 *
 * - DISABLED executions are not there; conditions (`conditional-*`) are not steps, they decide whether the
 *   CONDITIONAL subflow they sit in runs;
 * - REQUIRED and CONDITIONAL executions all run, in priority order; ALTERNATIVE ones beside them are ignored
 *   (Keycloak logs "REQUIRED and ALTERNATIVE elements at same level! Those alternative executions will be
 *   ignored");
 * - a level of ALTERNATIVE executions only succeeds with the first one that succeeds; one that cannot run (a
 *   step that needs a user before there is one, a credential the user has not set up) is skipped;
 * - a CONDITIONAL subflow runs only when it has an enabled condition and every enabled condition holds, judged
 *   when the walk reaches it (after the steps before it named the user); otherwise it is passed over;
 * - an authenticator that `requiresUser` needs a user by then; one the user is not `configuredFor` either sets
 *   its required action (REQUIRED, with `setupAction`: Keycloak's setRequiredActions) and counts as done, or
 *   stops the flow (CREDENTIAL_SETUP_REQUIRED);
 * - a subflow whose steps ran without success (an empty one, one whose only step is DISABLED) fails, and so does
 *   the level it is REQUIRED in.
 *
 * "Try another way" (Keycloak's authentication selection): a challenge from a level of ALTERNATIVE executions names
 * the other alternatives of that level the user could take now (`alternatives`: steps the adapter marks `selectable`,
 * set up for the user, or a subflow whose first step is one); a run given `selected`, one of them, takes it instead:
 * the level's other alternatives are marked `attempted` in what the run settles, so later requests of the same
 * sign-in (given `done` back) go on with the chosen one. The flow, not the page, decides what comes next.
 *
 * A walk starts again from the top at every request (as Keycloak's processFlow does after each action); what
 * earlier requests of the same sign-in settled is given back as `done`, so a finished step is not asked again.
 */

/** What one authenticator did. */
export type StepOutcome<Challenge, Failure> =
  | { status: 'success'; user?: User }
  /** Tried and not applicable (no SSO session for the cookie): an alternative beside it may still succeed. */
  | { status: 'attempted' }
  /** Needs the user: the adapter shows a page (browser) or answers an error (direct grant). */
  | { status: 'challenge'; challenge: Challenge }
  | { status: 'failure'; failure: Failure };

export interface StepContext<Env> {
  execution: AuthExecution;
  /** The execution's authenticatorConfig (`{}` when none). */
  config: Readonly<Record<string, string>>;
  user: User | null;
  env: Env;
  /** What this run has settled so far (execution id → status): a step that hands the flow on (an e-mailed link) carries it. */
  done: Readonly<Record<string, ExecutionStatus>>;
  /**
   * For a form (an execution whose provider is a form, `registration-page-form`, running a `form-flow`): the form
   * sub-flow's enabled executions (form actions, protectors) in priority order, each with its config. Keycloak's
   * FormAuthenticationFlow: the form is one step; its actions validate the one post together, then succeed in order.
   */
  formSteps?: readonly { execution: AuthExecution; config: Readonly<Record<string, string>> }[];
}

export interface Authenticator<Env, Challenge, Failure> {
  /** Keycloak's provider id. */
  id: string;
  /** Needs to know the user (a step after the one that names them). */
  requiresUser: boolean;
  /** Whether the user has what this step checks (an OTP credential); absent: always. */
  configuredFor?(user: User, env: Env): Promise<boolean>;
  /**
   * The required action a REQUIRED step sets for a user not configured for it (Keycloak's isUserSetupAllowed and
   * setRequiredActions), when the realm has that action enabled (areRequiredActionsEnabled).
   */
  setupAction?: string;
  /** Offered by "try another way" when it sits beside the step asking (it has a page of its own). */
  selectable?: boolean;
  /**
   * For a selectable step that can pass itself over where it cannot work (e-mail verification in a realm that sends no
   * mail): whether it can be offered now; absent: always. A way that would only be passed over is not listed.
   */
  offered?(env: Env): Promise<boolean>;
  authenticate(context: StepContext<Env>): Promise<StepOutcome<Challenge, Failure>>;
}

export interface ConditionContext<Env> {
  execution: AuthExecution;
  config: Readonly<Record<string, string>>;
  user: User | null;
  env: Env;
  /** Keycloak's conditional-user-configured: whether the user is set up for what the executions of this flow check. */
  userConfiguredFor(flowId: string): Promise<boolean>;
}

export interface Condition<Env> {
  id: string;
  matches(context: ConditionContext<Env>): Promise<boolean>;
}

/** One way at a level of alternatives: the execution at that level, and the step it starts with (a subflow's first). */
export interface Alternative {
  execution: string;
  authenticator: string;
}

/** How an execution ended in an earlier request of this sign-in (Keycloak's execution status). */
export type ExecutionStatus = 'success' | 'attempted' | 'setup' | 'skipped' | 'failed';

/** Why a flow ended without a step's own answer (Keycloak's AuthenticationFlowError). */
export type FlowIncomplete = 'unknown_user' | 'credential_setup_required' | 'not_successful' | 'missing_provider';

export type FlowResult<Challenge, Failure> =
  | { status: 'success'; user: User; requiredActions: string[]; done: Record<string, ExecutionStatus> }
  | {
      status: 'challenge';
      challenge: Challenge;
      execution: AuthExecution;
      user: User | null;
      requiredActions: string[];
      done: Record<string, ExecutionStatus>;
      /** "Try another way": the asking alternative first, then the others of its level the user could take (empty: none). */
      alternatives: Alternative[];
    }
  | { status: 'failure'; failure: Failure; execution: AuthExecution; user: User | null }
  | { status: 'incomplete'; reason: FlowIncomplete; provider: string | null; user: User | null };

export interface FlowRun<Env, Challenge, Failure> {
  flows: RealmFlows;
  root: AuthFlow;
  env: Env;
  authenticator(id: string): Authenticator<Env, Challenge, Failure> | undefined;
  condition(id: string): Condition<Env> | undefined;
  /** What earlier requests of this sign-in settled (execution id → status), and who they named. */
  done?: Readonly<Record<string, ExecutionStatus>>;
  user?: User | null;
  requiredActions?: readonly string[];
  /** "Try another way": the alternative execution (by id) the user chose at the level that asked. */
  selected?: string;
  /** Whether the realm has this required action enabled (a step may set it for the user only then). */
  actionEnabled?(alias: string): Promise<boolean>;
  /** A level that lists REQUIRED and ALTERNATIVE executions together (its alternatives are ignored). */
  onIgnoredAlternatives?(flow: AuthFlow, ignored: AuthExecution[]): void;
}

class Incomplete extends Error {
  constructor(
    readonly reason: FlowIncomplete,
    readonly provider: string | null,
  ) {
    super(reason);
  }
}

type Exit<C, F> = { exit: 'challenge'; challenge: C; execution: AuthExecution; alternatives?: Alternative[] } | { exit: 'failure'; failure: F; execution: AuthExecution };

const settled = (status: ExecutionStatus | undefined) => status === 'success' || status === 'setup';

export async function runFlow<Env, C, F>(run: FlowRun<Env, C, F>): Promise<FlowResult<C, F>> {
  const { flows, env } = run;
  const status: Record<string, ExecutionStatus> = { ...(run.done ?? {}) };
  const requiredActions = new Set(run.requiredActions ?? []);
  let user: User | null = run.user ?? null;
  const entered = new Set<string>();

  const configFor = (execution: AuthExecution) => flows.config(execution.configId)?.config ?? {};

  /** Keycloak's conditional-user-configured over one flow: its REQUIRED executions all configured, else any ALTERNATIVE one, else true. */
  const userConfiguredFor = async (flowId: string, seen = new Set<string>()): Promise<boolean> => {
    if (seen.has(flowId)) return true;
    seen.add(flowId);
    const steps = flows.executionsOf(flowId).filter((e) => !isCondition(e));
    const required = steps.filter((e) => e.requirement === 'REQUIRED');
    const alternative = steps.filter((e) => e.requirement === 'ALTERNATIVE');
    const configured = async (e: AuthExecution): Promise<boolean> => {
      if (e.subFlowId) return userConfiguredFor(e.subFlowId, seen);
      const authenticator = e.authenticator ? run.authenticator(e.authenticator) : undefined;
      if (!authenticator?.configuredFor) return true;
      return user !== null && (await authenticator.configuredFor(user, env));
    };
    if (required.length > 0) {
      for (const e of required) if (!(await configured(e))) return false;
      return true;
    }
    if (alternative.length > 0) {
      for (const e of alternative) if (await configured(e)) return true;
      return false;
    }
    return true;
  };

  /** Keycloak's isConditionalSubflowDisabled: no enabled condition, or one that does not hold (or is not installed). */
  const conditionalSubflowRuns = async (flowId: string): Promise<boolean> => {
    const conditions = flows.executionsOf(flowId).filter((e) => isCondition(e) && e.requirement !== 'DISABLED');
    if (conditions.length === 0) return false;
    for (const execution of conditions) {
      const condition = run.condition(execution.authenticator!);
      // A condition this server does not have: the subflow runs (the stricter reading: its steps are asked).
      if (!condition) continue;
      if (!(await condition.matches({ execution, config: configFor(execution), user, env, userConfiguredFor: (id) => userConfiguredFor(id) }))) return false;
    }
    return true;
  };

  const single = async (execution: AuthExecution): Promise<Exit<C, F> | null> => {
    const form = execution.subFlowId && execution.authenticator && flows.flow(execution.subFlowId)?.providerId === 'form-flow' ? execution.subFlowId : null;
    if (execution.subFlowId && !form) {
      if (settled(status[execution.id])) return null;
      const subflow = flows.flow(execution.subFlowId);
      if (!subflow) throw new Incomplete('not_successful', null);
      const result = await level(subflow);
      if (typeof result === 'object') return result;
      status[execution.id] = result ? 'success' : 'failed';
      return null;
    }
    const previous = status[execution.id];
    if (previous === 'success' || previous === 'setup' || previous === 'attempted' || previous === 'skipped') return null;
    const id = execution.authenticator ?? '';
    const authenticator = run.authenticator(id);
    if (!authenticator) throw new Incomplete('missing_provider', id);
    if (authenticator.requiresUser) {
      if (!user) throw new Incomplete('unknown_user', id);
      if (authenticator.configuredFor && !(await authenticator.configuredFor(user, env))) {
        if (authenticator.setupAction && execution.requirement === 'REQUIRED' && (await run.actionEnabled?.(authenticator.setupAction)) !== false) {
          requiredActions.add(authenticator.setupAction);
          status[execution.id] = 'setup';
          return null;
        }
        throw new Incomplete('credential_setup_required', id);
      }
    }
    const formSteps = form ? flows.executionsOf(form).filter((e) => e.requirement !== 'DISABLED').map((e) => ({ execution: e, config: configFor(e) })) : undefined;
    const outcome = await authenticator.authenticate({ execution, config: configFor(execution), user, env, done: status, ...(formSteps ? { formSteps } : {}) });
    switch (outcome.status) {
      case 'success':
        if (outcome.user) user = outcome.user;
        status[execution.id] = 'success';
        return null;
      case 'attempted':
        status[execution.id] = 'attempted';
        return null;
      case 'challenge':
        return { exit: 'challenge', challenge: outcome.challenge, execution };
      case 'failure':
        status[execution.id] = 'failed';
        return { exit: 'failure', failure: outcome.failure, execution };
    }
  };

  /** An alternative "try another way" may offer: a selectable step the user can take now, or a subflow starting with one. */
  const selectable = async (execution: AuthExecution, depth = 0): Promise<Alternative | null> => {
    if (execution.subFlowId) {
      if (depth > 3) return null;
      const first = flows.executionsOf(execution.subFlowId).find((e) => e.requirement !== 'DISABLED' && !isCondition(e));
      const inner = first ? await selectable(first, depth + 1) : null;
      return inner && { execution: execution.id, authenticator: inner.authenticator };
    }
    const authenticator = execution.authenticator ? run.authenticator(execution.authenticator) : undefined;
    if (!authenticator?.selectable) return null;
    if (authenticator.requiresUser && !user) return null;
    if (authenticator.configuredFor && !(user && (await authenticator.configuredFor(user, env)))) return null;
    if (authenticator.offered && !(await authenticator.offered(env))) return null;
    return { execution: execution.id, authenticator: authenticator.id };
  };

  /** One level: an exit (a step's own answer), or whether the level succeeded. */
  const level = async (flow: AuthFlow): Promise<Exit<C, F> | boolean> => {
    // Damaged data (a subflow reached twice): once is enough, and it does not count as passed.
    if (entered.has(flow.id)) return false;
    entered.add(flow.id);
    try {
      const enabled = flows.executionsOf(flow.id).filter((e) => e.requirement !== 'DISABLED' && !isCondition(e));
      const required = enabled.filter((e) => e.requirement === 'REQUIRED' || e.requirement === 'CONDITIONAL');
      const alternative = enabled.filter((e) => e.requirement === 'ALTERNATIVE');
      if (required.length > 0) {
        if (alternative.length > 0) run.onIgnoredAlternatives?.(flow, alternative);
        for (const execution of required) {
          if (execution.requirement === 'CONDITIONAL' && execution.subFlowId && !settled(status[execution.id]) && !(await conditionalSubflowRuns(execution.subFlowId))) continue;
          const exit = await single(execution);
          if (exit) return exit;
          const done = status[execution.id];
          if (!settled(done) && !(execution.requirement === 'CONDITIONAL' && done === undefined)) return false;
        }
        return true;
      }
      if (alternative.some((e) => settled(status[e.id]))) return true;
      const chosen = run.selected ? alternative.find((e) => e.id === run.selected) : undefined;
      if (chosen) {
        // The user's choice: the level's other alternatives are set aside, the chosen one asked (again).
        for (const e of alternative) if (e !== chosen && status[e.id] === undefined) status[e.id] = 'attempted';
        for (const e of alternative) if (e !== chosen && (status[e.id] === 'skipped' || status[e.id] === 'failed')) status[e.id] = 'attempted';
        delete status[chosen.id];
      }
      for (const execution of alternative) {
        try {
          const exit = await single(execution);
          if (exit) {
            if (exit.exit === 'challenge' && !exit.alternatives) {
              // The step asking, even when the user has not set it up (a passkey step needs no user, so it asks
              // anyway): the others are still offered, so a user without a passkey can take the password.
              const start = (await selectable(execution)) ?? (execution.authenticator && !execution.subFlowId ? { execution: execution.id, authenticator: execution.authenticator } : null);
              const others: Alternative[] = [];
              for (const e of alternative) {
                if (e === execution) continue;
                const way = await selectable(e);
                if (way) others.push(way);
              }
              exit.alternatives = start && others.length > 0 ? [start, ...others] : [];
            }
            return exit;
          }
          if (settled(status[execution.id])) return true;
        } catch (error) {
          if (!(error instanceof Incomplete)) throw error;
          // The user may still get in through another alternative (Keycloak skips it the same way).
          status[execution.id] = 'skipped';
        }
      }
      return false;
    } finally {
      entered.delete(flow.id);
    }
  };

  try {
    const result = await level(run.root);
    if (typeof result === 'object') {
      if (result.exit === 'failure') return { status: 'failure', failure: result.failure, execution: result.execution, user };
      return { status: 'challenge', challenge: result.challenge, execution: result.execution, user, requiredActions: [...requiredActions], done: status, alternatives: result.alternatives ?? [] };
    }
    if (!user) return { status: 'incomplete', reason: 'unknown_user', provider: null, user };
    if (!result) return { status: 'incomplete', reason: 'not_successful', provider: null, user };
    return { status: 'success', user, requiredActions: [...requiredActions], done: status };
  } catch (error) {
    if (error instanceof Incomplete) return { status: 'incomplete', reason: error.reason, provider: error.provider, user };
    throw error;
  }
}
