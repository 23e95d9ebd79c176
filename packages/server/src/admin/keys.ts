import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { Component, Realm } from '../model/types.js';
import { KEY_PROVIDER_TYPE } from '../representations/federation.js';
import { targetRealm, type AdminRequest } from './routing.js';

const KEY_PRIORITY = 100;

/**
 * The realm's signing keys as Keycloak's key-provider components: one `rsa-generated` component per key, its id the
 * key's kid (what `GET …/keys` answers as `providerId`, so the console's Keys list and Providers tab agree), active
 * or passive as the key is. They are read-only: the server generates and rotates its keys itself (README).
 */
export async function keyProviderComponents(ctx: ServerContext, realm: Realm): Promise<Component[]> {
  return (await ctx.keys.list(realm.id)).map((k) => ({
    id: k.kid,
    realmId: realm.id,
    parentId: realm.id,
    name: 'rsa-generated',
    providerId: 'rsa-generated',
    providerType: KEY_PROVIDER_TYPE,
    subType: null,
    config: { priority: [String(KEY_PRIORITY)], enabled: ['true'], active: [String(k.active)], algorithm: [k.algorithm], keySize: ['2048'] },
  }));
}

/** Keycloak's KeysMetadataRepresentation for the realm's signing keys (what `realms.getKeys` reads). */
export function keyRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/keys', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const keys = await ctx.keys.list(realm.id);
    const active = keys.find((k) => k.active);
    return {
      active: active ? { [active.algorithm]: active.kid } : {},
      keys: keys.map((k) => ({
        // The key-provider component that holds it (keyProviderComponents): the key's own kid.
        providerId: k.kid,
        providerPriority: KEY_PRIORITY,
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
