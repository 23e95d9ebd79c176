import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { answerPreflight, baseUrl } from '../http/index.js';
import { notFound } from '../model/errors.js';
import { applicationsRoute } from './applications.js';
import { accountConsoleRoutes } from './console.js';
import { credentialsRoute } from './credentials.js';
import { groupsRoute } from './groups.js';
import { linkedAccountsRoute } from './linked-accounts.js';
import { installRepresentationConstraint } from './negotiation.js';
import { organizationsRoute } from './organizations.js';
import { profileRoute } from './profile.js';
import { sessionsRoutes } from './sessions.js';
import { signOutRoutes } from './sign-out.js';
import { supportedLocalesRoute } from './supported-locales.js';
import { updateProfileRoute } from './update-profile.js';

/**
 * Keycloak's account REST API at /realms/{realm}/account for `application/json` (Keycloak's account console, which
 * calls it, has the same path for browsers): a bearer token of the realm, checked against the `account` client's roles.
 */
export function accountApi(app: FastifyInstance, ctx: ServerContext): void {
  installRepresentationConstraint(app);
  profileRoute(app, ctx);
  updateProfileRoute(app, ctx);
  credentialsRoute(app, ctx);
  sessionsRoutes(app, ctx);
  signOutRoutes(app, ctx);
  applicationsRoute(app, ctx);
  groupsRoute(app, ctx);
  linkedAccountsRoute(app, ctx);
  supportedLocalesRoute(app, ctx);
  organizationsRoute(app, ctx);
  accountConsoleRoutes(app, ctx);
  // A browser app sends the bearer token in a header, so it asks first; any client of the realm may allow the origin.
  for (const path of ['/realms/:realm/account', '/realms/:realm/account/*']) {
    app.options<{ Params: { realm: string } }>(path, async (request, reply) => {
      const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
      if (!realm || !realm.enabled) throw notFound('Realm not found');
      return answerPreflight(request, reply, { methods: ['GET', 'POST', 'DELETE'], base: baseUrl(request, ctx.config.hostname), clients: () => ctx.storage.clients.list(realm.id) });
    });
  }
}
