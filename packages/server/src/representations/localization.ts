import { LOCALE_TAG } from '../model/locales.js';
import { badRequest, unreadableBody } from '../model/errors.js';

/** A realm's localization texts of one locale: key → text. */
export type LocalizationTexts = Record<string, string>;

// Keycloak keeps a key in a 255-character column and a text as unbounded text; a message of a theme is short.
const KEY_MAX = 255;
const TEXT_MAX = 16384;
const ENTRIES_MAX = 10000;

/** A locale as Keycloak names them (model/locales.ts). */
export const localePattern = LOCALE_TAG;

/** A realm file's `localizationTexts`: texts by locale, then by key. */
export function parseRealmLocalizationTexts(value: unknown, path: string): Record<string, LocalizationTexts> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw unreadableBody(`${path}: must be an object of texts by locale`);
  const out: Record<string, LocalizationTexts> = {};
  for (const [locale, texts] of Object.entries(value)) {
    if (!localePattern.test(locale)) throw badRequest(`${path}.${locale.slice(0, 40)}: not a locale (e.g. "en", "pt-BR")`);
    out[locale] = parseLocalizationTexts(texts, `${path}.${locale}`);
  }
  return out;
}

/** A message key as the admin API's path and a realm file name it: 1 to 255 characters, no NUL. */
export function localizationKey(key: string, path: string): string {
  if (key.length < 1 || key.length > KEY_MAX || key.includes('\u0000')) throw badRequest(`${path}: a key of 1 to ${KEY_MAX} characters`, 'key');
  return key;
}

export function localizationText(text: unknown, path: string): string {
  if (typeof text !== 'string') throw unreadableBody(`${path}: must be a string`);
  if (text.length > TEXT_MAX || text.includes('\u0000')) throw badRequest(`${path}: a text of at most ${TEXT_MAX} characters without NUL`);
  return text;
}

/** One locale's texts (`POST …/localization/{locale}`, a locale of a realm file's `localizationTexts`). */
export function parseLocalizationTexts(value: unknown, path: string): LocalizationTexts {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw unreadableBody(`${path}: must be an object of texts by key`);
  const entries = Object.entries(value);
  if (entries.length > ENTRIES_MAX) throw badRequest(`${path}: at most ${ENTRIES_MAX} texts`);
  const texts: LocalizationTexts = {};
  for (const [key, text] of entries) {
    if (key === '__proto__') throw badRequest(`${path}: an object without a "__proto__" key`);
    texts[localizationKey(key, `${path} key "${key.slice(0, 40)}"`)] = localizationText(text, `${path}.${key}`);
  }
  return texts;
}
