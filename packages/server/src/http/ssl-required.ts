import { BlockList, isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { oauthError } from '../model/errors.js';
import type { SslRequired } from '../model/types.js';
import { secureCookies } from './request-info.js';

/**
 * The addresses Keycloak's `sslRequired: external` counts as not external: loopback, the private IPv4 ranges
 * (RFC 1918) and IPv6 unique-local and site-local addresses, the unspecified address; IPv4-mapped IPv6 as IPv4.
 */
const privateAddresses = new BlockList();
privateAddresses.addSubnet('127.0.0.0', 8, 'ipv4');
privateAddresses.addSubnet('10.0.0.0', 8, 'ipv4');
privateAddresses.addSubnet('172.16.0.0', 12, 'ipv4');
privateAddresses.addSubnet('192.168.0.0', 16, 'ipv4');
privateAddresses.addAddress('0.0.0.0', 'ipv4');
privateAddresses.addAddress('::1', 'ipv6');
privateAddresses.addAddress('::', 'ipv6');
privateAddresses.addSubnet('fc00::', 7, 'ipv6');
privateAddresses.addSubnet('fec0::', 10, 'ipv6');

/**
 * Verdicts by address, asked on every request to a realm: BlockList.check builds a SocketAddress each time (about
 * 15 µs), and a server sees the same few client addresses again and again. Emptied when full, so a flood of
 * addresses costs the check, not memory.
 */
const verdicts = new Map<string, boolean>();
const MAX_VERDICTS = 4096;

export function isPrivateAddress(address: string): boolean {
  let verdict = verdicts.get(address);
  if (verdict === undefined) {
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdict = checkPrivate(address);
    verdicts.set(address, verdict);
  }
  return verdict;
}

function checkPrivate(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const ip = mapped ?? address.replace(/%.*$/, '');
  const family = isIP(ip);
  if (family === 0) return false;
  return privateAddresses.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether a realm with this setting refuses a plain-HTTP request from this client address. */
export function httpsRequired(setting: SslRequired, clientAddress: string): boolean {
  if (setting === 'none') return false;
  if (setting === 'all') return true;
  return !isPrivateAddress(clientAddress);
}

const realmPath = /^\/realms\/([^/?#]+)(?:[/?#]|$)/;

function realmOf(request: FastifyRequest): string | null {
  const name = realmPath.exec(request.url)?.[1];
  if (name === undefined) return null;
  try {
    return decodeURIComponent(name);
  } catch {
    return null;
  }
}

/**
 * Keycloak's realm `sslRequired`, written once for every endpoint under `/realms/{realm}/` (protocol endpoints,
 * login pages, the account API, providers' realm resources): a plain-HTTP request the realm's setting refuses is
 * answered 403 `invalid_request` "HTTPS required", as Keycloak's protocol endpoints answer. "Plain HTTP" is judged
 * as for Secure cookies: the configured hostname's scheme, else the request's (X-Forwarded-Proto only from a
 * trusted proxy); the client address is `request.ip` (X-Forwarded-For only from a trusted proxy).
 */
export function installSslRequired(
  app: FastifyInstance,
  options: { hostname: string | null; sslRequired: (realm: string) => Promise<SslRequired | null> },
): void {
  app.addHook('onRequest', async (request) => {
    const realm = realmOf(request);
    if (realm === null || secureCookies(request, options.hostname)) return;
    const setting = await options.sslRequired(realm);
    if (setting !== null && httpsRequired(setting, request.ip)) throw oauthError.invalid_request('HTTPS required', { status: 403 });
  });
}
