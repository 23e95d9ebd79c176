import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { issuerOf } from '../protocol/openid-connect/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { sessionAlive } from '../model/sessions.js';
import type { Realm, UserSession } from '../model/types.js';
import { queryBool, queryInt, queryString } from './query.js';
import { uuidPattern } from '../representations/fields.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';
import { revokeClientGrants } from '../services/index.js';

type Params = { realm: string; id: string; client: string };

/**
 * Sessions at Keycloak's admin paths: a user's SSO sessions and signing the user out of all of them
 * (`POST …/users/{id}/logout`, offline sessions too, as Keycloak's not-before for the user ends those), a client's
 * sessions and their count, and the same for offline sessions (`offline_access`): a user's for one client, a
 * client's and their count, a user's consents (kept from realm files) with the clients holding its offline tokens,
 * revoking both for a client (`DELETE …/users/{id}/consents/{clientId}`), and ending one session by id
 * (`DELETE …/sessions/{id}`, `?isOffline=true` for an offline one).
 */
export function sessionRoutes(app: FastifyInstance, ctx: ServerContext): void {
  /** Keycloak's UserSessionRepresentation; `clients` maps client UUIDs to clientIds. */
  const sessionRep = async (realm: Realm, session: UserSession) => {
    const user = await ctx.storage.users.byId(realm.id, session.userId);
    const clients: Record<string, string> = {};
    for (const cs of await ctx.storage.sessions.clientSessionsOf([session.id])) {
      const client = await ctx.storage.clients.byId(realm.id, cs.clientId);
      if (client) clients[client.id] = client.clientId;
    }
    return {
      id: session.id,
      username: user?.username ?? null,
      userId: session.userId,
      ipAddress: session.ipAddress,
      start: session.started,
      lastAccess: session.lastRefresh,
      rememberMe: false,
      clients,
      transientUser: false,
    };
  };
  const live = (realm: Realm, sessions: UserSession[]) => sessions.filter((s) => sessionAlive(realm, s));

  app.get('/realms/:realm/users/:id/offline-sessions/:client', async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.client, 'Client'));
    if (!client) throw notFound('Client not found');
    const sessions = live(realm, await ctx.storage.sessions.forUser(realm.id, user.id, true));
    const ofClient = [];
    for (const session of sessions) {
      const rep = await sessionRep(realm, session);
      if (client.id in rep.clients) ofClient.push(rep);
    }
    return ofClient;
  });

  const clientOf = async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
    if (!client) throw notFound('Could not find client');
    return { realm, client };
  };

  const page = (request: AdminRequest<Params>) => {
    const first = queryInt(request.query, 'first', 0) ?? 0;
    return { first, max: queryInt(request.query, 'max', 100) ?? 100 };
  };
  for (const [path, offline] of [['user-sessions', false], ['offline-sessions', true]] as const) {
    app.get(`/realms/:realm/clients/:id/${path}`, async (request: AdminRequest<Params>) => {
      const { realm, client } = await clientOf(request);
      const { first, max } = page(request);
      const sessions = live(realm, await ctx.storage.sessions.forClient(client.id, offline)).slice(first, first + max);
      return Promise.all(sessions.map((s) => sessionRep(realm, s)));
    });
  }
  for (const [path, offline] of [['session-count', false], ['offline-session-count', true]] as const) {
    app.get(`/realms/:realm/clients/:id/${path}`, async (request: AdminRequest<Params>) => {
      const { realm, client } = await clientOf(request);
      return { count: live(realm, await ctx.storage.sessions.forClient(client.id, offline)).length };
    });
  }

  const userOf = async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    return { realm, user };
  };

  const sessionType = (request: AdminRequest<Params>) => {
    const type = queryString(request.query, 'type') ?? 'ALL';
    if (!['ALL', 'REGULAR', 'OFFLINE'].includes(type)) throw badRequest('Query parameter "type" must be ALL, REGULAR or OFFLINE', 'type');
    return type;
  };

  // The admin console's session list: the realm's sessions (`type` ALL, REGULAR or OFFLINE), by username.
  app.get('/realms/:realm/ui-ext/sessions', async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const type = sessionType(request);
    const { first, max } = page(request);
    const sessions = await ctx.storage.sessions.forRealm(realm.id, { offline: type === 'ALL' ? undefined : type === 'OFFLINE', username: queryString(request.query, 'search') || undefined, first, max });
    return Promise.all(live(realm, sessions).map(async (s) => ({ ...(await sessionRep(realm, s)), type: s.offline ? 'OFFLINE' : 'REGULAR' })));
  });

  // The admin console's sessions tab of a client: its SSO and offline sessions (`type`), by username.
  app.get('/realms/:realm/ui-ext/sessions/client', async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const type = sessionType(request);
    const clientId = queryString(request.query, 'clientId');
    if (!clientId || !uuidPattern.test(clientId)) throw badRequest('Query parameter "clientId" must be the id of a client', 'clientId');
    const client = await ctx.storage.clients.byId(realm.id, clientId.toLowerCase());
    if (!client) throw notFound('Could not find client');
    const search = queryString(request.query, 'search')?.toLowerCase() ?? '';
    const { first, max } = page(request);
    const kinds = type === 'ALL' ? [false, true] : [type === 'OFFLINE'];
    const sessions = (await Promise.all(kinds.map(async (offline) => live(realm, await ctx.storage.sessions.forClient(client.id, offline))))).flat();
    const reps = await Promise.all(sessions.map(async (s) => ({ ...(await sessionRep(realm, s)), type: s.offline ? 'OFFLINE' : 'REGULAR' })));
    return reps.filter((rep) => (rep.username ?? '').includes(search)).slice(first, first + max);
  });

  app.get('/realms/:realm/users/:id/sessions', async (request: AdminRequest<Params>) => {
    const { realm, user } = await userOf(request);
    return Promise.all(live(realm, await ctx.storage.sessions.forUser(realm.id, user.id)).map((s) => sessionRep(realm, s)));
  });

  app.post('/realms/:realm/users/:id/logout', async (request: AdminRequest<Params>, reply) => {
    const { realm, user } = await userOf(request);
    // As Keycloak's: each SSO session's clients with a back-channel URL are told (offline sessions end silently).
    const issuer = issuerOf(baseUrl(request, ctx.config.hostname), realm.name);
    await ctx.logoutNotifications.endSessions(realm, live(realm, await ctx.storage.sessions.forUser(realm.id, user.id)), issuer, (trx) => ctx.storage.sessions.deleteForUser(user.id, trx));
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/logout`);
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/sessions/:id', async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    const offline = queryBool(request.query, 'isOffline') ?? false;
    const session = await ctx.storage.sessions.byId(pathId(request.params.id, 'Session'));
    if (!session || session.realmId !== realm.id || (session.offline ?? false) !== offline) throw notFound('Session not found');
    const end = (trx?: Parameters<typeof ctx.storage.sessions.delete>[1]) => ctx.storage.sessions.delete(session.id, trx);
    if (offline) await end();
    else await ctx.logoutNotifications.endSessions(realm, [session], issuerOf(baseUrl(request, ctx.config.hostname), realm.name), end);
    if (!offline) {
      await ctx.events.user(realm, { type: 'LOGOUT', clientId: null, userId: session.userId, sessionId: session.id, request: requestInfo(request) });
    }
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'USER_SESSION', `sessions/${session.id}`);
    return reply.code(204).send();
  });

  // A user's Consents tab, as Keycloak's: the consents a realm file or the consent screen brought, and
  // the clients holding an offline token of the user (Keycloak's other kind of grant), one entry per client.
  app.get('/realms/:realm/users/:id/consents', async (request: AdminRequest<Params>) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    const offline = (await ctx.storage.sessions.forUser(realm.id, user.id, true)).filter((s) => sessionAlive(realm, s));
    const offlineClients = new Set((await ctx.storage.sessions.clientSessionsOf(offline.map((s) => s.id))).map((cs) => cs.clientId));
    const stored = new Map(((await ctx.storage.consents.ofUsers([user.id])).get(user.id) ?? []).map((c) => [c.clientId, c]));
    const consents = [];
    for (const id of new Set([...stored.keys(), ...offlineClients])) {
      const client = await ctx.storage.clients.byId(realm.id, id);
      if (!client) continue;
      const consent = stored.get(id);
      consents.push({
        clientId: client.clientId,
        grantedClientScopes: consent?.grantedClientScopes ?? [],
        createdDate: consent?.createdDate ?? null,
        lastUpdatedDate: consent?.lastUpdatedDate ?? null,
        additionalGrants: offlineClients.has(id) ? [{ client: client.id, key: 'Offline Token' }] : [],
      });
    }
    return consents.sort((a, b) => a.clientId.localeCompare(b.clientId));
  });

  app.delete('/realms/:realm/users/:id/consents/:client', async (request: AdminRequest<Params>, reply) => {
    const realm = await targetRealm(ctx, request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.id, 'User'));
    if (!user) throw notFound('User not found');
    const client = await ctx.storage.clients.byClientId(realm.id, request.params.client.slice(0, 255));
    if (!client) throw notFound('Client not found');
    // As Keycloak's: the consent and the client's offline tokens go together; 404 only when there was neither.
    if (!(await revokeClientGrants(ctx.storage, realm.id, user.id, client.id))) throw notFound('Consent nor offline token not found');
    await ctx.events.user(realm, { type: 'REVOKE_GRANT', clientId: client.clientId, userId: user.id, details: { revoked_client: client.clientId }, request: requestInfo(request) });
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'USER', `users/${user.id}/consents/${client.clientId}`);
    return reply.code(204).send();
  });
}
