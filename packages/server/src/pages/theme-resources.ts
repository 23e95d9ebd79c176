import { extname } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PagesContext } from './context.js';
import type { ServedResource } from './render.js';
import { RESOURCE_TYPES } from './themes.js';

/** The realm a resource request names, or null (no such realm, or a name no realm can have). */
async function realmOf(ctx: PagesContext, request: FastifyRequest<{ Params: { realm: string } }>) {
  const name = request.params.realm;
  return name.length <= 255 && !name.includes('\0') ? ctx.storage.realms.cachedByName(name) : null;
}

/**
 * A theme file as served: revalidated on each use (`no-cache` with an entity tag, 304 when unchanged), so a realm
 * that changes its theme shows the new files on the next page load.
 */
export function sendResource(request: FastifyRequest, reply: FastifyReply, resource: ServedResource, type: string): FastifyReply {
  reply.header('cache-control', 'no-cache').header('etag', resource.etag).header('x-content-type-options', 'nosniff');
  if (request.headers['if-none-match'] === resource.etag) return reply.code(304).send();
  return reply.type(type).send(resource.body);
}

/**
 * The login pages' stylesheet and the realm's login theme's resources under the realm's resource path
 * (`/realms/{realm}/login-actions/resources/img/logo.png` is the theme's `resources/img/logo.png`). The path is
 * looked up in the index the theme directory was read into: never joined to a folder.
 */
export function themeResourceRoutes(app: FastifyInstance, ctx: PagesContext): void {
  app.get<{ Params: { realm: string } }>('/realms/:realm/login-actions/resources/style.css', async (request, reply) => {
    const realm = await realmOf(ctx, request);
    const stylesheet = ctx.pages.stylesheet(realm ?? { name: '', attributes: {} });
    return sendResource(request, reply, stylesheet, 'text/css; charset=utf-8');
  });

  // The built-in stylesheet whatever the realm's theme: a theme's style.css may start with
  // `@import url("builtin/style.css");` and change only what it needs.
  app.get('/realms/:realm/login-actions/resources/builtin/style.css', async (request, reply) =>
    sendResource(request, reply, ctx.pages.stylesheet({ name: '', attributes: {} }), 'text/css; charset=utf-8'),
  );

  // A client's login_theme (Keycloak's client attribute) has its own path, so its pages' stylesheet and images are its
  // theme's whatever the realm's theme is. The name is looked up among the directory's login themes, never joined to a folder.
  app.get<{ Params: { realm: string; theme: string; '*': string } }>('/realms/:realm/login-actions/resources/themes/:theme/*', async (request, reply) => {
    const path = request.params['*'];
    const name = request.params.theme;
    const known = path.length <= 1000 && ctx.pages.themes.has('login', name) && (await realmOf(ctx, request)) !== null;
    const theme = known ? ctx.pages.loginTheme(name) : undefined;
    // A built-in name (a client that keeps the built-in pages in a themed realm) has the built-in stylesheet only.
    const builtinStylesheet = () => sendResource(request, reply, ctx.pages.stylesheet({ name: '', attributes: {} }), 'text/css; charset=utf-8');
    if (known && path === 'style.css') return theme ? sendResource(request, reply, ctx.pages.themeStylesheet(theme), 'text/css; charset=utf-8') : builtinStylesheet();
    if (known && path === 'builtin/style.css') return builtinStylesheet();
    const resource = theme ? ctx.pages.themeResourceFile(theme, path) : null;
    if (!resource) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return sendResource(request, reply, resource, RESOURCE_TYPES[extname(resource.file).toLowerCase()]);
  });

  app.get<{ Params: { realm: string; '*': string } }>('/realms/:realm/login-actions/resources/*', async (request, reply) => {
    const path = request.params['*'];
    const realm = path.length <= 1000 ? await realmOf(ctx, request) : null;
    const resource = realm ? ctx.pages.resource(realm, path) : null;
    if (!resource) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return sendResource(request, reply, resource, RESOURCE_TYPES[extname(resource.file).toLowerCase()]);
  });
}
