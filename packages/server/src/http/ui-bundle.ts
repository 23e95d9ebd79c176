import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../model/errors.js';

/**
 * One of Keycloak's consoles as a Vite build on disk (packages/admin-console/dist, packages/account-console/dist;
 * scripts/ui-build.ts makes them): read once into memory, its page sent with the environment the console reads
 * injected as JSON under a strict Content-Security-Policy, its hashed assets answered precompressed and cached for a
 * year, its English messages as Keycloak's message list. The admin console (admin/console.ts) and the account
 * console (account-api/console.ts) are both served through this.
 */

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
 * What a console's page may do: its own scripts and styles only (the environment is JSON, not a script), calls
 * and frames to this server (keycloak-js's token calls and its session-status frame), no framing by other sites.
 * PatternFly and the consoles set `style` attributes, hence 'unsafe-inline' for styles only.
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

export interface Asset {
  body: Buffer;
  br: Buffer | null;
  gzip: Buffer | null;
  type: string;
  /** For a response that is revalidated (not a hashed name): a weak validator (one for every encoding of `body`). */
  etag?: string;
}

export interface UiBundle {
  page: string;
  /** By path below dist/ ("assets/index-abc.js", "logo.svg"). */
  assets: Map<string, Asset>;
  /** A hash of the build: Keycloak's resourceVersion. */
  version: string;
  /** By locale: Keycloak's message list as JSON, compressed once (fetched on every console load). */
  messages: Map<string, Asset>;
}

function filesBelow(dir: string, prefix = ''): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesBelow(path, `${prefix}${name}/`) : [`${prefix}${name}`];
  });
}

/** Reads dist/ once into memory (a few MB); null while it is not built, so a build made later is picked up. */
function loadBundle(dir: string): UiBundle | null {
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

/**
 * Brotli's quality for the JSON made at run time, the build's for its assets (scripts/ui-build.ts): Node's default,
 * 11, took 0.57 s of CPU for the admin console's English messages (405 KB) at each server's first console load,
 * quality 9 takes 0.05 s for a body 10% larger (80 KB instead of 73 KB, answered 304 while unchanged).
 */
const BROTLI_QUALITY = 9;

/** A JSON document served like a built asset: compressed once, with a validator for `no-cache` revalidation. */
export function jsonAsset(value: unknown): Asset {
  const body = Buffer.from(JSON.stringify(value));
  const br = brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } });
  return { body, br, gzip: gzipSync(body), type: 'application/json', etag: `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

const EMPTY_MESSAGES = jsonAsset([]);

export function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string): FastifyReply {
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
export const rawPath = (request: FastifyRequest) => request.url.split('?')[0];

/** A console build served by this server: its assets route, and what its page and messages routes send. */
export interface ServedUi {
  /** The build, read on first use; null while dist/ is not built. */
  current(): UiBundle | null;
  /**
   * The console's page with `environment` injected (no-cache, the console's CSP), or 503 while it is not built;
   * `head` is what a theme changes in it (its style sheets go after the console's own, so they win).
   */
  sendPage(reply: FastifyReply, environment: (bundle: UiBundle) => Record<string, unknown>, head?: PageHead): FastifyReply;
  /**
   * Keycloak's message list for `locale` (or its language; an empty list for a locale without messages); `theme`,
   * a theme's own texts for the locale, replaces the console's of the same keys: its `name` must tell those texts
   * apart (theme and the locale they are of), the merged list being made once per name and build locale.
   */
  /** `over`: texts over the build's (a theme's, named for the cache; unnamed ones, such as a realm's overrides, are merged each time). */
  sendMessages(request: FastifyRequest, reply: FastifyReply, locale: string, over?: { name?: string; texts: Record<string, string> }): FastifyReply;
}

/** What a theme changes in a console's page head: its title, icon and description; style sheets and module scripts put last. */
export interface PageHead {
  title?: string;
  icon?: { href: string; type: string };
  description?: string;
  styles?: string[];
  scripts?: string[];
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page with a theme's head: title and icon replaced, a description and the markup added before </head>. */
function themedPage(page: string, head: PageHead): string {
  let themed = page;
  if (head.title !== undefined) themed = themed.replace(/<title>[^<]*<\/title>/, () => `<title>${escapeHtml(head.title!)}</title>`);
  if (head.icon) themed = themed.replace(/<link rel="icon"[^>]*>/, () => `<link rel="icon" type="${escapeHtml(head.icon!.type)}" href="${escapeHtml(head.icon!.href)}" />`);
  const extra = [
    ...(head.description !== undefined ? [`<meta name="description" content="${escapeHtml(head.description)}" />`] : []),
    ...(head.styles ?? []).map((href) => `<link rel="stylesheet" href="${escapeHtml(href)}" />`),
    ...(head.scripts ?? []).map((src) => `<script type="module" src="${escapeHtml(src)}"></script>`),
  ].join('');
  return extra ? themed.replace('</head>', () => `${extra}</head>`) : themed;
}

/**
 * Serves a console's built folder: GET {resources}/* answers its assets (the hashed ones under assets/ immutable,
 * the few beside them for an hour); `label` names it in the 503 a server without the build answers.
 */
export function serveUi(app: FastifyInstance, options: { dir: string; resources: string; label: string; buildCommand: string }): ServedUi {
  let bundle: UiBundle | null = null;
  const current = (): UiBundle | null => (bundle ??= loadBundle(options.dir));
  /** Message lists with a theme's texts over the console's, by theme and locale. */
  const themed = new Map<string, Asset>();
  const notBuilt = (reply: FastifyReply) =>
    reply
      .code(503)
      .header('cache-control', 'no-store')
      .type('text/plain; charset=utf-8')
      .send(`The ${options.label} is not built: run \`${options.buildCommand}\` (npm start and npm test build it when needed).\n`);

  app.get<{ Params: { '*': string } }>(`${options.resources}/*`, async (request, reply) => {
    const loaded = current();
    if (!loaded) return notBuilt(reply);
    const name = request.params['*'];
    const asset = loaded.assets.get(name);
    if (!asset) throw notFound('Resource not found');
    // Vite puts a content hash in every name under assets/; the few files beside them keep their names.
    return sendAsset(request, reply, asset, name.startsWith('assets/') ? IMMUTABLE : 'public, max-age=3600');
  });

  return {
    current,
    sendPage(reply, environment, head) {
      const loaded = current();
      if (!loaded) return notBuilt(reply);
      const page = (head ? themedPage(loaded.page, head) : loaded.page).replace(ENVIRONMENT_SLOT, () => `<script id="environment" type="application/json">${scriptJson(environment(loaded))}</script>`);
      return reply
        .headers({
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-cache',
          'content-security-policy': CONSOLE_POLICY,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        })
        .send(page);
    },
    sendMessages(request, reply, locale, over) {
      const messages = current()?.messages;
      const ownLocale = messages?.has(locale) ? locale : messages?.has(locale.split(/[-_]/)[0]) ? locale.split(/[-_]/)[0] : '';
      const own = messages?.get(ownLocale) ?? EMPTY_MESSAGES;
      if (!over) return sendAsset(request, reply, own, 'no-cache');
      // Kept by the theme's texts (named by the caller after the theme and the locale of its texts) and the build's
      // locale they go over: both sets are read once, so the map stays small whatever locales requests name.
      const cacheKey = over.name === undefined ? undefined : `${over.name}\0${ownLocale}`;
      let merged = cacheKey === undefined ? undefined : themed.get(cacheKey);
      if (!merged) {
        const texts: Record<string, string> = Object.create(null) as Record<string, string>;
        for (const { key, value } of JSON.parse(own.body.toString('utf8')) as { key: string; value: string }[]) texts[key] = value;
        Object.assign(texts, over.texts);
        merged = jsonAsset(Object.keys(texts).sort().map((key) => ({ key, value: texts[key] })));
        if (messages && cacheKey !== undefined) themed.set(cacheKey, merged);
      }
      return sendAsset(request, reply, merged, 'no-cache');
    },
  };
}
