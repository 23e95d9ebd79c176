import type { Requirement } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import { badRequest, badRequestError, conflict, notFound } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { isUniqueViolation, type Db, type Storage } from '../storage/index.js';
import { subflowRequirementChoices, type ProviderCatalog } from './catalog.js';
import { aliasHint, aliasPattern, flowBindings, type AuthExecution, type AuthFlow, type AuthenticatorConfig, type FlowType } from './model.js';
import { clientsUsingFlow } from './overrides.js';
import { RealmFlows } from './realm-flows.js';
import type { FlowRepository } from './repository.js';
import { describeBlocker, flowBlocker, isConditionProvider } from './runnable.js';

export interface NewFlow {
  alias: string;
  description: string | null;
  providerId: FlowType;
}

export interface NewSubflow extends NewFlow {
  /** The form provider of a form subflow (`registration-page-form` when not given). */
  provider?: string;
  priority?: number;
}

export interface ExecutionChange {
  id: string;
  requirement?: Requirement;
  priority?: number;
  /** For an execution that runs a subflow: the subflow's new alias and description. */
  displayName?: string;
  description?: string;
}

export interface ConfigInput {
  alias?: string;
  config?: Record<string, string>;
}

const executionNotFound = () => notFound('Illegal execution');
const flowNotFound = () => notFound('Could not find flow with id');
const configNotFound = () => notFound('Could not find authenticator config');

/** Keycloak keeps no empty values in a config. */
const withoutEmpty = (config: Record<string, string>) => Object.fromEntries(Object.entries(config).filter(([, v]) => v !== ''));

/**
 * The admin API's changes to flows, each in one transaction, with Keycloak's rules: built-in flows keep their
 * executions (requirements and configs may change), a bound or built-in flow cannot be deleted, aliases are
 * unique within a realm.
 */
export class FlowEditor {
  constructor(
    private readonly storage: Storage,
    private readonly repository: FlowRepository,
    private readonly catalog: ProviderCatalog,
  ) {}

  async load(realmId: string, db?: Db): Promise<RealmFlows> {
    return new RealmFlows(await this.repository.loadRealm(realmId, db));
  }

  /** Choices an execution's requirement may take: its provider's, or by subflow type. */
  requirementChoices(flows: RealmFlows, execution: AuthExecution): readonly Requirement[] {
    const subflow = execution.subFlowId ? flows.flow(execution.subFlowId) : undefined;
    if (subflow) return subflowRequirementChoices(subflow.providerId);
    const provider = execution.authenticator ? this.catalog.get(execution.authenticator) : undefined;
    // A provider that is no longer installed can only be switched off.
    return provider?.requirementChoices ?? [...new Set<Requirement>([execution.requirement, 'DISABLED'])];
  }

  async createFlow(realm: Realm, input: NewFlow): Promise<AuthFlow> {
    const flow: AuthFlow = { id: newId(), realmId: realm.id, ...input, topLevel: true, builtIn: false };
    await this.write(async (trx) => {
      if (await this.repository.flowByAlias(realm.id, input.alias, trx)) throw conflict(`Flow ${input.alias} already exists`, 'alias');
      await this.repository.insertFlow(flow, trx);
    });
    return flow;
  }

  async updateFlow(realm: Realm, flowId: string, change: { alias: string; description?: string }): Promise<AuthFlow> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const flow = flows.flow(flowId);
      if (!flow) throw flowNotFound();
      return this.renameFlow(realm, flows, flow, change.alias, change.description ?? flow.description, trx);
    });
  }

  async deleteFlow(realm: Realm, flowId: string): Promise<AuthFlow> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const flow = flows.flow(flowId);
      if (!flow) throw notFound('Flow not found');
      if (flow.builtIn) throw badRequest("Can't delete built in flow");
      const binding = flowBindings.find((b) => realm[b] === flow.alias);
      if (binding) throw badRequest(`Cannot delete flow "${flow.alias}": it is bound as the realm's ${binding}`);
      // Keycloak refuses it too (a flow in use); a client's sign-ins would have no flow left to run.
      const clients = await clientsUsingFlow(this.storage, realm.id, flow.id, trx);
      if (clients.length) throw badRequest(`Cannot delete flow "${flow.alias}": ${clients.join(', ')} override${clients.length > 1 ? '' : 's'} a binding with it`);
      await this.deleteTree(flows, flow.id, trx);
      return flow;
    });
  }

  /** Keycloak's copy: subflows become `<newName> <alias>`, configs `<newName> <alias>`, nothing is built-in. */
  async copyFlow(realm: Realm, alias: string, newName: string): Promise<AuthFlow> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      if (flows.flowByAlias(newName)) throw conflict('New flow alias name already exists', 'newName');
      const source = flows.flowByAlias(alias);
      if (!source) throw notFound('Flow not found');
      const copy = async (from: AuthFlow, copyAlias: string, topLevel: boolean): Promise<AuthFlow> => {
        const flow: AuthFlow = { ...from, id: newId(), alias: copyAlias, topLevel, builtIn: false };
        await this.repository.insertFlow(flow, trx);
        for (const execution of flows.executionsOf(from.id)) {
          const subflow = execution.subFlowId ? flows.flow(execution.subFlowId) : undefined;
          const config = flows.config(execution.configId);
          let configId: string | null = null;
          if (config) {
            configId = newId();
            await this.repository.insertConfig({ id: configId, realmId: realm.id, alias: `${newName} ${config.alias}`, config: { ...config.config } }, trx);
          }
          await this.repository.insertExecution(
            {
              ...execution,
              id: newId(),
              parentFlowId: flow.id,
              subFlowId: subflow ? (await copy(subflow, `${newName} ${subflow.alias}`, false)).id : null,
              configId,
            },
            trx,
          );
        }
        return flow;
      };
      return copy(source, newName, source.topLevel);
    });
  }

  async addExecution(realm: Realm, parentAlias: string, providerId: string, priority?: number): Promise<AuthExecution> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const parent = this.editableParent(flows, parentAlias, 'It is illegal to add execution to a built in flow');
      const provider = this.catalog.get(providerId);
      if (!provider) throw badRequestError(`No authentication provider found for id: ${providerId}`);
      if (!this.catalog.fits(provider, parent.providerId)) {
        throw badRequest(`provider: "${providerId}" is a ${provider.role} and cannot be added to a ${parent.providerId} ("${parent.alias}")`, 'provider');
      }
      // A condition decides whether the CONDITIONAL sub-flow it sits in runs; in a top-level flow, or a sub-flow run
      // as REQUIRED or ALTERNATIVE, nothing would read it. A DISABLED sub-flow is one being built (the console adds
      // a sub-flow DISABLED and offers "Add condition" on it before it is made CONDITIONAL).
      const running = flows.executionsRunning(parent.id);
      if (isConditionProvider(provider.id) && (parent.topLevel || !running.some((e) => e.requirement === 'CONDITIONAL' || e.requirement === 'DISABLED'))) {
        throw badRequest(`provider: "${providerId}" is a condition and goes only in a CONDITIONAL sub-flow; "${parent.alias}" is not one`, 'provider');
      }
      const execution: AuthExecution = {
        id: newId(),
        realmId: realm.id,
        parentFlowId: parent.id,
        authenticator: provider.id,
        subFlowId: null,
        requirement: provider.requirementChoices.length === 1 ? provider.requirementChoices[0] : 'DISABLED',
        priority: priority ?? nextPriority(flows, parent.id),
        configId: null,
      };
      await this.repository.insertExecution(execution, trx);
      return execution;
    });
  }

  async addSubflow(realm: Realm, parentAlias: string, input: NewSubflow): Promise<{ flow: AuthFlow; execution: AuthExecution }> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const parent = this.editableParent(flows, parentAlias, 'It is illegal to add sub-flow to a built in flow');
      if (parent.providerId !== 'basic-flow') throw badRequest(`Subflows can only be added to a basic-flow; "${parent.alias}" is a ${parent.providerId}`);
      if (flows.flowByAlias(input.alias)) throw conflict('New flow alias name already exists', 'alias');
      let form: string | null = null;
      if (input.providerId === 'form-flow') {
        form = input.provider ?? 'registration-page-form';
        if (this.catalog.get(form)?.role !== 'form') throw badRequest(`provider: no form provider "${form}"`, 'provider');
      }
      const flow: AuthFlow = { id: newId(), realmId: realm.id, alias: input.alias, description: input.description, providerId: input.providerId, topLevel: false, builtIn: false };
      await this.repository.insertFlow(flow, trx);
      const execution: AuthExecution = {
        id: newId(),
        realmId: realm.id,
        parentFlowId: parent.id,
        authenticator: form,
        subFlowId: flow.id,
        requirement: 'DISABLED',
        priority: input.priority ?? nextPriority(flows, parent.id),
        configId: null,
      };
      await this.repository.insertExecution(execution, trx);
      return { flow, execution };
    });
  }

  /** Requirement and priority of an execution within the named flow, and a subflow's alias and description. */
  async updateExecution(realm: Realm, flowAlias: string, change: ExecutionChange): Promise<void> {
    await this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const flow = flows.flowByAlias(flowAlias);
      if (!flow) throw notFound('Flow not found');
      const execution = flows.walk(flow.id).find((w) => w.execution.id === change.id)?.execution;
      if (!execution) throw executionNotFound();
      const updated = { ...execution };
      if (change.requirement !== undefined && change.requirement !== execution.requirement) {
        const choices = this.requirementChoices(flows, execution);
        if (!choices.includes(change.requirement)) {
          throw badRequest(`requirement: ${change.requirement} is not one of ${choices.join(', ')} for this execution`, 'requirement');
        }
        updated.requirement = change.requirement;
      }
      if (change.priority !== undefined) updated.priority = change.priority;
      if (updated.requirement !== execution.requirement || updated.priority !== execution.priority) {
        await this.repository.updateExecution(updated, trx);
      }
      const subflow = execution.subFlowId ? flows.flow(execution.subFlowId) : undefined;
      if (subflow && (change.displayName !== undefined || change.description !== undefined)) {
        if (change.displayName !== undefined && !aliasPattern.test(change.displayName)) throw badRequest(`displayName: must be ${aliasHint}`, 'displayName');
        await this.renameFlow(realm, flows, subflow, change.displayName ?? subflow.alias, change.description ?? subflow.description, trx);
      }
      if (updated.requirement !== execution.requirement) await this.keepBoundFlowsRunnable(realm, flows, trx);
    });
  }

  async deleteExecution(realm: Realm, executionId: string): Promise<AuthExecution> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const execution = flows.execution(executionId);
      if (!execution) throw executionNotFound();
      if (flows.flow(execution.parentFlowId)?.builtIn) throw badRequest('It is illegal to remove execution from a built in flow');
      if (execution.subFlowId) {
        await this.deleteTree(flows, execution.subFlowId, trx);
      } else {
        await this.repository.deleteExecution(execution.id, trx);
        await this.repository.deleteConfigs(execution.configId ? [execution.configId] : [], trx);
      }
      await this.keepBoundFlowsRunnable(realm, flows, trx);
      return execution;
    });
  }

  /** Swaps the execution with its neighbour (-1 raises, +1 lowers); false when it is already at that end. */
  async move(realm: Realm, executionId: string, direction: -1 | 1): Promise<boolean> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const execution = flows.execution(executionId);
      if (!execution) throw executionNotFound();
      if (flows.flow(execution.parentFlowId)?.builtIn) throw badRequest('It is illegal to modify execution in a built in flow');
      const siblings = [...flows.executionsOf(execution.parentFlowId)];
      const at = siblings.findIndex((e) => e.id === execution.id);
      const other = siblings[at + direction];
      if (!other) return false;
      if (other.priority !== execution.priority) {
        await this.repository.setPriority(execution.id, other.priority, trx);
        await this.repository.setPriority(other.id, execution.priority, trx);
        return true;
      }
      // Equal priorities cannot be swapped: number the siblings afresh in the new order.
      [siblings[at], siblings[at + direction]] = [other, execution];
      for (const [i, sibling] of siblings.entries()) await this.repository.setPriority(sibling.id, (i + 1) * 10, trx);
      return true;
    });
  }

  /** Keycloak's "new execution config": replaces the execution's config, aliases unique within the realm. */
  async attachConfig(realm: Realm, executionId: string, input: { alias: string; config: Record<string, string> }): Promise<AuthenticatorConfig> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const execution = flows.execution(executionId);
      if (!execution) throw executionNotFound();
      const previous = flows.config(execution.configId);
      this.checkConfig(execution, withoutEmpty(input.config));
      await this.repository.deleteConfigs(previous ? [previous.id] : [], trx);
      const config: AuthenticatorConfig = { id: newId(), realmId: realm.id, alias: input.alias, config: withoutEmpty(input.config) };
      await this.repository.insertConfig(config, trx);
      await this.repository.updateExecution({ ...execution, configId: config.id }, trx);
      return config;
    }, `Authentication execution configuration ${input.alias} already exists`);
  }

  async updateConfig(realm: Realm, configId: string, input: ConfigInput): Promise<AuthenticatorConfig> {
    return this.write(async (trx) => {
      const flows = await this.load(realm.id, trx);
      const existing = flows.config(configId);
      if (!existing) throw configNotFound();
      const config = { ...existing, alias: input.alias ?? existing.alias, config: withoutEmpty(input.config ?? {}) };
      for (const execution of flows.executionsUsingConfig(configId)) this.checkConfig(execution, config.config);
      await this.repository.updateConfig(config, trx);
      return config;
    }, `Authentication execution configuration ${input.alias} already exists`);
  }

  async deleteConfig(realm: Realm, configId: string): Promise<void> {
    await this.write(async (trx) => {
      if (!(await this.load(realm.id, trx)).config(configId)) throw configNotFound();
      await this.repository.deleteConfigs([configId], trx);
    });
  }

  /** The provider's own rules for its config (SPI `validateConfig`): 400 naming every problem, nothing written. */
  private checkConfig(execution: AuthExecution, config: Record<string, string>): void {
    const reference = referenceKey(config);
    if (reference) throw badRequest(`config.${reference}: authenticator references (step-up authentication) are not supported`, 'config');
    // A built-in step without settings has nothing to read a value; a provider package's step judges its own
    // (validateConfig). An empty config (the console's untouched reference fields) stays allowed.
    const provider = execution.authenticator && this.catalog.isBuiltIn(execution.authenticator) ? this.catalog.get(execution.authenticator) : undefined;
    if (provider && provider.configProperties.length === 0 && Object.keys(config).length > 0) throw badRequest(`config: "${provider.id}" takes no configuration`, 'config');
    const problems = configProblems(this.catalog, execution, config);
    if (problems.length > 0) throw badRequest(`config: ${problems.join('; ')}`, 'config');
  }

  /**
   * Refuses (400, rolling the change back) an edit after which a flow the realm or a client's override binds can no longer run
   * (FlowBlocker): disabling the last alternative that runs, say, or switching on a subflow that holds a step
   * whose provider is not installed. A bound flow that could not run before the edit is left to be fixed.
   */
  private async keepBoundFlowsRunnable(realm: Realm, before: RealmFlows, trx: Db): Promise<void> {
    const after = await this.load(realm.id, trx);
    const installed = (id: string) => this.catalog.get(id) !== undefined;
    const used = flowBindings.map((binding) => ({ what: `the realm's ${binding}`, flow: after.flowByAlias(realm[binding]), previous: before.flowByAlias(realm[binding]) }));
    // The flows clients run instead of the realm's (their overrides) are bound flows too.
    for (const client of await this.storage.clients.list(realm.id, {}, trx)) {
      for (const [binding, flowId] of Object.entries(client.authenticationFlowBindingOverrides)) {
        used.push({ what: `client "${client.clientId}"'s ${binding} override`, flow: after.flow(flowId), previous: before.flow(flowId) });
      }
    }
    for (const { what, flow, previous } of used) {
      if (!flow || (previous && flowBlocker(before, previous.id, installed))) continue;
      const blocker = flowBlocker(after, flow.id, installed);
      if (blocker) throw badRequest(`this change would leave ${what} "${flow.alias}" unable to run: ${describeBlocker(blocker)}`);
    }
  }

  private editableParent(flows: RealmFlows, alias: string, builtInMessage: string): AuthFlow {
    const parent = flows.flowByAlias(alias);
    if (!parent) throw badRequestError("Parent flow doesn't exist");
    if (parent.builtIn) throw badRequestError(builtInMessage);
    return parent;
  }

  /** Built-in flows keep their aliases: the realm defaults and the start-up protector upgrade find them by name. */
  private async renameFlow(realm: Realm, flows: RealmFlows, flow: AuthFlow, alias: string, description: string | null, trx: Db): Promise<AuthFlow> {
    if (alias !== flow.alias) {
      if (flow.builtIn) throw badRequest(`alias: built-in flow "${flow.alias}" cannot be renamed; copy it instead`, 'alias');
      if (flows.flowByAlias(alias)) throw conflict('Flow alias name already exists', 'alias');
    }
    const updated = { ...flow, alias, description };
    await this.repository.updateFlow(updated, trx);
    if (alias !== flow.alias) await this.repository.renameBindings(realm.id, flow.alias, alias, trx);
    return updated;
  }

  /** Deletes a flow with its subflows, the execution that runs it, and the configs of all their executions. */
  private async deleteTree(flows: RealmFlows, flowId: string, trx: Db): Promise<void> {
    const tree = flows.flowTree(flowId);
    const executions = [...tree.flatMap((f) => flows.executionsOf(f.id)), ...flows.executionsRunning(flowId)];
    const configIds = executions.flatMap((e) => (e.configId ? [e.configId] : []));
    await this.repository.deleteFlows(tree.map((f) => f.id), trx);
    await this.repository.deleteConfigs(configIds, trx);
  }

  /** Runs `work` in a transaction; a unique-key race (two admins, one alias) becomes a 409. */
  private async write<T>(work: (trx: Db) => Promise<T>, conflictMessage = 'Flow alias name already exists'): Promise<T> {
    try {
      return await this.storage.transaction(work);
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict(conflictMessage);
      throw error;
    }
  }
}

/**
 * Keycloak's console offers `default.reference.*` on every step (an authenticator reference for ACR step-up);
 * Realmgate has no step-up, so a value is refused rather than stored without effect.
 */
export function referenceKey(config: Record<string, string>): string | undefined {
  return Object.keys(config).find((key) => key.startsWith('default.reference.'));
}

/** What the execution's provider finds wrong with a config (SPI `validateConfig`); none for a provider without rules. */
export function configProblems(catalog: ProviderCatalog, execution: Pick<AuthExecution, 'authenticator'>, config: Record<string, string>): string[] {
  const validate = execution.authenticator ? catalog.get(execution.authenticator)?.validateConfig : undefined;
  return validate?.(config) ?? [];
}

/** Keycloak's next priority: one more than the last sibling's, 0 in an empty flow. */
function nextPriority(flows: RealmFlows, flowId: string): number {
  const siblings = flows.executionsOf(flowId);
  return siblings.length ? siblings[siblings.length - 1].priority + 1 : 0;
}
