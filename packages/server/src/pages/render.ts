import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Realm } from '../model/types.js';
import { BROWSER_SECURITY_HEADERS } from '../model/browser-security-headers.js';
import { CLIENT_LOGIN_THEME } from '../model/themes.js';
import { escapeHtml, readCookie, secureCookies, setCookie } from '../http/index.js';
import { realmCookiePath } from '../authentication/index.js';
import { bundles, localeLabel, matchLocale, realmLocales, selectLocale, translator, type LocaleHints, type ThemeTexts, type Translator } from './i18n.js';
import type { RealmLocales } from '../model/locales.js';
import { BUILTIN_THEME, templateEngine, themeMessages, themeResource, Themes, type Theme, type ThemeType } from './themes.js';

const builtinStylesheet = readFileSync(fileURLToPath(new URL('./static/style.css', import.meta.url)));

/** An http(s) origin as URL.origin writes it: nothing that could end or extend a CSP directive. */
const isOrigin = (origin: string) => /^https?:\/\/[a-z0-9.\-[\]:]+$/i.test(origin);

export interface FieldErrors {
  [field: string]: string;
}

/**
 * The realm's browserSecurityHeaders as response headers ("" leaves one out); `frameSrc` adds the origins a page may
 * frame to its Content-Security-Policy.
 */
export function pageSecurityHeaders(realm: Pick<Realm, 'browserSecurityHeaders'>, frameSrc?: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [field, name] of Object.entries(BROWSER_SECURITY_HEADERS)) {
    const value = realm.browserSecurityHeaders[field as keyof typeof BROWSER_SECURITY_HEADERS];
    if (value) headers[name] = value;
  }
  if (frameSrc?.length) {
    const policy = headers['content-security-policy'];
    const framed = `frame-src 'self' ${frameSrc.filter(isOrigin).join(' ')}`;
    headers['content-security-policy'] = policy ? `${policy.replace(/;\s*$/, '')}; ${framed}` : framed;
  }
  return headers;
}

/** Keycloak's cookie remembering the language menu's choice for the browser. */
export const LOCALE_COOKIE = 'KEYCLOAK_LOCALE';

/** What the pages know of a request's locale besides the request itself (the auth session's ui_locales, the user). */
const requestHints = new WeakMap<FastifyRequest, LocaleHints>();

/** Adds to what decides this request's locale (`uiLocales` from the auth session, `userLocale` once the user is known). */
export function addLocaleHints(request: FastifyRequest, hints: LocaleHints): void {
  requestHints.set(request, { ...requestHints.get(request), ...hints });
  pageTranslators.delete(request);
}

/** The client a request's sign-in is for (its auth session's), whose `login_theme` attribute may name the page's theme. */
const pageClients = new WeakMap<FastifyRequest, string>();

/** The sign-in this request's page belongs to is for this client (Keycloak's client attribute `login_theme` applies). */
export function setPageClient(request: FastifyRequest, clientId: string): void {
  if (pageClients.get(request) === clientId) return;
  pageClients.set(request, clientId);
  pageTranslators.delete(request);
}


/** The texts a request's page was given, so a page's parts (the protectors' markup) share them and one cookie is set. */
const pageTranslators = new WeakMap<FastifyRequest, Translator>();

/** A realm's localization overrides by locale and key (cached, invalidated on every node when they change). */
export type RealmTexts = (realmId: string) => Promise<Record<string, Record<string, string>>>;

/** A stylesheet or other resource as served: its bytes and an entity tag. */
export interface ServedResource {
  body: Buffer;
  etag: string;
}

const served = (body: Buffer): ServedResource => ({ body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });

/** The page that is the account theme's (the server-rendered account page); every other page is the login theme's. */
const ACCOUNT_TEMPLATES = new Set(['account']);

/** Templates with auto-escaping; the realm's theme's file of the same name wins over the built-in one (pages/themes.ts). */
export class PageRenderer {
  private readonly eta: Eta;
  private readonly builtinStylesheet = served(builtinStylesheet);
  private readonly warned = new Set<string>();

  constructor(
    readonly themes: Themes = new Themes(),
    private readonly realmTexts: RealmTexts = async () => ({}),
    private readonly hostname: string | null = null,
    private readonly log: (level: 'warn' | 'error', fields: Record<string, unknown>, message: string) => void = () => {},
    private readonly clientAttributes: (realmId: string, clientId: string) => Promise<Record<string, string> | undefined> = async () => undefined,
  ) {
    this.eta = templateEngine([], false);
  }

  /**
   * The realm's theme of a type: undefined for the built-in one. A name the theme directory does not have (a realm
   * file's, or a theme removed since) is the built-in theme, with one warning per realm and name, as Keycloak falls back.
   */
  theme(realm: Pick<Realm, 'name' | 'attributes'>, type: ThemeType): Theme | undefined {
    const name = realm.attributes?.[`${type}Theme`];
    if (!name) return undefined;
    const theme = this.themes.get(type, name);
    if (!theme && !this.themes.has(type, name) && !this.warned.has(`${realm.name}\0${type}\0${name}`)) {
      this.warned.add(`${realm.name}\0${type}\0${name}`);
      this.log('warn', { realm: realm.name, theme: name, type }, 'realm names a theme the theme directory does not have; its pages use the built-in theme');
    }
    return theme;
  }

  /**
   * The theme of a request's page: for the login type, the `login_theme` of the client the sign-in is for when the
   * theme directory has it (a built-in name is the built-in theme; a name it lacks falls back to the realm's, with
   * one warning), else the realm's.
   */
  async pageTheme(request: FastifyRequest, realm: Pick<Realm, 'id' | 'name' | 'attributes'>, type: ThemeType): Promise<Theme | undefined> {
    const clientId = type === 'login' ? pageClients.get(request) : undefined;
    const name = clientId && realm.id ? (await this.clientAttributes(realm.id, clientId))?.[CLIENT_LOGIN_THEME] : undefined;
    if (name) {
      if (this.themes.has('login', name)) return this.themes.get('login', name);
      if (!this.warned.has(`${realm.name}\0client\0${clientId}\0${name}`)) {
        this.warned.add(`${realm.name}\0client\0${clientId}\0${name}`);
        this.log('warn', { realm: realm.name, clientId, theme: name }, "a client's login_theme names a theme the theme directory does not have; its pages use the realm's theme");
      }
    }
    return this.theme(realm, type);
  }

  /** Where a login page's theme resources are: the realm's path, or, for a client's other theme, that theme's own path below it. */
  private resourcesPath(realm: Pick<Realm, 'name' | 'attributes'>, theme: Theme | undefined): string {
    const base = `/realms/${encodeURIComponent(realm.name)}/login-actions/resources`;
    return theme !== this.theme(realm, 'login') ? `${base}/themes/${encodeURIComponent(theme?.name ?? BUILTIN_THEME.login)}` : base;
  }

  /**
   * `frameSrc`: origins the page may frame (the front-channel logout page's clients), besides its own.
   * `menuTarget`: where the language menu's links go, a login-actions URL whose GET shows this page again in the
   * browser's auth session (Keycloak's shape, pages.ts formPage); without it, the request's own URL.
   */
  async send(reply: FastifyReply, realm: Realm, template: string, data: Record<string, unknown>, status = 200, options: PageOptions = {}): Promise<FastifyReply> {
    const type: ThemeType = ACCOUNT_TEMPLATES.has(template) ? 'account' : 'login';
    const t = await this.pageTranslator(reply, realm, type);
    const theme = await this.pageTheme(reply.request, realm, type);
    const menu = options.menuTarget === undefined ? menuLinks(reply.request, realm) : menuLinksTo(options.menuTarget, realm);
    const it = {
      realmName: realm.name,
      realmTitle: realm.displayName || realm.name,
      resources: type === 'login' ? this.resourcesPath(realm, theme) : `/realms/${encodeURIComponent(realm.name)}/login-actions/resources`,
      values: {},
      ...data,
      ...translatedTexts(t, data),
      locale: t.locale,
      dir: t.dir,
      msg: t.msg,
      // The menu as entries (a theme's templates may write their own) and as the built-in layout's markup.
      localeMenu: localeMenuOf(menu, t.locale),
      localeMenuHtml: localeMenuMarkup(menu, t.locale),
    };
    let html: string;
    try {
      html = await (theme?.eta ?? this.eta).renderAsync(template, it);
    } catch (error) {
      // Never a broken page: a theme's template that fails here (start-up checked its syntax, not what it reads) is
      // logged with its file and line, and the page is the built-in one.
      if (!theme) throw error;
      this.log('error', { realm: realm.name, theme: theme.name, template, err: error }, "a theme's template failed; the page is the built-in one");
      html = await this.eta.renderAsync(template, it);
    }
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .headers({ 'cache-control': 'no-store', ...pageSecurityHeaders(realm, options.frameSrc) })
      .send(html);
  }

  /** The texts of a locale for this realm: its overrides over the built-in bundles. */
  async translator(realm: Pick<Realm, 'id' | 'name' | 'attributes'>, locale: string, type: ThemeType = 'login'): Promise<Translator> {
    return this.textsOf(realm.id ? await this.realmTexts(realm.id) : {}, this.theme(realm, type), locale);
  }

  /**
   * Translators made once per realm overrides version, theme and locale. The overrides object is the configuration
   * cache's (storage/localization.ts `cachedAll`): frozen, the same on every request until an override changes, when
   * the cache loads a new one on this node and, through its invalidation channel, on every other; the translators
   * made for the old one are then no longer found (and are collected with it). Overrides that are not frozen (the
   * cache bypassed) make a translator each time.
   */
  private readonly translators = new WeakMap<object, Map<Theme | undefined, Map<string, Translator>>>();

  private textsOf(overrides: Record<string, Record<string, string>>, theme: Theme | undefined, locale: string): Translator {
    const make = () => translator(locale, overrides, theme ? (l) => themeMessages(theme, l) : undefined);
    if (!Object.isFrozen(overrides)) return make();
    let byTheme = this.translators.get(overrides);
    if (!byTheme) this.translators.set(overrides, (byTheme = new Map()));
    let byLocale = byTheme.get(theme);
    if (!byLocale) byTheme.set(theme, (byLocale = new Map()));
    let t = byLocale.get(locale);
    if (!t) {
      t = make();
      // Locales come from the realm's supported list (i18n.ts selectLocale), so this stays small; bounded anyway.
      if (byLocale.size < 100) byLocale.set(locale, t);
    }
    return t;
  }

  /** The realm's theme's texts of a type, by locale (undefined without a theme). */
  themeTexts(realm: Pick<Realm, 'name' | 'attributes'>, type: ThemeType): ThemeTexts | undefined {
    const theme = this.theme(realm, type);
    return theme ? (locale) => themeMessages(theme, locale) : undefined;
  }

  /**
   * The locale of the page this request answers (i18n.ts's precedence), with its texts. A language menu choice
   * (`kc_locale`) the realm supports is remembered in Keycloak's KEYCLOAK_LOCALE cookie.
   */
  async pageTranslator(reply: FastifyReply, realm: Realm, type: ThemeType = 'login'): Promise<Translator> {
    const request = reply.request;
    const known = pageTranslators.get(request);
    if (known) return known;
    const t = await this.selectTranslator(reply, realm, type);
    pageTranslators.set(request, t);
    return t;
  }

  private async selectTranslator(reply: FastifyReply, realm: Realm, type: ThemeType): Promise<Translator> {
    const request = reply.request;
    const query = (request.query ?? {}) as Record<string, unknown>;
    const kcLocale = typeof query.kc_locale === 'string' ? query.kc_locale : undefined;
    const hints: LocaleHints = {
      uiLocales: typeof query.ui_locales === 'string' ? query.ui_locales : undefined,
      ...requestHints.get(request),
      kcLocale,
      cookie: readCookie(request, LOCALE_COOKIE) ?? undefined,
      acceptLanguage: request.headers['accept-language'],
    };
    const locale = selectLocale(realm, hints);
    const { enabled, supported } = realmLocales(realm);
    if (kcLocale && realm.id && enabled && matchLocale(kcLocale, supported) === locale) {
      setCookie(reply, LOCALE_COOKIE, locale, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname) });
    }
    const theme = await this.pageTheme(request, realm, type);
    return this.textsOf(realm.id ? await this.realmTexts(realm.id) : {}, theme, locale);
  }

  /**
   * serverinfo's `themes` as Keycloak's (`{ login: [{ name, locales }], … }`): the built-in theme of each type, then
   * the theme directory's, which the console's Realm settings → Themes tab offers. A theme's locales are the built-in
   * bundles' and its own.
   */
  serverInfoThemes(): Record<string, { name: string; locales: string[] }[]> {
    const builtin = Object.keys(bundles).sort();
    const list = (type: ThemeType) => [
      { name: BUILTIN_THEME[type], locales: builtin },
      ...this.themes.names(type).map((name) => ({ name, locales: [...new Set([...builtin, ...this.themes.locales(this.themes.get(type, name)!)])].sort() })),
    ];
    const fixed = (name: string) => [{ name, locales: builtin }];
    return { login: list('login'), account: list('account'), email: list('email'), admin: fixed('keycloak.v2'), welcome: fixed('keycloak'), common: fixed('keycloak') };
  }

  /** The realm's stylesheet: its login theme's `resources/style.css` (or a parent's) when it has one, else the built-in one. */
  stylesheet(realm: Pick<Realm, 'name' | 'attributes'>): ServedResource {
    const file = themeResource(this.theme(realm, 'login'), 'style.css');
    return file ? this.resourceFile(file) : this.builtinStylesheet;
  }

  /**
   * The realm's e-mail theme's bodies, or undefined when it has none: `render(kind, name, data)` is the theme's body
   * of that e-mail, or null when the theme has no such template or its template fails (logged with the file and line:
   * the e-mail then has the built-in body, never a broken one).
   */
  mailTemplates(realm: Pick<Realm, 'name' | 'attributes'>): MailTemplates | undefined {
    const theme = this.theme(realm, 'email');
    const engines = theme?.mailEta;
    if (!theme || !engines || theme.chain.every((t) => t.mailTemplates.size === 0)) return undefined;
    return {
      render: (kind, name, data) => {
        if (!theme.chain.some((t) => t.mailTemplates.has(`${kind}/${name}.eta`))) return null;
        try {
          return engines[kind].render(name, data);
        } catch (error) {
          this.log('error', { realm: realm.name, theme: theme.name, template: `${kind}/${name}.eta`, err: error }, "an e-mail theme's template failed; the e-mail has the built-in body");
          return null;
        }
      },
    };
  }

  /** A login theme of the directory by name (a client's `login_theme`), for its resources' own path; undefined if none. */
  loginTheme(name: string): Theme | undefined {
    return this.themes.get('login', name);
  }

  /** A theme's stylesheet (its `resources/style.css` or a parent's), else the built-in one. */
  themeStylesheet(theme: Theme): ServedResource {
    const file = themeResource(theme, 'style.css');
    return file ? this.resourceFile(file) : this.builtinStylesheet;
  }

  /** A theme's resource by its path below `resources/`, or null. */
  themeResourceFile(theme: Theme, path: string): (ServedResource & { file: string }) | null {
    const file = themeResource(theme, path);
    return file ? { ...this.resourceFile(file), file } : null;
  }

  /** A resource of the realm's login theme by its path below `resources/` (`img/logo.png`), or null. */
  resource(realm: Pick<Realm, 'name' | 'attributes'>, path: string): (ServedResource & { file: string }) | null {
    const file = themeResource(this.theme(realm, 'login'), path);
    return file ? { ...this.resourceFile(file), file } : null;
  }

  private readonly resourceCache = new Map<string, ServedResource>();

  /** A theme's file, read once (themes are read at start-up; a restart takes changes). */
  private resourceFile(file: string): ServedResource {
    const known = this.resourceCache.get(file);
    if (known) return known;
    const resource = served(readFileSync(file));
    // Small files (style sheets, icons, logos) are kept; a large image is read on each request.
    if (resource.body.length <= 512 * 1024) this.resourceCache.set(file, resource);
    return resource;
  }
}

/** How a page is sent besides its template and data (PageRenderer.send). */
export interface PageOptions {
  frameSrc?: string[];
  menuTarget?: string;
}

/** An e-mail theme's bodies (pages/emails.ts): the body of one kind of one e-mail, or null for the built-in one. */
export interface MailTemplates {
  render(kind: 'html' | 'text', name: string, data: Record<string, unknown>): string | null;
}

/** The texts handlers pass (errors, a message, an error or info page's title, text and link), in the page's language. */
function translatedTexts(t: Translator, data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    errors: Object.fromEntries(Object.entries((data.errors ?? {}) as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? t.text(v) : v])),
  };
  const message = data.message as { type: string; text: string } | undefined;
  if (message && typeof message.text === 'string') out.message = { ...message, text: t.text(message.text) };
  for (const key of ['title', 'text', 'error', 'hint', 'label']) if (typeof data[key] === 'string') out[key] = t.text(data[key] as string);
  if (Array.isArray(data.ways)) out.ways = (data.ways as { name?: unknown; help?: unknown }[]).map((w) => ({ ...w, name: typeof w.name === 'string' ? t.text(w.name) : w.name, help: typeof w.help === 'string' ? t.text(w.help) : w.help }));
  const link = data.link as { href: string; label: string } | undefined;
  if (link && typeof link.label === 'string') out.link = { ...link, label: t.text(link.label) };
  return out;
}

/** A language menu entry as made once per realm version: its locale, name, and markup around the page's link. */
interface MenuEntry {
  locale: string;
  label: string;
  /** `<li><a href="`, before the page's link. */
  open: string;
  /** The locale as the link's `kc_locale` value, escaped. */
  value: string;
  /** From the end of the link to `</li>`, without and with `aria-current` (the page's own locale). */
  close: string;
  closeCurrent: string;
}

/**
 * Each supported locale with its name and markup, made once per realm version (the frozen RealmLocales
 * model/locales.ts shares, replaced on every node when the realm changes). Names are written as character
 * references: 日本語 or العربية in the markup would make the whole page a two-byte string, transcoded on the way out.
 */
const menuEntriesOf = new WeakMap<RealmLocales, readonly MenuEntry[]>();

const asciiHtml = (text: string) => escapeHtml(text).replace(/[^\x00-\x7f]/gu, (c) => `&#${c.codePointAt(0)};`);

function menuEntries(locales: RealmLocales): readonly MenuEntry[] {
  let entries = menuEntriesOf.get(locales);
  if (!entries) {
    entries = locales.supported.map((locale) => {
      const label = localeLabel(locale);
      // LOCALE_TAG: letters, digits, `-` and `_` only, nothing to escape in an attribute; escaped anyway.
      const attributes = `lang="${escapeHtml(locale)}" hreflang="${escapeHtml(locale)}" id="kc-locale-${escapeHtml(locale)}"`;
      return {
        locale,
        label,
        open: '<li><a href="',
        value: escapeHtml(encodeURIComponent(locale)),
        close: `" ${attributes}>${asciiHtml(label)}</a></li>`,
        closeCurrent: `" ${attributes} aria-current="true">${asciiHtml(label)}</a></li>`,
      };
    });
    menuEntriesOf.set(locales, entries);
  }
  return entries;
}

/**
 * The language menu's links to a page's login-actions URL (`/realms/r/login-actions/authenticate?client_id=web`)
 * with `kc_locale` added: Keycloak's shape. The auth session is the browser's cookie, so the URL need not carry the
 * authorization request's query, which made each of the links several times as long as the rest of its entry.
 */
function menuLinksTo(target: string, realm: Pick<Realm, 'attributes'>): MenuLinks | null {
  const locales = realmLocales(realm);
  if (!locales.enabled || locales.supported.length < 2) return null;
  return { entries: menuEntries(locales), head: `${target}${target.includes('?') ? '&' : '?'}kc_locale=`, tail: '' };
}

/** The language menu's links, each `head` + locale + `tail`. */
interface MenuLinks {
  entries: readonly MenuEntry[];
  head: string;
  tail: string;
}

/**
 * The realm's supported locales with links to this page's own path and query with `kc_locale` set (a page without a
 * login-actions URL of its own); null when the menu is off, has one locale, or the page was posted elsewhere.
 */
function menuLinks(request: Pick<FastifyRequest, 'url' | 'method'>, realm: Pick<Realm, 'attributes'>): MenuLinks | null {
  const locales = realmLocales(realm);
  if (!locales.enabled || locales.supported.length < 2) return null;
  const url = new URL(request.url, 'http://localhost');
  // A posted page's parameters are in its body: its menu links to the login-actions page a GET shows again.
  if (request.method !== 'GET' && !url.pathname.includes('/login-actions/')) return null;
  // The page's query with `kc_locale` set as URLSearchParams.set would (in the place of the first one, the others
  // dropped, else last), serialized once for all the links rather than once per link.
  const params = [...url.searchParams];
  const at = params.findIndex(([name]) => name === 'kc_locale');
  const others = params.filter(([name]) => name !== 'kc_locale');
  const split = at < 0 ? others.length : at;
  const before = new URLSearchParams(others.slice(0, split)).toString();
  const after = new URLSearchParams(others.slice(split)).toString();
  return { entries: menuEntries(locales), head: `${url.pathname}?${before ? `${before}&` : ''}kc_locale=`, tail: after ? `&${after}` : '' };
}

/** The language menu: the realm's supported locales, each a link to this page with `kc_locale`; none when off or one. */
export function localeMenu(request: Pick<FastifyRequest, 'url' | 'method'>, realm: Pick<Realm, 'attributes'>, current: string): { locale: string; label: string; href: string; current: boolean }[] {
  return localeMenuOf(menuLinks(request, realm), current);
}

function localeMenuOf(links: MenuLinks | null, current: string): { locale: string; label: string; href: string; current: boolean }[] {
  if (!links) return [];
  return links.entries.map(({ locale, label }) => ({ locale, label, href: links.head + encodeURIComponent(locale) + links.tail, current: locale === current }));
}

/**
 * The menu's list items as markup, what the built-in layout writes: the entries' markup is made once per realm
 * version, so per page only the link's two halves are escaped, once for all the links.
 */
function localeMenuMarkup(links: MenuLinks | null, current: string): string {
  if (!links) return '';
  const head = escapeHtml(links.head);
  const tail = escapeHtml(links.tail);
  let html = '';
  for (const entry of links.entries) html += entry.open + head + entry.value + tail + (entry.locale === current ? entry.closeCurrent : entry.close);
  return html;
}
