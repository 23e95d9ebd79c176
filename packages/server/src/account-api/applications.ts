import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { notFound } from '../model/errors.js';
import type { Client } from '../model/types.js';
import { revokeClientGrants } from '../services/index.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { liveSessions } from './sessions.js';

/**
 * GET /account/applications: the clients the caller is signed in to (`inUse`) or holds an offline token of
 * (`offlineAccess`), in Keycloak's account ClientRepresentation. DELETE /account/applications/{clientId}/consent
 * (manage-account or manage-consent): revokes the caller's consent to the client and its offline tokens, as
 * Keycloak's (204 whether or not there was any; 404 for a client the realm does not have; REVOKE_GRANT).
 */
export function applicationsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/applications', async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-applications');
    const inUse = new Map<string, Client>();
    const offline = new Map<string, Client>();
    for (const { clients } of await liveSessions(ctx, caller)) for (const client of clients) inUse.set(client.id, client);
    for (const { clients } of await liveSessions(ctx, caller, true)) for (const client of clients) offline.set(client.id, client);
    return [...new Map([...offline, ...inUse]).values()]
      .sort((a, b) => a.clientId.localeCompare(b.clientId))
      .map((client) => ({
        clientId: client.clientId,
        clientName: client.name ?? client.clientId,
        ...(client.description ? { description: client.description } : {}),
        userConsentRequired: false,
        inUse: inUse.has(client.id),
        offlineAccess: offline.has(client.id),
        ...(client.rootUrl ? { rootUrl: client.rootUrl } : {}),
        ...(client.baseUrl ? { baseUrl: client.baseUrl } : {}),
        ...(client.baseUrl || client.rootUrl ? { effectiveUrl: `${client.baseUrl?.startsWith('/') || !client.baseUrl ? (client.rootUrl ?? '') : ''}${client.baseUrl ?? ''}` } : {}),
      }));
  });

  app.delete('/realms/:realm/account/applications/:clientId/consent', async (request: FastifyRequest<{ Params: { realm: string; clientId: string } }>, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'manage-consent');
    const client = await ctx.storage.clients.byClientId(caller.realm.id, request.params.clientId.slice(0, 255));
    if (!client) throw notFound(`No client with clientId: ${request.params.clientId.slice(0, 255)} found.`);
    await revokeClientGrants(ctx.storage, caller.realm.id, caller.user.id, client.id);
    await ctx.events.user(caller.realm, { type: 'REVOKE_GRANT', clientId: caller.clientId, userId: caller.user.id, sessionId: caller.sessionId, details: { revoked_client: client.clientId }, request: requestInfo(request) });
    return reply.code(204).send();
  });
}
