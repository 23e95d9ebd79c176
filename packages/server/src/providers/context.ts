import type { AccessTokenClaims, ClientInfo, ProviderContext, ProviderFactory } from '@realmgate/spi';
import type { ServiceContext } from '../services/context.js';
import { realmInfo } from '../events/index.js';
import { outboundGuards } from '../http/target-guard.js';
import { TokenVerificationError } from '../model/errors.js';
import type { Client, Realm } from '../model/types.js';
import { spiLogger } from '../observability/index.js';
import { userSnapshot } from '../services/index.js';
import { namespacedStore } from '../store/index.js';
import { OUTBOX_LATENESS, providerOutbox } from './outbox.js';

const clientInfo = (c: Client): ClientInfo => ({ id: c.id, clientId: c.clientId, enabled: c.enabled, attributes: { ...c.attributes } });

/**
 * What providerContext reads from the server's context: the services, and the access-token check it lends to
 * providers (the token service of protocol/, named here by the one method used, as it lives a layer above).
 */
export interface ProviderHostContext extends ServiceContext {
  tokens: { verify(realm: Realm, token: string, expectedType: 'Bearer', base: string | null): Promise<AccessTokenClaims> };
}

/** The narrow API a provider gets: read models, token verification, its own log, store namespace and config. */
export function providerContext(ctx: ProviderHostContext, factory: ProviderFactory, env: Readonly<Record<string, string | undefined>>): ProviderContext {
  const { storage } = ctx;
  // Realms and clients through the configuration cache, as the host's own hot paths read them: a provider's lookups
  // run on requests too (the webhook's, for every event), and each miss is a database round trip. Cached objects are
  // frozen; what a provider gets is copied from them (realmInfo, clientInfo).
  const realm = (name: string) => storage.realms.cachedByName(name);
  const mode = ctx.config.mode === 'production' ? 'production' : 'development';
  return {
    logger: spiLogger(ctx.logger, { provider: factory.id }),
    store: namespacedStore(ctx.store, `provider:${factory.id}`),
    metrics: ctx.metrics,
    config: { ...(ctx.config.providers[factory.id] ?? {}) },
    env,
    mode,
    outbound: outboundGuards(mode),
    realms: {
      get: async (name) => {
        const r = await realm(name);
        return r ? realmInfo(r) : null;
      },
    },
    users: {
      get: async (realmName, userId) => {
        const r = await realm(realmName);
        const user = r ? await storage.users.byId(r.id, userId) : null;
        return user ? userSnapshot(storage, user) : null;
      },
    },
    clients: {
      getByClientId: async (realmName, clientId) => {
        const r = await realm(realmName);
        const client = r ? await storage.clients.cachedByClientId(r.id, clientId) : null;
        return client ? clientInfo(client) : null;
      },
      list: async (realmName) => {
        const r = await realm(realmName);
        return r ? (await storage.clients.list(r.id)).map(clientInfo) : [];
      },
    },
    outbox: providerOutbox(storage, factory.id, ctx.metrics.histogram(OUTBOX_LATENESS.name, OUTBOX_LATENESS.help, OUTBOX_LATENESS.labels, OUTBOX_LATENESS.buckets)),
    tokens: {
      verifyAccessToken: async (realmName, token) => {
        const r = await realm(realmName);
        if (!r) return { valid: false, reason: 'unknown realm' };
        try {
          const claims = await ctx.tokens.verify(r, token, 'Bearer', ctx.config.hostname);
          return { valid: true, claims, serviceAccount: typeof claims.client_id === 'string' };
        } catch (error) {
          if (error instanceof TokenVerificationError) return { valid: false, reason: error.message };
          throw error;
        }
      },
    },
  };
}
