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

/** The public base URL: the configured hostname, else scheme and Host of the request (validated). */
export function baseUrl(request: FastifyRequest, configured: string | null): string {
  if (configured) return configured;
  const host = request.host;
  if (!hostPattern.test(host)) return `${request.protocol}://localhost`;
  return `${request.protocol}://${host}`;
}
