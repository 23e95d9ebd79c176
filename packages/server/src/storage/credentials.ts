import type { Selectable } from 'kysely';
import type { ConfigCache } from './config-cache.js';
import type { Db } from './db.js';
import type { CredentialTable } from './schema.js';
import { bool, flag, fromJson, toJson } from './codec.js';

/**
 * A realm's setting of one required action (Keycloak's RequiredActionProviderRepresentation). `name`, `providerId`
 * and `config` are what a realm file gave (kept as data); null or absent: the server's defaults for its own action.
 */
export interface RequiredActionSetting {
  alias: string;
  enabled: boolean;
  defaultAction: boolean;
  priority: number;
  name?: string | null;
  providerId?: string | null;
  config?: Record<string, string> | null;
  /** False: a provider of the server's registry the realm unregistered; absent or true: registered. */
  registered?: boolean;
}

/** A stored credential other than the password (Keycloak's CredentialModel): OTP today. */
export interface StoredCredential {
  id: string;
  userId: string;
  type: string;
  userLabel: string | null;
  secretData: Record<string, unknown>;
  credentialData: Record<string, unknown>;
  createdDate: number;
  priority: number;
}

const toCredential = (row: Selectable<CredentialTable>): StoredCredential => ({
  id: row.id,
  userId: row.user_id,
  type: row.type,
  userLabel: row.user_label,
  secretData: fromJson(row.secret_data, {}),
  credentialData: fromJson(row.credential_data, {}),
  createdDate: Number(row.created_date),
  priority: row.priority,
});

/** A user's credentials besides the password, and the required actions set on the user. */
export class CredentialRepository {
  constructor(
    private readonly db: Db,
    private readonly cache: ConfigCache,
  ) {}

  /**
   * The types of the user's credentials besides the password (frozen), through the configuration cache: what every
   * sign-in's flow asks ("has the user an OTP set up?"). Any write to the credential table empties it.
   */
  cachedTypes(userId: string): Promise<readonly string[]> {
    return this.cache.get(`credential-types\0${userId}`, ['credential'], async () => [...new Set((await this.ofUser(userId)).map((c) => c.type))]) as Promise<readonly string[]>;
  }

  /** requiredActions through the configuration cache (frozen): every sign-in's last check. */
  cachedRequiredActions(userId: string): Promise<readonly string[]> {
    return this.cache.get(`required-actions\0${userId}`, ['user_required_action'], () => this.requiredActions(userId)) as Promise<readonly string[]>;
  }

  async ofUser(userId: string, type?: string, db: Db = this.db): Promise<StoredCredential[]> {
    let query = db.selectFrom('credential').selectAll().where('user_id', '=', userId);
    if (type !== undefined) query = query.where('type', '=', type);
    const rows = await query.orderBy('priority').orderBy('created_date').execute();
    return rows.map(toCredential);
  }

  /** The users among `userIds` who have a credential of `type`. */
  async usersWith(userIds: readonly string[], type: string): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const rows = await this.db.selectFrom('credential').select('user_id').distinct().where('type', '=', type).where('user_id', 'in', [...userIds]).execute();
    return new Set(rows.map((r) => r.user_id));
  }

  async insert(credential: StoredCredential, db: Db = this.db): Promise<void> {
    await db
      .insertInto('credential')
      .values({
        id: credential.id,
        user_id: credential.userId,
        type: credential.type,
        user_label: credential.userLabel,
        secret_data: toJson(credential.secretData),
        credential_data: toJson(credential.credentialData),
        created_date: credential.createdDate,
        priority: credential.priority,
      })
      .execute();
  }

  /** The password's priority among the user's credentials (Keycloak's 10 unless moved; migration 0036). */
  async passwordPriority(userId: string, db: Db = this.db): Promise<number> {
    const row = await db.selectFrom('user_entity').select('password_priority').where('id', '=', userId).executeTakeFirst();
    return row ? Number(row.password_priority) : 10;
  }

  /** The password's place among the user's credentials, as a realm file gave it. */
  async setPasswordPriority(userId: string, priority: number, db: Db = this.db): Promise<void> {
    await db.updateTable('user_entity').set({ password_priority: priority }).where('id', '=', userId).execute();
  }

  /**
   * Keycloak's credential order written back: each of the user's credentials, the password among them (`passwordId`),
   * gets the priority of its place (10, 20, …), as Keycloak's moveCredentialTo renumbers them.
   */
  async setOrder(userId: string, orderedIds: readonly string[], passwordId: string | null, db: Db = this.db): Promise<void> {
    for (const [index, id] of orderedIds.entries()) {
      const priority = (index + 1) * 10;
      if (id === passwordId) await db.updateTable('user_entity').set({ password_priority: priority }).where('id', '=', userId).execute();
      else await db.updateTable('credential').set({ priority }).where('user_id', '=', userId).where('id', '=', id).execute();
    }
  }

  /** Names the user's credential `id`; false when the user has none of that id. */
  async setLabel(userId: string, id: string, label: string | null, db: Db = this.db): Promise<boolean> {
    const result = await db.updateTable('credential').set({ user_label: label }).where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /**
   * The credential of `type` whose Keycloak credentialData names `credentialId` (standard Base64, as Keycloak writes
   * it), among the users of `realmId` only: how a passkey names its owner.
   */
  async byWebAuthnId(realmId: string, type: string, credentialId: string, db: Db = this.db): Promise<StoredCredential | null> {
    if (!/^[A-Za-z0-9+/=]{1,2048}$/.test(credentialId)) return null;
    const rows = await db
      .selectFrom('credential')
      .innerJoin('user_entity', 'user_entity.id', 'credential.user_id')
      .selectAll('credential')
      .where('user_entity.realm_id', '=', realmId)
      .where('credential.type', '=', type)
      .where('credential.credential_data', 'like', `%"credentialId":"${credentialId}"%`)
      .execute();
    return rows.length === 1 ? toCredential(rows[0]) : null;
  }

  /**
   * Replaces the data of the user's credential `id` only while it still holds `expected` (compare-and-set: of two
   * sign-ins with one WebAuthn sign counter, one stores it); false when it did not. `secret`, when given, replaces
   * the secret data in the same write (a WebAuthn credential's backup flags with its counter).
   */
  async replaceData(userId: string, id: string, expected: Record<string, unknown>, data: Record<string, unknown>, secret?: Record<string, unknown>, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('credential')
      .set({ credential_data: toJson(data), ...(secret ? { secret_data: toJson(secret) } : {}) })
      .where('user_id', '=', userId)
      .where('id', '=', id)
      .where('credential_data', '=', toJson(expected))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** As replaceData, for the secret and the data together, compare-and-set on the secret (a recovery code taken once). */
  async replaceSecret(userId: string, id: string, expectedSecret: Record<string, unknown>, secret: Record<string, unknown>, data: Record<string, unknown>, db: Db = this.db): Promise<boolean> {
    const result = await db
      .updateTable('credential')
      .set({ secret_data: toJson(secret), credential_data: toJson(data) })
      .where('user_id', '=', userId)
      .where('id', '=', id)
      .where('secret_data', '=', toJson(expectedSecret))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Removes the user's credential `id`; false when the user has none of that id. */
  async delete(userId: string, id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('credential').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async requiredActions(userId: string, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('user_required_action').select('required_action').where('user_id', '=', userId).orderBy('required_action').execute();
    return rows.map((r) => r.required_action);
  }

  /** The required actions of each of `userIds` (users with none are absent). */
  async requiredActionsOf(userIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (userIds.length === 0) return out;
    const rows = await this.db.selectFrom('user_required_action').selectAll().where('user_id', 'in', [...userIds]).orderBy('required_action').execute();
    for (const row of rows) out.set(row.user_id, [...(out.get(row.user_id) ?? []), row.required_action]);
    return out;
  }

  /** Replaces the user's required actions with `actions`. */
  async setRequiredActions(userId: string, actions: readonly string[], db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_required_action').where('user_id', '=', userId).execute();
    const unique = [...new Set(actions)];
    if (unique.length) await db.insertInto('user_required_action').values(unique.map((a) => ({ user_id: userId, required_action: a }))).execute();
  }

  /** Adds a required action to the user, kept as it is when already there (Keycloak's setRequiredActions of an authenticator). */
  async addRequiredAction(userId: string, action: string, db: Db = this.db): Promise<void> {
    await db.insertInto('user_required_action').values({ user_id: userId, required_action: action }).onConflict((oc) => oc.columns(['user_id', 'required_action']).doNothing()).execute();
  }

  async removeRequiredAction(userId: string, action: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_required_action').where('user_id', '=', userId).where('required_action', '=', action).execute();
  }

  /**
   * The realm's stored required actions: the server's own that an administrator changed or a realm file set (the
   * others have their defaults), and those a realm file listed that this server does not carry out (kept as data).
   */
  async realmRequiredActions(realmId: string, db: Db = this.db): Promise<RequiredActionSetting[]> {
    const rows = await db.selectFrom('realm_required_action').selectAll().where('realm_id', '=', realmId).execute();
    return rows.map((r) => ({
      alias: r.alias,
      enabled: bool(r.enabled),
      defaultAction: bool(r.default_action),
      priority: r.priority,
      name: r.name,
      providerId: r.provider_id,
      config: r.config === null ? null : fromJson<Record<string, string>>(r.config, {}),
      registered: r.registered === null || r.registered === undefined ? true : bool(r.registered),
    }));
  }

  /** Removes the realm's row of a required action (one kept as data, unregistered). */
  async deleteRealmRequiredAction(realmId: string, alias: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('realm_required_action').where('realm_id', '=', realmId).where('alias', '=', alias).execute();
  }

  /** Stores the realm's settings of these required actions (each replaces what was stored for its alias). */
  async saveRealmRequiredActions(realmId: string, settings: readonly RequiredActionSetting[], db: Db = this.db): Promise<void> {
    for (const s of settings) {
      const row = {
        enabled: flag(s.enabled),
        default_action: flag(s.defaultAction),
        priority: s.priority,
        name: s.name ?? null,
        provider_id: s.providerId ?? null,
        config: s.config ? toJson(s.config) : null,
        registered: s.registered === false ? flag(false) : null,
      };
      await db
        .insertInto('realm_required_action')
        .values({ realm_id: realmId, alias: s.alias, ...row })
        .onConflict((oc) => oc.columns(['realm_id', 'alias']).doUpdateSet(row))
        .execute();
    }
  }
}
