import type { FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { ServerContext } from '../context.js';
import { isTargetRefusal, outboundRequest } from '../http/index.js';
import { notFound } from '../model/errors.js';
import { sessionAlive } from '../model/sessions.js';
import type { Client, Realm } from '../model/types.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/**
 * Keycloak's revocation policy (the console's Sessions → Revocation and the realm's "Sign out all active sessions"):
 * a realm's and a client's `notBefore`, which token validation honours (protocol/openid-connect/tokens.ts), and the
 * admin actions that tell applications at their admin URL (`k_logout`, `k_push_not_before`, as keycloak-connect's
 * admin middleware takes them: a JWS of the realm's key, sent as text). Each send goes through the server's one
 * outbound guard and is answered in Keycloak's GlobalRequestResult: the admin URLs that answered 2xx, and the others.
 */

/** Keycloak's GlobalRequestResult: a list appears only when it has an entry. */
export interface GlobalRequestResult {
  successRequests?: string[];
  failedRequests?: string[];
}

/** How long an admin action's token is good for (Keycloak's: 30 s). */
const ACTION_LIFETIME_SECONDS = 30;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The client's admin URL, relative ones resolved against its root URL (Keycloak's ResolveRelative); null: none. */
export function managementUrl(client: Client): string | null {
  if (!client.adminUrl) return null;
  try {
    return new URL(client.adminUrl, client.rootUrl ?? undefined).toString();
  } catch {
    return null;
  }
}

const ACTION_PATHS = { LOGOUT: 'k_logout', PUSH_NOT_BEFORE: 'k_push_not_before', TEST_AVAILABLE: 'k_test_available' } as const;

/**
 * Sends an admin action to the client's admin URL (or `url`, a node's): its URL lands in `result`'s successes or
 * failures. TEST_AVAILABLE is Keycloak's cluster-node check (carries no notBefore).
 */
export async function sendAdminAction(ctx: ServerContext, realm: Realm, client: Client, action: keyof typeof ACTION_PATHS, notBefore: number, result: GlobalRequestResult, url = managementUrl(client)): Promise<void> {
  if (!url) return;
  const target = `${url.replace(/\/+$/, '')}/${ACTION_PATHS[action]}`;
  const payload = {
    id: randomUUID(),
    expiration: nowSeconds() + ACTION_LIFETIME_SECONDS,
    resource: client.clientId,
    action,
    ...(action !== 'TEST_AVAILABLE' ? { notBefore } : {}),
    ...(action === 'LOGOUT' ? { adapterSessionIds: null, keycloakSessionIds: null } : {}),
  };
  let ok = false;
  try {
    const token = await ctx.tokens.signDocument(realm.id, payload, realm.defaultSignatureAlgorithm ?? 'RS256', 'JWT');
    const response = await outboundRequest(ctx.outbound, target, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: token });
    ok = response.status === 200 || response.status === 204;
  } catch (error) {
    // Refused by the guard or unreachable: a failed request, said in the answer; the reason in the log (no token).
    ctx.logger.warn({ client: client.clientId, url, reason: isTargetRefusal(error) ? 'refused by outboundAllow' : (error as Error).message }, `admin action ${action} not delivered`);
  }
  (ok ? (result.successRequests ??= []) : (result.failedRequests ??= [])).push(url);
}

export function revocationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  // Keycloak's "Sign out all active sessions": every online session of the realm ends, tokens issued before now are
  // refused, and each enabled client with an admin URL is told.
  app.post('/realms/:realm/logout-all', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const notBefore = nowSeconds();
    await ctx.storage.transaction(async (trx) => {
      await ctx.storage.realms.update({ ...realm, notBefore }, trx);
      await ctx.storage.sessions.deleteOnlineForRealm(realm.id, trx);
    });
    const result: GlobalRequestResult = {};
    for (const client of await ctx.storage.clients.list(realm.id)) {
      if (client.enabled) await sendAdminAction(ctx, realm, client, 'LOGOUT', notBefore, result);
    }
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'REALM', 'logout-all', result);
    return result;
  });

  // The realm's notBefore (set in its representation) pushed to every client with an admin URL.
  app.post('/realms/:realm/push-revocation', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const result: GlobalRequestResult = {};
    for (const client of await ctx.storage.clients.list(realm.id)) await sendAdminAction(ctx, realm, client, 'PUSH_NOT_BEFORE', realm.notBefore, result);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'REALM', 'push-revocation', result);
    return result;
  });

  app.post('/realms/:realm/clients/:id/push-revocation', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const realm = await targetRealm(ctx, request);
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
    if (!client) throw notFound('Could not find client');
    const result: GlobalRequestResult = {};
    await sendAdminAction(ctx, realm, client, 'PUSH_NOT_BEFORE', client.notBefore, result);
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLIENT', `clients/${client.id}/push-revocation`, result);
    return result;
  });

  // Keycloak's cache clears (Realm settings → Action): the configuration cache (storage/config-cache.ts) dropped on
  // every node, through the same invalidation a database write sends: all of it for the realm cache (realms, clients,
  // roles, groups, flows, scopes), the users' tables for the user cache, the signing keys for the keys cache.
  const clearRoutes: [path: string, tables: string[]][] = [
    ['clear-realm-cache', ['*']],
    ['clear-user-cache', ['user_entity', 'credential', 'user_required_action']],
    ['clear-keys-cache', ['realm_key']],
  ];
  // Keycloak's CRL cache holds the revocation lists its X.509 checks fetched; this server's mutual-TLS client
  // authentication (protocol/openid-connect/mtls.ts) fetches none, so there is nothing to drop: the clear is answered
  // and recorded as Keycloak's.
  clearRoutes.push(['clear-crl-cache', []]);
  for (const [path, tables] of clearRoutes) {
    app.post(`/realms/:realm/${path}`, async (request: AdminRequest, reply) => {
      const realm = await targetRealm(ctx, request);
      if (tables.length) ctx.storage.cache.tablesWritten(tables);
      await recordAdminEvent(ctx, request, realm, 'ACTION', 'REALM', path);
      return reply.code(204).send();
    });
  }

  // The console's Sessions page header (Keycloak's client-session-stats): each client with sessions, its counts as strings.
  app.get('/realms/:realm/client-session-stats', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const stats: { id: string; clientId: string; active: string; offline: string }[] = [];
    for (const client of await ctx.storage.clients.list(realm.id)) {
      const count = async (offline: boolean) => (await ctx.storage.sessions.forClient(client.id, offline)).filter((s) => sessionAlive(realm, s)).length;
      const [active, offline] = [await count(false), await count(true)];
      if (active + offline > 0) stats.push({ id: client.id, clientId: client.clientId, active: String(active), offline: String(offline) });
    }
    return stats;
  });
}
