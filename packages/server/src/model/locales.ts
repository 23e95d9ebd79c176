import type { Realm } from './types.js';

/** A locale as Keycloak names them (`en`, `pt-BR`, `zh_Hant_TW`): letters, then up to three subtags; never markup or a path. */
export const LOCALE_TAG = /^[a-zA-Z]{2,8}([-_][a-zA-Z0-9]{1,8}){0,3}$/;

/** A realm's internationalization settings (Keycloak's representation fields, kept as realm attributes of those names). */
export interface RealmLocales {
  readonly enabled: boolean;
  /** The supported locales, the default among them. */
  readonly supported: readonly string[];
  readonly defaultLocale: string;
}

/**
 * Read once per realm version: a frozen attributes object is the configuration cache's (storage/config-cache.ts),
 * shared by every request until the realm changes, when the cache loads a new one (on every node). A realm being
 * edited (not frozen) is read each time.
 */
const readOnce = new WeakMap<object, RealmLocales>();

/** A realm's internationalization settings; the result is frozen (shared when the realm is the cache's). */
export function realmLocales(realm: Pick<Realm, 'attributes'>): RealmLocales {
  const attributes = realm.attributes ?? {};
  const known = readOnce.get(attributes);
  if (known) return known;
  const defaultLocale = attributes.defaultLocale && LOCALE_TAG.test(attributes.defaultLocale) ? attributes.defaultLocale : 'en';
  const listed = (attributes.supportedLocales ?? '').split(',').filter((l) => LOCALE_TAG.test(l));
  const supported = Object.freeze(listed.includes(defaultLocale) ? listed : [defaultLocale, ...listed]) as string[];
  const locales = Object.freeze({ enabled: attributes.internationalizationEnabled === 'true', supported, defaultLocale });
  if (Object.isFrozen(attributes)) readOnce.set(attributes, locales);
  return locales;
}
