import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { currentSsoSession } from '../../authentication/index.js';
import { baseUrl, MAX_ORIGIN_LENGTH, webOriginAllowed } from '../../http/index.js';
import { realmOrError } from './realm-lookup.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;

const PREFIX = '/realms/:realm/protocol/openid-connect';
const script = (name: string) => readFileSync(new URL(`./frames/${name}`, import.meta.url), 'utf8');

/**
 * Framed by any app's page (no frame-ancestors, no X-Frame-Options); scripts only from files of this server, no
 * inline script; fetches only to this server.
 */
const FRAME_POLICY = "default-src 'none'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'";

const framePage = (title: string, src: string) =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title><script src="${src}"></script></head><body></body></html>\n`;

/** A frame's HTML page, or one of its scripts: the realm must exist, nothing else is read. */
function serve(app: FastifyInstance, ctx: ProtocolContext, path: string, type: 'html' | 'js', body: string): void {
  app.get(`${PREFIX}/${path}`, async (request: RealmRequest, reply: FastifyReply) => {
    await realmOrError(ctx.storage, request.params.realm);
    return reply
      .headers({ 'content-type': type === 'html' ? 'text/html; charset=utf-8' : 'text/javascript; charset=utf-8', 'content-security-policy': FRAME_POLICY, 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' })
      .send(body);
  });
}

/**
 * The frames keycloak-js loads, as Keycloak 26 serves them (the pages are this server's own): the third-party
 * cookie check before a silent check-sso (3p-cookies/step1.html, step2.html, answering "supported" or
 * "unsupported"), and the session-status frame of `checkLoginIframe` (login-status-iframe.html, its `init`
 * endpoint: 204 when the client allows the app's origin or it is this server's own, 403 otherwise; its `status` endpoint compares the
 * app's session with the browser's session cookie).
 */
export function frameRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  serve(app, ctx, '3p-cookies/step1.html', 'html', framePage('Third-party cookie check', 'step1.js'));
  serve(app, ctx, '3p-cookies/step1.js', 'js', script('3p-cookies-step1.js'));
  serve(app, ctx, '3p-cookies/step2.html', 'html', framePage('Third-party cookie check', 'step2.js'));
  serve(app, ctx, '3p-cookies/step2.js', 'js', script('3p-cookies-step2.js'));
  serve(app, ctx, 'login-status-iframe.html', 'html', framePage('Session status', 'login-status-iframe.js'));
  serve(app, ctx, 'login-status-iframe.js', 'js', script('login-status-iframe.js'));
  // The front-channel logout page's one script (logout.ts): on to the redirect once the clients' frames loaded.
  serve(app, ctx, 'logout/frontchannel-logout.js', 'js', script('frontchannel-logout.js'));

  app.get(`${PREFIX}/login-status-iframe.html/init`, async (request: RealmRequest, reply) => {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const query = request.query as Record<string, unknown>;
    reply.header('cache-control', 'no-store');
    if (typeof query.client_id !== 'string' || typeof query.origin !== 'string' || query.client_id.length > 255 || query.origin.length > MAX_ORIGIN_LENGTH) return reply.code(400).send();
    const client = await ctx.storage.clients.byClientId(realm.id, query.client_id);
    const base = baseUrl(request, ctx.config.hostname);
    // As Keycloak's: the server's own origin is allowed for every client (the account console's has no web origins).
    const allowed = client !== null && client.enabled && (query.origin === new URL(base).origin || webOriginAllowed(client, query.origin, base));
    return reply.code(allowed ? 204 : 403).send();
  });

  app.post(`${PREFIX}/login-status-iframe.html/status`, async (request: RealmRequest, reply) => {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    const sessionState = (request.body as Record<string, unknown> | undefined)?.session_state;
    const claimed = typeof sessionState === 'string' ? sessionState : '';
    const current = (await currentSsoSession(ctx, request, realm))?.session.id ?? '';
    return reply.header('cache-control', 'no-store').send({ status: claimed === current ? 'unchanged' : 'changed' });
  });
}
