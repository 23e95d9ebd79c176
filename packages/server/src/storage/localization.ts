import type { ConfigCache } from './config-cache.js';
import type { Db } from './db.js';

/**
 * A realm's own texts by locale and message key (Keycloak's realm localization texts: realm files'
 * `localizationTexts` and the admin API's `/localization`). The pages and e-mails read them (pages/i18n.ts) over the built-in bundles.
 */
export class LocalizationRepository {
  constructor(
    private readonly db: Db,
    private readonly cache?: ConfigCache,
  ) {}

  /** Every locale's texts through the configuration cache: what the pages and e-mails read on every render. */
  async cachedAll(realmId: string): Promise<Record<string, Record<string, string>>> {
    if (!this.cache) return this.all(realmId);
    return (await this.cache.get(`localization\0${realmId}`, ['realm_localization'], () => this.all(realmId))) ?? {};
  }

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
