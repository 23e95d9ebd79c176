/**
 * The `user_ip` of a payload, by the client attribute `trusted.proxy.count`: the n-th X-Forwarded-For
 * entry from the right (each trusted proxy appends the address it saw), else X-Real-IP, else the socket.
 */
import { isIP } from 'node:net';

export interface ForwardingInfo {
  forwardedFor: string | null;
  realIp: string | null;
  remoteAddress: string | null;
}

export const DEFAULT_TRUSTED_PROXY_COUNT = 1;

/** Blank or not an integer → 1; negative → 0 (trust no proxy). */
export function parseTrustedProxyCount(value: string | null | undefined): number {
  const trimmed = value?.trim() ?? '';
  if (!/^[+-]?\d+$/.test(trimmed)) return DEFAULT_TRUSTED_PROXY_COUNT;
  return Math.max(0, Number(trimmed));
}

/**
 * A malformed entry where the trusted one should be is not skipped over to another entry (everything to
 * its left may be forged by the client); the rule falls back to X-Real-IP and then the socket instead.
 */
export function clientIp(request: ForwardingInfo, trustedProxyCount: number): string | null {
  if (trustedProxyCount > 0 && request.forwardedFor) {
    const entries = request.forwardedFor
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0);
    if (entries.length >= trustedProxyCount) {
      const picked = normalizeIp(entries[entries.length - trustedProxyCount]);
      if (picked) return picked;
    }
  }
  return (request.realIp ? normalizeIp(request.realIp) : null) ?? (request.remoteAddress ? normalizeIp(request.remoteAddress) : null);
}

/**
 * An address as proxies write it, or null when it is none: strips a port (`1.2.3.4:80`, `[::1]:80`) and
 * brackets, and unwraps IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what a dual-stack socket reports).
 */
export function normalizeIp(raw: string): string | null {
  let address = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(address);
  if (bracketed) address = bracketed[1];
  else if (/^[\d.]+:\d{1,5}$/.test(address)) address = address.slice(0, address.lastIndexOf(':'));
  const version = isIP(address);
  if (version === 4) return address;
  if (version !== 6) return null;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1] : address.toLowerCase();
}
