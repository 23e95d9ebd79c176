import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { baseUrl } from '../http/index.js';
import { devPage, devPageHeaders, escapeHtml } from './html.js';

const DEMO_REALM = 'demo';
const DEMO_CLIENT = 'demo';
const WELCOME_PATH = '/dev/welcome';

export interface DemoLinks {
  register: string;
  login: string;
  webhookInbox: string;
}

/**
 * The demo application: its landing page, and the links that start its registration and login.
 *
 * The demo client is public, so it must send PKCE. The links carry the challenge of a verifier this process
 * keeps, which lets the landing page redeem the code as the application would. A link printed by an earlier
 * run no longer matches: the page then says so. Returns the link builder; it answers null when the demo realm
 * or its client is not there (another import directory, or deleted).
 */
export function demoClientRoutes(app: FastifyInstance, ctx: ServerContext): (base: string) => Promise<DemoLinks | null> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  const links = async (base: string): Promise<DemoLinks | null> => {
    const realm = await ctx.storage.realms.byName(DEMO_REALM);
    if (!realm || !(await ctx.storage.clients.byClientId(realm.id, DEMO_CLIENT))) return null;
    const query = (extra: Record<string, string>) =>
      new URLSearchParams({
        client_id: DEMO_CLIENT,
        response_type: 'code',
        scope: 'openid',
        redirect_uri: `${base}${WELCOME_PATH}`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      }).toString();
    const endpoint = `${base}/realms/${DEMO_REALM}/protocol/openid-connect`;
    return {
      register: `${endpoint}/registrations?${query({})}`,
      // prompt=login: the page shows even right after registering, when the SSO cookie would skip it.
      login: `${endpoint}/auth?${query({ prompt: 'login' })}`,
      webhookInbox: `${base}/dev/webhooks`,
    };
  };

  /** The token request the application would make; in-process, so it works whatever address the server has. */
  const redeem = async (host: string, code: string, redirectUri: string): Promise<{ preferred_username?: string; email?: string } | null> => {
    const response = await app.inject({
      method: 'POST',
      url: `/realms/${DEMO_REALM}/protocol/openid-connect/token`,
      headers: { host, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'authorization_code', client_id: DEMO_CLIENT, code, redirect_uri: redirectUri, code_verifier: verifier }).toString(),
    });
    if (response.statusCode !== 200) return null;
    const idToken = (response.json() as { id_token?: string }).id_token;
    if (!idToken) return null;
    // Straight from this server's token endpoint, so there is nothing to verify.
    return JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString('utf8'));
  };

  app.get(WELCOME_PATH, async (request, reply) => {
    const query = request.query as Record<string, string | undefined>;
    const base = baseUrl(request, ctx.config.hostname);
    const demo = await links(base);
    const more = demo
      ? `<p><a href="${escapeHtml(demo.webhookInbox)}">Webhook inbox</a> · <a href="${escapeHtml(`${base}/realms/${DEMO_REALM}/account/`)}">Account pages</a> · <a href="${escapeHtml(demo.login)}">Log in again</a></p>`
      : '';
    const page = (title: string, message: string) => reply.headers(devPageHeaders).send(devPage(title, `<h1>${escapeHtml(title)}</h1>\n${message}\n${more}`));
    if (typeof query.error === 'string') {
      return page('Not signed in', `<p>The server answered <code>${escapeHtml(query.error)}</code>: ${escapeHtml(query.error_description ?? '')}</p>`);
    }
    if (typeof query.code !== 'string') return page('Demo application', '<p>Nothing to show: this page is where the demo client lands after logging in.</p>');
    const claims = await redeem(request.host, query.code, `${base}${WELCOME_PATH}`);
    if (!claims) {
      return page('Signed in', '<p>Signed in, but this page could not redeem the code: the link was probably printed by an earlier run of the server. Use the links the console shows now.</p>');
    }
    const who = [claims.preferred_username, claims.email ? `(${claims.email})` : null].filter(Boolean).join(' ');
    return page('Signed in', `<p id="signed-in-as">Signed in as <strong>${escapeHtml(who)}</strong>.</p>`);
  });

  return links;
}
