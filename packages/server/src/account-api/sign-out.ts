import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { userSnapshot } from '../services/index.js';
import { accountCallerWith, type AccountCaller } from './caller.js';

type SessionRequest = FastifyRequest<{ Params: { realm: string; id: string } }>;

async function endSessions(ctx: ServerContext, request: FastifyRequest, caller: AccountCaller, ids: string[]): Promise<void> {
  const snapshot = await userSnapshot(ctx.storage, caller.user);
  for (const id of ids) {
    await ctx.storage.sessions.delete(id);
    await ctx.events.user(caller.realm, { type: 'LOGOUT', clientId: caller.clientId, userId: caller.user.id, sessionId: id, request: requestInfo(request), user: snapshot, details: { context: 'ACCOUNT' } });
  }
}

/**
 * DELETE /account/sessions (every other SSO session; `?current=true` this one too) and DELETE
 * /account/sessions/{id} (manage-account); offline sessions are not signed out here. A session that is not the
 * caller's is left alone and the answer is the same 204, as Keycloak's, so the call tells nobody whether another
 * user's session exists.
 */
export function signOutRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.delete('/realms/:realm/account/sessions', async (request: FastifyRequest<{ Params: { realm: string } }>, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account');
    const withCurrent = (request.query as Record<string, unknown>).current === 'true';
    const sessions = await ctx.storage.sessions.forUser(caller.realm.id, caller.user.id);
    await endSessions(ctx, request, caller, sessions.map((s) => s.id).filter((id) => withCurrent || id !== caller.sessionId));
    return reply.code(204).send();
  });
  app.delete('/realms/:realm/account/sessions/:id', async (request: SessionRequest, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account');
    const session = request.params.id.length <= 64 ? await ctx.storage.sessions.byId(request.params.id) : null;
    if (session && !session.offline && session.realmId === caller.realm.id && session.userId === caller.user.id) await endSessions(ctx, request, caller, [session.id]);
    return reply.code(204).send();
  });
}
