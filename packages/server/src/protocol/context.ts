import type { AuthenticationContext } from '../authentication/context.js';
import type { PageSender } from '../authentication/ports.js';
import type { BackchannelLogout } from './openid-connect/logout-notifications.js';
import type { TokenService } from './openid-connect/tokens.js';

/** The server's context as protocol/ reads it: what authentication/ reads, the token service, and pages by name only. */
export interface ProtocolContext extends AuthenticationContext {
  tokens: TokenService;
  /** Back-channel logout notifications: written to the outbox at logout, sent by this node's worker with retries. */
  logoutNotifications: BackchannelLogout;
  /** The protocol's own pages (logout confirmation, device code), rendered by `pages/`. */
  pages: PageSender;
}
