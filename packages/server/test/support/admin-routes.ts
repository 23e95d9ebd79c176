import { request as httpRequest } from 'node:http';
import type { FastifyInstance } from 'fastify';

export interface Route {
  method: string;
  /** Fastify's pattern, e.g. `/admin/realms/:realm/clients/:id`. */
  url: string;
}

/**
 * Every route the server has registered, read from Fastify's route tree (no hand-written list to fall out of
 * date: a route added later is swept too). HEAD routes are Fastify's automatic twins of GET and are left out.
 */
export function listRoutes(app: FastifyInstance): Route[] {
  const parents: string[] = [];
  const routes: Route[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    const path = (depth ? parents[depth - 1] : '') + match[2];
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) {
      if (method !== 'HEAD') routes.push({ method, url: path });
    }
  }
  return routes;
}

export const adminRoutes = (app: FastifyInstance): Route[] => listRoutes(app).filter((r) => r.url.startsWith('/admin/'));

/**
 * Values for the path parameters of admin routes. `:id` means a different thing after each collection, so a
 * parameter is looked up as `<previous segment>:<name>:<next segment>` (`flows:flow:` is a flow at the end of
 * the path), then `<previous segment>:<name>` (`clients:id`, `users:id`, `roles-by-id:id`), then `<name>`.
 */
export type PathValues = Record<string, string>;

/** The route's pattern with every parameter replaced (URL-encoded); a parameter without a value gets `unknown`. */
export function fillPath(url: string, values: PathValues, override?: { index: number; raw: string }): string {
  const segments = url.split('/');
  let index = -1;
  return segments
    .map((segment, i) => {
      if (!segment.startsWith(':')) return segment;
      index += 1;
      if (override && override.index === index) return override.raw;
      const name = segment.slice(1);
      const value = values[`${segments[i - 1]}:${name}:${segments[i + 1] ?? ''}`] ?? values[`${segments[i - 1]}:${name}`] ?? values[name] ?? 'unknown';
      return encodeURIComponent(value);
    })
    .join('/');
}

export const paramCount = (url: string): number => url.split('/').filter((s) => s.startsWith(':')).length;

/**
 * A request sent exactly as written: fetch() would normalise `..` segments and re-encode the path, which is
 * precisely what path-traversal probes must avoid.
 */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Promise<{ status: number; text: string; json: any; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, json, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}
