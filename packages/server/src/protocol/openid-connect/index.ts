import { brokerTokenRoutes } from './broker-token.js';
import type { FastifyInstance } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { authorizationRoutes } from './auth.js';
import { corsPreflightRoutes } from './cors.js';
import { deviceRoutes } from './device.js';
import { discoveryRoutes } from './discovery.js';
import { parRoutes } from './par.js';
import { clientRegistrationRoutes } from './registration.js';
import { frameRoutes } from './frames.js';
import { introspectRoutes } from './introspect.js';
import { logoutRoutes } from './logout.js';
import { revokeRoutes } from './revoke.js';
import { tokenRoutes } from './token/index.js';
import { userinfoRoutes } from './userinfo.js';

export { MissingAudience, TokenService, issuerOf, type IssuedTokens } from './tokens.js';
export { bearerToken, requireBearer } from './bearer.js';
export { normalizeScope } from './mappers/index.js';
export { openIdConnectLoginProtocol } from './authorization-response.js';
export { BackchannelLogout } from './logout-notifications.js';
export { INITIAL_ACCESS_TOKEN, REGISTRATION_ACCESS_TOKEN, issueRegistrationToken } from './registration-tokens.js';

export function openIdConnectRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  corsPreflightRoutes(app, ctx);
  discoveryRoutes(app, ctx);
  authorizationRoutes(app, ctx);
  tokenRoutes(app, ctx);
  deviceRoutes(app, ctx);
  parRoutes(app, ctx);
  clientRegistrationRoutes(app, ctx);
  userinfoRoutes(app, ctx);
  brokerTokenRoutes(app, ctx);
  introspectRoutes(app, ctx);
  revokeRoutes(app, ctx);
  logoutRoutes(app, ctx);
  frameRoutes(app, ctx);
}
