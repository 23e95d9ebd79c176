import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthSession } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import type { Realm } from '../model/types.js';
import { showPage } from './pages.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;

/** The realm and auth session behind a login-actions request, or the page that explains why there is none. */
export async function loginContext(ctx: ServerContext, request: RealmRequest, reply: FastifyReply): Promise<{ realm: Realm; auth: AuthSession } | FastifyReply> {
  const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
  if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
  const auth = await ctx.authSessions.current(request, realm);
  if (!auth) {
    return showPage.error(ctx, reply, realm, 'Your login attempt timed out or this page is no longer valid. Please start again from the application.', 400);
  }
  return { realm, auth };
}

/** A form post must carry the auth session's CSRF token; anything else changes nothing. */
export function csrfRejected(ctx: ServerContext, reply: FastifyReply, realm: Realm, auth: AuthSession, form: Record<string, string>): Promise<FastifyReply> | null {
  if (ctx.authSessions.csrfValid(auth, form.session_code)) return null;
  return showPage.error(ctx, reply, realm, 'This form has expired or was not sent from this page. Please go back and try again.', 400);
}
