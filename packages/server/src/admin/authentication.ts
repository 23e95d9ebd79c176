import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Requirement } from '@realmgate/spi';
import type { ServerContext } from '../context.js';
import type { FlowType, ProviderRole } from '../flows/index.js';
import { baseUrl } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import {
  moveRequiredAction,
  realmRequiredAction,
  realmRequiredActions,
  registerRequiredAction,
  requiredActionConfig,
  requiredActionConfigDescription,
  setRequiredActionConfig,
  unregisteredRequiredActions,
  unregisterRequiredAction,
  updateRequiredAction,
} from '../services/index.js';
import { carriedOut, NOT_CARRIED_OUT, type RequiredActionChange } from '../services/required-actions.js';
import { requiredActionProvider } from '../required-actions/index.js';
import {
  configDescriptionRep,
  configRep,
  configSpec,
  copySpec,
  executionChangeIgnored,
  executionChangeSpec,
  executionInfoRep,
  executionRep,
  flowIgnored,
  flowRep,
  flowSpec,
  newExecutionSpec,
  newSubflowSpec,
  parseBody,
  providerRep,
  requiredActionConfigSpec,
  requiredActionIgnored,
  requiredActionRegistrationSpec,
  requiredActionSpec,
  requiredField,
} from '../representations/authentication.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** Keycloak's authentication management resource: flows, executions, authenticator configs, provider lists. */
export function authenticationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const { editor, catalog } = ctx.flows;
  const base = '/realms/:realm/authentication';

  const realmFor = async (request: FastifyRequest, write: boolean): Promise<Realm> => {
    const realm = await targetRealm(ctx, request);
    return realm;
  };
  const location = (request: FastifyRequest, realm: Realm, path: string) =>
    `${baseUrl(request, ctx.config.hostname)}/admin/realms/${encodeURIComponent(realm.name)}/authentication/${path}`;

  const listProviders = (...roles: ProviderRole[]) => async (request: FastifyRequest) => {
    await realmFor(request, false);
    return catalog.list(...roles).map(providerRep);
  };
  app.get(`${base}/authenticator-providers`, listProviders('authenticator', 'form-protector'));
  app.get(`${base}/form-action-providers`, listProviders('form-action', 'form-protector'));
  app.get(`${base}/form-providers`, listProviders('form'));
  app.get(`${base}/client-authenticator-providers`, async (request) => {
    await realmFor(request, false);
    // Keycloak's supportsSecret: whether the client's secret is part of the method (the console's Credentials tab shows it then).
    return catalog.list('client-authenticator').map((p) => ({ ...providerRep(p), supportsSecret: p.id === 'client-secret' || p.id === 'client-secret-jwt' }));
  });

  app.get(`${base}/config-description/:providerId`, async (request: AdminRequest<{ realm: string; providerId: string }>) => {
    await realmFor(request, false);
    const provider = catalog.get(request.params.providerId);
    if (!provider) throw notFound('Could not find authenticator provider');
    return configDescriptionRep(provider);
  });

  // Flows. The path segment after /flows/ is an id for the flow itself and an alias below it, as in Keycloak.

  app.get(`${base}/flows`, async (request) => {
    const realm = await realmFor(request, false);
    const flows = await editor.load(realm.id);
    return flows.topLevelFlows().map((f) => flowRep(flows, f));
  });

  // Required actions: the registry's providers (required-actions/), registered in every realm with Keycloak's
  // settings, and those a realm file listed that this server has no provider for, kept as data
  // (services/required-actions.ts). An administrator enables or disables each, makes it a default action (every new
  // user gets it), orders them, sets their settings, unregisters and registers them again. One not carried out is
  // turned off or reordered like the others, but never turned on: that is refused (400), naming why.

  app.get(`${base}/required-actions`, async (request) => {
    const realm = await realmFor(request, false);
    return realmRequiredActions(ctx.storage, realm.id);
  });
  // The console's Required actions tab: the same list, with whether each has settings. The name of one not carried
  // out says so, as the tab shows only the name and the switches: a Delete Account switched on there must not read
  // as something users can now do. (A PUT takes no name: what the console sends back is no change.)
  app.get('/realms/:realm/ui-ext/authentication-management/required-actions', async (request) => {
    const realm = await realmFor(request, false);
    return (await realmRequiredActions(ctx.storage, realm.id)).map((action) => ({
      ...action,
      ...(carriedOut(action.alias) ? {} : { name: `${action.name} (${NOT_CARRIED_OUT})` }),
      configurable: (requiredActionProvider(action.alias)?.config.length ?? 0) > 0,
    }));
  });
  app.get(`${base}/unregistered-required-actions`, async (request) => {
    const realm = await realmFor(request, false);
    return unregisteredRequiredActions(ctx.storage, realm.id);
  });
  app.post(`${base}/register-required-action`, async (request, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ providerId?: string; name?: string }>(request.body, requiredActionRegistrationSpec, 'requiredAction');
    const action = await registerRequiredAction(ctx.storage, realm.id, input.providerId, input.name);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'REQUIRED_ACTION', `authentication/register-required-action`, { providerId: action.providerId, name: action.name });
    return reply.code(204).send();
  });
  app.delete(`${base}/required-actions/:alias`, async (request: AdminRequest<{ realm: string; alias: string }>, reply) => {
    const realm = await realmFor(request, true);
    await unregisterRequiredAction(ctx.storage, realm.id, request.params.alias);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'REQUIRED_ACTION', `authentication/required-actions/${request.params.alias}`);
    return reply.code(204).send();
  });
  app.get(`${base}/required-actions/:alias/config-description`, async (request: AdminRequest<{ realm: string; alias: string }>) => {
    await realmFor(request, false);
    return requiredActionConfigDescription(request.params.alias);
  });
  app.get(`${base}/required-actions/:alias/config`, async (request: AdminRequest<{ realm: string; alias: string }>) => {
    const realm = await realmFor(request, false);
    return requiredActionConfig(ctx.storage, realm.id, request.params.alias);
  });
  app.put(`${base}/required-actions/:alias/config`, async (request: AdminRequest<{ realm: string; alias: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ config?: Record<string, string> }>(request.body, requiredActionConfigSpec, 'requiredActionConfig');
    const updated = await setRequiredActionConfig(ctx.storage, realm.id, request.params.alias, input.config ?? {});
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'REQUIRED_ACTION_CONFIG', `authentication/required-actions/${updated.alias}/config`, { config: updated.config });
    return reply.code(204).send();
  });
  app.delete(`${base}/required-actions/:alias/config`, async (request: AdminRequest<{ realm: string; alias: string }>, reply) => {
    const realm = await realmFor(request, true);
    const updated = await setRequiredActionConfig(ctx.storage, realm.id, request.params.alias, null);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'REQUIRED_ACTION_CONFIG', `authentication/required-actions/${updated.alias}/config`);
    return reply.code(204).send();
  });
  app.get(`${base}/required-actions/:alias`, async (request: AdminRequest<{ realm: string; alias: string }>) => {
    const realm = await realmFor(request, false);
    return realmRequiredAction(ctx.storage, realm.id, request.params.alias);
  });

  app.put(`${base}/required-actions/:alias`, async (request: AdminRequest<{ realm: string; alias: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<RequiredActionChange>(request.body, requiredActionSpec, 'requiredAction', requiredActionIgnored);
    const updated = await updateRequiredAction(ctx.storage, realm.id, request.params.alias, input);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'REQUIRED_ACTION', `authentication/required-actions/${updated.alias}`, updated);
    return reply.code(204).send();
  });

  for (const [action, direction] of [['raise-priority', -1], ['lower-priority', 1]] as const) {
    app.post(`${base}/required-actions/:alias/${action}`, async (request: AdminRequest<{ realm: string; alias: string }>, reply) => {
      const realm = await realmFor(request, true);
      if (await moveRequiredAction(ctx.storage, realm.id, request.params.alias, direction)) {
        await recordAdminEvent(ctx, request, realm, 'UPDATE', 'REQUIRED_ACTION', `authentication/required-actions/${request.params.alias}/${action}`);
      }
      return reply.code(204).send();
    });
  }

  // The admin console's flow list: each top-level flow and what uses it (a realm binding), as Keycloak's ui-ext.
  app.get('/realms/:realm/ui-ext/authentication-management/flows', async (request) => {
    const realm = await realmFor(request, false);
    const flows = await editor.load(realm.id);
    // A flow bound to the realm is used by DEFAULT, its alias the value (the console finds the binding by it).
    const bound = new Set([realm.browserFlow, realm.registrationFlow, realm.resetCredentialsFlow]);
    // A flow clients override a binding with is used by SPECIFIC_CLIENTS, their clientIds the values.
    const overriding = new Map<string, string[]>();
    for (const client of await ctx.storage.clients.list(realm.id)) {
      for (const flowId of new Set(Object.values(client.authenticationFlowBindingOverrides))) overriding.set(flowId, [...(overriding.get(flowId) ?? []), client.clientId]);
    }
    return flows.topLevelFlows().map((flow) => {
      const { authenticationExecutions: _, ...rep } = flowRep(flows, flow);
      const clients = overriding.get(flow.id);
      if (clients) return { ...rep, usedBy: { type: 'SPECIFIC_CLIENTS', values: clients } };
      return bound.has(flow.alias) ? { ...rep, usedBy: { type: 'DEFAULT', values: [flow.alias] } } : rep;
    });
  });

  app.post(`${base}/flows`, async (request: AdminRequest, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ alias?: string; description?: string; providerId?: FlowType; topLevel?: boolean; builtIn?: boolean }>(request.body, flowSpec, 'flow', flowIgnored);
    const alias = requiredField(input.alias, 'flow', 'alias');
    if (input.topLevel === false) throw badRequest('flow.topLevel: only top-level flows are created here; add a subflow through /flows/{alias}/executions/flow', 'topLevel');
    if (input.builtIn === true) throw badRequest('flow.builtIn: built-in flows cannot be created', 'builtIn');
    const flow = await editor.createFlow(realm, { alias, description: input.description ?? '', providerId: input.providerId ?? 'basic-flow' });
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'AUTH_FLOW', `authentication/flows/${flow.id}`, { ...input, id: flow.id });
    return reply.code(201).header('location', location(request, realm, `flows/${flow.id}`)).send();
  });

  app.get(`${base}/flows/:flow`, async (request: AdminRequest<{ realm: string; flow: string }>) => {
    const realm = await realmFor(request, false);
    const flows = await editor.load(realm.id);
    const flow = flows.flow(pathId(request.params.flow, 'Flow'));
    if (!flow) throw notFound('Could not find flow with id');
    return flowRep(flows, flow);
  });

  app.put(`${base}/flows/:flow`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const id = pathId(request.params.flow, 'Flow');
    const input = parseBody<{ alias?: string; description?: string }>(request.body, flowSpec, 'flow', flowIgnored);
    const flow = await editor.updateFlow(realm, id, { alias: requiredField(input.alias, 'flow', 'alias'), description: input.description });
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'AUTH_FLOW', `authentication/flows/${flow.id}`, { id: flow.id, alias: flow.alias, description: flow.description });
    return reply.code(204).send();
  });

  app.delete(`${base}/flows/:flow`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const flow = await editor.deleteFlow(realm, pathId(request.params.flow, 'Flow'));
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'AUTH_FLOW', `authentication/flows/${flow.id}`);
    return reply.code(204).send();
  });

  app.post(`${base}/flows/:flow/copy`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ newName?: string }>(request.body, copySpec, 'copy');
    const copy = await editor.copyFlow(realm, request.params.flow, requiredField(input.newName, 'copy', 'newName'));
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'AUTH_FLOW', `authentication/flows/${request.params.flow}/copy`, { newName: copy.alias, id: copy.id });
    return reply.code(201).header('location', location(request, realm, `flows/${copy.id}`)).send();
  });

  // Executions

  app.get(`${base}/flows/:flow/executions`, async (request: AdminRequest<{ realm: string; flow: string }>) => {
    const realm = await realmFor(request, false);
    const flows = await editor.load(realm.id);
    const flow = flows.flowByAlias(request.params.flow);
    if (!flow) throw notFound('Flow not found');
    return flows.walk(flow.id).map((w) => executionInfoRep(editor, catalog, flows, w));
  });

  app.put(`${base}/flows/:flow/executions`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ id?: string; requirement?: Requirement; priority?: number; displayName?: string; description?: string }>(
      request.body,
      executionChangeSpec,
      'execution',
      executionChangeIgnored,
    );
    const id = requiredField(input.id, 'execution', 'id');
    await editor.updateExecution(realm, request.params.flow, { ...input, id });
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'AUTH_EXECUTION', `authentication/flows/${request.params.flow}/executions`, request.body);
    return reply.code(204).send();
  });

  app.post(`${base}/flows/:flow/executions/execution`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ provider?: string; priority?: number }>(request.body, newExecutionSpec, 'execution');
    const execution = await editor.addExecution(realm, request.params.flow, requiredField(input.provider, 'execution', 'provider'), input.priority);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'AUTH_EXECUTION', `authentication/flows/${request.params.flow}/executions/execution`, { ...input, id: execution.id });
    return reply.code(201).header('location', location(request, realm, `executions/${execution.id}`)).send();
  });

  app.post(`${base}/flows/:flow/executions/flow`, async (request: AdminRequest<{ realm: string; flow: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ alias?: string; type?: 'basic-flow' | 'form-flow'; provider?: string; description?: string; priority?: number }>(request.body, newSubflowSpec, 'flow');
    const { flow, execution } = await editor.addSubflow(realm, request.params.flow, {
      alias: requiredField(input.alias, 'flow', 'alias'),
      providerId: input.type ?? 'basic-flow',
      provider: input.provider,
      description: input.description ?? '',
      priority: input.priority,
    });
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'AUTH_EXECUTION_FLOW', `authentication/flows/${request.params.flow}/executions/flow`, { ...input, id: execution.id });
    return reply.code(201).header('location', location(request, realm, `flows/${flow.id}`)).send();
  });

  app.get(`${base}/executions/:id`, async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await realmFor(request, false);
    const execution = (await editor.load(realm.id)).execution(pathId(request.params.id, 'Execution'));
    if (!execution) throw notFound('Illegal execution');
    return executionRep(execution);
  });

  app.delete(`${base}/executions/:id`, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const realm = await realmFor(request, true);
    const execution = await editor.deleteExecution(realm, pathId(request.params.id, 'Execution'));
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'AUTH_EXECUTION', `authentication/executions/${execution.id}`);
    return reply.code(204).send();
  });

  for (const [action, direction] of [['raise-priority', -1], ['lower-priority', 1]] as const) {
    app.post(`${base}/executions/:id/${action}`, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
      const realm = await realmFor(request, true);
      const id = pathId(request.params.id, 'Execution');
      if (await editor.move(realm, id, direction)) {
        await recordAdminEvent(ctx, request, realm, 'UPDATE', 'AUTH_EXECUTION', `authentication/executions/${id}/${action}`);
      }
      return reply.code(204).send();
    });
  }

  // Authenticator configs

  app.post(`${base}/executions/:id/config`, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const realm = await realmFor(request, true);
    const executionId = pathId(request.params.id, 'Execution');
    const input = parseBody<{ alias?: string; config?: Record<string, string> }>(request.body, configSpec, 'config', ['id']);
    const config = await editor.attachConfig(realm, executionId, { alias: requiredField(input.alias, 'config', 'alias'), config: input.config ?? {} });
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'AUTHENTICATOR_CONFIG', `authentication/executions/${executionId}/config`, configRep(config));
    return reply.code(201).header('location', location(request, realm, `config/${config.id}`)).send();
  });

  app.get(`${base}/config/:id`, async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await realmFor(request, false);
    const config = (await editor.load(realm.id)).config(pathId(request.params.id, 'Authenticator config'));
    if (!config) throw notFound('Could not find authenticator config');
    return configRep(config);
  });

  app.put(`${base}/config/:id`, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const realm = await realmFor(request, true);
    const input = parseBody<{ alias?: string; config?: Record<string, string> }>(request.body, configSpec, 'config', ['id']);
    const config = await editor.updateConfig(realm, pathId(request.params.id, 'Authenticator config'), input);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'AUTHENTICATOR_CONFIG', `authentication/config/${config.id}`, configRep(config));
    return reply.code(204).send();
  });

  app.delete(`${base}/config/:id`, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const realm = await realmFor(request, true);
    const id = pathId(request.params.id, 'Authenticator config');
    await editor.deleteConfig(realm, id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'AUTHENTICATOR_CONFIG', `authentication/config/${id}`);
    return reply.code(204).send();
  });
}
