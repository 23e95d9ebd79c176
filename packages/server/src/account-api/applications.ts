import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { Client } from '../model/types.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { liveSessions } from './sessions.js';

/**
 * GET /account/applications: the clients the caller is signed in to (`inUse`) or holds an offline token of
 * (`offlineAccess`), in Keycloak's account ClientRepresentation. Consents do not exist here yet.
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
}
