import type { FormAction, FormProtector } from '@realmgate/spi';
import type { Realm } from '../model/types.js';
import type { ServerLogger } from '../observability/index.js';
import type { Db, Storage } from '../storage/index.js';
import { defaultBindings } from './builtin-flows.js';
import type { ProviderCatalog } from './catalog.js';
import { flowBindings, type FlowExtensions, type AuthExecution, type AuthFlow, type FlowBinding, type OverrideBinding } from './model.js';
import { RealmFlows } from './realm-flows.js';
import { passwordAction, userCreationAction } from './registration-actions.js';
import { runFlow, type FlowResult, type FlowRun } from './engine.js';
import { describeBlocker, flowBlocker, FlowCannotRunError, FlowOverrideMissingError, isCondition } from './runnable.js';
import type { FlowRepository, RealmFlowRows } from './repository.js';

/** A form protector to run on the form, with its execution's config (`{}` when none is attached). */
export interface ProtectorStep {
  /** The provider id. */
  id: string;
  executionId: string;
  instance: FormProtector;
  config: Record<string, string>;
}

/** A registration form action (built-in or from a provider package), with its execution's config. */
export interface FormActionStep {
  id: string;
  executionId: string;
  instance: FormAction;
  config: Record<string, string>;
}

/** The enabled steps of a form's bound flow, each list in flow order. */
export interface FormSteps {
  protectors: ProtectorStep[];
}

export interface RegistrationSteps extends FormSteps {
  formActions: FormActionStep[];
}

/** A realm setting that names no usable flow, worded for a 400 on the realm PUT. */
export interface BindingProblem {
  field: FlowBinding;
  message: string;
}

/** The client whose sign-in it is (its clientId), or null where no client is known yet. */
export type SigningClient = string | null;

/** A sign-in's flow and how it came to be chosen, for the log of a flow that cannot run. */
interface ChosenFlow {
  root: AuthFlow;
  binding: string;
}

type BuiltInAction = (realm: Realm) => FormAction;

/** Reads a realm's bound flows and turns their enabled executions into the steps a page runs. */
export class FlowRunner {
  private readonly warned = new Set<string>();
  /** The navigable form of each cached set of a realm's flow rows, built once per set (the rows are frozen). */
  private readonly navigable = new WeakMap<RealmFlowRows, RealmFlows>();
  private readonly builtInActions: Map<string, BuiltInAction>;
  /** Whether a provider id names a provider of this server (built-in, or of an installed package). */
  readonly installed = (providerId: string): boolean => this.catalog.get(providerId) !== undefined;

  constructor(
    private readonly repository: FlowRepository,
    private readonly catalog: ProviderCatalog,
    private readonly providers: FlowExtensions,
    private readonly storage: Storage,
    private readonly logger: ServerLogger,
  ) {
    this.builtInActions = new Map<string, BuiltInAction>([
      ['registration-user-creation', (realm) => userCreationAction(storage.users, realm)],
      ['registration-password-action', () => passwordAction()],
    ]);
  }

  /** A form action by provider id: an installed package's, or a built-in one (registration-user-creation …). */
  formAction(realm: Realm, providerId: string): FormAction | undefined {
    return this.providers.formActions.get(providerId)?.instance ?? this.builtInActions.get(providerId)?.(realm);
  }

  /** Form actions belong to registration: in a login or reset flow they have no form to read. */
  async loginSteps(realm: Realm, client: SigningClient): Promise<FormSteps> {
    const flows = await this.cachedFlows(realm);
    return { protectors: this.steps(realm, await this.signInFlow(realm, 'browser', client, flows), flows).protectors };
  }

  async registrationSteps(realm: Realm): Promise<RegistrationSteps> {
    const flows = await this.cachedFlows(realm);
    return this.steps(realm, { root: this.boundFlow(realm, 'registrationFlow', flows), binding: 'registrationFlow' }, flows);
  }

  async resetSteps(realm: Realm): Promise<FormSteps> {
    const flows = await this.cachedFlows(realm);
    return { protectors: this.steps(realm, { root: this.boundFlow(realm, 'resetCredentialsFlow', flows), binding: 'resetCredentialsFlow' }, flows).protectors };
  }

  /**
   * The flow a sign-in runs, chosen here once for the login pages and the password grant: the client's override of
   * that binding (Keycloak's `authenticationFlowBindingOverrides`, a flow id) when it has one, else the realm's (its
   * bound browser flow; the built-in `direct grant`, which Realmgate does not let a realm rebind). An override whose
   * flow is gone (damaged data: deleting a flow a client uses is refused) refuses the sign-in, as Keycloak refuses
   * it, rather than run the realm's flow, which may ask for less.
   */
  private async signInFlow(realm: Realm, entry: OverrideBinding, clientId: SigningClient, flows: RealmFlows): Promise<ChosenFlow> {
    const client = clientId === null ? null : await this.storage.clients.cachedByClientId(realm.id, clientId);
    const override = client?.authenticationFlowBindingOverrides[entry];
    if (client && override) {
      const flow = flows.flow(override);
      const binding = `client "${client.clientId}" ${entry} override`;
      if (flow?.topLevel) return { root: flow, binding };
      this.logOnce('error', `${realm.id}:missing-override:${client.id}:${entry}`, 'a client overrides a flow binding with a flow the realm does not have; its sign-ins are refused', { realm: realm.name, client: client.clientId, binding: entry, flow: override });
      throw new FlowOverrideMissingError(client.clientId, entry);
    }
    if (entry === 'browser') return { root: this.boundFlow(realm, 'browserFlow', flows), binding: 'browserFlow' };
    const directGrant = flows.flowByAlias('direct grant');
    if (!directGrant) throw new Error(`realm ${realm.name} has no built-in "direct grant" flow`);
    return { root: directGrant, binding: 'direct grant' };
  }

  private async cachedFlows(realm: Realm): Promise<RealmFlows> {
    const rows = await this.repository.cachedRealm(realm.id);
    let flows = this.navigable.get(rows);
    if (!flows) {
      flows = new RealmFlows(rows);
      this.navigable.set(rows, flows);
    }
    return flows;
  }

  /**
   * Runs a sign-in's flow (the client's override of `entry`, else the realm's: `signInFlow`) through the one flow
   * runner (engine.ts), with the adapter's authenticators and conditions. A flow that cannot run is refused first
   * (FlowCannotRunError). Reads nothing but the cached flow rows and the cached client.
   */
  async runSignIn<Env, C, F>(realm: Realm, entry: OverrideBinding, client: SigningClient, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F>> {
    const flows = await this.cachedFlows(realm);
    const chosen = await this.signInFlow(realm, entry, client, flows);
    this.requireRunnable(realm, chosen, flows);
    return runFlow({
      ...run,
      flows,
      root: chosen.root,
      onIgnoredAlternatives: (flow, ignored) =>
        this.warnOnce(`${realm.id}:ignored-alternatives:${flow.id}`, 'REQUIRED and ALTERNATIVE executions at the same level: the alternatives are ignored, as Keycloak ignores them', {
          realm: realm.name,
          flow: flow.alias,
          ignored: ignored.map((e) => e.authenticator ?? e.subFlowId),
        }),
    });
  }

  /**
   * Runs the realm's bound flow of a page sequence that is not a sign-in (reset credentials) through the one flow
   * runner, refused first when it cannot run (FlowCannotRunError). Reads nothing but the cached flow rows.
   */
  async runBound<Env, C, F>(realm: Realm, binding: Exclude<FlowBinding, 'browserFlow'>, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F>> {
    const flows = await this.cachedFlows(realm);
    const chosen = { root: this.boundFlow(realm, binding, flows), binding };
    this.requireRunnable(realm, chosen, flows);
    return runFlow({ ...run, flows, root: chosen.root });
  }

  /**
   * Runs the realm's flow named `alias` (an identity provider's first / post broker login flow) through the one
   * runner, refused first when a step it requires is neither installed nor given by the adapter; null when the
   * realm has no flow of that alias (every realm has `first broker login`: built in, and added at start-up).
   */
  async runNamedFlow<Env, C, F>(realm: Realm, alias: string, run: Omit<FlowRun<Env, C, F>, 'flows' | 'root'>): Promise<FlowResult<C, F> | null> {
    const flows = await this.cachedFlows(realm);
    const root = flows.flowByAlias(alias);
    if (!root) return null;
    const blocker = flowBlocker(flows, root.id, (id) => this.installed(id) || run.authenticator(id) !== undefined || run.condition(id) !== undefined);
    if (blocker) throw new FlowCannotRunError(root.alias, blocker);
    return runFlow({ ...run, flows, root });
  }

  /**
   * A realm's bindings as a realm PUT would store them: each names a top-level flow of the realm, and one the PUT
   * changes names a flow that can run (FlowBlocker: no step it needs lacks its provider). Keycloak binds such a
   * flow and fails every login through it; refusing the binding names the problem before anyone is locked out. A
   * binding the PUT leaves as it is is not judged again: a flow that stopped running (a package removed) fails its
   * sign-ins until it is fixed, and the realm's other settings can still be saved.
   */
  async validateBindings(realm: Realm, db?: Db): Promise<BindingProblem | null> {
    const flows = new RealmFlows(await this.repository.loadRealm(realm.id, db));
    const stored = await this.repository.storedBindings(realm.id, db);
    for (const field of flowBindings) {
      const alias = realm[field];
      const flow = flows.flowByAlias(alias);
      if (!flow) return { field, message: `realm.${field}: no flow "${alias}" in this realm` };
      if (!flow.topLevel) return { field, message: `realm.${field}: "${alias}" is a subflow; bind a top-level flow` };
      if (stored?.[field] === alias) continue;
      const blocker = flowBlocker(flows, flow.id, this.installed);
      if (blocker) {
        return { field, message: `realm.${field}: "${alias}" cannot run: ${describeBlocker(blocker)}; install it, or disable that step, before binding the flow` };
      }
    }
    return null;
  }

  /**
   * Refuses a sign-in through a flow that cannot run (FlowBlocker), logged once per realm, flow and step: a missing
   * provider never lets a sign-in skip a step the flow requires.
   */
  private requireRunnable(realm: Realm, { root, binding }: ChosenFlow, flows: RealmFlows): void {
    const blocker = flowBlocker(flows, root.id, this.installed);
    if (!blocker) return;
    this.logOnce('error', `${realm.id}:cannot-run:${root.id}:${blocker.execution.id}`, 'authentication flow cannot run: a step it requires is not installed; sign-ins through it are refused', {
      realm: realm.name,
      binding,
      flow: root.alias,
      subflow: blocker.parent.alias,
      provider: blocker.provider,
      requirement: blocker.execution.requirement,
      execution: blocker.execution.id,
    });
    throw new FlowCannotRunError(root.alias, blocker);
  }

  private steps(realm: Realm, chosen: ChosenFlow, flows: RealmFlows): RegistrationSteps {
    this.requireRunnable(realm, chosen, flows);
    const { root } = chosen;
    const steps: RegistrationSteps = { protectors: [], formActions: [] };
    for (const { execution, parent } of flows.walk(root.id, (e) => e.requirement !== 'DISABLED')) {
      if (execution.requirement === 'DISABLED' || execution.subFlowId || !execution.authenticator) continue;
      this.addStep(steps, realm, execution, flows, parent);
    }
    return steps;
  }

  /** The bound flow; a binding that names nothing (an import, a concurrent delete) falls back to the built-in one. */
  private boundFlow(realm: Realm, binding: FlowBinding, flows: RealmFlows): AuthFlow {
    const bound = flows.flowByAlias(realm[binding]);
    if (bound) return bound;
    const fallback = flows.flowByAlias(defaultBindings[binding]);
    if (!fallback) throw new Error(`realm ${realm.name} has neither its ${binding} "${realm[binding]}" nor the built-in flow`);
    this.warnOnce(`${realm.id}:${binding}:${realm[binding]}`, 'bound flow not found; the built-in flow runs instead', {
      realm: realm.name,
      binding,
      flow: realm[binding],
      fallback: fallback.alias,
    });
    return fallback;
  }

  private addStep(steps: RegistrationSteps, realm: Realm, execution: AuthExecution, flows: RealmFlows, parent: AuthFlow): void {
    const id = execution.authenticator!;
    const config = { ...(flows.config(execution.configId)?.config ?? {}) };
    const protector = this.providers.formProtectors.get(id);
    if (protector) {
      steps.protectors.push({ id, executionId: execution.id, instance: protector.instance, config });
      return;
    }
    const action = this.formAction(realm, id);
    if (action) {
      steps.formActions.push({ id, executionId: execution.id, instance: action, config });
      return;
    }
    // Authenticators run through runSignIn / runBound (authentication/sign-in.ts, reset-credentials.ts, registration.ts).
    const known = this.catalog.get(id);
    if (known && known.role !== 'form-action') return;
    // Only where the flow does not need it (requireRunnable ran first): an alternative beside one that runs, an
    // alternative Keycloak ignores beside required steps, a condition (counted as met), or a part that never runs.
    this.warnOnce(`${realm.id}:${id}`, isCondition(execution) ? 'flow condition not installed: counted as met' : 'authentication execution skipped: its provider is not installed', {
      realm: realm.name,
      flow: parent.alias,
      provider: id,
      requirement: execution.requirement,
      execution: execution.id,
    });
  }

  private warnOnce(key: string, message: string, fields: Record<string, unknown>): void {
    this.logOnce('warn', key, message, fields);
  }

  private logOnce(level: 'warn' | 'error', key: string, message: string, fields: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.logger[level](fields, message);
  }
}
