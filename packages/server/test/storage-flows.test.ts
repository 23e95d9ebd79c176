import { describe, expect, it } from 'vitest';
import { provisionBuiltInFlows } from '../src/flows/builtin-flows.js';
import { ProviderCatalog } from '../src/flows/catalog.js';
import { FlowEditor } from '../src/flows/editing.js';
import { RealmFlows } from '../src/flows/realm-flows.js';
import { FlowRepository } from '../src/flows/repository.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import type { Storage } from '../src/storage/index.js';
import { databases } from './support/server.js';
import { seedRealm, useStorage } from './support/storage.js';

/**
 * The flow tables' contract on SQLite and PostgreSQL, without an HTTP server (issue 36): the built-in flows as
 * provisioned, the editor's writes in their transactions (a deep copy, configs, priorities, renames that carry the
 * bindings, deletes that take the tree along), the unique aliases as 409s (two copies to one name at once
 * included), and what goes with a realm. flows.test.ts (HTTP, SQLite) relies on it for PostgreSQL.
 */
describe.each(databases)('flow storage on %s', (kind) => {
  const storage = useStorage(kind);

  /** A realm with its built-in flows, and the repository and editor the server would use on it. */
  async function flowRealm(s: Storage) {
    const seed = await seedRealm(s);
    const repository = new FlowRepository(s.db, s.cache);
    await s.transaction((trx) => provisionBuiltInFlows(repository, seed.realm.id, [], trx));
    const editor = new FlowEditor(s, repository, new ProviderCatalog(new ProviderRegistry()));
    const load = async () => new RealmFlows(await repository.loadRealm(seed.realm.id));
    /** A flow's executions as `provider-or-subflow:requirement@priority`, in the runner's order, subflows inline. */
    const layout = async (alias: string): Promise<string[]> => {
      const flows = await load();
      const walk = (flowId: string, depth: number): string[] =>
        flows.executionsOf(flowId).flatMap((e) => {
          const sub = e.subFlowId ? flows.flow(e.subFlowId) : undefined;
          return [`${depth}:${sub ? 'flow' : e.authenticator}:${e.requirement}`, ...(sub ? walk(sub.id, depth + 1) : [])];
        });
      return walk(flows.flowByAlias(alias)!.id, 0);
    };
    return { ...seed, repository, editor, load, layout };
  }

  it('provisions the built-in flows; lists them by alias across realms, and the realms without one', async () => {
    const s = storage();
    const r = await flowRealm(s);
    const flows = await r.load();
    const browser = flows.flowByAlias('browser')!;
    expect(browser).toMatchObject({ realmId: r.realm.id, topLevel: true, builtIn: true, providerId: 'basic-flow' });
    expect(await r.repository.flowByAlias(r.realm.id, 'browser')).toEqual(browser);
    expect(await r.repository.flowByAlias(r.realm.id, 'nothing')).toBeNull();
    expect((await r.layout('browser')).length).toBeGreaterThan(3);
    expect((await r.repository.builtInFlowsNamed('browser')).map((f) => f.realmId)).toContain(r.realm.id);
    const bare = await seedRealm(s);
    const without = await r.repository.realmsWithoutFlow('browser');
    expect(without).toContain(bare.realm.id);
    expect(without).not.toContain(r.realm.id);
    expect(await r.repository.namedProviders()).toEqual(expect.arrayContaining(['auth-cookie', 'auth-username-password-form']));
    expect(await r.repository.realmsNaming(['auth-cookie'])).toContain(r.realm.id);
    expect(await r.repository.realmsNaming([])).toEqual([]);
    expect(await r.repository.storedBindings(r.realm.id)).toEqual({ browserFlow: r.realm.browserFlow, registrationFlow: r.realm.registrationFlow, resetCredentialsFlow: r.realm.resetCredentialsFlow });
  });

  it('copies a flow deeply (subflows and configs under the new name); a taken alias is a 409, two copies to one name at once give one', async () => {
    const s = storage();
    const r = await flowRealm(s);
    const copy = await r.editor.copyFlow(r.realm, 'browser', 'my browser');
    expect(copy).toMatchObject({ alias: 'my browser', builtIn: false, topLevel: true });
    expect(await r.layout('my browser')).toEqual(await r.layout('browser'));
    const flows = await r.load();
    const subflows = flows.flowTree(copy.id).filter((f) => f.id !== copy.id);
    expect(subflows.length).toBeGreaterThan(0);
    expect(subflows.every((f) => f.alias.startsWith('my browser ') && !f.builtIn && !f.topLevel)).toBe(true);

    await expect(r.editor.copyFlow(r.realm, 'browser', 'my browser')).rejects.toMatchObject({ status: 409 });
    await expect(r.editor.createFlow(r.realm, { alias: 'my browser', description: null, providerId: 'basic-flow' })).rejects.toMatchObject({ status: 409 });
    const both = await Promise.allSettled([r.editor.copyFlow(r.realm, 'browser', 'raced'), r.editor.copyFlow(r.realm, 'browser', 'raced')]);
    expect(both.filter((x) => x.status === 'fulfilled')).toHaveLength(1);
    expect(both.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason.status)).toEqual([409]);
    expect((await r.repository.loadRealm(r.realm.id)).flows.filter((f) => f.alias === 'raced')).toHaveLength(1);
    expect(await r.layout('raced')).toEqual(await r.layout('browser'));
  });

  it('configs: attached with text as written, aliases unique in the realm (409), deleted to a config-less execution', async () => {
    const s = storage();
    const r = await flowRealm(s);
    await r.editor.copyFlow(r.realm, 'browser', 'configured');
    const flows = await r.load();
    const steps = flows.flowTree(flows.flowByAlias('configured')!.id).flatMap((f) => flows.executionsOf(f.id)).filter((e) => e.authenticator && !e.subFlowId);
    expect(steps.length).toBeGreaterThanOrEqual(2);
    const [first, second] = steps;
    const config = await r.editor.attachConfig(r.realm, first.id, { alias: 'first config', config: {} });
    expect((await r.load()).config(config.id)).toEqual({ id: config.id, realmId: r.realm.id, alias: 'first config', config: {} });
    expect((await r.load()).execution(first.id)?.configId).toBe(config.id);
    // The repository keeps any text (the editor checks it against the provider first).
    await r.repository.updateConfig({ ...config, config: { 'naïve ☃': 'line\nbreak "quoted" \\ 𝄞', empty: '' } });
    expect((await r.load()).config(config.id)?.config).toEqual({ 'naïve ☃': 'line\nbreak "quoted" \\ 𝄞', empty: '' });
    await expect(r.editor.attachConfig(r.realm, second.id, { alias: 'first config', config: {} })).rejects.toMatchObject({ status: 409 });
    expect((await r.load()).execution(second.id)?.configId).toBeNull();
    await r.editor.deleteConfig(r.realm, config.id);
    expect((await r.load()).config(config.id)).toBeUndefined();
    expect((await r.load()).execution(first.id)?.configId).toBeNull();
  });

  it('moves an execution by swapping priorities; renames carry the bindings; a delete takes subflows and configs along', async () => {
    const s = storage();
    const r = await flowRealm(s);
    const copy = await r.editor.copyFlow(r.realm, 'browser', 'moving');
    const before = await r.layout('moving');
    const top = (await r.load()).executionsOf(copy.id);
    expect(await r.editor.move(r.realm, top[1].id, -1)).toBe(true);
    const after = await r.layout('moving');
    expect(after).not.toEqual(before);
    expect((await r.load()).executionsOf(copy.id).map((e) => e.id).slice(0, 2)).toEqual([top[1].id, top[0].id]);
    expect(await r.editor.move(r.realm, top[1].id, -1)).toBe(false);

    await r.repository.setBinding(r.realm.id, 'browserFlow', 'moving');
    await r.editor.updateFlow({ ...r.realm, browserFlow: 'moving' }, copy.id, { alias: 'moved', description: 'renamed' });
    expect((await r.repository.storedBindings(r.realm.id))?.browserFlow).toBe('moved');
    expect(await r.repository.flowByAlias(r.realm.id, 'moved')).toMatchObject({ id: copy.id, description: 'renamed' });
    await r.repository.setBinding(r.realm.id, 'browserFlow', 'browser');

    const flows = await r.load();
    const tree = flows.flowTree(copy.id).map((f) => f.id);
    const withConfig = flows.executionsOf(tree[1] ?? copy.id).find((e) => e.authenticator && !e.subFlowId) ?? flows.executionsOf(copy.id)[0];
    const config = await r.editor.attachConfig(r.realm, withConfig.id, { alias: 'goes too', config: {} });
    await r.editor.deleteFlow({ ...r.realm, browserFlow: 'browser' }, copy.id);
    const left = await r.repository.loadRealm(r.realm.id);
    expect(left.flows.filter((f) => tree.includes(f.id))).toEqual([]);
    expect(left.executions.filter((e) => tree.includes(e.parentFlowId) || (e.subFlowId !== null && tree.includes(e.subFlowId)))).toEqual([]);
    expect(left.configs.filter((c) => c.id === config.id)).toEqual([]);
    expect(await r.layout('browser')).toEqual(before);
  });

  it("a realm's flows, executions and configs go with it", async () => {
    const s = storage();
    const r = await flowRealm(s);
    await r.editor.copyFlow(r.realm, 'browser', 'doomed');
    const flows = await r.load();
    const execution = flows.executionsOf(flows.flowByAlias('doomed')!.id).find((e) => e.authenticator && !e.subFlowId)!;
    await r.editor.attachConfig(r.realm, execution.id, { alias: 'doomed config', config: {} });
    await s.realms.delete(r.realm.id);
    expect(await r.repository.loadRealm(r.realm.id)).toEqual({ flows: [], executions: [], configs: [] });
  });
});
