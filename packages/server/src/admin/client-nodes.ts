import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, notFound } from '../model/errors.js';
import { managementUrl, sendAdminAction, type GlobalRequestResult } from './revocation.js';
import { pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/**
 * Keycloak's registered cluster nodes of a client (Clients → Advanced → Registered cluster nodes): the hosts of an
 * application's nodes, each with when it registered, and the check that tells each node's admin URL
 * (`${application.session.host}` in the client's admin or root URL replaced by the node) `k_test_available`, answered
 * as a GlobalRequestResult. The hosts are kept as data otherwise: this server sends its logout and not-before actions
 * to the admin URL as configured (revocation.ts), not per node.
 */

/** A node is a host (name, IPv4, bracketed IPv6, with a port): it is put into a URL. */
const NODE = /^[A-Za-z0-9._:[\]%-]{1,255}$/;
const HOST_PLACEHOLDER = '${application.session.host}';

type ClientParams = { realm: string; id: string };

export function clientNodeRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const load = async (request: AdminRequest<ClientParams>) => {
    const realm = await targetRealm(ctx, request);
    const client = await ctx.storage.clients.byId(realm.id, pathId(request.params.id, 'Client'));
    if (!client) throw notFound('Could not find client');
    return { realm, client };
  };

  app.post('/realms/:realm/clients/:id/nodes', async (request: AdminRequest<ClientParams>, reply) => {
    const { realm, client } = await load(request);
    const body = request.body as { node?: unknown } | null;
    const node = body && typeof body === 'object' && !Array.isArray(body) ? body.node : undefined;
    // Keycloak refuses a body without a node (400) but stores an empty one, which then breaks its availability check.
    if (typeof node !== 'string' || !NODE.test(node)) throw badRequest('node: a host name or address (letters, digits, . : - _ [ ] %; at most 255) is required', 'node');
    await ctx.storage.transaction(async (trx) => {
      const nodes = await ctx.storage.clients.registeredNodes(client.id, trx);
      await ctx.storage.clients.setRegisteredNodes(client.id, { ...nodes, [node]: Math.floor(Date.now() / 1000) }, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLUSTER_NODE', `clients/${client.id}/nodes`, { node });
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/clients/:id/nodes/:node', async (request: AdminRequest<ClientParams & { node: string }>, reply) => {
    const { realm, client } = await load(request);
    const node = request.params.node;
    const removed = await ctx.storage.transaction(async (trx) => {
      const nodes = await ctx.storage.clients.registeredNodes(client.id, trx);
      if (!Object.hasOwn(nodes, node)) return false;
      const { [node]: _, ...rest } = nodes;
      await ctx.storage.clients.setRegisteredNodes(client.id, rest, trx);
      return true;
    });
    if (!removed) throw notFound('Client does not have node');
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLUSTER_NODE', `clients/${client.id}/nodes/${node}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/clients/:id/test-nodes-available', async (request: AdminRequest<ClientParams>) => {
    const { realm, client } = await load(request);
    const result: GlobalRequestResult = {};
    const on = (url: string | null, node: string) => url?.split(HOST_PLACEHOLDER).join(node) ?? null;
    for (const node of Object.keys(await ctx.storage.clients.registeredNodes(client.id))) {
      // The placeholder is replaced before the URL is read (it is no valid host itself).
      const url = managementUrl({ ...client, adminUrl: on(client.adminUrl, node), rootUrl: on(client.rootUrl, node) });
      await sendAdminAction(ctx, realm, client, 'TEST_AVAILABLE', 0, result, url);
    }
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'CLUSTER_NODE', `clients/${client.id}/test-nodes-available`, result);
    return result;
  });
}
