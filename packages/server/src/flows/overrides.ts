import type { Realm } from '../model/types.js';
import type { Db, Storage } from '../storage/index.js';
import type { ProviderCatalog } from './catalog.js';
import type { ImportedFlow } from './import.js';
import { isOverrideBinding, type AuthFlow } from './model.js';
import { RealmFlows } from './realm-flows.js';
import type { FlowRepository } from './repository.js';
import { describeBlocker, flowBlocker } from './runnable.js';

/**
 * Clients' flow overrides (Keycloak's `authenticationFlowBindingOverrides`) as they are stored: each names, by id, a
 * top-level flow of the client's realm that can run. The runner honours them (runner.ts, `signInFlow`); this file
 * judges them for the admin API and takes them from realm files.
 */

/** Why a flow id cannot be a client's override, or null when it can. */
function overrideProblem(flows: RealmFlows, flowId: string, installed: (id: string) => boolean): string | null {
  const flow = flows.flow(flowId);
  if (!flow) return `no flow with id "${flowId}" in this realm`;
  if (!flow.topLevel) return `"${flow.alias}" is a subflow; a client overrides a binding with a top-level flow`;
  const blocker = flowBlocker(flows, flow.id, installed);
  return blocker ? `"${flow.alias}" cannot run: ${describeBlocker(blocker)}` : null;
}

/**
 * The admin API's check of a client's overrides (create, update): null, or a message naming the first that names no
 * top-level flow of the realm (another realm's flow is none of its) or one that cannot run. One the update leaves as
 * it was is not judged again, as a realm binding is not (FlowRunner.validateBindings).
 */
export async function overridesProblem(
  repository: FlowRepository,
  catalog: ProviderCatalog,
  realm: Realm,
  overrides: Record<string, string>,
  previous: Record<string, string>,
): Promise<string | null> {
  const changed = Object.entries(overrides).filter(([binding, flowId]) => previous[binding] !== flowId);
  if (!changed.length) return null;
  const flows = new RealmFlows(await repository.loadRealm(realm.id));
  const installed = (id: string) => catalog.get(id) !== undefined;
  for (const [binding, flowId] of changed) {
    const problem = overrideProblem(flows, flowId, installed);
    if (problem) return `client.authenticationFlowBindingOverrides.${binding}: ${problem}`;
  }
  return null;
}

/** A client of a realm file with the overrides the file gives it, by the file's flow ids. */
export interface ImportedOverrides {
  clientUuid: string;
  /** The client's JSON path (`realm.clients[3]`). */
  path: string;
  overrides: Record<string, string>;
}

/**
 * A realm file's overrides, once the realm's flows exist (inside the import's transaction). A value is the id of a
 * flow of the file (Keycloak's exports), else the id of a flow the realm already has (a partial import), else a
 * flow's alias (Realmgate's exports, which carry no flow ids). One that names no top-level flow, names one that
 * cannot run, or has a key other than `browser` and `direct_grant` is not taken: the realm's flow runs for that
 * client, and `notImported` names it by JSON path. Returns those entries.
 */
export async function importOverrides(
  storage: Storage,
  repository: FlowRepository,
  catalog: ProviderCatalog,
  realm: Realm,
  clients: ImportedOverrides[],
  fileFlows: ImportedFlow[],
  db: Db,
): Promise<string[]> {
  const notImported: string[] = [];
  if (!clients.some((c) => Object.keys(c.overrides).length)) return notImported;
  const flows = new RealmFlows(await repository.loadRealm(realm.id, db));
  const installed = (id: string) => catalog.get(id) !== undefined;
  const fileAlias = new Map(fileFlows.flatMap((f) => (f.fileId === null ? [] : [[f.fileId, f.alias] as const])));
  const resolve = (value: string): AuthFlow | undefined => {
    const alias = fileAlias.get(value);
    return alias !== undefined ? flows.flowByAlias(alias) : (flows.flow(value) ?? flows.flowByAlias(value));
  };
  for (const { clientUuid, path, overrides } of clients) {
    const kept: Record<string, string> = {};
    for (const [binding, value] of Object.entries(overrides)) {
      const at = `${path}.authenticationFlowBindingOverrides.${binding}`;
      if (!isOverrideBinding(binding)) {
        notImported.push(`${at}: not a flow binding Realmgate honours ("browser", "direct_grant")`);
        continue;
      }
      const flow = resolve(value);
      const problem = flow ? overrideProblem(flows, flow.id, installed) : `no flow "${value}" in this file or realm`;
      if (problem) notImported.push(`${at}: ${problem}; the realm's ${binding === 'browser' ? 'browser' : 'direct grant'} flow runs for this client`);
      else kept[binding] = flow!.id;
    }
    if (Object.keys(kept).length) await storage.clients.setFlowBindingOverrides(clientUuid, kept, db);
  }
  return notImported;
}

/** The clients that override a binding with this flow, as `client "app" (browser)`, for a refused delete. */
export async function clientsUsingFlow(storage: Storage, realmId: string, flowId: string, db: Db): Promise<string[]> {
  const clients = await storage.clients.list(realmId, {}, db);
  return clients.flatMap((c) =>
    Object.entries(c.authenticationFlowBindingOverrides)
      .filter(([, id]) => id === flowId)
      .map(([binding]) => `client "${c.clientId}" (${binding})`),
  );
}
