import type { Client } from './types.js';

/**
 * A client URL registered relative to the client's root URL, made absolute as Keycloak does: the root URL may
 * be empty or absent (then this server's base) or start with `${authBaseUrl}` / `${authAdminUrl}` (this server's
 * base, as Keycloak's exports write it for its own account and admin console clients).
 */
export function absoluteClientUrl(client: Pick<Client, 'rootUrl'>, url: string, base: string): string {
  if (!url.startsWith('/')) return url;
  const root = (client.rootUrl ?? '').replace(/^\$\{auth(Base|Admin)Url\}/, base);
  return `${root || base}${url}`;
}

/** The registered values that let a client redirect to any host: `*` alone, and `http://*` / `https://*`. */
export function isOpenRedirectPattern(pattern: string): boolean {
  return pattern === '*' || /^https?:\/\/\*$/i.test(pattern);
}

/**
 * The open-redirect patterns a client holds (see isOpenRedirectPattern), in its redirect URIs and its
 * `post.logout.redirect.uris`: Keycloak takes them, and so does this server, with a warning in the log.
 */
export function openRedirectPatterns(client: Partial<Pick<Client, 'redirectUris' | 'attributes'>>): string[] {
  const postLogout = (client.attributes?.['post.logout.redirect.uris'] ?? '').split('##');
  return [
    ...(client.redirectUris ?? []).filter(isOpenRedirectPattern).map((p) => `redirectUris: ${p}`),
    ...postLogout.filter(isOpenRedirectPattern).map((p) => `attributes.post.logout.redirect.uris: ${p}`),
  ];
}

/** What the logger of the admin API and of `--import-realm` offers for the warning. */
interface WarnLogger {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Logs, once per client, that it was given a redirect pattern any site matches (Keycloak takes it; so does this server). */
export function warnOpenRedirect(logger: WarnLogger, realm: string, client: Partial<Pick<Client, 'clientId' | 'redirectUris' | 'attributes'>>, source: string): void {
  const patterns = openRedirectPatterns(client);
  if (patterns.length === 0) return;
  logger.warn(
    { realm, clientId: client.clientId, patterns, source },
    `client ${client.clientId} of realm ${realm} accepts any redirect URI (${patterns.join(', ')}): an open redirect; register the application's own URIs`,
  );
}

/**
 * Keycloak 26's redirect-URI rule (services/…/oidc/utils/RedirectUtils.java, verifyRedirectUri and
 * matchesRedirects), for a registered URI made absolute (relative ones against the client's root URL, else the
 * server's base):
 * - `*` alone: any http(s) URI (an open redirect: warnOpenRedirect);
 * - ending in `*` (no `?` or `#` in it): a wildcard, compared without the candidate's query and fragment:
 *   - `scheme://*`: any URI of that scheme;
 *   - `scheme://host:*`: that scheme and host, with a port written out (any port);
 *   - `scheme://host*`: as `scheme://host/*`, any path of that origin (Keycloak 26.4+: never another host such as
 *     `host.evil.example`);
 *   - with a path (`http://h/app/*`): that origin and a path starting with the registered one; a `*` elsewhere
 *     (`http://localhost:*\/cb/*`) is a character, not a wildcard, as in Keycloak (it matches nothing real);
 *   - an opaque URI (`com.example.app:*`): that scheme and what follows as a prefix;
 * - anything else: the same string;
 * - a loopback `http` candidate (`localhost`, `127.0.0.1`, `[::1]`) that matches nothing is tried again without
 *   its port (RFC 8252 §7.3: `http://127.0.0.1/cb` takes `http://127.0.0.1:53412/cb`);
 * - only `http` and `https` candidates, unless the registered URI has the candidate's scheme.
 * Refused whatever is registered (at least as strict as Keycloak, which refuses wildcards for them): a user-info
 * part (`http://127.0.0.1:8080@evil.example/`), a URI that does not parse as a browser parses it, a relative one,
 * `javascript:`/`data:`/`vbscript:`, a fragment carrying OAuth response parameters, and a URI that the browser
 * would follow elsewhere than it reads (`/wild/../admin`, `/wild/%2e%2e/admin`, `\`): the followed URI must match
 * too. Not taken over from Keycloak: a wildcard `…/app/*` taking `…/app` without the slash.
 */
export function redirectUriAllowed(client: Client, candidate: string, base: string): boolean {
  if (!matchesRegistered(client, candidate, base)) return false;
  // The browser follows the parsed URL: `/wild/../admin` matches `/wild/*` as text but lands elsewhere.
  const followed = new URL(candidate).href;
  return followed === candidate || followed === `${candidate}/` || matchesRegistered(client, followed, base);
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const SCRIPT_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:']);

/** A candidate as parsed, with its authority as written (null when the text and the parse disagree on where it ends). */
interface Candidate {
  text: string;
  url: URL;
  /** `host[:port]` as written in the text, or null for an opaque URI or one whose written authority is odd. */
  authority: string | null;
}

function parseCandidate(text: string): Candidate | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const head = `${url.protocol}//`;
  let authority: string | null = null;
  if (text.slice(0, head.length).toLowerCase() === head && url.host !== '') {
    const end = text.slice(head.length).search(/[/?#\\]|$/);
    authority = text.slice(head.length, head.length + end);
  }
  return { text, url, authority };
}

function matchesRegistered(client: Client, text: string, base: string): boolean {
  const candidate = parseCandidate(text);
  if (!candidate) return false;
  const { url } = candidate;
  if (url.username || url.password || (candidate.authority !== null && candidate.authority.includes('@'))) return false;
  if (SCRIPT_SCHEMES.has(url.protocol)) return false;
  if (url.hash && carriesResponseParameters(url.hash)) return false;
  const registered = client.redirectUris.map((r) => absoluteClientUrl(client, r, base));
  if (registered.some((r) => matchesOne(r, candidate))) return true;
  // RFC 8252 §7.3, as Keycloak: a loopback http redirect may name any port.
  if (url.protocol === 'http:' && url.port !== '' && LOOPBACK_HOSTS.has(url.hostname) && candidate.authority !== null) {
    const head = `http://${candidate.authority}`;
    const portless = parseCandidate(`http://${url.hostname}${text.slice(head.length)}`);
    return portless !== null && registered.some((r) => matchesOne(r, portless));
  }
  return false;
}

/** Whether one registered (absolute) URI takes the candidate. */
function matchesOne(registered: string, candidate: Candidate): boolean {
  const { url, text } = candidate;
  const isHttp = url.protocol === 'http:' || url.protocol === 'https:';
  if (registered === '*') return isHttp;
  const schemeOk = isHttp || registered.toLowerCase().startsWith(url.protocol);
  if (!schemeOk) return false;
  if (!registered.endsWith('*') || registered.includes('?') || registered.includes('#')) return text === registered;
  return matchesWildcard(registered.slice(0, -1), candidate);
}

/** A registered URI ending in `*`, without it (`prefix`), against the candidate: see redirectUriAllowed. */
function matchesWildcard(prefix: string, candidate: Candidate): boolean {
  const { url } = candidate;
  // Keycloak compares a wildcard without the candidate's query, or its fragment when there is no query.
  const cut = candidate.text.search(/[?#]/);
  const bare = cut === -1 ? candidate.text : candidate.text.slice(0, cut);
  const hierarchical = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(.*)$/i.exec(prefix);
  if (!hierarchical) {
    // Opaque (`com.example.app:*`, `com.example.app:/cb*`): the scheme, then the rest as a prefix.
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(prefix)?.[1];
    return scheme !== undefined && `${scheme.toLowerCase()}:` === url.protocol && bare.slice(scheme.length).startsWith(prefix.slice(scheme.length));
  }
  const [, scheme, authority, path] = hierarchical;
  if (`${scheme.toLowerCase()}:` !== url.protocol) return false;
  if (path === '') {
    // `scheme://*`: any host of the scheme (an open redirect, warned about when registered).
    if (authority === '') return url.host !== '';
    if (authority.endsWith(':')) {
      // `scheme://host:*`: that host, a port written out.
      const host = hostOf(`${scheme}://${authority.slice(0, -1)}`);
      return host !== null && candidate.authority !== null && url.hostname === host.hostname && /:\d+$/.test(candidate.authority);
    }
    // `scheme://host*`: treated as `scheme://host/*` (Keycloak 26.4+), the same origin and any path.
    const host = hostOf(`${scheme}://${authority}`);
    return host !== null && url.hostname === host.hostname && url.port === host.port;
  }
  // A path: the same scheme, host and port, and the candidate's text (as written) starting with the registered one.
  const host = hostOf(`${scheme}://${authority}`);
  if (host === null || url.hostname !== host.hostname || url.port !== host.port) return false;
  return bare.startsWith(prefix);
}

/** The host and port of `scheme://authority`, or null when it does not parse (`localhost:*`) or has a user-info part. */
function hostOf(origin: string): { hostname: string; port: string } | null {
  try {
    const url = new URL(origin);
    if (url.username || url.password || url.host === '') return null;
    return { hostname: url.hostname, port: url.port };
  } catch {
    return null;
  }
}

/** OAuth response parameters in a fragment would reach the client beside, or before, the server's own: refused. */
const RESPONSE_PARAMETERS = new Set(['code', 'state', 'session_state', 'iss', 'error', 'error_description', 'error_uri', 'id_token', 'access_token', 'token_type', 'expires_in', 'response']);

function carriesResponseParameters(hash: string): boolean {
  return hash
    .slice(1)
    .split(/[&?#]/)
    .some((pair) => {
      const name = pair.split('=')[0];
      try {
        return RESPONSE_PARAMETERS.has(decodeURIComponent(name).toLowerCase());
      } catch {
        return true;
      }
    });
}

/**
 * `post.logout.redirect.uris` (`##`-separated; `+` adds the redirect URIs, a first `-` allows none), as Keycloak 26's
 * OIDCAdvancedConfigWrapper. Absent or empty allows none here (Keycloak then takes the redirect URIs).
 */
export function postLogoutRedirectAllowed(client: Client, candidate: string, base: string): boolean {
  const configured = (client.attributes['post.logout.redirect.uris'] ?? '').split('##').filter(Boolean);
  if (configured[0] === '-') return false;
  const patterns = configured.flatMap((entry) => (entry === '+' ? client.redirectUris : [entry]));
  return redirectUriAllowed({ ...client, redirectUris: patterns }, candidate, base);
}
