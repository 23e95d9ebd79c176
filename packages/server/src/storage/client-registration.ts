import type { Db } from './db.js';

export interface InitialAccess {
  id: string;
  realmId: string;
  tokenHash: string;
  /** Seconds since the epoch. */
  timestamp: number;
  /** Seconds; 0 never expires. */
  expiration: number;
  count: number;
  remainingCount: number;
}

export interface RegistrationToken {
  clientId: string;
  realmId: string;
  tokenHash: string;
  registrationAuth: string;
}

type InitialAccessRow = { id: string; realm_id: string; token_hash: string; created_at: number | string; expiration: number | string; count: number | string; remaining_count: number | string };

const toInitialAccess = (r: InitialAccessRow): InitialAccess => ({
  id: r.id,
  realmId: r.realm_id,
  tokenHash: r.token_hash,
  timestamp: Number(r.created_at),
  expiration: Number(r.expiration),
  count: Number(r.count),
  remainingCount: Number(r.remaining_count),
});

/** Dynamic client registration's tokens (hashes only: the tokens are shown once and never stored). */
export class ClientRegistrationRepository {
  constructor(private readonly db: Db) {}

  async insertInitialAccess(model: InitialAccess, db: Db = this.db): Promise<void> {
    await db
      .insertInto('client_initial_access')
      .values({ id: model.id, realm_id: model.realmId, token_hash: model.tokenHash, created_at: model.timestamp, expiration: model.expiration, count: model.count, remaining_count: model.remainingCount })
      .execute();
  }

  async initialAccesses(realmId: string, db: Db = this.db): Promise<InitialAccess[]> {
    const rows = await db.selectFrom('client_initial_access').selectAll().where('realm_id', '=', realmId).orderBy('created_at').orderBy('id').execute();
    return rows.map(toInitialAccess);
  }

  async initialAccessByHash(realmId: string, tokenHash: string, db: Db = this.db): Promise<InitialAccess | null> {
    const row = await db.selectFrom('client_initial_access').selectAll().where('realm_id', '=', realmId).where('token_hash', '=', tokenHash).executeTakeFirst();
    return row ? toInitialAccess(row) : null;
  }

  async deleteInitialAccess(realmId: string, id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('client_initial_access').where('realm_id', '=', realmId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Takes one use of the token, atomically: false when none is left (another request took the last). */
  async takeInitialAccessUse(id: string, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('client_initial_access')
      .set((eb) => ({ remaining_count: eb('remaining_count', '-', 1) }))
      .where('id', '=', id)
      .where('remaining_count', '>', 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async registrationToken(clientId: string, db: Db = this.db): Promise<RegistrationToken | null> {
    const row = await db.selectFrom('client_registration_token').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    return row ? { clientId: row.client_id, realmId: row.realm_id, tokenHash: row.token_hash, registrationAuth: row.registration_auth } : null;
  }

  /** The client's one registration access token becomes this one (the previous is no longer accepted). */
  async setRegistrationToken(token: RegistrationToken, db: Db = this.db): Promise<void> {
    await db.deleteFrom('client_registration_token').where('client_id', '=', token.clientId).execute();
    await db
      .insertInto('client_registration_token')
      .values({ client_id: token.clientId, realm_id: token.realmId, token_hash: token.tokenHash, registration_auth: token.registrationAuth })
      .execute();
  }

  /**
   * Replaces the token only if it is still `expectedHash`: false when another request rotated it first (a token
   * is good for one update).
   */
  async rotateRegistrationToken(clientId: string, expectedHash: string, nextHash: string, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('client_registration_token')
      .set({ token_hash: nextHash })
      .where('client_id', '=', clientId)
      .where('token_hash', '=', expectedHash)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async countClients(realmId: string, db: Db = this.db): Promise<number> {
    const row = await db.selectFrom('client').select((eb) => eb.fn.countAll().as('n')).where('realm_id', '=', realmId).executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
