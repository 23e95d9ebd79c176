import type { Realm } from './types.js';

/** A locale as Keycloak names them (`en`, `pt-BR`, `zh_Hant_TW`): letters, then up to three subtags; never markup or a path. */
export const LOCALE_TAG = /^[a-zA-Z]{2,8}([-_][a-zA-Z0-9]{1,8}){0,3}$/;

/** A realm's internationalization settings (Keycloak's representation fields, kept as realm attributes of those names). */
export interface RealmLocales {
  enabled: boolean;
  /** The supported locales, the default among them. */
  supported: string[];
  defaultLocale: string;
}

export function realmLocales(realm: Pick<Realm, 'attributes'>): RealmLocales {
  const attributes = realm.attributes ?? {};
  const defaultLocale = attributes.defaultLocale && LOCALE_TAG.test(attributes.defaultLocale) ? attributes.defaultLocale : 'en';
  const listed = (attributes.supportedLocales ?? '').split(',').filter((l) => LOCALE_TAG.test(l));
  const supported = listed.includes(defaultLocale) ? listed : [defaultLocale, ...listed];
  return { enabled: attributes.internationalizationEnabled === 'true', supported, defaultLocale };
}
