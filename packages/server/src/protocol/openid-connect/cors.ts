import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { allowCorsForClient, answerPreflight, baseUrl, originRefused } from '../../http/index.js';
import { InvalidOriginError } from '../../model/errors.js';
import type { Client } from '../../model/types.js';
import { realmOrError } from './realm-lookup.js';

/** The endpoints a browser app calls, and the methods each takes; `public`: a document any origin may read. */
const corsEndpoints: { path: string; methods: string[]; public?: boolean }[] = [
  { path: 'protocol/openid-connect/token', methods: ['POST'] },
  { path: 'protocol/openid-connect/token/introspect', methods: ['POST'] },
  { path: 'protocol/openid-connect/auth/device', methods: ['POST'] },
  { path: 'protocol/openid-connect/userinfo', methods: ['GET', 'POST'] },
  { path: 'protocol/openid-connect/revoke', methods: ['POST'] },
  { path: 'protocol/openid-connect/logout', methods: ['POST'] },
  { path: 'protocol/openid-connect/certs', methods: ['GET'], public: true },
  { path: '.well-known/openid-configuration', methods: ['GET'], public: true },
];

/** The request's origin is granted when this client's web origins allow it (http/cors.ts decides). */
export function corsForClient(ctx: ProtocolContext, request: FastifyRequest, client: Client): void {
  allowCorsForClient(request, client, baseUrl(request, ctx.config.hostname));
}

/**
 * As corsForClient, and a request from an origin the client's web origins do not allow is refused (403 "Invalid
 * origin"), as Keycloak 26.6.3 and later refuse it at the token, userinfo, revocation,
 * logout, PAR and device authorization endpoints (not at introspection: Keycloak's passes no Cors to its client check).
 */
export function checkAllowedOrigin(ctx: ProtocolContext, request: FastifyRequest, client: Client): void {
  const base = baseUrl(request, ctx.config.hostname);
  allowCorsForClient(request, client, base);
  if (originRefused(request, client, base)) throw new InvalidOriginError();
}

/** Preflight (`OPTIONS`) for every endpoint above. */
export function corsPreflightRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  for (const endpoint of corsEndpoints) {
    app.options<{ Params: { realm: string } }>(`/realms/:realm/${endpoint.path}`, async (request, reply) => {
      const realm = await realmOrError(ctx.storage, request.params.realm);
      return answerPreflight(request, reply, {
        methods: endpoint.methods,
        base: baseUrl(request, ctx.config.hostname),
        clients: endpoint.public ? undefined : () => ctx.storage.clients.list(realm.id),
      });
    });
  }
}
