import type { ClientSession, UserSession } from '../model/types.js';
import type { Selectable } from 'kysely';
import { bool, containsIgnoreCase, flag, isForeignKeyViolation } from './codec.js';
import type { Db } from './db.js';
import type { ClientSessionTable, UserSessionTable } from './schema.js';

const toSession = (row: Selectable<UserSessionTable>): UserSession => ({
  id: row.id,
  realmId: row.realm_id,
  userId: row.user_id,
  ipAddress: row.ip_address,
  started: row.started,
  lastRefresh: row.last_refresh,
  offline: bool(row.offline),
  ...(row.broker_session_id ? { brokerSessionId: row.broker_session_id } : {}),
  ...(row.broker_user_id ? { brokerUserId: row.broker_user_id } : {}),
  ...(row.broker_id_token ? { brokerIdToken: row.broker_id_token } : {}),
});

const toClientSession = (row: Selectable<ClientSessionTable>): ClientSession => ({
  id: row.id,
  sessionId: row.session_id,
  clientId: row.client_id,
  refreshTokenId: row.refresh_token_id,
  scope: row.scope,
  started: row.started,
});

export class SessionRepository {
  constructor(private readonly db: Db) {}

  /** A session no browser cookie can name (password grant, offline): see createBrowserSession. */
  async create(session: UserSession, db: Db = this.db): Promise<void> {
    await this.insert(session, null, db);
  }

  /** The session of a browser sign-in, with the hash of the value its SSO cookie carries. */
  async createBrowserSession(session: UserSession, ssoCookieHash: string): Promise<void> {
    await this.insert(session, ssoCookieHash, this.db);
  }

  private async insert(session: UserSession, ssoCookieHash: string | null, db: Db): Promise<void> {
    await db
      .insertInto('user_session')
      .values({
        id: session.id,
        realm_id: session.realmId,
        user_id: session.userId,
        ip_address: session.ipAddress,
        started: session.started,
        last_refresh: session.lastRefresh,
        offline: flag(session.offline ?? false),
        sso_cookie_hash: ssoCookieHash,
        broker_session_id: session.brokerSessionId ?? null,
        broker_user_id: session.brokerUserId ?? null,
        broker_id_token: session.brokerIdToken ?? null,
      })
      .execute();
  }

  /**
   * The realm's sessions a brokered sign-in started with this upstream session (`{alias}.{sid}`), or, without a
   * session id, of this upstream user (`{alias}.{sub}`): what an upstream's back-channel logout ends.
   */
  async byBroker(realmId: string, by: { sessionId: string } | { userId: string }): Promise<UserSession[]> {
    return (await this.byBrokerQuery(realmId, by).execute()).map(toSession);
  }

  /** `byBroker`'s query, apart so a test can ask each planner whether it still takes the partial broker indexes. */
  byBrokerQuery(realmId: string, by: { sessionId: string } | { userId: string }) {
    const query = this.db.selectFrom('user_session').selectAll().where('realm_id', '=', realmId);
    return ('sessionId' in by ? query.where('broker_session_id', '=', by.sessionId) : query.where('broker_user_id', '=', by.userId)).limit(1000);
  }

  async byId(id: string): Promise<UserSession | null> {
    const row = await this.db.selectFrom('user_session').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toSession(row) : null;
  }

  /** A session a browser signed in to, with the hash its SSO cookie must match; null for any other session. */
  async browserSession(id: string): Promise<{ session: UserSession; ssoCookieHash: string } | null> {
    const row = await this.db.selectFrom('user_session').selectAll().where('id', '=', id).where('sso_cookie_hash', 'is not', null).executeTakeFirst();
    return row?.sso_cookie_hash ? { session: toSession(row), ssoCookieHash: row.sso_cookie_hash } : null;
  }

  /** The user's sessions (SSO ones, or with `offline` the offline ones), newest first. */
  async forUser(realmId: string, userId: string, offline = false): Promise<UserSession[]> {
    const rows = await this.db
      .selectFrom('user_session')
      .selectAll()
      .where('realm_id', '=', realmId)
      .where('user_id', '=', userId)
      .where('offline', '=', flag(offline))
      .orderBy('started', 'desc')
      .execute();
    return rows.map(toSession);
  }

  /** The sessions (SSO ones, or with `offline` the offline ones) that hold a client session of this client, newest first. */
  async forClient(clientUuid: string, offline: boolean, options: { first?: number; max?: number } = {}): Promise<UserSession[]> {
    let query = this.db
      .selectFrom('user_session')
      .innerJoin('client_session', 'client_session.session_id', 'user_session.id')
      .selectAll('user_session')
      .where('client_session.client_id', '=', clientUuid)
      .where('user_session.offline', '=', flag(offline))
      .orderBy('user_session.started', 'desc');
    if (options.max !== undefined) query = query.limit(options.max);
    if (options.first) query = query.offset(options.first);
    return (await query.execute()).map(toSession);
  }

  /**
   * A page of the realm's sessions, newest first: SSO or offline ones (both when `offline` is not given), of users
   * whose username contains `username` when given (the admin console's session list).
   */
  async forRealm(realmId: string, options: { offline?: boolean; username?: string; first: number; max: number }): Promise<UserSession[]> {
    let query = this.db
      .selectFrom('user_session')
      .innerJoin('user_entity', 'user_entity.id', 'user_session.user_id')
      .selectAll('user_session')
      .where('user_session.realm_id', '=', realmId)
      .orderBy('user_session.started', 'desc')
      .limit(options.max)
      .offset(options.first);
    if (options.offline !== undefined) query = query.where('user_session.offline', '=', flag(options.offline));
    if (options.username) query = query.where(containsIgnoreCase('user_entity.username', options.username));
    return (await query.execute()).map(toSession);
  }

  /** The client sessions of these user sessions. */
  async clientSessionsOf(sessionIds: string[]): Promise<ClientSession[]> {
    if (sessionIds.length === 0) return [];
    const rows = await this.db.selectFrom('client_session').selectAll().where('session_id', 'in', sessionIds).execute();
    return rows.map(toClientSession);
  }

  async touch(id: string, now: number, db: Db = this.db): Promise<void> {
    await db.updateTable('user_session').set({ last_refresh: now }).where('id', '=', id).execute();
  }

  async delete(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_session').where('id', '=', id).execute();
  }

  /** Every online session of the realm (Keycloak's logout-all); offline sessions stay. */
  async deleteOnlineForRealm(realmId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_session').where('realm_id', '=', realmId).where('offline', '=', flag(false)).execute();
  }

  async deleteForUser(userId: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_session').where('user_id', '=', userId).execute();
  }

  async clientSession(sessionId: string, clientUuid: string): Promise<ClientSession | null> {
    const row = await this.db
      .selectFrom('client_session')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('client_id', '=', clientUuid)
      .executeTakeFirst();
    return row ? toClientSession(row) : null;
  }

  async upsertClientSession(cs: ClientSession, db: Db = this.db): Promise<void> {
    await db
      .insertInto('client_session')
      .values({
        id: cs.id,
        session_id: cs.sessionId,
        client_id: cs.clientId,
        refresh_token_id: cs.refreshTokenId,
        scope: cs.scope,
        started: cs.started,
      })
      .onConflict((oc) =>
        oc.columns(['session_id', 'client_id']).doUpdateSet({ refresh_token_id: cs.refreshTokenId, scope: cs.scope }),
      )
      .execute();
  }

  /**
   * Records a use of the refresh token `presented` of family `reuseId`, whose refresh issues `next`, by Keycloak's
   * rule for the realm's revokeRefreshToken (`maxReuse` is its refreshTokenMaxReuse). Within a family, a token that
   * is neither the one issued last nor the one used last is `stale`; the one used last may be used `maxReuse` more
   * times, then `reuse_exceeded`. Writes are conditional on what was read, so two concurrent uses cannot both count
   * as the first.
   */
  async useRefreshToken(clientSessionId: string, reuseId: string, presented: string, next: string, maxReuse: number): Promise<'ok' | 'stale' | 'reuse_exceeded'> {
    const row = await this.db
      .selectFrom('refresh_token_family')
      .selectAll()
      .where('client_session_id', '=', clientSessionId)
      .where('reuse_id', '=', reuseId)
      .executeTakeFirst();
    if (!row) {
      // The family's first refresh: only the token its sign-in issued exists.
      try {
        const inserted = await this.db
          .insertInto('refresh_token_family')
          .values({ client_session_id: clientSessionId, reuse_id: reuseId, used_token: presented, uses: 1, latest_token: next })
          .onConflict((oc) => oc.columns(['client_session_id', 'reuse_id']).doNothing())
          .executeTakeFirst();
        return Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1 ? 'ok' : 'reuse_exceeded';
      } catch (error) {
        // A concurrent refusal ended the client session between the read and this write.
        if (isForeignKeyViolation(error)) return 'reuse_exceeded';
        throw error;
      }
    }
    if (presented !== row.used_token && presented !== row.latest_token) return 'stale';
    const uses = presented === row.used_token ? row.uses : 0;
    if (uses > maxReuse) return 'reuse_exceeded';
    const result = await this.db
      .updateTable('refresh_token_family')
      .set({ used_token: presented, uses: uses + 1, latest_token: next })
      .where('client_session_id', '=', clientSessionId)
      .where('reuse_id', '=', reuseId)
      .where('used_token', '=', row.used_token)
      .where('uses', '=', row.uses)
      .where('latest_token', '=', row.latest_token)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1 ? 'ok' : 'reuse_exceeded';
  }

  /** Ends one client's part of a session (Keycloak detaches it): its tokens stop working, the session stays. */
  async deleteClientSession(id: string): Promise<void> {
    await this.db.deleteFrom('client_session').where('id', '=', id).execute();
  }

  async revokeToken(jti: string, expiresAt: number): Promise<void> {
    await this.db
      .insertInto('revoked_token')
      .values({ jti, expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
  }

  async isRevoked(jti: string): Promise<boolean> {
    const row = await this.db.selectFrom('revoked_token').select('jti').where('jti', '=', jti).executeTakeFirst();
    return row !== undefined;
  }

  async purgeExpired(now: number): Promise<void> {
    await this.db.deleteFrom('revoked_token').where('expires_at', '<', now).execute();
  }
}
