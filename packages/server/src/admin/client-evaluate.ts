import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { uuidPattern } from '../representations/fields.js';
import { roleReps } from '../representations/role.js';
import { MissingAudience, normalizeScope } from '../protocol/openid-connect/index.js';
import { clientRoleScope } from '../services/index.js';
import { clientScopeSet } from '../services/client-scope-set.js';
import { queryString } from './query.js';
import { pathId, targetRealm, type AdminRequest } from './routing.js';

type Params = { realm: string; id: string };

/** The longest `scope` taken (the token endpoint's own limit on a scope parameter is larger than any real one). */
const SCOPE_LIMIT = 2048;

/**
 * Keycloak's Client scopes → Evaluate tab (ClientScopeEvaluateResource): for a client and a requested `scope`, the
 * protocol mappers and the roles its tokens would get, and example documents for a user — the access token, the ID
 * token and the userinfo answer as JSON claims, made by the token service's own plan and mappers (tokens.ts
 * exampleClaims), never signed. view-clients at the door; an example names a user, so it also needs view-users (route-permissions.ts).
 */
export function clientEvaluateRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const load = async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
    if (!client) throw notFound('Could not find client');
    // As the token endpoint keeps it; names the client does not have are ignored (Keycloak's getRequestedClientScopes).
    const scope = normalizeScope(queryString(request.query, 'scope', SCOPE_LIMIT), true);
    return { realm, client, scope, plan: await ctx.tokens.plan(client, scope) };
  };

  app.get('/realms/:realm/clients/:id/evaluate-scopes/protocol-mappers', async (request: AdminRequest<Params>) => {
    const { client, plan } = await load(request);
    const set = await clientScopeSet(ctx.storage, client);
    const applied = new Set(plan.scopeIds);
    const scopes = [...set.defaultScopes, ...set.optionalScopes].filter((s, i, all) => applied.has(s.id) && all.findIndex((o) => o.id === s.id) === i);
        return [
      ...set.clientMappers.map((m) => ({ m, containerId: client.id, containerName: '', containerType: 'client' })),
      ...scopes.flatMap((s) => s.protocolMappers.map((m) => ({ m, containerId: s.id, containerName: s.name, containerType: 'client-scope' }))),
    ]
      .filter(({ m }) => m.protocol === client.protocol)
      .map(({ m, containerId, containerName, containerType }) => ({ mapperId: m.id, mapperName: m.name, containerId, containerName, containerType, protocolMapper: m.protocolMapper }));
  });

  /** The roles of a container (the realm, by its name, or a client by its id) a token of the client may carry, and the others. */
  const scopeMappings = async (request: AdminRequest<Params & { container: string }>, granted: boolean) => {
    const { realm, client, plan } = await load(request);
    const { container } = request.params;
    const containerId = container === realm.name ? realm.id : uuidPattern.test(container) ? ((await ctx.storage.clients.byId(realm.id, container.toLowerCase()))?.id ?? null) : null;
    if (!containerId) throw notFound('Role Container not found');
    const roles = await ctx.storage.roles.list(containerId);
    const inScope = await clientRoleScope(ctx.storage, client, plan.scopeIds);
    const picked = roles.filter((r) => (inScope === null || inScope.has(r.id)) === granted);
    // Keycloak's brief representation: no attributes.
    return (await roleReps(ctx.storage, picked)).map(({ attributes: _, ...brief }) => brief);
  };
  app.get('/realms/:realm/clients/:id/evaluate-scopes/scope-mappings/:container/granted', (request: AdminRequest<Params & { container: string }>) => scopeMappings(request, true));
  app.get('/realms/:realm/clients/:id/evaluate-scopes/scope-mappings/:container/not-granted', (request: AdminRequest<Params & { container: string }>) => scopeMappings(request, false));

  const example = (kind: 'access' | 'id' | 'userinfo') => async (request: AdminRequest<Params>) => {
    const { realm, client, scope } = await load(request);
    // `audience` (the access token's): kept to that client id, which the client's token must have had, as token exchange's.
    const audience = kind === 'access' ? queryString(request.query, 'audience') || undefined : undefined;
    const userId = queryString(request.query, 'userId');
    if (!userId) throw notFound('No userId provided');
    const user = uuidPattern.test(userId) ? await ctx.storage.users.byId(realm.id, userId.toLowerCase()) : null;
    if (!user) throw notFound('No user found');
    // Keycloak makes a session for the example and removes it: an id that names no stored session stands for it.
    try {
      return await ctx.tokens.exampleClaims(kind, { base: baseUrl(request, ctx.config.hostname), realm, client, user, sessionId: newId(), scope, clientAddress: requestInfo(request).ipAddress, ...(audience ? { audience: [audience] } : {}) });
    } catch (error) {
      if (error instanceof MissingAudience) throw badRequest(error.message, 'audience');
      throw error;
    }
  };
  app.get('/realms/:realm/clients/:id/evaluate-scopes/generate-example-access-token', example('access'));
  app.get('/realms/:realm/clients/:id/evaluate-scopes/generate-example-id-token', example('id'));
  app.get('/realms/:realm/clients/:id/evaluate-scopes/generate-example-userinfo', example('userinfo'));
}
