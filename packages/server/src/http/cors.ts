import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { absoluteClientUrl } from '../model/redirect-uri.js';
import type { Client } from '../model/types.js';

/**
 * CORS as Keycloak answers it, decided once here.
 *
 * - An endpoint that knows its client (token, userinfo, revoke, logout, introspection, the account REST API)
 *   calls `allowCorsForClient(request, client, base)` as soon as it knows the client: the request's origin is
 *   granted when the client's `webOrigins` allow it (`webOriginAllowed`). The grant is written by an onSend hook,
 *   so an error answered after that point carries it too (a browser app can read its 400).
 * - A public endpoint (discovery, JWKS, the realm's public description) calls `allowCorsForAnyOrigin(request)`.
 * - A preflight (`OPTIONS`) cannot know the client (it has no body and no credentials), so it is granted when some
 *   enabled client of the realm allows the origin, the method is one the endpoint takes and every requested header
 *   is one the endpoint reads (`answerPreflight`).
 * - No grant without a single well-formed `Origin` (`requestOrigin`): absent, `null`, several, malformed or over-long
 *   origins get no CORS headers at all.
 *
 * Credentials (`Access-Control-Allow-Credentials: true`) are granted with every grant, as Keycloak's endpoints do;
 * the origin is always echoed, never `*`, so that is allowed by browsers.
 */

/** Longer than any real origin (scheme, a 253-character host, a port) and short enough to bound the work. */
export const MAX_ORIGIN_LENGTH = 300;
const PREFLIGHT_MAX_AGE_SECONDS = 3600;
/** Request headers a browser app may send to these endpoints (beyond the CORS-safelisted ones). */
const ALLOWED_REQUEST_HEADERS = ['authorization', 'content-type', 'accept', 'accept-language', 'content-language', 'x-requested-with', 'origin', 'dpop'];
/** Response headers a browser app may read. */
const EXPOSED_HEADERS = ['Access-Control-Allow-Methods', 'WWW-Authenticate', 'Location'];

/** The origin an endpoint granted to a request (null: it decided against one); absent: not a CORS endpoint. */
const grants = new WeakMap<FastifyRequest, string | null>();

/** The request's origin when it is exactly one well-formed http(s) origin; otherwise null (no grant). */
export function requestOrigin(request: FastifyRequest): string | null {
  const header = request.headers.origin;
  if (typeof header !== 'string') return null; // absent, or sent more than once
  return parseOrigin(header);
}

function parseOrigin(value: string): string | null {
  if (value.length === 0 || value.length > MAX_ORIGIN_LENGTH) return null;
  if (value.includes(',') || /\s/.test(value)) return null; // several origins, or a list
  if (!/^https?:\/\//i.test(value)) return null; // `null` (opaque origins), file:, data: …
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  // Only a serialized origin: nothing after the port, no credentials.
  if (url.origin !== value) return null;
  return value;
}

/** The origin of a URL (http or https), or null. */
function originOf(uri: string): string | null {
  try {
    const url = new URL(uri);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}

/**
 * Keycloak's web-origins rule: an entry equal to the origin, `*` for any origin, or `+` for the origins of the
 * client's redirect URIs (relative ones resolved against its root URL, else the server's `base`).
 */
export function webOriginAllowed(client: Pick<Client, 'webOrigins' | 'redirectUris' | 'rootUrl'>, origin: string, base: string): boolean {
  for (const entry of client.webOrigins) {
    if (entry === '*' || entry === origin) return true;
    if (entry === '+') {
      for (const redirect of client.redirectUris) {
        const absolute = absoluteClientUrl(client, redirect, base);
        if (originOf(absolute.endsWith('*') ? absolute.slice(0, -1) || absolute : absolute) === origin) return true;
      }
    }
  }
  return false;
}

/** Grants the request's origin when the client's web origins allow it; otherwise removes any grant. */
export function allowCorsForClient(request: FastifyRequest, client: Pick<Client, 'webOrigins' | 'redirectUris' | 'rootUrl' | 'enabled'>, base: string): boolean {
  const origin = requestOrigin(request);
  const granted = origin !== null && client.enabled && webOriginAllowed(client, origin, base) ? origin : null;
  grants.set(request, granted);
  return granted !== null;
}

/**
 * Keycloak 26.6.3 and later (Cors.checkAllowedOrigins, CVE-2026-37977's fix): a request to a client's endpoint whose
 * `Origin` its web origins do not allow is refused (403), not merely answered without CORS headers. No `Origin`, the
 * server's own origin (same-origin) and a client with `*` pass; anything else sent as `Origin` (several, `null`, one
 * not allowed) is refused.
 */
export function originRefused(request: FastifyRequest, client: Pick<Client, 'webOrigins' | 'redirectUris' | 'rootUrl' | 'enabled'>, base: string): boolean {
  const header = request.headers.origin;
  if (header === undefined) return false;
  if (typeof header !== 'string') return true;
  if (header === originOf(base) || client.webOrigins.includes('*')) return false;
  const origin = parseOrigin(header);
  return !(origin !== null && client.enabled && webOriginAllowed(client, origin, base));
}

/** Marks a CORS-aware endpoint before its client is known: no grant yet, but `Vary: Origin`. */
export function corsPending(request: FastifyRequest): void {
  if (!grants.has(request)) grants.set(request, null);
}

/** Grants any well-formed origin: for public documents (discovery, JWKS, the realm's description). */
export function allowCorsForAnyOrigin(request: FastifyRequest): boolean {
  const origin = requestOrigin(request);
  grants.set(request, origin);
  return origin !== null;
}

/**
 * Answers a preflight: 200, with the grant only when the requested method is one of `methods`, every requested
 * header is one these endpoints read, and some enabled client of the realm (`clients`, asked only for a
 * well-formed single origin) allows the origin. Anything else is 200 without CORS headers, which the browser
 * reads as a refusal.
 */
export async function answerPreflight(
  request: FastifyRequest,
  reply: FastifyReply,
  /** `clients`: the realm's clients, whose web origins together bound the grant; absent for a public document (any origin). */
  options: { methods: readonly string[]; base: string; clients?: () => Promise<Pick<Client, 'webOrigins' | 'redirectUris' | 'rootUrl' | 'enabled'>[]> },
): Promise<FastifyReply> {
  grants.delete(request);
  reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
  const origin = requestOrigin(request);
  const method = request.headers['access-control-request-method'];
  const headers = request.headers['access-control-request-headers'];
  const requested = typeof headers === 'string' && headers.length <= 1024 ? headers.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean) : null;
  const grant =
    origin !== null &&
    typeof method === 'string' &&
    options.methods.includes(method) &&
    (headers === undefined || (requested !== null && requested.every((h) => ALLOWED_REQUEST_HEADERS.includes(h)))) &&
    (!options.clients || (await options.clients()).some((client) => client.enabled && webOriginAllowed(client, origin, options.base)));
  if (grant) {
    reply.headers({
      'access-control-allow-origin': origin,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': [...options.methods, 'OPTIONS'].join(', '),
      'access-control-allow-headers': ALLOWED_REQUEST_HEADERS.map(titleCase).join(', '),
      'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
    });
  }
  return reply.code(200).send();
}

const titleCase = (header: string) => header.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());

/** Writes the grant an endpoint made (on success and on error alike); installed once by createHttpApp. */
export function installCors(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (!grants.has(request)) return payload; // not a CORS-aware endpoint
    const origin = grants.get(request);
    reply.header('vary', 'Origin');
    if (!origin) return payload;
    reply.headers({
      'access-control-allow-origin': origin,
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': EXPOSED_HEADERS.join(', '),
    });
    return payload;
  });
}
