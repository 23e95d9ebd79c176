import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
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
const ENVIRONMENT_SLOT = '<!--realmgate:environment-->';
const IMMUTABLE = 'public, max-age=31536000, immutable';

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
  '.json': 'application/json; charset=utf-8',
};

/**
 * What the console's page may do: its own scripts and styles only (the environment is JSON, not a script), calls
 * and frames to this server (keycloak-js's token calls and its session-status frame), no framing by other sites.
 * PatternFly and the console set `style` attributes, hence 'unsafe-inline' for styles only.
 */
const CONSOLE_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

interface Asset {
  body: Buffer;
  br: Buffer | null;
  gzip: Buffer | null;
  type: string;
  /** For a response that is revalidated (not a hashed name): a weak validator (one for every encoding of `body`). */
  etag?: string;
}

interface ConsoleBuild {
  page: string;
  /** By path below dist/ ("assets/index-abc.js", "logo.svg"). */
  assets: Map<string, Asset>;
  /** A hash of the build: Keycloak's resourceVersion. */
  version: string;
  /** By locale: Keycloak's message list as JSON, compressed once (about 400 kB, fetched on every console load). */
  messages: Map<string, Asset>;
}

function filesBelow(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesBelow(path, `${prefix}${name}/`) : [`${prefix}${name}`];
  });
}

/** Reads dist/ once into memory (a few MB); null while it is not built, so a build made later is picked up. */
function loadBuild(dir: string): ConsoleBuild | null {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) return null;
  const assets = new Map<string, Asset>();
  for (const name of filesBelow(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const twin = (suffix: string) => (existsSync(join(dir, name + suffix)) ? readFileSync(join(dir, name + suffix)) : null);
    assets.set(name, { body: readFileSync(join(dir, name)), br: twin('.br'), gzip: twin('.gz'), type });
  }
  const messages = new Map<string, Asset>();
  const messageDir = join(dir, 'messages');
  for (const name of existsSync(messageDir) ? readdirSync(messageDir) : []) {
    if (!name.endsWith('.json')) continue;
    const texts = JSON.parse(readFileSync(join(messageDir, name), 'utf8')) as Record<string, string>;
    messages.set(name.slice(0, -5), jsonAsset(Object.keys(texts).sort().map((key) => ({ key, value: texts[key] }))));
  }
  const stamp = join(dir, '.build-stamp');
  return { page: readFileSync(index, 'utf8'), assets, version: existsSync(stamp) ? readFileSync(stamp, 'utf8').slice(0, 12) : 'dev', messages };
}

/** JSON safe inside a script element: no `</script>`, no `<!--`, no line separators JavaScript would choke on. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

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

/** A JSON document served like a built asset: compressed once, with a validator for `no-cache` revalidation. */
function jsonAsset(value: unknown): Asset {
  const body = Buffer.from(JSON.stringify(value));
  return { body, br: brotliCompressSync(body), gzip: gzipSync(body), type: 'application/json', etag: `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

const EMPTY_MESSAGES = jsonAsset([]);

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string): FastifyReply {
  const accepted = String(request.headers['accept-encoding'] ?? '');
  reply.header('content-type', asset.type).header('cache-control', cacheControl).header('x-content-type-options', 'nosniff');
  if (asset.br || asset.gzip) reply.header('vary', 'accept-encoding');
  if (asset.etag) {
    reply.header('etag', asset.etag);
    const bare = (tag: string) => tag.trim().replace(/^W\//, '');
    if (String(request.headers['if-none-match'] ?? '').split(',').map(bare).includes(bare(asset.etag))) return reply.code(304).send();
  }
  if (asset.br && /\bbr\b/.test(accepted)) return reply.header('content-encoding', 'br').send(asset.br);
  if (asset.gzip && /\bgzip\b/.test(accepted)) return reply.header('content-encoding', 'gzip').send(asset.gzip);
  return reply.send(asset.body);
}

/** The path of the request without its query, as the browser sent it (the router ignores a trailing slash). */
const rawPath = (request: FastifyRequest) => request.url.split('?')[0];

export function adminConsoleRoutes(app: FastifyInstance, ctx: ServerContext, dir = DIST): void {
  let build: ConsoleBuild | null = null;
  const current = (): ConsoleBuild | null => (build ??= loadBuild(dir));

  const notBuilt = (reply: FastifyReply) =>
    reply
      .code(503)
      .header('cache-control', 'no-store')
      .type('text/plain; charset=utf-8')
      .send('The admin console is not built: run `npm run build:console` (npm start and npm test build it when needed).\n');

  app.get('/admin', async (_request, reply) => reply.redirect('/admin/master/console/'));

  app.get<{ Params: { realm: string } }>('/admin/:realm/console', async (request, reply) => {
    const { realm: name } = request.params;
    const realm = name.length <= 255 ? await ctx.storage.realms.cachedByName(name) : null;
    if (!realm) throw notFound('Realm not found.');
    if (!rawPath(request).endsWith('/')) return reply.redirect(`/admin/${encodeURIComponent(realm.name)}/console/`);
    const loaded = current();
    if (!loaded) return notBuilt(reply);
    const environment = consoleEnvironment(baseUrl(request, ctx.config.hostname), realm.name, loaded.version);
    const page = loaded.page.replace(ENVIRONMENT_SLOT, () => `<script id="environment" type="application/json">${scriptJson(environment)}</script>`);
    return reply
      .headers({
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'content-security-policy': CONSOLE_POLICY,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      })
      .send(page);
  });

  app.get<{ Params: { '*': string } }>(`${CONSOLE_RESOURCES}/*`, async (request, reply) => {
    const loaded = current();
    if (!loaded) return notBuilt(reply);
    const name = request.params['*'];
    const asset = loaded.assets.get(name);
    if (!asset) throw notFound('Resource not found');
    // Vite puts a content hash in every name under assets/; the few files beside them keep their names.
    return sendAsset(request, reply, asset, name.startsWith('assets/') ? IMMUTABLE : 'public, max-age=3600');
  });

  // Browsers ask every page's origin for /favicon.ico (the login pages name none): the console's icon.
  app.get('/favicon.ico', async (request, reply) => {
    const icon = current()?.assets.get('favicon.svg');
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
    const locale = localeOf(request.params.locale);
    const messages = current()?.messages;
    return sendAsset(request, reply, messages?.get(locale) ?? messages?.get(locale.split(/[-_]/)[0]) ?? EMPTY_MESSAGES, 'no-cache');
  });
}
