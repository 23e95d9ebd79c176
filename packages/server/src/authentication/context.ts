import type { ProviderRegistry } from '../providers/registry.js';
import type { ServiceContext } from '../services/context.js';
import type { ActionTokens } from './action-tokens.js';
import type { AuthSessions } from './auth-session.js';
import type { LoginForms, LoginProtocol } from './ports.js';

/** The server's context as authentication/ reads it: the services, the extensions, and the two ports to the layer above. */
export interface AuthenticationContext extends ServiceContext {
  providers: ProviderRegistry;
  authSessions: AuthSessions;
  actionTokens: ActionTokens;
  /** The login pages, as `protocol/` shows them (implemented by `pages/`). */
  forms: LoginForms;
  /** How a finished browser login answers the client (implemented by `protocol/openid-connect`). */
  loginProtocol: LoginProtocol;
}
