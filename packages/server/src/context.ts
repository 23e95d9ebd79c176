import type { ServerConfig } from './config/index.js';
import type { EventBus } from './events/index.js';
import type { Flows } from './flows/flows.js';
import type { RealmKeys } from './keys/index.js';
import type { ClientKeys } from './keys/client-keys.js';
import type { MetricsRegistry, ServerLogger } from './observability/index.js';
import type { TokenService } from './protocol/openid-connect/tokens.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { Storage } from './storage/index.js';
import type { Counter } from '@realmgate/spi';
import type { Mailer } from './mail/index.js';
import type { ActionTokens } from './authentication/action-tokens.js';
import type { AuthSessions } from './authentication/auth-session.js';
import type { LoginForms, LoginProtocol } from './authentication/ports.js';
import type { PageRenderer } from './pages/render.js';
import type { HostStore, OwnedSharedStore } from './store/index.js';
import type { OutboundGuard } from '@realmgate/spi';
import type { BackchannelLogout } from './protocol/openid-connect/logout-notifications.js';

/** The services the composition root builds once and hands to every route module. */
export interface ServerContext {
  config: ServerConfig;
  logger: ServerLogger;
  metrics: MetricsRegistry;
  storage: Storage;
  keys: RealmKeys;
  /** Clients' public keys for private_key_jwt, their JWKS URLs fetched through the outbound guard and cached. */
  clientKeys: ClientKeys;
  tokens: TokenService;
  events: EventBus;
  store: OwnedSharedStore;
  providers: ProviderRegistry;
  flows: Flows;
  /** The server package version, shown in serverinfo. */
  version: string;
  /** The host's own namespace of the shared store (auth sessions, codes, used links). */
  hostStore: HostStore;
  authSessions: AuthSessions;
  actionTokens: ActionTokens;
  pages: PageRenderer;
  /** The login pages, as `protocol/` shows them (implemented by `pages/`). */
  forms: LoginForms;
  /** How a finished browser login answers the client (implemented by `protocol/openid-connect`). */
  loginProtocol: LoginProtocol;
  mailer: Mailer;
  mailFailures: Counter;
  /** The guard of the server's own requests to identity providers and JWKS URLs (http/target-guard.ts, as webhooks'). */
  outbound: OutboundGuard;
  /** Back-channel logout notifications: written to the outbox at logout, sent by this node's worker with retries. */
  logoutNotifications: BackchannelLogout;
}
