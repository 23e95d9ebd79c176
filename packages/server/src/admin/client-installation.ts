import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { notFound } from '../model/errors.js';
import { mayHoldSecret } from './clients.js';
import { callerOf, pathId, targetRealm, type AdminRequest } from './routing.js';

/**
 * Keycloak's client "installation" download: `keycloak-oidc-keycloak-json` is the `keycloak.json` that
 * keycloak-connect and the other Keycloak adapters read (realm, server URL, client id, secret or public). The
 * other providers Keycloak offers (XML subsystems, SAML descriptors) are for Java and SAML adapters: 404.
 */
export function clientInstallationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/clients/:id/installation/providers/:provider', async (request: AdminRequest<{ realm: string; id: string; provider: string }>) => {
    const realm = await targetRealm(ctx, request);
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
    if (!client) throw notFound('Could not find client');
    if (request.params.provider !== 'keycloak-oidc-keycloak-json') throw notFound('Unknown Provider');
    // Without the secret where the caller may not hold it (clients.ts, mayHoldSecret): the rest still configures an adapter.
    const secretShown = await mayHoldSecret(ctx, callerOf(request), client);
    const hasClientRoles = (await ctx.storage.roles.list(client.id, { max: 1 })).length > 0;
    return {
      realm: realm.name,
      'auth-server-url': `${baseUrl(request, ctx.config.hostname)}/`,
      'ssl-required': realm.sslRequired,
      resource: client.clientId,
      ...(client.publicClient ? { 'public-client': true } : {}),
      ...(client.bearerOnly ? { 'bearer-only': true } : {}),
      ...(!client.publicClient && client.secret !== null && secretShown ? { credentials: { secret: client.secret } } : {}),
      ...(hasClientRoles ? { 'use-resource-role-mappings': true } : {}),
      'confidential-port': 0,
    };
  });
}
