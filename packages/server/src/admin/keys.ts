import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { requireRole } from './permissions.js';
import { callerOf, targetRealm, type AdminRequest } from './routing.js';

/** Keycloak's KeysMetadataRepresentation for the realm's signing keys (what `realms.getKeys` reads). */
export function keyRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/keys', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    requireRole(callerOf(request), realm, 'view-realm');
    const keys = await ctx.keys.list(realm.id);
    const active = keys.find((k) => k.active);
    return {
      active: active ? { [active.algorithm]: active.kid } : {},
      keys: keys.map((k) => ({
        providerId: 'rsa-generated',
        providerPriority: 100,
        kid: k.kid,
        status: k.active ? 'ACTIVE' : 'PASSIVE',
        type: 'RSA',
        algorithm: k.algorithm,
        use: 'SIG',
        publicKey: k.publicKey,
        certificate: k.certificate,
      })),
    };
  });
}
