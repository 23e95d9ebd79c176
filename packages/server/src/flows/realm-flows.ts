import type { AuthExecution, AuthFlow, AuthenticatorConfig } from './model.js';
import type { RealmFlowRows } from './repository.js';

/** One execution in a depth-first walk: `level` 0 is a direct child of the walked flow, `index` its place among siblings. */
export interface WalkedExecution {
  execution: AuthExecution;
  level: number;
  index: number;
  /** The flow this execution belongs to. */
  parent: AuthFlow;
}

/** Keycloak orders siblings by priority; the id breaks ties so every reader sees the same order. */
export const byPriority = (a: AuthExecution, b: AuthExecution) => a.priority - b.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** A realm's flows, executions and configs, read once and navigated in memory. */
export class RealmFlows {
  private readonly flows = new Map<string, AuthFlow>();
  private readonly aliases = new Map<string, AuthFlow>();
  private readonly executions = new Map<string, AuthExecution>();
  private readonly children = new Map<string, AuthExecution[]>();
  private readonly configs = new Map<string, AuthenticatorConfig>();

  constructor(rows: RealmFlowRows) {
    for (const flow of rows.flows) {
      this.flows.set(flow.id, flow);
      this.aliases.set(flow.alias, flow);
    }
    for (const execution of rows.executions) {
      this.executions.set(execution.id, execution);
      const siblings = this.children.get(execution.parentFlowId) ?? [];
      siblings.push(execution);
      this.children.set(execution.parentFlowId, siblings);
    }
    for (const siblings of this.children.values()) siblings.sort(byPriority);
    for (const config of rows.configs) this.configs.set(config.id, config);
  }

  flow(id: string): AuthFlow | undefined {
    return this.flows.get(id);
  }

  flowByAlias(alias: string): AuthFlow | undefined {
    return this.aliases.get(alias);
  }

  topLevelFlows(): AuthFlow[] {
    return this.allFlows().filter((f) => f.topLevel);
  }

  /** Every flow, sub-flows too, by alias (a realm export lists them all). */
  allFlows(): AuthFlow[] {
    return [...this.flows.values()].sort((a, b) => (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0));
  }

  /** Every authenticator config, by alias. */
  allConfigs(): AuthenticatorConfig[] {
    return [...this.configs.values()].sort((a, b) => (a.alias < b.alias ? -1 : a.alias > b.alias ? 1 : 0));
  }

  execution(id: string): AuthExecution | undefined {
    return this.executions.get(id);
  }

  config(id: string | null): AuthenticatorConfig | undefined {
    return id === null ? undefined : this.configs.get(id);
  }

  /** Executions whose authenticatorConfig is this one (normally one). */
  executionsUsingConfig(configId: string): AuthExecution[] {
    return [...this.executions.values()].filter((e) => e.configId === configId);
  }

  /** The executions that run this flow as their subflow (one, unless data was damaged). */
  executionsRunning(flowId: string): AuthExecution[] {
    return [...this.executions.values()].filter((e) => e.subFlowId === flowId);
  }

  /** Direct children of a flow, in priority order. */
  executionsOf(flowId: string): AuthExecution[] {
    return this.children.get(flowId) ?? [];
  }

  /**
   * Depth-first, Keycloak's order: each execution, then the contents of its subflow. `enter` decides whether a
   * subflow's contents are walked (the runner skips disabled ones).
   */
  walk(flowId: string, enter: (execution: AuthExecution) => boolean = () => true): WalkedExecution[] {
    const out: WalkedExecution[] = [];
    const visited = new Set<string>();
    const visit = (id: string, level: number) => {
      const parent = this.flows.get(id);
      // A subflow reached twice would mean a cycle in damaged data; walking it once keeps this finite.
      if (!parent || visited.has(id)) return;
      visited.add(id);
      for (const [index, execution] of this.executionsOf(id).entries()) {
        out.push({ execution, level, index, parent });
        if (execution.subFlowId && enter(execution)) visit(execution.subFlowId, level + 1);
      }
    };
    visit(flowId, 0);
    return out;
  }

  /** The flow and every subflow beneath it. */
  flowTree(flowId: string): AuthFlow[] {
    const root = this.flows.get(flowId);
    if (!root) return [];
    const subflows = this.walk(flowId)
      .map((w) => (w.execution.subFlowId ? this.flows.get(w.execution.subFlowId) : undefined))
      .filter((flow): flow is AuthFlow => flow !== undefined);
    return [root, ...subflows];
  }
}
