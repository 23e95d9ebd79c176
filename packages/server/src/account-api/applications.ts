import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { Client } from '../model/types.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { liveSessions } from './sessions.js';

/**
 * GET /account/applications: the clients the caller is signed in to (consents and offline access do not exist
 * here yet, so those are never set), in Keycloak's account ClientRepresentation.
 */
export function applicationsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/applications', async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-applications');
    const inUse = new Map<string, Client>();
    for (const { clients } of await liveSessions(ctx, caller)) for (const client of clients) inUse.set(client.id, client);
    return [...inUse.values()]
      .sort((a, b) => a.clientId.localeCompare(b.clientId))
      .map((client) => ({
        clientId: client.clientId,
        clientName: client.name ?? client.clientId,
        ...(client.description ? { description: client.description } : {}),
        userConsentRequired: false,
        inUse: true,
        offlineAccess: false,
        ...(client.rootUrl ? { rootUrl: client.rootUrl } : {}),
        ...(client.baseUrl ? { baseUrl: client.baseUrl } : {}),
        ...(client.baseUrl || client.rootUrl ? { effectiveUrl: `${client.baseUrl?.startsWith('/') || !client.baseUrl ? (client.rootUrl ?? '') : ''}${client.baseUrl ?? ''}` } : {}),
      }));
  });
}
