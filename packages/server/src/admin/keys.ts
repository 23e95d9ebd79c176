import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import type { StoredKey } from '../keys/index.js';
import type { Component, Realm } from '../model/types.js';
import { KEY_PROVIDER_TYPE } from '../representations/federation.js';
import { targetRealm, type AdminRequest } from './routing.js';

/**
 * The realm's keys as Keycloak's key-provider components: one per key, its config the provider's entries (priority,
 * enabled, active, algorithm, size or curve) and, for an `rsa` provider, its certificate; never key material (a
 * private key or secret entry is answered masked, as Keycloak masks it).
 */
export function keyProviderComponent(realm: Realm, k: StoredKey): Component {
  const config: Record<string, string[]> = {
    priority: [String(k.priority)],
    enabled: [String(k.enabled)],
    active: [String(k.active)],
    ...Object.fromEntries(Object.entries(k.settings).map(([entry, value]) => [entry, [value]])),
  };
  // A java-keystore provider's passwords are not kept: answered masked, as Keycloak masks them.
  if (k.providerId === 'java-keystore') Object.assign(config, { keystorePassword: ['**********'], keyPassword: ['**********'] });
  if (k.providerId === 'rsa') {
    config.privateKey = ['**********'];
    if (k.certificate) config.certificate = [k.certificate];
  }
  return { id: k.componentId, realmId: realm.id, parentId: realm.id, name: k.name, providerId: k.providerId, providerType: KEY_PROVIDER_TYPE, subType: null, config };
}

export async function keyProviderComponents(ctx: ServerContext, realm: Realm): Promise<Component[]> {
  return (await ctx.keys.list(realm.id)).map((k) => keyProviderComponent(realm, k));
}

/** Keycloak's KeysMetadataRepresentation (what `realms.getKeys` and the console's Keys list read). */
export function keyRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/keys', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const keys = await ctx.keys.list(realm.id);
    // Per algorithm, the kid of the key that signs (or encrypts) with it: the first enabled active one (list's order).
    const active: Record<string, string> = {};
    for (const k of keys) if (k.enabled && k.active && active[k.algorithm] === undefined) active[k.algorithm] = k.kid;
    return {
      active,
      keys: keys.map((k) => ({
        providerId: k.componentId,
        providerPriority: k.priority,
        kid: k.kid,
        status: !k.enabled ? 'DISABLED' : k.active ? 'ACTIVE' : 'PASSIVE',
        type: k.type,
        algorithm: k.algorithm,
        use: k.use.toUpperCase(),
        ...(k.publicKey ? { publicKey: k.publicKey } : {}),
        ...(k.certificate ? { certificate: k.certificate } : {}),
      })),
    };
  });
}
