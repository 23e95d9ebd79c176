import type { Counter, OutboundGuard } from '@realmgate/spi';
import type { ServerConfig } from '../config/index.js';
import type { EventBus } from '../events/index.js';
import type { Flows } from '../flows/flows.js';
import type { ClientKeys } from '../keys/client-keys.js';
import type { RealmKeys } from '../keys/index.js';
import type { Mailer } from '../mail/index.js';
import type { MetricsRegistry, ServerLogger } from '../observability/index.js';
import type { Storage } from '../storage/index.js';
import type { HostStore, OwnedSharedStore } from '../store/index.js';

/**
 * The part of the server's context (context.ts) built from the layers up to services/. Each layer above declares
 * the part it adds (authentication/, protocol/, pages/ each have a context.ts), so a module names the services it
 * is handed without importing a type from a layer above its own.
 */
export interface ServiceContext {
  config: ServerConfig;
  logger: ServerLogger;
  metrics: MetricsRegistry;
  storage: Storage;
  keys: RealmKeys;
  /** Clients' public keys for private_key_jwt, their JWKS URLs fetched through the outbound guard and cached. */
  clientKeys: ClientKeys;
  events: EventBus;
  store: OwnedSharedStore;
  flows: Flows;
  /** The server package version, shown in serverinfo. */
  version: string;
  /** The host's own namespace of the shared store (auth sessions, codes, used links). */
  hostStore: HostStore;
  mailer: Mailer;
  mailFailures: Counter;
  /** The guard of the server's own requests to identity providers and JWKS URLs (http/target-guard.ts, as webhooks'). */
  outbound: OutboundGuard;
}
