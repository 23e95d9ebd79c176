import type { Selectable } from 'kysely';
import type { Requirement } from '@realmgate/spi';
import type { AuthExecutionTable, AuthFlowTable, AuthenticatorConfigTable, ConfigCache, Db } from '../storage/index.js';
import { bool, flag, fromJson, toJson } from '../storage/codec.js';
import type { AuthExecution, AuthFlow, AuthenticatorConfig, FlowBinding, FlowType } from './model.js';

const toFlow = (row: Selectable<AuthFlowTable>): AuthFlow => ({
  id: row.id,
  realmId: row.realm_id,
  alias: row.alias,
  description: row.description,
  providerId: row.provider_id as FlowType,
  topLevel: bool(row.top_level),
  builtIn: bool(row.built_in),
});

const flowRow = (flow: AuthFlow): Selectable<AuthFlowTable> => ({
  id: flow.id,
  realm_id: flow.realmId,
  alias: flow.alias,
  description: flow.description,
  provider_id: flow.providerId,
  top_level: flag(flow.topLevel),
  built_in: flag(flow.builtIn),
});

const toExecution = (row: Selectable<AuthExecutionTable>): AuthExecution => ({
  id: row.id,
  realmId: row.realm_id,
  parentFlowId: row.parent_flow_id,
  authenticator: row.authenticator,
  subFlowId: row.sub_flow_id,
  requirement: row.requirement as Requirement,
  priority: row.priority,
  configId: row.authenticator_config_id,
});

const executionRow = (execution: AuthExecution): Selectable<AuthExecutionTable> => ({
  id: execution.id,
  realm_id: execution.realmId,
  parent_flow_id: execution.parentFlowId,
  authenticator: execution.authenticator,
  sub_flow_id: execution.subFlowId,
  requirement: execution.requirement,
  priority: execution.priority,
  authenticator_config_id: execution.configId,
});

const toConfig = (row: Selectable<AuthenticatorConfigTable>): AuthenticatorConfig => ({
  id: row.id,
  realmId: row.realm_id,
  alias: row.alias,
  config: fromJson(row.config, {}),
});

const bindingColumns = ['browser_flow', 'registration_flow', 'reset_credentials_flow'] as const;
const bindingColumn: Record<FlowBinding, (typeof bindingColumns)[number]> = {
  browserFlow: 'browser_flow',
  registrationFlow: 'registration_flow',
  resetCredentialsFlow: 'reset_credentials_flow',
};

const FLOW_TABLES = ['auth_flow', 'auth_execution', 'authenticator_config'] as const;

export interface RealmFlowRows {
  flows: AuthFlow[];
  executions: AuthExecution[];
  configs: AuthenticatorConfig[];
}

/** Rows of the three flow tables. Every method takes the transaction handle when called inside one. */
export class FlowRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
  ) {}

  /**
   * loadRealm through the configuration cache, for the sign-in path (each login page and grant walks the flows):
   * frozen rows, invalidated by any write to the three tables. Editing reads loadRealm in its transaction instead.
   */
  cachedRealm(realmId: string): Promise<RealmFlowRows> {
    return this.cache.get(`flows\0${realmId}`, FLOW_TABLES, () => this.loadRealm(realmId)) as Promise<RealmFlowRows>;
  }

  /** A realm's flows are a few dozen rows: read whole, then walked in memory. */
  async loadRealm(realmId: string, db: Db = this.db): Promise<RealmFlowRows> {
    const flows = await db.selectFrom('auth_flow').selectAll().where('realm_id', '=', realmId).execute();
    const executions = await db.selectFrom('auth_execution').selectAll().where('realm_id', '=', realmId).execute();
    const configs = await db.selectFrom('authenticator_config').selectAll().where('realm_id', '=', realmId).execute();
    return { flows: flows.map(toFlow), executions: executions.map(toExecution), configs: configs.map(toConfig) };
  }

  async flowByAlias(realmId: string, alias: string, db: Db = this.db): Promise<AuthFlow | null> {
    const row = await db.selectFrom('auth_flow').selectAll().where('realm_id', '=', realmId).where('alias', '=', alias).executeTakeFirst();
    return row ? toFlow(row) : null;
  }

  /** Built-in flows of this alias in every realm (start-up upgrades of existing realms). */
  async builtInFlowsNamed(alias: string, db: Db = this.db): Promise<AuthFlow[]> {
    const rows = await db.selectFrom('auth_flow').selectAll().where('alias', '=', alias).where('built_in', '=', 1).execute();
    return rows.map(toFlow);
  }

  /** Realms with no flow of this alias (start-up: realms created before a built-in flow existed). */
  async realmsWithoutFlow(alias: string, db: Db = this.db): Promise<string[]> {
    const rows = await db
      .selectFrom('realm')
      .select('id')
      .where((eb) => eb.not(eb.exists(eb.selectFrom('auth_flow').select('auth_flow.id').whereRef('auth_flow.realm_id', '=', 'realm.id').where('auth_flow.alias', '=', alias))))
      .execute();
    return rows.map((r) => r.id);
  }

  async executionsOf(parentFlowId: string, db: Db = this.db): Promise<AuthExecution[]> {
    const rows = await db.selectFrom('auth_execution').selectAll().where('parent_flow_id', '=', parentFlowId).execute();
    return rows.map(toExecution);
  }

  async insertFlow(flow: AuthFlow, db: Db = this.db): Promise<void> {
    await db.insertInto('auth_flow').values(flowRow(flow)).execute();
  }

  async updateFlow(flow: AuthFlow, db: Db = this.db): Promise<void> {
    const { id, ...row } = flowRow(flow);
    await db.updateTable('auth_flow').set(row).where('id', '=', id).execute();
  }

  /** Their executions go too (cascade), and with them the executions that ran them as subflows. */
  async deleteFlows(ids: string[], db: Db = this.db): Promise<void> {
    if (ids.length) await db.deleteFrom('auth_flow').where('id', 'in', ids).execute();
  }

  async insertExecution(execution: AuthExecution, db: Db = this.db): Promise<void> {
    await db.insertInto('auth_execution').values(executionRow(execution)).execute();
  }

  async updateExecution(execution: AuthExecution, db: Db = this.db): Promise<void> {
    const { id, ...row } = executionRow(execution);
    await db.updateTable('auth_execution').set(row).where('id', '=', id).execute();
  }

  async deleteExecution(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('auth_execution').where('id', '=', id).execute();
  }

  async setPriority(executionId: string, priority: number, db: Db = this.db): Promise<void> {
    await db.updateTable('auth_execution').set({ priority }).where('id', '=', executionId).execute();
  }

  async insertConfig(config: AuthenticatorConfig, db: Db = this.db): Promise<void> {
    await db.insertInto('authenticator_config').values({ id: config.id, realm_id: config.realmId, alias: config.alias, config: toJson(config.config) }).execute();
  }

  async updateConfig(config: AuthenticatorConfig, db: Db = this.db): Promise<void> {
    await db.updateTable('authenticator_config').set({ alias: config.alias, config: toJson(config.config) }).where('id', '=', config.id).execute();
  }

  /** Executions that used them keep running without a config (the column is set to null). */
  async deleteConfigs(ids: string[], db: Db = this.db): Promise<void> {
    if (ids.length) await db.deleteFrom('authenticator_config').where('id', 'in', ids).execute();
  }

  /** The realm's stored bindings (null for a realm not written yet): a realm PUT checks only those it changes. */
  async storedBindings(realmId: string, db: Db = this.db): Promise<Record<FlowBinding, string> | null> {
    const row = await db.selectFrom('realm').select(bindingColumns).where('id', '=', realmId).executeTakeFirst();
    return row ? { browserFlow: row.browser_flow, registrationFlow: row.registration_flow, resetCredentialsFlow: row.reset_credentials_flow } : null;
  }

  async setBinding(realmId: string, binding: FlowBinding, alias: string, db: Db = this.db): Promise<void> {
    await db.updateTable('realm').set({ [bindingColumn[binding]]: alias }).where('id', '=', realmId).execute();
  }

  /** The realms whose executions name these providers (start-up: where an uninstalled package left steps behind). */
  async realmsNaming(providerIds: string[], db: Db = this.db): Promise<string[]> {
    if (!providerIds.length) return [];
    const rows = await db.selectFrom('auth_execution').select('realm_id').distinct().where('authenticator', 'in', providerIds).execute();
    return rows.map((r) => r.realm_id);
  }

  /** Every provider id an execution names, in every realm (a few dozen distinct ids). */
  async namedProviders(db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('auth_execution').select('authenticator').distinct().where('authenticator', 'is not', null).execute();
    return rows.map((r) => r.authenticator!);
  }

  /** Realms bind flows by alias, so a rename carries the bindings along (Keycloak binds by id). */
  async renameBindings(realmId: string, from: string, to: string, db: Db = this.db): Promise<void> {
    for (const column of bindingColumns) {
      await db.updateTable('realm').set({ [column]: to }).where('id', '=', realmId).where(column, '=', from).execute();
    }
  }
}
