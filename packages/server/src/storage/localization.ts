import type { Db } from './db.js';

/**
 * A realm's own texts by locale and message key (Keycloak's realm localization texts: realm files'
 * `localizationTexts` and the admin API's `/localization`). Stored and served; the login pages do not read them.
 */
export class LocalizationRepository {
  constructor(private readonly db: Db) {}

  /** The locales that have texts, sorted. */
  async locales(realmId: string, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('realm_localization').select('locale').distinct().where('realm_id', '=', realmId).orderBy('locale').execute();
    return rows.map((r) => r.locale);
  }

  /** One locale's texts by key. */
  async texts(realmId: string, locale: string, db: Db = this.db): Promise<Record<string, string>> {
    const rows = await db.selectFrom('realm_localization').select(['message_key', 'text']).where('realm_id', '=', realmId).where('locale', '=', locale).orderBy('message_key').execute();
    return Object.fromEntries(rows.map((r) => [r.message_key, r.text]));
  }

  /** Every locale's texts (an export), locales and keys sorted. */
  async all(realmId: string, db: Db = this.db): Promise<Record<string, Record<string, string>>> {
    const rows = await db.selectFrom('realm_localization').select(['locale', 'message_key', 'text']).where('realm_id', '=', realmId).orderBy('locale').orderBy('message_key').execute();
    const out: Record<string, Record<string, string>> = {};
    for (const r of rows) (out[r.locale] ??= {})[r.message_key] = r.text;
    return out;
  }

  /** Sets these texts of one locale, each added or replaced; the locale's other texts stay. */
  async save(realmId: string, locale: string, texts: Record<string, string>, db: Db = this.db): Promise<void> {
    for (const [key, text] of Object.entries(texts)) {
      await db
        .insertInto('realm_localization')
        .values({ realm_id: realmId, locale, message_key: key, text })
        .onConflict((oc) => oc.columns(['realm_id', 'locale', 'message_key']).doUpdateSet({ text }))
        .execute();
    }
  }

  /** Whether there was such a text to delete. */
  async deleteText(realmId: string, locale: string, key: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('realm_localization').where('realm_id', '=', realmId).where('locale', '=', locale).where('message_key', '=', key).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Whether the locale had texts to delete. */
  async deleteLocale(realmId: string, locale: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('realm_localization').where('realm_id', '=', realmId).where('locale', '=', locale).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
