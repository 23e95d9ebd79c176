import type { ClientSession, UserSession } from '../model/types.js';
import type { Selectable } from 'kysely';
import type { Db } from './db.js';
import type { ClientSessionTable, UserSessionTable } from './schema.js';

const toSession = (row: Selectable<UserSessionTable>): UserSession => ({
  id: row.id,
  realmId: row.realm_id,
  userId: row.user_id,
  ipAddress: row.ip_address,
  started: row.started,
  lastRefresh: row.last_refresh,
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

  async create(session: UserSession, db: Db = this.db): Promise<void> {
    await db
      .insertInto('user_session')
      .values({
        id: session.id,
        realm_id: session.realmId,
        user_id: session.userId,
        ip_address: session.ipAddress,
        started: session.started,
        last_refresh: session.lastRefresh,
      })
      .execute();
  }

  async byId(id: string): Promise<UserSession | null> {
    const row = await this.db.selectFrom('user_session').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toSession(row) : null;
  }

  /** The user's sessions, newest first. */
  async forUser(realmId: string, userId: string): Promise<UserSession[]> {
    const rows = await this.db.selectFrom('user_session').selectAll().where('realm_id', '=', realmId).where('user_id', '=', userId).orderBy('started', 'desc').execute();
    return rows.map(toSession);
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
   * Moves the client session's refresh token from `expected` to `next` only if `expected` is still current,
   * so two concurrent uses of one refresh token cannot both succeed.
   */
  async rotateRefreshToken(clientSessionId: string, expected: string, next: string, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('client_session')
      .set({ refresh_token_id: next })
      .where('id', '=', clientSessionId)
      .where('refresh_token_id', '=', expected)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
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
