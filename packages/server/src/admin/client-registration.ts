import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { newId } from '../credentials/index.js';
import { baseUrl } from '../http/index.js';
import { registrationPolicyProviders } from '../model/client-registration.js';
import { notFound } from '../model/errors.js';
import { PROTOCOL_MAPPER_TYPE_IDS } from '../model/protocol-mapper-types.js';
import { INITIAL_ACCESS_TOKEN, issueRegistrationToken, REGISTRATION_ACCESS_TOKEN } from '../protocol/openid-connect/index.js';
import { parseRepresentation } from '../representations/fields.js';
import { clientRep } from '../representations/client.js';
import { clientScopeViews } from '../services/index.js';
import type { InitialAccess } from '../storage/index.js';
import { loadClient, mayHoldSecret, requireMayChangeAdministrationClient } from './clients.js';
import { forbidden } from '../model/errors.js';
import { callerOf, locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** Keycloak's ClientInitialAccessPresentation, without the token (shown once, in the POST's answer). */
const presentation = (m: InitialAccess) => ({ id: m.id, timestamp: m.timestamp, expiration: m.expiration, count: m.count, remainingCount: m.remainingCount });

/**
 * The admin side of dynamic client registration (Keycloak's ClientInitialAccessResource, the client's
 * registration-access-token action and the client registration policy providers): initial access tokens are made
 * here, their token answered once and stored only as a hash; policies themselves are components (admin/components.ts).
 */
export function clientRegistrationAdminRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/clients-initial-access', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    return (await ctx.storage.clientRegistration.initialAccesses(realm.id)).map(presentation);
  });

  app.post('/realms/:realm/clients-initial-access', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const input = parseRepresentation(request.body, { expiration: { type: 'integer', min: 0 }, count: { type: 'integer', min: 0 } }, ['webOrigins'], 'clientInitialAccess') as {
      expiration?: number;
      count?: number;
    };
    const timestamp = Math.floor(Date.now() / 1000);
    const expiration = input.expiration ?? 0;
    const id = newId();
    const issued = await issueRegistrationToken(ctx, realm, baseUrl(request, ctx.config.hostname), INITIAL_ACCESS_TOKEN, { expiresAt: expiration > 0 ? timestamp + expiration : undefined });
    const model: InitialAccess = { id, realmId: realm.id, tokenHash: issued.hash, timestamp, expiration, count: input.count ?? 1, remainingCount: input.count ?? 1 };
    await ctx.storage.clientRegistration.insertInitialAccess(model);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'CLIENT_INITIAL_ACCESS_MODEL', `clients-initial-access/${id}`, { expiration, count: model.count });
    reply.code(201).header('location', locationOf(ctx, request, id)).header('cache-control', 'no-store');
    return { ...presentation(model), token: issued.token };
  });

  app.delete('/realms/:realm/clients-initial-access/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const realm = await targetRealm(ctx, request);
    if (!(await ctx.storage.clientRegistration.deleteInitialAccess(realm.id, pathId(request.params.id, 'Initial access token')))) throw notFound('Initial access token not found');
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'CLIENT_INITIAL_ACCESS_MODEL', `clients-initial-access/${request.params.id}`);
    return reply.code(204).send();
  });

  // Keycloak's generate-registration-access-token: a new token for the client (authenticated), the previous one refused.
  app.post('/realms/:realm/clients/:id/registration-access-token', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, client } = await loadClient(ctx, request);
    const caller = callerOf(request);
    requireMayChangeAdministrationClient(caller, realm, client);
    // Its holder reads the client and its secret: only for a caller who may hold that secret.
    if (!(await mayHoldSecret(ctx, caller, client))) throw forbidden(`The secret of ${client.clientId} signs in as its service account, which holds administrative roles the caller does not hold`);
    const issued = await issueRegistrationToken(ctx, realm, baseUrl(request, ctx.config.hostname), REGISTRATION_ACCESS_TOKEN, { registrationAuth: 'authenticated' });
    await ctx.storage.clientRegistration.setRegistrationToken({ clientId: client.id, realmId: realm.id, tokenHash: issued.hash, registrationAuth: 'authenticated' });
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/registration-access-token`);
    reply.header('cache-control', 'no-store');
    return { ...clientRep(client, (await clientScopeViews(ctx.storage, realm.id, [client.id])).get(client.id)), registrationAccessToken: issued.token };
  });

  app.get('/realms/:realm/client-registration-policy/providers', async (request: AdminRequest) => {
    await targetRealm(ctx, request);
    return registrationPolicyProviders(PROTOCOL_MAPPER_TYPE_IDS);
  });
}
