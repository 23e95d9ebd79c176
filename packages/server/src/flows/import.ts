import type { Requirement } from '@realmgate/spi';
import { newId } from '../credentials/index.js';
import { badRequest } from '../model/errors.js';
import type { ServerLogger } from '../observability/index.js';
import type { Db } from '../storage/index.js';
import { subflowRequirementChoices, type ProviderCatalog } from './catalog.js';
import type { AuthFlow, FlowType } from './model.js';
import { RealmFlows } from './realm-flows.js';
import type { FlowRepository } from './repository.js';

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

/** The non-built-in flows of a realm export (`authenticationFlows`) and its `authenticatorConfig` entries. */
export interface FlowImport {
  flows: ImportedFlow[];
  configs: ImportedConfig[];
}

/**
 * Writes an export's own flows into a new realm, inside the realm's creating transaction, with the admin
 * API's rules: aliases unique in the realm, a provider only where its role fits, a requirement its provider
 * (or subflow type) allows, a subflow run by exactly one execution. An execution whose provider is not
 * installed is kept with a warning: the runner skips it until the package is installed, as after a removal.
 * Config entries no imported execution names (those of built-in flows, say) are not stored.
 */
export async function importFlows(
  repository: FlowRepository,
  catalog: ProviderCatalog,
  logger: ServerLogger,
  realmId: string,
  data: FlowImport,
  db: Db,
): Promise<void> {
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
    const id = newId();
    await repository.insertConfig({ id, realmId, alias, config: config.config }, db);
    configIds.set(alias, id);
    return id;
  };
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
        if (!provider) logger.warn({ path, provider: execution.authenticator }, 'realm import: provider not installed; its execution is skipped until it is');
        choices = provider?.requirementChoices ?? null;
      }
      if (choices && !choices.includes(execution.requirement)) {
        throw badRequest(`${path}.requirement: ${execution.requirement} is not one of ${choices.join(', ')} for this execution`);
      }
      await repository.insertExecution(
        {
          id: newId(),
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
}
