import type { FastifyRequest } from 'fastify';
import { oauthError } from '../../model/errors.js';

/** The bearer token of the Authorization header, or null when there is none or it is not a Bearer one. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return match ? match[1] : null;
}

export function requireBearer(request: FastifyRequest): string {
  const token = bearerToken(request);
  if (!token) {
    throw oauthError.invalid_token('Missing or malformed bearer token', { headers: { 'www-authenticate': 'Bearer realm="realmgate"' } });
  }
  return token;
}
