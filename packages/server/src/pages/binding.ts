import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuthSession } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { baseUrl } from '../http/index.js';

/** sha256 of the auth session's CSRF token: what binds a page's key, or a WebAuthn challenge, to this login only. */
export const authBinding = (auth: AuthSession) => createHash('sha256').update(auth.csrf).digest('base64url');

/** Where a WebAuthn ceremony runs: the server's public origin (hostname, or the request's), and the auth session it belongs to. */
export const ceremonyOf = (ctx: Pick<PagesContext, 'config'>, request: FastifyRequest, auth: AuthSession) => ({ origin: baseUrl(request, ctx.config.hostname), session: authBinding(auth) });
