/**
 * Which addresses the server's own outbound HTTP may reach (webhook deliveries, an identity provider's endpoints,
 * a client's JWKS URL), so that an administrator cannot point a URL at the server's own network (cloud metadata,
 * loopback services). Checked on the address actually connected to, after DNS resolution, for every new
 * connection (the caller's transport pins that address). The one implementation of this check: extensions get
 * it through the SPI (`ProviderContext.outbound`).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { OutboundGuard, OutboundGuards, OutboundMode, OutboundRefusal, OutboundRefusalReason, OutboundRules, OutboundResolver } from '@realmgate/spi';

export type TargetMode = OutboundMode;
export type RefusalReason = OutboundRefusalReason;
export type Resolver = OutboundResolver;
export type { ResolvedAddress } from '@realmgate/spi';

/** Thrown (or passed to the connector's callback) instead of opening a connection. Never retried. */
export class TargetRefusedError extends Error implements OutboundRefusal {
  readonly code = 'ERR_OUTBOUND_TARGET_REFUSED';
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

export function isTargetRefusal(error: unknown): error is OutboundRefusal {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ERR_OUTBOUND_TARGET_REFUSED';
}

/** The system resolver (`dns.lookup`, all addresses). */
export const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

export interface TargetGuardOptions extends OutboundRules {
  /** production refuses loopback; development allows it (the demo realm's inbox is on the server itself). */
  mode: TargetMode;
}

// ---------------------------------------------------------------------------------------------------------
// Addresses

interface Ip {
  family: 4 | 6;
  value: bigint;
}

const V4_MAPPED = 0xffffn << 32n;
const NAT64 = 0x0064ff9bn << 96n;
const LOW32 = (1n << 32n) - 1n;

/** A literal IPv4 or IPv6 address (brackets and an IPv6 zone allowed), else null. */
export function parseIp(text: string): Ip | null {
  let s = text.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const family = isIP(s);
  if (family === 4) return { family: 4, value: v4Value(s) };
  if (family !== 6) return null;
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    // the last 32 bits written as dotted IPv4 (::ffff:1.2.3.4): rewritten as two groups
    const v4 = v4Value(s.slice(lastColon + 1));
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = s.includes('::') ? s.split('::') : [s, null];
  const groups = (part: string | null) => (part ? part.split(':').map((g) => BigInt(`0x${g}`)) : []);
  const left = groups(head);
  const right = groups(rest);
  const words = rest === null ? left : [...left, ...Array<bigint>(8 - left.length - right.length).fill(0n), ...right];
  return { family: 6, value: words.reduce((acc, word) => (acc << 16n) | word, 0n) };
}

function v4Value(dotted: string): bigint {
  return dotted.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function formatV4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join('.');
}

/** IPv4 carried in IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d) is judged as IPv4. */
function unwrap(ip: Ip): Ip {
  if (ip.family === 4) return ip;
  const high = ip.value >> 32n;
  const low = ip.value & LOW32;
  if (high === V4_MAPPED >> 32n || high === NAT64 >> 32n || (high === 0n && low > 1n)) return { family: 4, value: low };
  return ip;
}

interface Cidr {
  family: 4 | 6;
  base: bigint;
  prefix: number;
}

function cidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  const ip = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (!ip) return null;
  const bits = ip.family === 4 ? 32 : 128;
  const prefixText = slash >= 0 ? text.slice(slash + 1) : String(bits);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) return null;
  const unwrapped = unwrap(ip);
  // ::ffff:10.0.0.0/104 is 10.0.0.0/8: rules match what unwrap() makes of an address
  const prefix = unwrapped.family !== ip.family ? Number(prefixText) - 96 : Number(prefixText);
  if (prefix < 0) return null;
  return { family: unwrapped.family, base: unwrapped.value, prefix };
}

function contains(range: Cidr, ip: Ip): boolean {
  if (range.family !== ip.family) return false;
  const shift = BigInt((ip.family === 4 ? 32 : 128) - range.prefix);
  return ip.value >> shift === range.base >> shift;
}

const ranges = (...texts: string[]): Cidr[] => texts.map((text) => cidr(text)!);

const UNSPECIFIED = ranges('0.0.0.0/8', '::/128');
const LINK_LOCAL = ranges('169.254.0.0/16', 'fe80::/10');
const NOT_UNICAST = ranges('224.0.0.0/4', '240.0.0.0/4', 'ff00::/8');
const LOOPBACK = ranges('127.0.0.0/8', '::1/128');
const PRIVATE = ranges('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7', 'fec0::/10');
const KEYWORDS: Record<string, Cidr[]> = { loopback: LOOPBACK, private: PRIVATE };

export type AddressClass = 'unspecified' | 'link_local' | 'not_unicast' | 'loopback' | 'private' | 'public';

/** The class of a literal address (IPv4 inside IPv6 judged as IPv4); null when `address` is not one. */
export function addressClass(address: string): AddressClass | null {
  const parsed = parseIp(address);
  if (!parsed) return null;
  const ip = unwrap(parsed);
  const within = (list: Cidr[]) => list.some((range) => contains(range, ip));
  if (within(UNSPECIFIED)) return 'unspecified';
  if (within(LINK_LOCAL)) return 'link_local';
  if (within(NOT_UNICAST)) return 'not_unicast';
  if (within(LOOPBACK)) return 'loopback';
  if (within(PRIVATE)) return 'private';
  return 'public';
}

// ---------------------------------------------------------------------------------------------------------
// Rules

interface Rules {
  ranges: { range: Cidr; allow: boolean }[];
  hosts: { name: string; suffix: boolean; allow: boolean }[];
}

/** The problem with one allow/deny entry, or null when it is valid. */
export function ruleEntryProblem(entry: string): string | null {
  return parseEntry(entry) ? null : `${JSON.stringify(entry)} is not a CIDR, an IP address, a host name, *.domain, loopback or private`;
}

type Entry = { ranges: Cidr[] } | { name: string; suffix: boolean };

function parseEntry(raw: string): Entry | null {
  const entry = raw.trim().toLowerCase();
  if (KEYWORDS[entry]) return { ranges: KEYWORDS[entry] };
  if (/^[\d.]+(\/\d+)?$/.test(entry) || entry.includes(':')) {
    const range = cidr(entry);
    return range ? { ranges: [range] } : null;
  }
  const suffix = entry.startsWith('*.');
  const name = suffix ? entry.slice(2) : entry.replace(/\.$/, '');
  return /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(name) ? { name, suffix } : null;
}

function compile(allow: readonly string[], deny: readonly string[], label: string): Rules {
  const rules: Rules = { ranges: [], hosts: [] };
  for (const [list, isAllow] of [[allow, true], [deny, false]] as const) {
    for (const raw of list) {
      const entry = parseEntry(raw);
      if (!entry) throw new RangeError(`${label} rule ${ruleEntryProblem(raw)}`);
      if ('ranges' in entry) for (const range of entry.ranges) rules.ranges.push({ range, allow: isAllow });
      else rules.hosts.push({ ...entry, allow: isAllow });
    }
  }
  return rules;
}

const DESCRIPTIONS: Record<Exclude<RefusalReason, 'scheme' | 'denied'>, string> = {
  unspecified: 'an unspecified address',
  link_local: 'a link-local address (cloud metadata lives there)',
  not_unicast: 'not a unicast address',
  loopback: 'a loopback address (allowed in development mode only)',
};

export class TargetGuard implements OutboundGuard {
  readonly mode: TargetMode;
  private readonly rules: Rules;
  private readonly resolver: Resolver;
  private readonly label: string;

  constructor(options: TargetGuardOptions) {
    this.mode = options.mode;
    this.label = options.label ?? 'outbound target';
    this.rules = compile(options.allow ?? [], options.deny ?? [], this.label);
    this.resolver = options.resolver ?? systemResolver;
  }

  /**
   * Resolves `hostname` (a literal address is taken as it is) and returns the address to connect to; throws
   * TargetRefusedError when the host or any of its addresses is refused (a name that resolves to one good and
   * one refused address is refused: that is how rebinding attacks look).
   */
  async pin(hostname: string): Promise<string> {
    const host = normalizeHost(hostname);
    const literal = parseIp(host);
    const hostRule = literal ? undefined : this.hostRule(host);
    if (hostRule && !hostRule.allow) throw new TargetRefusedError('denied', `host ${host} is denied by the ${this.label} rules`);
    const addresses = literal ? [host] : (await this.resolver(host)).map((entry) => entry.address);
    if (addresses.length === 0) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
    for (const address of addresses) {
      const refusal = this.addressRefusal(address, hostRule?.allow === true);
      if (refusal) throw new TargetRefusedError(refusal.reason, literal ? refusal.message : `${host}: ${refusal.message}`);
    }
    return stripBrackets(addresses[0]);
  }

  /**
   * What can be judged without DNS, for the admin API: the scheme, literal addresses, `localhost` names and
   * host rules. null when nothing is wrong so far (the delivery still checks the resolved address).
   */
  checkUrl(url: string): TargetRefusedError | null {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return new TargetRefusedError('scheme', 'is not an absolute http(s) URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      return new TargetRefusedError('scheme', 'is not an absolute http(s) URL');
    }
    const host = normalizeHost(parsed.hostname);
    if (parseIp(host)) {
      const refusal = this.addressRefusal(host, false);
      return refusal ? new TargetRefusedError(refusal.reason, refusal.message) : null;
    }
    const hostRule = this.hostRule(host);
    if (hostRule) return hostRule.allow ? null : new TargetRefusedError('denied', `host ${host} is denied by the ${this.label} rules`);
    // RFC 6761: localhost and its subdomains are loopback whatever DNS says.
    if (host === 'localhost' || host.endsWith('.localhost')) {
      const refusal = this.addressRefusal('127.0.0.1', false);
      return refusal ? new TargetRefusedError(refusal.reason, `${host} is ${DESCRIPTIONS.loopback}`) : null;
    }
    return null;
  }

  private hostRule(host: string): { allow: boolean } | undefined {
    const matches = this.rules.hosts.filter((rule) => (rule.suffix ? host.endsWith(`.${rule.name}`) : host === rule.name));
    if (matches.length === 0) return undefined;
    return { allow: matches.every((rule) => rule.allow) };
  }

  private addressRefusal(address: string, hostAllowed: boolean): { reason: RefusalReason; message: string } | null {
    const parsed = parseIp(address);
    if (!parsed) return { reason: 'denied', message: `${address} is not an IP address` };
    const ip = unwrap(parsed);
    const shown = ip.family === 4 ? formatV4(ip.value) : stripBrackets(address);
    const kind = addressClass(address)!;
    if (kind === 'unspecified' || kind === 'link_local' || kind === 'not_unicast') {
      return { reason: kind, message: `${shown} is ${DESCRIPTIONS[kind]}` };
    }
    if (hostAllowed) return null;
    // the most specific rule wins; on a tie, deny
    let best: { prefix: number; allow: boolean } | null = null;
    for (const { range, allow } of this.rules.ranges) {
      if (!contains(range, ip)) continue;
      if (!best || range.prefix > best.prefix || (range.prefix === best.prefix && !allow)) best = { prefix: range.prefix, allow };
    }
    if (best) return best.allow ? null : { reason: 'denied', message: `${shown} is denied by the ${this.label} rules` };
    if (kind === 'loopback' && this.mode === 'production') return { reason: 'loopback', message: `${shown} is ${DESCRIPTIONS.loopback}` };
    return null;
  }
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function normalizeHost(hostname: string): string {
  return stripBrackets(hostname.trim().toLowerCase()).replace(/\.$/, '');
}

/** What the host hands providers (`ProviderContext.outbound`): guards in the server's mode, and the rule syntax. */
export function outboundGuards(mode: TargetMode): OutboundGuards {
  return { guard: (rules = {}) => new TargetGuard({ ...rules, mode }), ruleProblem: ruleEntryProblem };
}

/**
 * A matcher of addresses against a list of IP addresses and CIDRs, with proxy-addr's keywords `loopback`,
 * `linklocal` and `uniquelocal` (what Fastify's trustProxy list takes), IPv4 inside IPv6 judged as IPv4. Throws a
 * RangeError naming an entry that is none of those.
 */
export function addressMatcher(entries: readonly string[], label: string): (address: string | undefined) => boolean {
  const keywords: Record<string, Cidr[]> = { loopback: LOOPBACK, linklocal: LINK_LOCAL, uniquelocal: ranges('10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7') };
  const list: Cidr[] = [];
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase();
    const found = keywords[entry] ?? (cidr(entry) ? [cidr(entry)!] : null);
    if (!found) throw new RangeError(`${label}: ${JSON.stringify(raw)} is not an IP address, a CIDR, loopback, linklocal or uniquelocal`);
    list.push(...found);
  }
  return (address) => {
    const parsed = address ? parseIp(address) : null;
    if (!parsed) return false;
    const ip = unwrap(parsed);
    return list.some((range) => contains(range, ip));
  };
}
