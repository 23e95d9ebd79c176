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

/**
 * Keycloak's redirect-URI rule: an exact match of a registered URI, or a registered URI ending in `*` as a
 * prefix. Relative registrations resolve against the client's root URL (or the server's base).
 */
export function redirectUriAllowed(client: Client, candidate: string, base: string): boolean {
  if (!matchesRegistered(client, candidate, base)) return false;
  // The browser follows the parsed URL: `/wild/../admin` matches `/wild/*` as text but lands elsewhere.
  const followed = new URL(candidate).href;
  return followed === candidate || followed === `${candidate}/` || matchesRegistered(client, followed, base);
}

function matchesRegistered(client: Client, candidate: string, base: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(candidate);
  } catch {
    return false;
  }
  if (parsed.username || parsed.password) return false;
  if (parsed.hash && carriesResponseParameters(parsed.hash)) return false;
  // A wildcard registration matches the URI without its fragment (a single-page app's route, such as the admin
  // console's `#/master/users`), as Keycloak's; an exact one matches the whole URI, fragment included.
  const unfragmented = parsed.hash ? candidate.slice(0, candidate.indexOf('#')) : candidate;
  return client.redirectUris.some((registered) => {
    const absolute = absoluteClientUrl(client, registered, base);
    if (absolute.endsWith('*')) {
      const prefix = absolute.slice(0, -1);
      // A wildcard never widens to another host: the candidate must keep the registered origin.
      try {
        const registeredOrigin = new URL(prefix.includes('://') ? prefix : `${prefix}x`).origin;
        if (parsed.origin !== registeredOrigin) return false;
      } catch {
        return false;
      }
      return unfragmented.startsWith(prefix);
    }
    return candidate === absolute;
  });
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

/** `post.logout.redirect.uris` (`##`-separated, `+` meaning the redirect URIs), as Keycloak. */
export function postLogoutRedirectAllowed(client: Client, candidate: string, base: string): boolean {
  const configured = (client.attributes['post.logout.redirect.uris'] ?? '').split('##').filter(Boolean);
  const patterns = configured.flatMap((entry) => (entry === '+' ? client.redirectUris : [entry]));
  return redirectUriAllowed({ ...client, redirectUris: patterns }, candidate, base);
}
