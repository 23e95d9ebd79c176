import type { UserConsent } from '../model/types.js';
import { fromJson, toJson } from './codec.js';
import type { Db } from './db.js';

/**
 * Users' consents to clients (Keycloak's clientConsents), from realm files and the consent screen: listed and revoked
 * through the admin and account APIs, exported again. A consent goes with its user, its client and its realm (foreign keys).
 */
export class ConsentRepository {
  constructor(private readonly db: Db) {}

  async insert(realmId: string, consent: UserConsent, db: Db = this.db): Promise<void> {
    await db
      .insertInto('user_consent')
      .values({
        user_id: consent.userId,
        client_id: consent.clientId,
        realm_id: realmId,
        granted_client_scopes: toJson(consent.grantedClientScopes),
        created_date: consent.createdDate,
        last_updated_date: consent.lastUpdatedDate,
      })
      .execute();
  }

  /** The consents of these users, each user's list in client order; users without any are absent. */
  async ofUsers(userIds: readonly string[], db: Db = this.db): Promise<Map<string, UserConsent[]>> {
    const byUser = new Map<string, UserConsent[]>();
    for (let i = 0; i < userIds.length; i += 500) {
      const rows = await db.selectFrom('user_consent').selectAll().where('user_id', 'in', userIds.slice(i, i + 500)).orderBy('user_id').orderBy('client_id').execute();
      for (const row of rows) {
        const list = byUser.get(row.user_id) ?? [];
        list.push({
          userId: row.user_id,
          clientId: row.client_id,
          grantedClientScopes: fromJson(row.granted_client_scopes, []),
          createdDate: row.created_date === null ? null : Number(row.created_date),
          lastUpdatedDate: row.last_updated_date === null ? null : Number(row.last_updated_date),
        });
        byUser.set(row.user_id, list);
      }
    }
    return byUser;
  }

  /** The user's consent to the client (internal id), or null. */
  async of(userId: string, clientId: string, db: Db = this.db): Promise<UserConsent | null> {
    const row = await db.selectFrom('user_consent').selectAll().where('user_id', '=', userId).where('client_id', '=', clientId).executeTakeFirst();
    if (!row) return null;
    return {
      userId: row.user_id,
      clientId: row.client_id,
      grantedClientScopes: fromJson(row.granted_client_scopes, []),
      createdDate: row.created_date === null ? null : Number(row.created_date),
      lastUpdatedDate: row.last_updated_date === null ? null : Number(row.last_updated_date),
    };
  }

  /**
   * Adds `scopes` (names) to the user's consent to the client, creating it when there is none (Keycloak's consent
   * screen: what was granted before stays granted). In one transaction, so two grants at once lose neither's scopes.
   */
  async grant(realmId: string, userId: string, clientId: string, scopes: readonly string[], now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const existing = await this.of(userId, clientId, trx);
      if (!existing) {
        await this.insert(realmId, { userId, clientId, grantedClientScopes: [...new Set(scopes)], createdDate: now, lastUpdatedDate: now }, trx);
        return;
      }
      const merged = [...new Set([...existing.grantedClientScopes, ...scopes])];
      await trx
        .updateTable('user_consent')
        .set({ granted_client_scopes: toJson(merged), last_updated_date: now })
        .where('user_id', '=', userId)
        .where('client_id', '=', clientId)
        .execute();
    });
  }

  /** Whether a consent was there to delete. */
  async delete(userId: string, clientId: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('user_consent').where('user_id', '=', userId).where('client_id', '=', clientId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
