import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newSecret } from '../credentials/index.js';
import { badRequest, conflict, forbidden, notFound } from '../model/errors.js';
import { openRedirectPatterns, warnOpenRedirect } from '../model/redirect-uri.js';
import type { Realm } from '../model/types.js';
import { clientFrom, clientScopeViews, ensureServiceAccount, insertClient, replaceClientMappers, serviceAccountNamed, syncServiceAccountScope } from '../services/index.js';
import { isUniqueViolation } from '../storage/index.js';
import { isAdministrationClient, requireRole } from './permissions.js';
import { roleMappingRoutes } from './role-mappings.js';
import { containerRoleRoutes } from './roles.js';
import { queryBool, queryInt, queryString } from './query.js';
import { clientEventRep, clientRep, parseClient, parseClientExtras } from './representations/client.js';
import { userRep } from './representations/user.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** The providers' rules for client attributes (a webhook URL, say): 400 naming each problem, nothing written. */
async function checkAttributes(ctx: ServerContext, attributes: Readonly<Record<string, string>>): Promise<void> {
  const problems = await ctx.providers.clientAttributeProblems(attributes);
  if (problems.length > 0) throw badRequest(`client.attributes: ${problems.join('; ')}`, 'attributes');
}

/**
 * A client's flow overrides name top-level flows of its realm that can run: 400 naming the binding otherwise
 * (Keycloak answers an unknown flow id with an error too; a flow that cannot run is refused here as a realm binding is).
 */
async function checkFlowOverrides(ctx: ServerContext, realm: Realm, overrides: Record<string, string>, previous: Record<string, string>): Promise<void> {
  const problem = await ctx.flows.validateOverrides(realm, overrides, previous);
  if (problem) throw badRequest(problem, 'authenticationFlowBindingOverrides');
}

/** The realm in the path and its client `:id`, or 404. */
export async function loadClient(ctx: ServerContext, request: AdminRequest<{ realm: string; id: string }>) {
  const realm = await targetRealm(ctx, request);
  const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
  if (!client) throw notFound('Could not find client');
  return { realm, client };
}

export function clientRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/clients', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'view-clients');
    const clients = await ctx.storage.clients.list(realm.id, {
      clientId: queryString(request.query, 'clientId'),
      search: queryBool(request.query, 'search'),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', undefined),
    });
    const views = await clientScopeViews(ctx.storage, realm.id, clients.map((c) => c.id));
    return clients.map((c) => clientRep(c, views.get(c.id)));
  });

  app.post('/realms/:realm/clients', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'manage-clients');
    const input = parseClient(request.body);
    const extras = parseClientExtras(request.body);
    await checkAttributes(ctx, input.attributes ?? {});
    await checkFlowOverrides(ctx, realm, input.authenticationFlowBindingOverrides ?? {}, {});
    const client = await ctx.storage.transaction((trx) => insertClient(ctx.storage, realm, input, trx, 'client', extras));
    warnOpenRedirect(ctx.logger, realm.name, client, 'admin API');
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'CLIENT', `clients/${client.id}`, clientEventRep(client));
    return reply.code(201).header('location', locationOf(ctx, request, client.id)).send();
  });

  const load = (request: AdminRequest<{ realm: string; id: string }>) => loadClient(ctx, request);

  app.get('/realms/:realm/clients/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'view-clients');
    return clientRep(client, (await clientScopeViews(ctx.storage, realm.id, [client.id])).get(client.id));
  });

  app.put('/realms/:realm/clients/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'manage-clients');
    const body = request.body as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== null && body.id !== client.id) {
      throw badRequest('client.id: does not match the client in the path', 'id');
    }
    const updated = clientFrom(parseClient(request.body), client);
    // As Keycloak's update: the client scopes stay (they have their own resources); `protocolMappers`, when given,
    // become the client's mappers.
    const { protocolMappers } = parseClientExtras(request.body);
    await checkAttributes(ctx, updated.attributes);
    await checkFlowOverrides(ctx, realm, updated.authenticationFlowBindingOverrides, client.authenticationFlowBindingOverrides);
    if (updated.clientId !== client.clientId && isAdministrationClient(realm, client)) {
      throw badRequest(`client.clientId: ${client.clientId} holds the administration roles of a realm and keeps its name`, 'clientId');
    }
    // Read before the transaction: SQLite's one connection is held by it.
    const serviceAccount = updated.clientId !== client.clientId ? await ctx.storage.users.serviceAccountOf(client.id) : null;
    await ctx.storage.transaction(async (trx) => {
      try {
        await ctx.storage.clients.update(updated, trx);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`Client ${updated.clientId} already exists`, 'clientId');
        throw error;
      }
      await serviceAccountNamed(updated.clientId, async () => {
        // Keycloak renames the service-account user with its client.
        if (serviceAccount) await ctx.storage.users.update({ ...serviceAccount, username: `service-account-${updated.clientId}`.toLowerCase() }, trx);
        if (updated.serviceAccountsEnabled) await ensureServiceAccount(ctx.storage, realm, updated, trx);
      });
      await syncServiceAccountScope(ctx.storage, updated, trx);
      if (protocolMappers) await replaceClientMappers(ctx.storage, updated, protocolMappers, trx);
    });
    // Warned when given, not at every save of a client that already had it.
    if (openRedirectPatterns(updated).some((p) => !openRedirectPatterns(client).includes(p))) warnOpenRedirect(ctx.logger, realm.name, updated, 'admin API');
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'CLIENT', `clients/${client.id}`, clientEventRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/clients/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'manage-clients');
    // It would take its roles from every administrator of the realm; Keycloak refuses it to everyone too.
    if (isAdministrationClient(realm, client)) throw forbidden(`${client.clientId} holds the administration roles of a realm and cannot be deleted`);
    await ctx.storage.transaction(async (trx) => {
      await trx.deleteFrom('role').where('container_id', '=', client.id).execute();
      await ctx.storage.clients.delete(client.id, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'CLIENT', `clients/${client.id}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/clients/:id/client-secret', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'view-clients');
    return { type: 'secret', value: client.publicClient ? undefined : client.secret };
  });

  app.post('/realms/:realm/clients/:id/client-secret', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'manage-clients');
    if (client.publicClient) throw badRequest('A public client has no secret');
    const updated = { ...client, secret: newSecret() };
    await ctx.storage.clients.update(updated);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/client-secret`);
    return { type: 'secret', value: updated.secret };
  });

  // A client's Keys tab (Keycloak's CertificateRepresentation of the `{attr}.certificate`, `{attr}.public.key` and
  // `{attr}.kid` attributes a realm file or an administrator gave it). Nothing here authenticates clients with
  // signed JWTs (private_key_jwt) or signs with a client's key, so making or uploading such keys is refused, not
  // stored without effect.
  const CERTIFICATE_ATTRIBUTES = { certificate: 'certificate', publicKey: 'public.key', kid: 'kid' } as const;
  app.get('/realms/:realm/clients/:id/certificates/:attr', async (request: AdminRequest<{ realm: string; id: string; attr: string }>) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'view-clients');
    // The attribute prefixes Keycloak's console asks about: a client's JWT credential, its SAML signing and encryption keys.
    const attr = request.params.attr;
    if (!['jwt.credential', 'saml.signing', 'saml.encryption'].includes(attr)) throw notFound(`No certificate attribute ${attr.slice(0, 64)}`);
    const info: Record<string, string> = {};
    for (const [field, suffix] of Object.entries(CERTIFICATE_ATTRIBUTES)) {
      const value = client.attributes[`${attr}.${suffix}`];
      if (value) info[field] = value;
    }
    return info;
  });
  app.post('/realms/:realm/clients/:id/certificates/:attr/:operation', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm } = await load(request);
    requireRole(callerOf(request), realm, 'manage-clients');
    throw badRequest('Client keys are not supported: Realmgate authenticates clients by secret only (no private_key_jwt), so a generated or uploaded key would have no use');
  });

  app.get('/realms/:realm/clients/:id/service-account-user', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    requireRole(callerOf(request), realm, 'view-clients');
    const user = client.serviceAccountsEnabled ? await ctx.storage.users.serviceAccountOf(client.id) : null;
    if (!user) throw badRequest('Service account not enabled for the client');
    return userRep(user);
  });

  roleMappingRoutes(app, ctx, {
    prefix: '/realms/:realm/clients/:id/scope-mappings',
    consoleType: 'clients',
    segment: 'scope-mappings',
    holder: async (request) => {
      const { realm, client } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, id: client.id, eventPath: `clients/${client.id}` };
    },
    view: 'view-clients',
    manage: 'manage-clients',
    resourceTypes: { realm: 'REALM_SCOPE_MAPPING', client: 'CLIENT_SCOPE_MAPPING' },
    // A scope only narrows what tokens carry, so no admin-role rule (as Keycloak); realm roles are the realm's.
    manageRealmRoles: 'manage-realm',
    mappedIds: (clientId) => ctx.storage.roles.scopeMappedRoleIds(clientId),
    add: (clientId, roleIds) => ctx.storage.roles.addScopeMappings(clientId, roleIds),
    remove: (clientId, roleIds) => ctx.storage.roles.removeScopeMappings(clientId, roleIds),
  });

  containerRoleRoutes(
    app,
    ctx,
    '/realms/:realm/clients/:id/roles',
    async (c, request) => {
      const { realm, client } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, containerId: client.id, clientRole: true, eventPath: `clients/${client.id}/roles` };
    },
    { view: 'view-clients', manage: 'manage-clients' },
  );
}
