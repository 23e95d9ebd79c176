import { decodeJwt } from 'jose';
import type { ProtocolContext } from '../context.js';
import { newId } from '../../credentials/index.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Realm, User } from '../../model/types.js';
import { clientScopeSet, effectiveRoles } from '../../services/index.js';
import { scopePlan } from './mappers/index.js';
import type { TokenType } from './tokens.js';

const OFFLINE_ACCESS = 'offline_access';

/**
 * Whether a grant asking for `offline_access` gives an offline token: only when the user holds the realm role
 * `offline_access` within the client's scope (every user does through the realm's default roles). Otherwise
 * Keycloak refuses the grant: 400 `not_allowed` "Offline tokens not allowed for the user or client", recorded as
 * the grant's error event (`onRefusal`).
 */
export async function offlineRequested(
  ctx: Pick<ProtocolContext, 'storage'>,
  realm: Realm,
  client: Client,
  user: User,
  scope: string,
  onRefusal: () => Promise<unknown>,
): Promise<boolean> {
  if (!scope.split(' ').includes(OFFLINE_ACCESS)) return false;
  // Within the client's scope widened by the applied client scopes' role scope mappings (Keycloak's offline_access
  // scope maps the offline_access role, so a client without full scope gets offline tokens through it).
  const { scopeIds } = scopePlan(await clientScopeSet(ctx.storage, client), scope);
  const roles = await effectiveRoles(ctx.storage, realm.id, user.id, client, scopeIds);
  if (roles.realmRoles.includes(OFFLINE_ACCESS)) return true;
  await onRefusal();
  throw oauthError.not_allowed('Offline tokens not allowed for the user or client');
}

/**
 * An offline session for the client: its own user session (offline, so no SSO cookie finds it and logging out of
 * the browser leaves it) and client session, created beside the SSO session the login opened.
 */
export async function openOfflineSession(
  ctx: Pick<ProtocolContext, 'storage'>,
  realm: Realm,
  client: Client,
  user: User,
  scope: string,
  ipAddress: string | null,
): Promise<{ id: string; started: number; refreshTokenId: string }> {
  const session = { id: newId(), started: Date.now(), refreshTokenId: newId() };
  await ctx.storage.transaction(async (trx) => {
    await ctx.storage.sessions.create({ id: session.id, realmId: realm.id, userId: user.id, ipAddress, started: session.started, lastRefresh: session.started, offline: true }, trx);
    await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: session.id, clientId: client.id, refreshTokenId: session.refreshTokenId, scope, started: session.started }, trx);
  });
  return session;
}

/** The type a refresh token claims (`Offline` or `Refresh`), read before verification, which then insists on it. */
export function refreshTokenType(token: string): TokenType {
  try {
    return decodeJwt(token).typ === 'Offline' ? 'Offline' : 'Refresh';
  } catch {
    return 'Refresh';
  }
}
