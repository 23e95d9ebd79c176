import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from './context.js';
import { newId } from '../credentials/index.js';
import type { Client, Realm, User } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import { recordLoginSuccess } from './brute-force.js';

/** The user session a direct grant opened: the refresh token it will carry is its only handle (no SSO cookie). */
export interface DirectSession {
  id: string;
  started: number;
  refreshTokenId: string;
  scope: string;
}

/**
 * The end of every successful direct grant (the password grant today): the user session and the client's
 * session in one transaction, the tokens (the protocol's, through `issue`), then the LOGIN event, as
 * `completeLogin` is for the browser.
 */
export async function completeDirectLogin<T>(
  ctx: Pick<AuthenticationContext, 'storage' | 'events' | 'hostStore' | 'config'>,
  realm: Realm,
  client: Client,
  user: User,
  grant: { scope: string; details: Record<string, string>; request: RequestInfo },
  issue: (session: DirectSession) => Promise<T>,
): Promise<T> {
  // The whole login succeeded (password and any OTP): brute-force detection forgets the user's failures.
  await recordLoginSuccess(ctx, realm, user);
  const session: DirectSession = { id: newId(), started: Date.now(), refreshTokenId: newId(), scope: grant.scope };
  await ctx.storage.transaction(async (trx) => {
    await ctx.storage.sessions.create({ id: session.id, realmId: realm.id, userId: user.id, ipAddress: grant.request.ipAddress, started: session.started, lastRefresh: session.started }, trx);
    await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: session.id, clientId: client.id, refreshTokenId: session.refreshTokenId, scope: session.scope, started: session.started }, trx);
  });
  const issued = await issue(session);
  await ctx.events.user(realm, {
    type: 'LOGIN',
    clientId: client.clientId,
    userId: user.id,
    sessionId: session.id,
    details: { ...grant.details, username: user.username },
    request: grant.request,
    user: () => userSnapshot(ctx.storage, user),
  });
  return issued;
}

