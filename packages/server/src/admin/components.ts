import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { badRequest, badRequestError, notFound } from '../model/errors.js';
import type { Component, Realm } from '../model/types.js';
import { CLIENT_REGISTRATION_POLICY_TYPE } from '../model/client-registration.js';
import { KEY_PROVIDER_TYPES, KeyProviderError } from '../keys/index.js';
import { keyProviderComponents } from './keys.js';
import { queryString } from './query.js';
import { KEY_PROVIDER_TYPE, componentRep, parseComponent, unmaskConfig } from '../representations/federation.js';
import { locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

type IdParams = { realm: string; id: string };

/** A key provider's refusal (KeyProviderError) as a 400 naming the config entry; nothing was stored. */
async function keyProviderWork<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // Keycloak refuses a provider it does not have with a BadRequestException, a config its provider refuses with an ErrorResponse.
    if (error instanceof KeyProviderError) throw error.entry === 'providerId' ? badRequestError(`component.${error.message}`) : badRequest(`component.${error.message}`, 'config');
    throw error;
  }
}

/**
 * Keycloak's components resource (`/components`): user storage (LDAP), client registration policies and the other
 * component types of a realm file are kept as data, exported back, and not run (README). The realm's keys are
 * key-provider components (admin/keys.ts, keys/providers.ts): added, changed and removed here, run by the server. Reading needs view-realm, writing
 * manage-realm, as Keycloak's. Secret config values are answered as `**********`; a PUT sending the mask keeps them.
 */
export function componentRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const find = async (realm: Realm, rawId: string): Promise<{ component: Component; key: boolean }> => {
    const id = pathId(rawId, 'Component');
    const stored = await ctx.storage.federation.component(realm.id, id);
    if (stored) return { component: stored, key: false };
    const key = (await keyProviderComponents(ctx, realm)).find((c) => c.id === id);
    if (key) return { component: key, key: true };
    throw notFound('Could not find component');
  };
  // A parent is the realm or one of its stored components (not a key, which has none under it).
  const checkParent = async (realm: Realm, parentId: string) => {
    if (parentId === realm.id) return;
    const ok = /^[0-9a-f-]{36}$/i.test(parentId) && (await ctx.storage.federation.component(realm.id, parentId.toLowerCase())) !== null;
    if (!ok) throw badRequest('component.parentId: names neither this realm nor one of its components', 'parentId');
  };

  app.get('/realms/:realm/components', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const parent = queryString(request.query, 'parent');
    const type = queryString(request.query, 'type');
    const name = queryString(request.query, 'name');
    // Keycloak's query: all of the realm's components, those under `parent`, or those of `type` under `parent` (the realm by default).
    const parentId = type !== undefined ? (parent ?? realm.id) : parent;
    const stored = await ctx.storage.federation.components(realm.id, { parentId, providerType: type, name });
    const keys = (await keyProviderComponents(ctx, realm)).filter(
      (c) => (parentId === undefined || parentId === c.parentId) && (type === undefined || type === c.providerType) && (name === undefined || name === c.name),
    );
    return [...keys, ...stored].map((c) => componentRep(c));
  });

  app.post('/realms/:realm/components', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = parseComponent(request.body);
    if (input.providerType === undefined) throw badRequest('component.providerType: is required', 'providerType');
    if (input.providerType === KEY_PROVIDER_TYPE) {
      // A key provider hangs from the realm; its key is made now (or taken, `rsa`) and kept as the realm's key.
      if ((input.parentId ?? realm.id) !== realm.id) throw badRequest('component.parentId: a key provider belongs to the realm', 'parentId');
      const id = await keyProviderWork(() => ctx.keys.addProvider(realm.id, { name: input.name || input.providerId, providerId: input.providerId, config: input.config }));
      const created = (await keyProviderComponents(ctx, realm)).find((c) => c.id === id)!;
      await recordAdminEvent(ctx, request, realm, 'CREATE', 'COMPONENT', `components/${id}`, componentRep(created));
      return reply.code(201).header('location', locationOf(ctx, request, id)).send();
    }
    const component: Component = { ...input, id: newId(), realmId: realm.id, parentId: input.parentId ?? realm.id, providerType: input.providerType };
    await checkParent(realm, component.parentId);
    await ctx.storage.federation.insertComponent(component);
    if (component.providerType !== CLIENT_REGISTRATION_POLICY_TYPE) {
      ctx.logger.warn({ realm: realm.name, providerType: component.providerType, providerId: component.providerId }, 'component stored as data: Realmgate does not run it');
    }
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'COMPONENT', `components/${component.id}`, componentRep(component));
    return reply.code(201).header('location', locationOf(ctx, request, component.id)).send();
  });

  app.get('/realms/:realm/components/:id', async (request: AdminRequest<IdParams>) => {
    const realm = await targetRealm(ctx, request);
    return componentRep((await find(realm, request.params.id)).component);
  });

  app.put('/realms/:realm/components/:id', async (request: AdminRequest<IdParams>, reply) => {
    const realm = await targetRealm(ctx, request);
    const { component, key } = await find(realm, request.params.id);
    const input = parseComponent(request.body);
    if (key) {
      if (input.providerType !== undefined && input.providerType !== KEY_PROVIDER_TYPE) throw badRequest('component.providerType: a key provider stays one', 'providerType');
      await keyProviderWork(() => ctx.keys.updateProvider(realm.id, component.id, { name: input.name || component.name, providerId: input.providerId, config: input.config }));
      const updated = (await keyProviderComponents(ctx, realm)).find((c) => c.id === component.id) ?? component;
      await recordAdminEvent(ctx, request, realm, 'UPDATE', 'COMPONENT', `components/${component.id}`, componentRep(updated));
      return reply.code(204).send();
    }
    if (input.providerType === KEY_PROVIDER_TYPE) throw badRequest('component.providerType: a stored component does not become a key provider', 'providerType');
    const updated: Component = { ...component, ...input, providerType: input.providerType ?? component.providerType, parentId: input.parentId ?? component.parentId, config: unmaskConfig(input.config, component.config) };
    // Under itself or one of its own sub-components, it would hang from nothing (and its subtree would be a cycle).
    if ((await ctx.storage.federation.subtree(realm.id, component.id)).includes(updated.parentId.toLowerCase())) {
      throw badRequest('component.parentId: a component is not under itself or its own sub-components', 'parentId');
    }
    await checkParent(realm, updated.parentId);
    await ctx.storage.federation.updateComponent(updated);
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'COMPONENT', `components/${component.id}`, componentRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/components/:id', async (request: AdminRequest<IdParams>, reply) => {
    const realm = await targetRealm(ctx, request);
    const { component, key } = await find(realm, request.params.id);
    if (key) await ctx.keys.deleteProvider(realm.id, component.id);
    else await ctx.storage.federation.deleteComponent(realm.id, component.id);
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'COMPONENT', `components/${component.id}`);
    return reply.code(204).send();
  });

  // No component types can be added under any component here (Realmgate has no component providers).
  app.get('/realms/:realm/components/:id/sub-component-types', async (request: AdminRequest<IdParams>) => {
    const realm = await targetRealm(ctx, request);
    await find(realm, request.params.id);
    // Keycloak lists every provider of the asked type, whatever the parent is (the parent is only looked up): key
    // providers are the only component types with providers here (the serverinfo's componentTypes).
    const type = queryString(request.query, 'type');
    if (type !== KEY_PROVIDER_TYPE) return [];
    return KEY_PROVIDER_TYPES.map((t) => ({ id: t.id, helpText: t.helpText, properties: t.properties, metadata: {} }));
  });
}
