import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { sessionAlive, sessionExpiresAt } from '../model/sessions.js';
import type { Client, UserSession } from '../model/types.js';
import { accountCallerWith, type AccountCaller, type AccountRequest } from './caller.js';

const seconds = (ms: number) => Math.floor(ms / 1000);

/** The caller's live sessions (SSO ones, or with `offline` the offline ones), each with the clients it signed in to. */
export async function liveSessions(ctx: ServerContext, caller: AccountCaller, offline = false): Promise<{ session: UserSession; clients: Client[] }[]> {
  const sessions = (await ctx.storage.sessions.forUser(caller.realm.id, caller.user.id, offline)).filter((s) => sessionAlive(caller.realm, s));
  const clientSessions = await ctx.storage.sessions.clientSessionsOf(sessions.map((s) => s.id));
  const clients = new Map<string, Client | null>();
  for (const cs of clientSessions) if (!clients.has(cs.clientId)) clients.set(cs.clientId, await ctx.storage.clients.byId(caller.realm.id, cs.clientId));
  return sessions.map((session) => ({
    session,
    clients: clientSessions.filter((cs) => cs.sessionId === session.id).flatMap((cs) => clients.get(cs.clientId) ?? []),
  }));
}

/**
 * Keycloak's account SessionRepresentation. This server does not record the browser's user agent, so browser,
 * system and device are Keycloak's words for an unknown one.
 */
function sessionRepresentation(caller: AccountCaller, session: UserSession, clients: Client[]) {
  const { realm } = caller;
  return {
    id: session.id,
    ipAddress: session.ipAddress ?? '',
    started: seconds(session.started),
    lastAccess: seconds(session.lastRefresh),
    expires: seconds(sessionExpiresAt(realm, session)),
    browser: 'Other/Unknown',
    current: session.id === caller.sessionId,
    // Keycloak's account ClientRepresentation: a client without a name has no clientName.
    clients: clients.map((c) => ({ clientId: c.clientId, ...(c.name ? { clientName: c.name } : {}), userConsentRequired: c.consentRequired, inUse: true, offlineAccess: session.offline })),
  };
}

/** GET /account/sessions and /account/sessions/devices: the caller's SSO sessions; every session is its own device here. */
export function sessionsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/sessions', async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    return (await liveSessions(ctx, caller)).map(({ session, clients }) => sessionRepresentation(caller, session, clients));
  });
  app.get('/realms/:realm/account/sessions/devices', async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    return (await liveSessions(ctx, caller)).map(({ session, clients }) => {
      const rep = sessionRepresentation(caller, session, clients);
      return { id: session.id, ipAddress: rep.ipAddress, os: 'Other', osVersion: 'Unknown', browser: rep.browser, device: 'Other', lastAccess: rep.lastAccess, current: rep.current, mobile: false, sessions: [rep] };
    });
  });
}
