import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The server's own HTTP requests to places an administrator configured (an identity provider's token, user info and
 * JWKS endpoints), under the rules webhook targets follow (the event-webhook extension's target guard): the address
 * actually connected to is checked after DNS, for every connection, so a name that resolves to a refused address
 * (rebinding) is refused too. Link-local (cloud metadata), unspecified and multicast addresses are never reached;
 * loopback only in development mode or where `outboundAllow` lists it. Private networks are reachable (a company's
 * own identity provider lives there), as webhooks may reach them.
 */

export type OutboundMode = 'development' | 'production';

export class OutboundRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefusedError';
  }
}

const NEVER = new BlockList();
for (const [net, prefix, family] of [
  ['0.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
] as const) {
  NEVER.addSubnet(net, prefix, family);
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** IPv4 inside IPv6 (::ffff:a.b.c.d) is judged as IPv4. */
function plain(address: string): { ip: string; family: 'ipv4' | 'ipv6' } | null {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  const ip = mapped ?? bare;
  const family = isIP(ip);
  return family === 0 ? null : { ip, family: family === 4 ? 'ipv4' : 'ipv6' };
}

export class OutboundGuard {
  private readonly allowed = new BlockList();
  private readonly allowLoopback: boolean;

  constructor(
    readonly mode: OutboundMode,
    allow: readonly string[] = [],
  ) {
    let loopback = false;
    for (const entry of allow) {
      const text = entry.trim().toLowerCase();
      if (text === 'loopback') {
        loopback = true;
        continue;
      }
      const [address, prefix] = text.split('/');
      const parsed = plain(address);
      if (!parsed) throw new RangeError(`outboundAllow: ${JSON.stringify(entry)} is not an IP address, a CIDR or loopback`);
      if (prefix === undefined) this.allowed.addAddress(parsed.ip, parsed.family);
      else this.allowed.addSubnet(parsed.ip, Number(prefix), parsed.family);
    }
    this.allowLoopback = loopback || mode === 'development';
  }

  /** Why this address may not be connected to, or null. */
  refusal(address: string): string | null {
    const parsed = plain(address);
    if (!parsed) return `${address} is not an IP address`;
    if (NEVER.check(parsed.ip, parsed.family)) return `${parsed.ip} is a link-local, unspecified or multicast address`;
    if (this.allowed.check(parsed.ip, parsed.family)) return null;
    if (LOOPBACK.check(parsed.ip, parsed.family) && !this.allowLoopback) return `${parsed.ip} is a loopback address (allowed in development mode or by outboundAllow)`;
    return null;
  }

  /** node's lookup, refusing a name any of whose addresses is refused. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.map((a) => this.refusal(a.address)).find((r) => r !== null);
      if (refused || addresses.length === 0) return callback(new OutboundRefusedError(`${hostname}: ${refused ?? 'no address'}`), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

export interface OutboundResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** At most this much of a response is read (a JWKS or a token response is a few KiB). */
const MAX_RESPONSE_BYTES = 1024 * 1024;
const TIMEOUT_MS = 10_000;

/**
 * One request through the guard: http(s) only, no redirects followed, a bounded body and time. Throws
 * OutboundRefusedError for a refused target, another Error when the upstream cannot be reached.
 */
export function outboundRequest(guard: OutboundGuard, url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<OutboundResponse> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.reject(new OutboundRefusedError(`${url} is not an absolute URL`));
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return Promise.reject(new OutboundRefusedError(`${target.protocol} is not http or https`));
  // A literal address is connected to without a lookup: judged here.
  const literal = plain(target.hostname);
  if (literal) {
    const refused = guard.refusal(literal.ip);
    if (refused) return Promise.reject(new OutboundRefusedError(refused));
  } else if (target.hostname === 'localhost' || target.hostname.endsWith('.localhost')) {
    // RFC 6761: loopback whatever DNS says.
    const refused = guard.refusal('127.0.0.1');
    if (refused) return Promise.reject(new OutboundRefusedError(`${target.hostname}: ${refused}`));
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, { method: init.method ?? 'GET', headers: init.headers, lookup: guard.lookup, timeout: TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy(new Error(`response from ${target.host} larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${target.host} within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}
