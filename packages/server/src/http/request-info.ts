import type { FastifyRequest } from 'fastify';
import type { RequestInfo } from '@realmgate/spi';

const header = (request: FastifyRequest, name: string): string | null => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : null;
};

/** What providers and events see of a request; `ipAddress` already honours the trusted-proxy setting. */
export function requestInfo(request: FastifyRequest): RequestInfo {
  return {
    ipAddress: request.ip,
    remoteAddress: request.socket.remoteAddress ?? request.ip,
    forwardedFor: header(request, 'x-forwarded-for'),
    realIp: header(request, 'x-real-ip'),
    userAgent: header(request, 'user-agent'),
  };
}

const hostPattern = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * The public base URL: the configured hostname, and then nothing of the request counts (neither Host nor
 * X-Forwarded-*); else scheme and Host of the request (validated), which are X-Forwarded-Proto and -Host only
 * when the request came through a trusted proxy.
 */
export function baseUrl(request: FastifyRequest, configured: string | null): string {
  if (configured) return configured;
  const host = request.host;
  if (!hostPattern.test(host)) return `${request.protocol}://localhost`;
  return `${request.protocol}://${host}`;
}

/** Cookies are Secure whenever the public URL is https: the configured one, or the request's as a trusted proxy forwarded it. */
export function secureCookies(request: FastifyRequest, configured: string | null): boolean {
  return baseUrl(request, configured).startsWith('https:');
}
