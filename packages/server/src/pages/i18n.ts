import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Realm } from '../model/types.js';
import { LOCALE_TAG, realmLocales } from '../model/locales.js';

export { LOCALE_TAG, realmLocales };

const messagesDir = fileURLToPath(new URL('./messages/', import.meta.url));

/** Locales written right to left (their language subtag). */
const RTL = new Set(['ar', 'he', 'fa', 'ur']);

/** The built-in bundles, one JSON file per locale (`messages/de.json`), read once. */
export const bundles: Readonly<Record<string, Readonly<Record<string, string>>>> = Object.freeze(
  Object.fromEntries(
    readdirSync(messagesDir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => [f.slice(0, -5), Object.freeze(JSON.parse(readFileSync(messagesDir + f, 'utf8')) as Record<string, string>)]),
  ),
);

/** English sentence → key: a text a handler or an extension passes in English is shown in the page's language. */
const keyOfEnglish = new Map(Object.entries(bundles.en).map(([key, text]) => [text, key]));

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * English sentences with parameters (`Linking {0} failed.`) as patterns: a handler's sentence with its parameters
 * filled in is shown as that key's text in the page's language, with the same parameters. Only `{n}` parameters
 * between literal text (a plural form or two parameters side by side would be ambiguous); the longest literal first.
 */
const englishPatterns: { key: string; pattern: RegExp; order: number[] }[] = Object.entries(bundles.en)
  .filter(([, text]) => /\{\d+\}/.test(text) && !/\{\d+,/.test(text) && !/\{\d+\}\{\d+\}/.test(text))
  .map(([key, text]) => {
    const order: number[] = [];
    const source = text
      .split(/(\{\d+\})/)
      .map((part) => {
        const m = /^\{(\d+)\}$/.exec(part);
        if (!m) return escapeRegExp(part);
        order.push(Number(m[1]));
        return '(.+?)';
      })
      .join('');
    return { key, pattern: new RegExp(`^${source}$`, 's'), order, literal: text.replace(/\{\d+\}/g, '').length };
  })
  .sort((a, b) => b.literal - a.literal)
  .map(({ key, pattern, order }) => ({ key, pattern, order }));

/** The key and parameters of an English sentence of the English bundle (exact, or a sentence with its parameters filled in). */
export function englishKey(text: string): { key: string; params: string[] } | null {
  const key = keyOfEnglish.get(text);
  if (key) return { key, params: [] };
  if (text.length > 500) return null;
  for (const { key, pattern, order } of englishPatterns) {
    const m = pattern.exec(text);
    if (!m) continue;
    const params: string[] = [];
    order.forEach((index, i) => (params[index] = m[i + 1]));
    return { key, params };
  }
  return null;
}

/** Where a locale may come from, in Keycloak's order of precedence. */
export interface LocaleHints {
  /** The language menu's choice on this request. */
  kcLocale?: string;
  /** The user's `locale` attribute. */
  userLocale?: string;
  /** The authorization request's `ui_locales` (space separated). */
  uiLocales?: string;
  /** The KEYCLOAK_LOCALE cookie. */
  cookie?: string;
  acceptLanguage?: string;
}

/**
 * Accept-Language headers already read: browsers send a handful of distinct values, each on every page, so each is
 * parsed once (bounded: a client sending a new value each time only refills it).
 */
const acceptLanguageRead = new Map<string, readonly string[]>();

/** Accept-Language's tags, best first (`q=0` dropped). */
function acceptLanguageTags(header: string): readonly string[] {
  if (!header) return [];
  let tags = acceptLanguageRead.get(header);
  if (tags === undefined) {
    tags = Object.freeze(parseAcceptLanguage(header));
    if (header.length <= 200) {
      if (acceptLanguageRead.size >= 200) acceptLanguageRead.clear();
      acceptLanguageRead.set(header, tags);
    }
  }
  return tags;
}

function parseAcceptLanguage(header: string): string[] {
  return header
    .split(',')
    .slice(0, 20)
    .map((part, i) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)).find(Boolean);
      return { tag: tag.trim(), q: q ? Number(q[1]) : 1, i };
    })
    .filter((t) => t.q > 0 && t.tag !== '*')
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((t) => t.tag);
}

/** The supported locale a tag names: the same tag (any case), else the same language (`de-AT` → `de`, `pt` → `pt-BR`). */
export function matchLocale(tag: string | undefined, supported: readonly string[]): string | null {
  if (!tag || !LOCALE_TAG.test(tag)) return null;
  const lower = tag.toLowerCase();
  const exact = supported.find((s) => s.toLowerCase() === lower);
  if (exact) return exact;
  const language = lower.split(/[-_]/)[0];
  return supported.find((s) => s.toLowerCase() === language) ?? supported.find((s) => s.toLowerCase().split(/[-_]/)[0] === language) ?? null;
}

/**
 * The page's locale: with internationalization off, the realm default; else the first of the language menu's choice,
 * the user's attribute, ui_locales, the cookie, Accept-Language that the realm supports, then the realm default.
 */
export function selectLocale(realm: Pick<Realm, 'attributes'>, hints: LocaleHints): string {
  const { enabled, supported, defaultLocale } = realmLocales(realm);
  if (!enabled) return defaultLocale;
  const candidates = [
    hints.kcLocale,
    hints.userLocale,
    ...(hints.uiLocales ?? '').split(' ').slice(0, 10),
    hints.cookie,
    ...acceptLanguageTags(hints.acceptLanguage ?? ''),
  ];
  for (const candidate of candidates) {
    const found = matchLocale(candidate, supported);
    if (found) return found;
  }
  return defaultLocale;
}

/** Fills `{0}`, `{1}` … and `{0,plural,one{…} other{…}}` (`#` is the number) in a message. */
export function formatMessage(locale: string, pattern: string, params: readonly unknown[]): string {
  let rules: Intl.PluralRules | undefined;
  return pattern.replace(/\{(\d+)(?:,plural,((?:[a-z=0-9]+\s*\{[^{}]*\}\s*)+))?\}/g, (_all, index: string, forms: string | undefined) => {
    const value = params[Number(index)];
    if (forms === undefined) return value === undefined ? '' : String(value);
    const n = Number(value);
    rules ??= new Intl.PluralRules(locale);
    const choices = Object.fromEntries([...forms.matchAll(/([a-z=0-9]+)\s*\{([^{}]*)\}/g)].map((m) => [m[1], m[2]]));
    const form = choices[`=${n}`] ?? choices[rules.select(n)] ?? choices.other ?? '';
    return form.replace(/#/g, String(n));
  });
}

/** Every text of a locale as Keycloak's theme resource lists them: `[{ key, value }]` sorted by key, overrides applied. */
export function effectiveMessages(locale: string, overrides: Record<string, Record<string, string>> = {}, theme?: ThemeTexts): { key: string; value: string }[] {
  const merged: Record<string, string> = Object.assign({}, ...messageLayers(locale, overrides, theme).reverse());
  return Object.keys(merged)
    .sort()
    .map((key) => ({ key, value: merged[key] }));
}

/** A locale's texts: `msg` by key, `text` for a text that may be a key or an English sentence of the bundle. */
export interface Translator {
  locale: string;
  dir: 'ltr' | 'rtl';
  msg(key: string, ...params: unknown[]): string;
  text(keyOrText: string): string;
}

/** A theme's texts of a locale (pages/themes.ts, its parents' under its own), undefined when it has none. */
export type ThemeTexts = (locale: string) => Record<string, string> | undefined;

/** Where a locale's texts come from, first wins: overrides, theme, bundle of the locale, then of its language, then English. */
function messageLayers(locale: string, overrides: Record<string, Record<string, string>>, theme?: ThemeTexts): Record<string, string>[] {
  const language = locale.split(/[-_]/)[0];
  const forLocale = (l: string) => [overrides[l], theme?.(l), bundles[l]];
  const layers = [...forLocale(locale), ...(language !== locale ? forLocale(language) : []), ...(language !== 'en' ? [theme?.('en'), bundles.en] : [])];
  return layers.filter((l): l is Record<string, string> => Boolean(l));
}

/**
 * The texts of a locale: the realm's overrides of the locale, then the realm's theme's texts and the bundle of the
 * locale, of its language, then English; an unknown key is shown as the key (as Keycloak does).
 */
export function translator(locale: string, overrides: Record<string, Record<string, string>> = {}, theme?: ThemeTexts): Translator {
  const language = locale.split(/[-_]/)[0];
  const layers = messageLayers(locale, overrides, theme);
  const lookup = (key: string) => {
    for (const layer of layers) if (Object.hasOwn(layer, key)) return layer[key];
    return undefined;
  };
  const msg = (key: string, ...params: unknown[]) => {
    const pattern = lookup(key);
    return pattern === undefined ? key : formatMessage(locale, pattern, params);
  };
  return {
    locale,
    dir: RTL.has(language.toLowerCase()) ? 'rtl' : 'ltr',
    msg,
    text: (keyOrText: string) => {
      if (typeof keyOrText !== 'string') return keyOrText;
      if (/^[A-Za-z][A-Za-z0-9.-]*$/.test(keyOrText) && lookup(keyOrText) !== undefined) return msg(keyOrText);
      const found = englishKey(keyOrText);
      return found ? msg(found.key, ...found.params) : keyOrText;
    },
  };
}

/** The language menu's names, made once per locale (an Intl.DisplayNames costs more than the rest of a page's texts). */
const localeLabels = new Map<string, string>();

/** The name of a locale in its own language, for the language menu. */
export function localeLabel(locale: string): string {
  let label = localeLabels.get(locale);
  if (label === undefined) {
    label = displayName(locale);
    if (localeLabels.size < 500) localeLabels.set(locale, label);
  }
  return label;
}

function displayName(locale: string): string {
  try {
    const name = new Intl.DisplayNames([locale], { type: 'language' }).of(locale);
    return name ? name.charAt(0).toLocaleUpperCase(locale) + name.slice(1) : locale;
  } catch {
    return locale;
  }
}
