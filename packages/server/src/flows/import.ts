import type { Requirement } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import { badRequest } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import type { Db } from '../storage/index.js';
import { defaultBindings } from './builtin-flows.js';
import { subflowRequirementChoices, type ProviderCatalog } from './catalog.js';
import { configProblems, referenceKey } from './editing.js';
import { flowBindings, keycloakBindingDefaults, type AuthExecution, type AuthFlow, type FlowBinding, type FlowType, type KeycloakBinding } from './model.js';
import { RealmFlows } from './realm-flows.js';
import type { FlowRepository } from './repository.js';
import { flowBlocker } from './runnable.js';

/** Each part keeps the JSON path it came from, so an error found while writing still names it. */
export interface ImportedExecution {
  path: string;
  /** Provider id; for a form subflow, its form provider. */
  authenticator: string | null;
  /** Alias of the subflow this execution runs. */
  flowAlias: string | null;
  requirement: Requirement;
  priority: number;
  configAlias: string | null;
}

export interface ImportedFlow {
  path: string;
  /** The file's id of the flow: clients' `authenticationFlowBindingOverrides` name flows by it (the realm's flows get ids of their own). */
  fileId: string | null;
  alias: string;
  description: string | null;
  providerId: FlowType;
  topLevel: boolean;
  executions: ImportedExecution[];
}

export interface ImportedConfig {
  path: string;
  alias: string;
  config: Record<string, string>;
}

/** A flow binding of the file (`realm.browserFlow`, …), any of Keycloak's seven. */
export interface ImportedBinding {
  field: KeycloakBinding;
  alias: string;
}

/**
 * A realm export's flows: its own (`authenticationFlows` without `builtIn`), its `authenticatorConfig` entries and,
 * for a whole realm's import, Keycloak's built-in flows as the file has them and its flow bindings.
 */
export interface FlowImport {
  flows: ImportedFlow[];
  configs: ImportedConfig[];
  /** The file's built-in flows (`builtIn: true`): merged into the realm's own built-in flows. */
  builtIns?: ImportedFlow[];
  /** Report entries (JSON paths) of parts of built-in flows that could not be read, and so are not kept. */
  unreadable?: string[];
  /** The bindings the file gives; without them (a partial import) the realm's are only checked to exist. */
  bindings?: ImportedBinding[];
}

/** What the import names in the realm import's report (RealmImport.notImported and keptAsData). */
export interface FlowImportReport {
  notImported: string[];
  keptAsData: string[];
}

/**
 * Writes an export's flows into a new realm, inside the realm's creating transaction, and returns what it did not
 * take or does not run, by JSON path:
 *
 * - The file's own flows as the file defines them, with the admin API's rules: aliases unique in the realm, a
 *   provider only where its role fits, a requirement its provider (or subflow type) allows, a subflow run by
 *   exactly one execution. An execution whose provider is not installed is kept as it is (the admin API shows it
 *   "not installed"); an enabled one is named in `keptAsData`: it is not run, and a flow that needs it cannot run.
 * - Keycloak's built-in flows (mergeBuiltIns): the realm's own built-in flows take the file's requirements and
 *   configs where the step exists here; every other part is named in `notImported`.
 * - The bindings (bindFlows): a binding to a flow that cannot run keeps the built-in flow, named in `notImported`.
 * - An `authenticatorConfig` entry no execution of the file names is named in `notImported`.
 */
export async function importFlows(repository: FlowRepository, catalog: ProviderCatalog, realm: Realm, data: FlowImport, db: Db): Promise<FlowImportReport> {
  const realmId = realm.id;
  refuseLoops(data.flows);
  const report: FlowImportReport = { notImported: [...(data.unreadable ?? [])], keptAsData: [] };
  const existing = new RealmFlows(await repository.loadRealm(realmId, db));
  const created = new Map<string, AuthFlow>();
  for (const input of data.flows) {
    if (existing.flowByAlias(input.alias) || created.has(input.alias)) throw badRequest(`${input.path}.alias: flow "${input.alias}" already exists in this realm`);
    const flow: AuthFlow = { id: newId(), realmId, alias: input.alias, description: input.description, providerId: input.providerId, topLevel: input.topLevel, builtIn: false };
    await repository.insertFlow(flow, db);
    created.set(flow.alias, flow);
  }
  const configsByAlias = new Map<string, ImportedConfig>();
  for (const config of data.configs) {
    if (configsByAlias.has(config.alias)) throw badRequest(`${config.path}.alias: authenticator config "${config.alias}" is listed twice`);
    configsByAlias.set(config.alias, config);
  }
  const configIds = new Map<string, string>();
  const configId = async (alias: string, path: string): Promise<string> => {
    const known = configIds.get(alias);
    if (known) return known;
    const config = configsByAlias.get(alias);
    if (!config) throw badRequest(`${path}.authenticatorConfig: no authenticatorConfig entry with alias "${alias}"`);
    // A config the built-in flows were provisioned with (first broker login's "review profile config"): the file's values.
    const provisioned = existing.allConfigs().find((c) => c.alias === alias);
    if (provisioned) {
      await repository.updateConfig({ ...provisioned, config: config.config }, db);
      configIds.set(alias, provisioned.id);
      return provisioned.id;
    }
    const id = newId();
    await repository.insertConfig({ id, realmId, alias, config: config.config }, db);
    configIds.set(alias, id);
    return id;
  };
  const executionPaths = new Map<string, string>();
  const runningSubflow = new Set<string>();
  for (const input of data.flows) {
    const parent = created.get(input.alias)!;
    for (const execution of input.executions) {
      const { path } = execution;
      let subFlowId: string | null = null;
      let choices: readonly Requirement[] | null;
      if (execution.flowAlias !== null) {
        const subflow = created.get(execution.flowAlias);
        if (!subflow) throw badRequest(`${path}.flowAlias: no flow "${execution.flowAlias}" among this export's authenticationFlows`);
        if (subflow.topLevel) throw badRequest(`${path}.flowAlias: "${subflow.alias}" is a top-level flow; a subflow has topLevel false`);
        if (runningSubflow.has(subflow.alias)) throw badRequest(`${path}.flowAlias: "${subflow.alias}" is already run by another execution`);
        if (parent.providerId !== 'basic-flow') throw badRequest(`${path}: subflows can only be in a basic-flow; "${parent.alias}" is a ${parent.providerId}`);
        if (subflow.providerId === 'form-flow' && catalog.get(execution.authenticator ?? '')?.role !== 'form') {
          throw badRequest(`${path}.authenticator: a form-flow subflow needs its form provider (e.g. registration-page-form)`);
        }
        runningSubflow.add(subflow.alias);
        subFlowId = subflow.id;
        choices = subflowRequirementChoices(subflow.providerId);
      } else {
        if (execution.authenticator === null) throw badRequest(`${path}.authenticator: is required when the execution runs no subflow`);
        const provider = catalog.get(execution.authenticator);
        if (provider && !catalog.fits(provider, parent.providerId)) {
          throw badRequest(`${path}.authenticator: "${provider.id}" is a ${provider.role} and cannot be in a ${parent.providerId} ("${parent.alias}")`);
        }
        choices = provider?.requirementChoices ?? null;
        // Kept as the file has it: the admin API shows it "not installed", the runner never skips it where it is needed.
        if (!provider && execution.requirement !== 'DISABLED') {
          const kind = execution.authenticator.startsWith('conditional-') ? 'condition' : 'authenticator';
          const effect = kind === 'condition' ? 'kept, counted as met' : 'kept, not run; a flow that needs it cannot run';
          report.keptAsData.push(`${path} (${kind} "${execution.authenticator}", ${execution.requirement}, is not installed: ${effect})`);
        }
      }
      if (choices && !choices.includes(execution.requirement)) {
        throw badRequest(`${path}.requirement: ${execution.requirement} is not one of ${choices.join(', ')} for this execution`);
      }
      const id = newId();
      executionPaths.set(id, path);
      await repository.insertExecution(
        {
          id,
          realmId,
          parentFlowId: parent.id,
          authenticator: execution.authenticator,
          subFlowId,
          requirement: execution.requirement,
          priority: execution.priority,
          configId: execution.configAlias === null ? null : await configId(execution.configAlias, path),
        },
        db,
      );
    }
  }
  await mergeBuiltIns(repository, catalog, existing, data.builtIns ?? [], configsByAlias, configId, report, db);
  // Entries no execution names: Keycloak keeps them, nothing here would ever read them.
  const named = new Set([...data.flows, ...(data.builtIns ?? [])].flatMap((f) => f.executions.flatMap((e) => (e.configAlias === null ? [] : [e.configAlias]))));
  for (const config of data.configs) {
    if (!named.has(config.alias)) report.notImported.push(`${config.path} ("${config.alias}"): no execution of the file uses it`);
  }
  await bindFlows(repository, catalog, realm, data.bindings, executionPaths, report, db);
  return report;
}

/**
 * A flow that runs itself, directly or through its sub-flows, would never end: refused (400) naming the execution
 * that closes the loop, before anything is written.
 */
function refuseLoops(flows: readonly ImportedFlow[]): void {
  const byAlias = new Map(flows.map((f) => [f.alias, f]));
  for (const flow of flows) {
    for (const execution of flow.executions) {
      if (execution.flowAlias === null) continue;
      const seen = new Set<string>();
      const pending = [execution.flowAlias];
      while (pending.length > 0) {
        const alias = pending.pop()!;
        if (alias === flow.alias) throw badRequest(`${execution.path}.flowAlias: "${execution.flowAlias}" runs "${flow.alias}" again: a flow may not loop into itself`);
        if (seen.has(alias)) continue;
        seen.add(alias);
        for (const next of byAlias.get(alias)?.executions ?? []) if (next.flowAlias !== null) pending.push(next.flowAlias);
      }
    }
  }
}

/** Keycloak 26.3 renamed the OTP subflows of the browser and first broker login flows; a file of its own carries the new names. */
const RENAMED_BUILT_INS: Record<string, string> = {
  'Browser - Conditional 2FA': 'Browser - Conditional OTP',
  'First broker login - Conditional 2FA': 'First broker login - Conditional OTP',
};

const stepName = (e: ImportedExecution) =>
  `${e.flowAlias !== null ? `sub-flow "${e.flowAlias}"` : `authenticator "${e.authenticator}"`}, ${e.requirement}${e.configAlias !== null ? `, config "${e.configAlias}"` : ''}`;

/**
 * Keycloak's built-in flows of the file, into the realm's own (which an administrator may edit the same way: a
 * step's requirement and config, nothing added, removed or moved). Each file flow is matched by alias (Keycloak
 * 26's "Browser - Conditional 2FA" is Realmgate's "Browser - Conditional OTP"), each of its steps by provider or
 * subflow. A matched step takes the file's requirement when its provider allows it, and the file's config when its
 * provider accepts it. Named in `notImported`, by JSON path: a step Realmgate's flow does not have (with "so it
 * does not run here" when it is enabled), a requirement or config not taken, an order that differs, and a
 * built-in flow Realmgate does not have at all (its sub-flows with it).
 */
async function mergeBuiltIns(
  repository: FlowRepository,
  catalog: ProviderCatalog,
  existing: RealmFlows,
  files: ImportedFlow[],
  configsByAlias: Map<string, ImportedConfig>,
  configId: (alias: string, path: string) => Promise<string>,
  report: FlowImportReport,
  db: Db,
): Promise<void> {
  const aliases = new Set(files.map((f) => f.alias));
  const counterpart = new Map<ImportedFlow, AuthFlow>();
  const taken = new Set<string>();
  for (const input of files) {
    const renamed = RENAMED_BUILT_INS[input.alias];
    const target = existing.flowByAlias(input.alias)?.builtIn ? input.alias : renamed && !aliases.has(renamed) ? renamed : undefined;
    const flow = target === undefined ? undefined : existing.flowByAlias(target);
    if (flow?.builtIn && !taken.has(flow.id)) {
      counterpart.set(input, flow);
      taken.add(flow.id);
    }
  }
  const serverAlias = (fileAlias: string) => {
    const input = files.find((f) => f.alias === fileAlias);
    return (input && counterpart.get(input)?.alias) ?? fileAlias;
  };
  const entries = new Map<ImportedFlow, string[]>(files.map((f) => [f, []]));
  const notKeptSubflows = new Set<string>();
  for (const [input, server] of counterpart) {
    const out = entries.get(input)!;
    const steps = existing.executionsOf(server.id);
    const matched: { file: ImportedExecution; index: number; server: AuthExecution }[] = [];
    for (const [index, e] of input.executions.entries()) {
      const step = steps.find((s) =>
        !matched.some((m) => m.server.id === s.id) &&
        (e.flowAlias !== null ? s.subFlowId !== null && existing.flow(s.subFlowId)?.alias === serverAlias(e.flowAlias) : s.subFlowId === null && s.authenticator === e.authenticator),
      );
      if (!step) {
        if (e.flowAlias !== null) notKeptSubflows.add(e.flowAlias);
        const effect = e.requirement === 'DISABLED' ? '' : e.flowAlias === null && e.authenticator?.startsWith('conditional-') ? "; the flow's other conditions decide" : ', so it does not run here';
        out.push(`${e.path} (${stepName(e)}): not in Realmgate's built-in "${server.alias}" flow${effect}`);
        continue;
      }
      matched.push({ file: e, index, server: step });
      const subflow = step.subFlowId ? existing.flow(step.subFlowId) : undefined;
      const choices = subflow ? subflowRequirementChoices(subflow.providerId) : (catalog.get(step.authenticator ?? '')?.requirementChoices ?? [step.requirement]);
      let requirement = step.requirement;
      if (e.requirement !== step.requirement) {
        if (choices.includes(e.requirement)) requirement = e.requirement;
        else out.push(`${e.path}.requirement: ${e.requirement} is not one of ${choices.join(', ')} for this step of Realmgate's built-in "${server.alias}" flow; ${step.requirement} was kept`);
      }
      let config = step.configId;
      if (e.configAlias !== null) {
        const entry = configsByAlias.get(e.configAlias);
        const reference = entry && referenceKey(entry.config);
        const problems = entry ? [...(reference ? [`config.${reference}: authenticator references (step-up authentication) are not supported`] : []), ...configProblems(catalog, step, entry.config)] : [];
        if (!entry) out.push(`${e.path}.authenticatorConfig: no authenticatorConfig entry with alias "${e.configAlias}"; no config kept`);
        else if (problems.length) out.push(`${e.path}.authenticatorConfig ("${e.configAlias}"): not kept: ${problems.join('; ')}`);
        else config = await configId(e.configAlias, e.path);
      }
      if (requirement !== step.requirement || config !== step.configId) await repository.updateExecution({ ...step, requirement, configId: config }, db);
    }
    const fileOrder = [...matched].sort((a, b) => a.file.priority - b.file.priority || a.index - b.index).map((m) => m.server.id);
    const serverOrder = steps.filter((s) => matched.some((m) => m.server.id === s.id)).map((s) => s.id);
    if (fileOrder.join() !== serverOrder.join()) {
      out.push(`${input.path}.authenticationExecutions: the order of Realmgate's built-in "${server.alias}" flow is kept (built-in flows are not reordered)`);
    }
  }
  // A built-in flow Realmgate does not have; a sub-flow is named with the step or flow that runs it.
  const runBy = new Map<string, ImportedFlow>();
  for (const input of files) for (const e of input.executions) if (e.flowAlias !== null) runBy.set(e.flowAlias, input);
  for (const input of files) {
    if (counterpart.has(input)) continue;
    const parent = runBy.get(input.alias);
    if (!input.topLevel && parent && (!counterpart.has(parent) || notKeptSubflows.has(input.alias))) continue;
    entries.get(input)!.push(`${input.path} ("${input.alias}"): Keycloak's built-in flow, which Realmgate does not have; not imported, nor its sub-flows`);
  }
  for (const input of files) report.notImported.push(...entries.get(input)!);
}

/** Why Realmgate does not take a binding it has no setting for, though the flow could run. */
const unboundReason: Record<Exclude<KeycloakBinding, FlowBinding>, string> = {
  directGrantFlow: 'the password grant runs Realmgate\'s built-in "direct grant" flow',
  clientAuthenticationFlow: 'clients authenticate through Realmgate\'s built-in "clients" flow',
  dockerAuthenticationFlow: 'Realmgate has no Docker registry authentication',
  firstBrokerLoginFlow: 'Realmgate has no identity brokering',
};

const isStored = (field: KeycloakBinding): field is FlowBinding => (flowBindings as readonly string[]).includes(field);

/**
 * The realm's bindings, once its flows exist: each names a top-level flow of the realm (else 400, as the realm PUT).
 * A binding the file gives to a flow that cannot run (FlowBlocker) is not taken: the built-in flow stays bound and
 * `notImported` says so once, by JSON path, with the step that stops it. The bindings Realmgate has no setting for
 * (the password grant, client authentication, Docker, first broker login) are named when they leave Keycloak's
 * default, since the built-in flow runs instead.
 */
async function bindFlows(
  repository: FlowRepository,
  catalog: ProviderCatalog,
  realm: Realm,
  bindings: ImportedBinding[] | undefined,
  executionPaths: Map<string, string>,
  report: FlowImportReport,
  db: Db,
): Promise<void> {
  const flows = new RealmFlows(await repository.loadRealm(realm.id, db));
  for (const field of flowBindings) {
    const flow = flows.flowByAlias(realm[field]);
    if (!flow) throw badRequest(`realm.${field}: no flow "${realm[field]}" in this realm`, field);
    if (!flow.topLevel) throw badRequest(`realm.${field}: "${realm[field]}" is a subflow; bind a top-level flow`, field);
  }
  const installed = (id: string) => catalog.get(id) !== undefined;
  for (const { field, alias } of bindings ?? []) {
    const builtIn = keycloakBindingDefaults[field];
    const flow = flows.flowByAlias(isStored(field) ? realm[field] : alias);
    const blocker = flow ? flowBlocker(flows, flow.id, installed) : null;
    const cannotRun = blocker
      ? `"${flow!.alias}" cannot run (${executionPaths.get(blocker.execution.id) ?? `flow "${blocker.parent.alias}"`}: authenticator "${blocker.provider}" is not installed)`
      : null;
    if (isStored(field)) {
      if (!cannotRun) continue;
      realm[field] = defaultBindings[field];
      await repository.setBinding(realm.id, field, defaultBindings[field], db);
      report.notImported.push(`realm.${field}: ${cannotRun}; the built-in "${builtIn}" binding was kept`);
    } else if (alias !== builtIn) {
      const runsBuiltIn = field === 'directGrantFlow' || field === 'clientAuthenticationFlow';
      const why = runsBuiltIn && cannotRun ? cannotRun : `"${alias}" is not bound (${unboundReason[field]})`;
      report.notImported.push(`realm.${field}: ${why}${runsBuiltIn ? `; the built-in "${builtIn}" binding was kept` : ''}`);
    }
  }
}
