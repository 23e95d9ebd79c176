import { configFlag, configList, domainPattern } from '../model/client-policies.js';
import { oauthError } from '../model/errors.js';
import type { Client } from '../model/types.js';

/**
 * Keycloak 26.7.3's `secure-redirect-uris-enforcer` executor (its SecureRedirectUrisEnforcerExecutor, behaviour
 * read from its source, written here anew): a client's redirect URIs (and post-logout redirect URIs) at registration
 * and update, and the `redirect_uri` of an authorization request, are sorted into IPv4 loopback, IPv6 loopback,
 * private-use scheme or normal (http/https) URIs, each allowed only as its configuration says. A refusal is Keycloak's
 * `invalid_request` with its description ("Invalid Redirect Uri: …").
 */
export interface RedirectUrisConfig {
  allowPrivateUseUriScheme: boolean;
  allowIPv4Loopback: boolean;
  allowIPv6Loopback: boolean;
  allowHttp: boolean;
  allowWildcardContextPath: boolean;
  /** Java regular expressions each matched against the whole host (`String.matches`). */
  permittedDomains: string[];
  oauth21: boolean;
  allowOpenRedirect: boolean;
}

export function redirectUrisConfig(config: Record<string, unknown>): RedirectUrisConfig {
  return {
    allowPrivateUseUriScheme: configFlag(config['allow-private-use-uri-scheme']),
    allowIPv4Loopback: configFlag(config['allow-ipv4-loopback-address']),
    allowIPv6Loopback: configFlag(config['allow-ipv6-loopback-address']),
    allowHttp: configFlag(config['allow-http-scheme']),
    allowWildcardContextPath: configFlag(config['allow-wildcard-context-path']),
    permittedDomains: configList(config['allow-permitted-domains']),
    oauth21: configFlag(config['oauth-2-1-compliant']),
    allowOpenRedirect: configFlag(config['allow-open-redirect']),
  };
}

const ERR_URI = 'Invalid Redirect Uri: invalid uri';
const ERR_LOOPBACK = 'Invalid Redirect Uri: invalid loopback address';
const ERR_PRIVATE_SCHEME = 'Invalid Redirect Uri: invalid private use scheme';
const refuse = (description: string) => oauthError.invalid_request(description);

/** The parts of a URI as java.net.URI gives them (a port of -1 when none is written), or null when it does not parse. */
interface Parts {
  text: string;
  scheme: string | null;
  host: string | null;
  port: number;
  path: string;
}

// RFC 3986's characters; a `%` must start an escape; one `#` at most (java.net.URI refuses the others).
const URI_CHARS = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;
const SHAPE = /^(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?[^#]*)?(?:#.*)?$/;

function parse(text: string): Parts | null {
  if (!URI_CHARS.test(text) || text.split('#').length > 2) return null;
  const match = SHAPE.exec(text);
  if (!match) return null;
  const [, scheme = null, authority, path = ''] = match;
  let host: string | null = null;
  let port = -1;
  if (authority !== undefined) {
    const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
    const bracket = /^(\[[0-9A-Fa-f:.]+\])(?::(\d*))?$/.exec(hostPort);
    const named = /^([A-Za-z0-9.-]*)(?::(\d*))?$/.exec(hostPort);
    const found = bracket ?? named;
    // Anything else is a registry-based authority to java.net.URI: no host.
    if (found && found[1] !== '') {
      host = found[1];
      if (found[2]) port = Number(found[2]);
    }
  }
  return { text, scheme, host, port, path };
}

/** 127.0.0.0/8 (and localhost, which this server takes as IPv4 loopback without asking a resolver). */
function isIPv4Loopback(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const mapped = /^\[::ffff:(\d+\.\d+\.\d+\.\d+)\]$/i.exec(host);
  const v4 = mapped ? mapped[1] : host;
  const octets = v4.split('.');
  return octets.length === 4 && octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255) && octets[0] === '127';
}

/** ::1 in any of its spellings ([::1], [0:0:0:0:0:0:0:1], …). */
function isIPv6Loopback(host: string): boolean {
  if (!host.startsWith('[') || !host.endsWith(']')) return false;
  const inner = host.slice(1, -1).toLowerCase();
  if (!/^[0-9a-f:]+$/.test(inner) || (inner.match(/::/g) ?? []).length > 1) return false;
  const [head, tail] = inner.includes('::') ? inner.split('::') : [inner, undefined];
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const given = [...groups(head), ...(tail !== undefined ? ['*'] : []), ...groups(tail)];
  const fill = 8 - (given.length - (tail !== undefined ? 1 : 0));
  const full = given.flatMap((g) => (g === '*' ? Array(fill).fill('0') : [g]));
  return full.length === 8 && full.every((g, i) => /^[0-9a-f]{1,4}$/.test(g) && parseInt(g, 16) === (i === 7 ? 1 : 0));
}

const wildcard = (u: Parts) => u.text.includes('*');
const fragment = (u: Parts) => u.text.includes('#');
/** Keycloak's "invalid wildcard": a context-path wildcard (`/*…` or `*…`) with more than the one `*`. */
const invalidWildcard = (u: Parts) => (u.path.startsWith('/*') || u.path.startsWith('*')) && u.text.split('*').length - 1 !== 1;
const wildcardRefused = (u: Parts, c: RedirectUrisConfig) => (c.allowWildcardContextPath ? invalidWildcard(u) : wildcard(u));

/** One URI; `requested` for an authorization request's `redirect_uri` (a loopback one must then carry its port). */
export function checkRedirectUri(text: string, config: RedirectUrisConfig, requested: boolean): void {
  const u = parse(text);
  if (!u) throw refuse(ERR_URI);
  const http = u.scheme === 'http';
  const https = u.scheme === 'https';
  const v4 = u.host !== null && isIPv4Loopback(u.host);
  const v6 = !v4 && u.host !== null && isIPv6Loopback(u.host);
  if (v4 || v6) {
    if (!(v4 ? config.allowIPv4Loopback : config.allowIPv6Loopback) || !validLoopback(u, config, requested, v6)) throw refuse(ERR_LOOPBACK);
    return;
  }
  if (u.scheme !== null && !http && !https) {
    if (!config.allowPrivateUseUriScheme || wildcardRefused(u, config)) throw refuse(ERR_PRIVATE_SCHEME);
    if (config.oauth21 && (fragment(u) || wildcard(u) || !u.scheme.includes('.'))) throw refuse(ERR_PRIVATE_SCHEME);
    return;
  }
  if (!http && !https) throw refuse(ERR_URI);
  if ((http && !config.allowHttp) || wildcardRefused(u, config)) throw refuse(ERR_URI);
  if (config.permittedDomains.length && !config.permittedDomains.some((p) => u.host !== null && domainPattern(p)?.test(u.host) === true)) throw refuse(ERR_URI);
  if (config.oauth21 && (!https || fragment(u) || wildcard(u))) throw refuse(ERR_URI);
}

function validLoopback(u: Parts, config: RedirectUrisConfig, requested: boolean, v6: boolean): boolean {
  if (u.scheme === 'http' && !config.allowHttp) return false;
  if (wildcardRefused(u, config)) return false;
  if (!config.oauth21) return true;
  if (fragment(u) || wildcard(u) || u.host?.toLowerCase() === 'localhost') return false;
  // OAuth 2.1 (RFC 8252 7.3): registered without a port, requested with one.
  if (requested ? u.port < 0 || u.port > 65535 : u.port > -1) return false;
  return !v6 || u.host === '[::1]';
}

/** The URIs registered with a client, relative ones resolved as Keycloak does (against rootUrl, else this server's origin). */
function resolved(uris: string[], client: Client, origin: string | undefined): string[] {
  const root = client.rootUrl ? client.rootUrl.replace('${authBaseUrl}', origin ?? '') : origin;
  return [...new Set(uris.filter(Boolean).map((uri) => (uri.startsWith('/') && root !== undefined ? `${root.replace(/\/$/, '')}${uri}` : uri)))];
}

/**
 * Registration and update: a client with the standard (or implicit) flow must have redirect URIs, each allowed;
 * its post-logout redirect URIs too (`+`, "the redirect URIs", and `-`, "none", stand for no URI of their own).
 */
export function checkClientRedirectUris(client: Client, config: RedirectUrisConfig, origin: string | undefined): void {
  if (!client.standardFlowEnabled && !client.implicitFlowEnabled) return;
  if (client.redirectUris.length === 0) throw refuse(ERR_URI);
  if (config.allowOpenRedirect) return;
  for (const uri of resolved(client.redirectUris, client, origin)) checkRedirectUri(uri, config, false);
  const postLogout = (client.attributes['post.logout.redirect.uris'] ?? '').split('##').filter((u) => u !== '+' && u !== '-');
  for (const uri of resolved(postLogout, client, origin)) checkRedirectUri(uri, config, false);
}
