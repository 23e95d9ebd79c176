import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newSecret } from '../credentials/index.js';
import { baseUrl } from '../http/index.js';
import { badRequest, conflict, forbidden, notFound } from '../model/errors.js';
import { CLIENT_LOGIN_THEME, THEME_NAME } from '../model/themes.js';
import { openRedirectPatterns, warnOpenRedirect } from '../model/redirect-uri.js';
import { ADMIN_CLI, REALM_MANAGEMENT, SECURITY_ADMIN_CONSOLE } from '../model/defaults.js';
import type { Client, ProtocolMapper, Realm } from '../model/types.js';
import { clientFrom, clientScopeViews, enforceClientPolicies, ensureServiceAccount, insertClient, registerWithPolicies, replaceClientMappers, serviceAccountNamed, syncServiceAccountScope } from '../services/index.js';
import { isUniqueViolation } from '../storage/index.js';
import type { AdminAuth } from './authenticate-admin.js';
import { isAdministrationClient, isRealmAdministrator, mayChangeAccount } from './permissions.js';
import { roleMappingRoutes } from './role-mappings.js';
import { containerRoleRoutes } from './roles.js';
import { queryBool, queryInt, queryString } from './query.js';
import type { ProtocolMapperInput } from '../representations/client-scope.js';
import { checkClientAttributes } from '../protocol/openid-connect/client-attributes.js';
import { clientEventRep, clientRep, parseClient, parseClientExtras } from '../representations/client.js';
import { userRep } from '../representations/user.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** The rules for client attributes (protocol/openid-connect/client-attributes.ts): 400 naming each problem, nothing written. */
const checkAttributes = checkClientAttributes;

/**
 * A client's flow overrides name top-level flows of its realm that can run: 400 naming the binding otherwise
 * (Keycloak answers an unknown flow id with an error too; a flow that cannot run is refused here as a realm binding is).
 */
async function checkFlowOverrides(ctx: ServerContext, realm: Realm, overrides: Record<string, string>, previous: Record<string, string>): Promise<void> {
  const problem = await ctx.flows.validateOverrides(realm, overrides, previous);
  if (problem) throw badRequest(problem, 'authenticationFlowBindingOverrides');
}

/**
 * Keycloak's client attribute `login_theme` names a login theme this server has (a built-in name, or the theme
 * directory's): else 400 naming it, as the realm's loginTheme is checked. The value already stored passes (a client
 * imported with a theme this server lacks keeps working through the console's whole-client PUT).
 */
function checkLoginTheme(ctx: ServerContext, attributes: Record<string, string>, previous?: Record<string, string>): void {
  const name = attributes[CLIENT_LOGIN_THEME];
  if (name === undefined || name === '' || name === previous?.[CLIENT_LOGIN_THEME]) return;
  if (!THEME_NAME.test(name)) throw badRequest(`client.attributes.${CLIENT_LOGIN_THEME}: a theme name: letters, digits, ".", "_" or "-"`, CLIENT_LOGIN_THEME);
  if (ctx.pages.themes.has('login', name)) return;
  const known = ctx.pages.themes.names('login');
  throw badRequest(`client.attributes.${CLIENT_LOGIN_THEME}: no login theme "${name}" (the server has the built-in theme${known.length ? ` and ${known.map((n) => `"${n}"`).join(', ')}` : ''})`, CLIENT_LOGIN_THEME);
}

/** The realm in the path and its client `:id`, or 404. */
export async function loadClient(ctx: ServerContext, request: AdminRequest<{ realm: string; id: string }>) {
  const realm = await targetRealm(ctx, request);
  const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
  if (!client) throw notFound('Could not find client');
  return { realm, client };
}

/**
 * The clients whose tokens are administrators' tokens, or whose roles make administrators: the admin console,
 * admin-cli, the account console, broker, a realm's realm-management and master's `{realm}-realm` clients.
 */
const SIGN_IN_ADMINISTRATORS = new Set([SECURITY_ADMIN_CONSOLE, ADMIN_CLI, 'account-console', 'broker', REALM_MANAGEMENT]);

/** Who changes a client through the admin API, for the client policies: a signed-in administrator, from this address. */
const ADMIN_CALLER = (request: AdminRequest) => ({ adminApi: true, updater: 'ByAuthenticatedUser' as const, remoteAddress: request.ip });

export function isAdministrationSignInClient(realm: Realm, client: Client): boolean {
  return SIGN_IN_ADMINISTRATORS.has(client.clientId) || isAdministrationClient(realm, client);
}

/**
 * Every change to where an administration client's tokens and codes go or what they carry — the client itself,
 * its secret, its protocol mappers, client scopes and scope mappings, its deletion — needs a realm administrator
 * (isRealmAdministrator): manage-clients alone could add an attacker's redirect URI to the admin console and
 * collect an administrator's code with one click (issue 33). Keycloak lets manage-clients do it; Realmgate is
 * stricter on purpose.
 */
export function requireMayChangeAdministrationClient(auth: AdminAuth, realm: Realm, client: Client): void {
  if (isAdministrationSignInClient(realm, client) && !isRealmAdministrator(auth, realm)) {
    throw forbidden(`${client.clientId} signs administrators in: only a realm administrator (realm-admin) may change it, its secret, protocol mappers, client scopes or scope mappings`);
  }
}

/** Client fields any manage-clients holder may change on an administration client: what people read, nothing a token depends on. */
const DISPLAY_FIELDS: ReadonlySet<keyof Client> = new Set(['name', 'description']);

/** JSON with object keys sorted, so that two equal values compare equal whatever order their keys came in. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));

/** A client's attributes without those a provider owns (`ownedClientAttributes`: a webhook's URL and key …). */
const signInAttributes = (client: Client, owned: ReadonlySet<string>) => Object.fromEntries(Object.entries(client.attributes).filter(([name]) => !owned.has(name)));

/**
 * The fields (and `protocolMappers`, when the PUT gives them) that a PUT changes beyond the display fields and the
 * attributes providers own.
 */
function changedBeyondDisplay(before: Client, after: Client, mappersBefore: ProtocolMapper[], mappersGiven: ProtocolMapperInput[] | undefined, owned: ReadonlySet<string>): string[] {
  const differs = (key: keyof Client) =>
    key === 'attributes' ? canonical(signInAttributes(before, owned)) !== canonical(signInAttributes(after, owned)) : canonical(before[key]) !== canonical(after[key]);
  const changed: string[] = (Object.keys(after) as (keyof Client)[]).filter((key) => !DISPLAY_FIELDS.has(key) && differs(key));
  const mapperKey = (m: ProtocolMapperInput) => canonical({ name: m.name, protocol: m.protocol, protocolMapper: m.protocolMapper, config: m.config });
  const sorted = (list: ProtocolMapperInput[]) => list.map(mapperKey).sort();
  if (mappersGiven && canonical(sorted(mappersGiven)) !== canonical(sorted(mappersBefore))) changed.push('protocolMappers');
  return changed;
}

/**
 * Whether the caller may hold `client`'s secret: whoever has it signs in as the client's service account (enabled
 * now, or again later by manage-clients), so it goes only to callers who could change that account — who hold every
 * administrative role it holds (mayChangeAccount). A view-clients reader cannot become realm administrator by
 * reading the secret of a client whose service account is one. Keycloak gives it to view-clients; Realmgate keeps
 * its promise that a limited administrator cannot take over a greater one.
 */
export async function mayHoldSecret(ctx: ServerContext, auth: AdminAuth, client: Client): Promise<boolean> {
  if (client.publicClient || client.secret === null) return true;
  const serviceAccount = await ctx.storage.users.serviceAccountOf(client.id);
  return !serviceAccount || mayChangeAccount(ctx, auth, serviceAccount.id);
}

async function requireMayHoldSecret(ctx: ServerContext, auth: AdminAuth, client: Client): Promise<void> {
  if (!(await mayHoldSecret(ctx, auth, client))) {
    throw forbidden(`The secret of ${client.clientId} signs in as its service account, which holds administrative roles the caller does not hold`);
  }
}

/** A client's representation for `auth`: without `secret` where the caller may not hold it. */
async function clientRepFor(ctx: ServerContext, auth: AdminAuth, client: Client, scopes: Parameters<typeof clientRep>[1]) {
  const rep = clientRep(client, scopes);
  if (await mayHoldSecret(ctx, auth, client)) return rep;
  const { secret: _secret, ...withoutSecret } = rep as typeof rep & { secret?: string };
  return withoutSecret;
}

export function clientRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/clients', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const clients = await ctx.storage.clients.list(realm.id, {
      clientId: queryString(request.query, 'clientId'),
      search: queryBool(request.query, 'search'),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', undefined),
    });
    const views = await clientScopeViews(ctx.storage, realm.id, clients.map((c) => c.id));
    return Promise.all(clients.map((c) => clientRepFor(ctx, callerOf(request), c, views.get(c.id))));
  });

  app.post('/realms/:realm/clients', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = await registerWithPolicies(ctx.storage, realm, parseClient(request.body), new URL(baseUrl(request, ctx.config.hostname)).origin, ADMIN_CALLER(request));
    const extras = parseClientExtras(request.body);
    await checkAttributes(ctx, input.attributes ?? {});
    checkLoginTheme(ctx, input.attributes ?? {});
    await checkFlowOverrides(ctx, realm, input.authenticationFlowBindingOverrides ?? {}, {});
    const client = await ctx.storage.transaction((trx) => insertClient(ctx.storage, realm, input, trx, 'client', extras));
    warnOpenRedirect(ctx.logger, realm.name, client, 'admin API');
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'CLIENT', `clients/${client.id}`, clientEventRep(client));
    return reply.code(201).header('location', locationOf(ctx, request, client.id)).send();
  });

  const load = (request: AdminRequest<{ realm: string; id: string }>) => loadClient(ctx, request);

  app.get('/realms/:realm/clients/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    const rep = await clientRepFor(ctx, callerOf(request), client, (await clientScopeViews(ctx.storage, realm.id, [client.id])).get(client.id));
    // Keycloak's registered cluster nodes (client-nodes.ts), when there are any.
    const nodes = await ctx.storage.clients.registeredNodes(client.id);
    return Object.keys(nodes).length ? { ...rep, registeredNodes: nodes } : rep;
  });

  app.put('/realms/:realm/clients/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, client } = await load(request);
    const body = request.body as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== null && body.id !== client.id) {
      throw badRequest('client.id: does not match the client in the path', 'id');
    }
    const given = parseClient(request.body);
    const updated = clientFrom(given, client);
    // Keycloak's client policies (UPDATE): auto-configured fields set here, a violation refused (400 invalid_client_metadata).
    await enforceClientPolicies(ctx.storage, realm, { event: 'UPDATE', client, proposed: updated, given, origin: new URL(baseUrl(request, ctx.config.hostname)).origin, ...ADMIN_CALLER(request) });
    // As Keycloak's update: the client scopes stay (they have their own resources); `protocolMappers`, when given,
    // become the client's mappers.
    const { protocolMappers } = parseClientExtras(request.body);
    await checkAttributes(ctx, updated.attributes);
    checkLoginTheme(ctx, updated.attributes, client.attributes);
    await checkFlowOverrides(ctx, realm, updated.authenticationFlowBindingOverrides, client.authenticationFlowBindingOverrides);
    if (updated.clientId !== client.clientId && isAdministrationClient(realm, client)) {
      throw badRequest(`client.clientId: ${client.clientId} holds the administration roles of a realm and keeps its name`, 'clientId');
    }
    const caller = callerOf(request);
    const mappersBefore = protocolMappers ? await ctx.storage.clientScopes.mappers(client.id) : [];
    if (changedBeyondDisplay(client, updated, mappersBefore, protocolMappers, ctx.providers.ownedClientAttributes()).length > 0) requireMayChangeAdministrationClient(caller, realm, client);
    // A secret the caller sets is one it knows.
    if (updated.secret !== client.secret) await requireMayHoldSecret(ctx, caller, client);
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
    // It would take its roles from every administrator of the realm; Keycloak refuses it to everyone too.
    if (isAdministrationClient(realm, client)) throw forbidden(`${client.clientId} holds the administration roles of a realm and cannot be deleted`);
    // Deleted, it could be made again under its name with other redirect URIs.
    requireMayChangeAdministrationClient(callerOf(request), realm, client);
    await ctx.storage.transaction(async (trx) => {
      await trx.deleteFrom('role').where('container_id', '=', client.id).execute();
      await ctx.storage.clients.delete(client.id, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'CLIENT', `clients/${client.id}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/clients/:id/client-secret', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { client } = await load(request);
    await requireMayHoldSecret(ctx, callerOf(request), client);
    return { type: 'secret', value: client.publicClient ? undefined : client.secret };
  });

  app.post('/realms/:realm/clients/:id/client-secret', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, client } = await load(request);
    requireMayChangeAdministrationClient(callerOf(request), realm, client);
    await requireMayHoldSecret(ctx, callerOf(request), client);
    if (client.publicClient) throw badRequest('A public client has no secret');
    const updated = { ...client, secret: newSecret() };
    await ctx.storage.clients.update(updated);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/client-secret`);
    return { type: 'secret', value: updated.secret };
  });

  // Keycloak's rotated secret (the secret-rotation client policy keeps the previous secret for a while). Realmgate runs
  // no secret rotation, so no client ever has one: GET is Keycloak's 404, DELETE (invalidate it) a 204 as Keycloak's.
  app.get('/realms/:realm/clients/:id/client-secret/rotated', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { client } = await load(request);
    await requireMayHoldSecret(ctx, callerOf(request), client);
    throw notFound('Client does not have a rotated secret');
  });

  app.delete('/realms/:realm/clients/:id/client-secret/rotated', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, client } = await load(request);
    requireMayChangeAdministrationClient(callerOf(request), realm, client);
    await requireMayHoldSecret(ctx, callerOf(request), client);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/client-secret/rotated`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/clients/:id/service-account-user', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { client } = await load(request);
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
      // What an administration client's tokens carry is changed only by a realm administrator.
      if (request.method !== 'GET') requireMayChangeAdministrationClient(callerOf(request), realm, client);
      return { realm, id: client.id, eventPath: `clients/${client.id}` };
    },
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
    async (_, request) => {
      const { realm, client } = await load(request as AdminRequest<{ realm: string; id: string }>);
      return { realm, containerId: client.id, clientRole: true, eventPath: `clients/${client.id}/roles` };
    },
  );
}
