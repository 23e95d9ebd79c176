import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { rawPath, sendAsset, serveUi } from '../http/ui-bundle.js';
import { SECURITY_ADMIN_CONSOLE } from '../model/defaults.js';
import { notFound } from '../model/errors.js';
import { authenticateAdmin } from './authenticate-admin.js';
import { hasRole, heldManagementRoles } from './permissions.js';
import { queryString } from './query.js';
import { localeOf } from './routing.js';

/**
 * Keycloak's admin console (the npm package @keycloak/keycloak-admin-ui, built by packages/admin-console into its
 * dist/ folder, never committed): the page at /admin/{realm}/console/ with the environment the console reads
 * injected as JSON, its hashed assets under /resources/admin-console/ (precompressed, cached for a year), the
 * messages it loads, and `whoami`. None of these routes sits in the /admin API plugin: the page and its assets are
 * public, `whoami` authenticates its bearer token itself.
 */

/** Vite's `base` in packages/admin-console/build.ts. */
export const CONSOLE_RESOURCES = '/resources/admin-console';
const DIST = fileURLToPath(new URL('../../../admin-console/dist/', import.meta.url));

/** The environment Keycloak injects into its console page, for `realm` (the realm whose administrators sign in). */
export function consoleEnvironment(serverBaseUrl: string, realm: string, version: string): Record<string, unknown> {
  return {
    serverBaseUrl,
    adminBaseUrl: serverBaseUrl,
    authUrl: serverBaseUrl,
    authServerUrl: serverBaseUrl,
    realm,
    clientId: SECURITY_ADMIN_CONSOLE,
    resourceUrl: CONSOLE_RESOURCES,
    logo: '/logo.svg',
    logoUrl: '',
    consoleBaseUrl: `/admin/${encodeURIComponent(realm)}/console/`,
    masterRealm: 'master',
    resourceVersion: version,
    darkMode: false,
  };
}

export function adminConsoleRoutes(app: FastifyInstance, ctx: ServerContext, dir = DIST): void {
  const ui = serveUi(app, { dir, resources: CONSOLE_RESOURCES, label: 'admin console', buildCommand: 'npm run build:console' });

  app.get('/admin', async (_request, reply) => reply.redirect('/admin/master/console/'));

  app.get<{ Params: { realm: string } }>('/admin/:realm/console', async (request, reply) => {
    const { realm: name } = request.params;
    const realm = name.length <= 255 ? await ctx.storage.realms.cachedByName(name) : null;
    if (!realm) throw notFound('Realm not found.');
    if (!rawPath(request).endsWith('/')) return reply.redirect(`/admin/${encodeURIComponent(realm.name)}/console/`);
    return ui.sendPage(reply, (bundle) => consoleEnvironment(baseUrl(request, ctx.config.hostname), realm.name, bundle.version));
  });

  // Browsers ask every page's origin for /favicon.ico (the login pages name none): the console's icon.
  app.get('/favicon.ico', async (request, reply) => {
    const icon = ui.current()?.assets.get('favicon.svg');
    if (!icon) throw notFound('Resource not found');
    return sendAsset(request, reply, icon, 'public, max-age=86400');
  });

  app.get<{ Params: { realm: string }; Querystring: Record<string, unknown> }>('/admin/:realm/console/whoami', async (request, reply) => {
    const auth = await authenticateAdmin(ctx, request);
    const currentName = queryString(request.query, 'currentRealm') ?? auth.realm.name;
    if (auth.realm.name !== request.params.realm) throw notFound('Realm not found.');
    reply.header('cache-control', 'no-store');
    const user = await ctx.storage.users.byId(auth.realm.id, auth.userId);
    if (!user) throw notFound('User not found');
    const displayName = [user.firstName, user.lastName].filter(Boolean).join(' ') || user.username;
    const current = await ctx.storage.realms.cachedByName(currentName);
    const access: Record<string, string[]> = {};
    if (current) {
      const roles = heldManagementRoles(auth, current);
      // This console version gates its Organizations pages on organization roles realm-management does not have
      // here: organizations are read with view-realm and changed with manage-realm (route-permissions.ts), so the
      // console is told the organization roles those imply.
      if (roles.includes('view-realm')) roles.push('query-organizations', 'view-organizations');
      if (roles.includes('manage-realm')) roles.push('manage-organizations');
      if (roles.length) access[current.name] = roles;
    }
    return {
      userId: user.id,
      realm: auth.realm.name,
      displayName,
      // The console formats numbers and dates with it: never empty.
      locale: user.attributes.locale?.[0] || 'en',
      createRealm: hasRole(auth, null, 'create-realm'),
      realm_access: access,
      temporary: false,
    };
  });

  /**
   * The console's messages as Keycloak's endpoint answers them ([{ key, value }], sorted by key): those the build
   * took from Keycloak's theme artifact (packages/admin-console/build.ts), for the locale or its language; an empty
   * list for a locale without messages, so the console falls back to English, or to its message keys.
   */
  app.get<{ Params: { realm: string; locale: string } }>('/resources/:realm/admin/:locale', async (request, reply) => {
    const realm = request.params.realm.length <= 255 ? await ctx.storage.realms.cachedByName(request.params.realm) : null;
    if (!realm) throw notFound('Realm not found.');
    return ui.sendMessages(request, reply, localeOf(request.params.locale));
  });
}
