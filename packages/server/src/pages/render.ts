import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Realm } from '../model/types.js';
import { readCookie, secureCookies, setCookie } from '../http/index.js';
import { realmCookiePath } from '../authentication/index.js';
import { localeLabel, matchLocale, realmLocales, selectLocale, translator, type LocaleHints, type Translator } from './i18n.js';

const builtinDir = fileURLToPath(new URL('./templates/', import.meta.url));
const staticDir = fileURLToPath(new URL('./static/', import.meta.url));

// Scripts only from this origin: protector and form-action assets are served by their realm resources.
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "form-action 'self' http: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** An http(s) origin as URL.origin writes it: nothing that could end or extend a CSP directive. */
const isOrigin = (origin: string) => /^https?:\/\/[a-z0-9.\-[\]:]+$/i.test(origin);

export interface FieldErrors {
  [field: string]: string;
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

/** The texts a request's page was given, so a page's parts (the protectors' markup) share them and one cookie is set. */
const pageTranslators = new WeakMap<FastifyRequest, Translator>();

/** A realm's localization overrides by locale and key (cached, invalidated on every node when they change). */
export type RealmTexts = (realmId: string) => Promise<Record<string, Record<string, string>>>;

/** Templates with auto-escaping; a theme directory's file of the same name wins over the built-in one. */
export class PageRenderer {
  private readonly eta: Eta;

  constructor(
    private readonly themeDir: string | null,
    private readonly realmTexts: RealmTexts = async () => ({}),
    private readonly hostname: string | null = null,
  ) {
    this.eta = new Eta({ views: builtinDir, autoEscape: true, cache: true, defaultExtension: '.eta' });
    const theme = themeDir ? resolve(themeDir) : null;
    this.eta.resolvePath = (template: string) => {
      const file = template.endsWith('.eta') ? template : `${template}.eta`;
      if (!/^[a-z0-9-]+\.eta$/.test(file)) throw new Error(`bad template name ${template}`);
      if (theme && existsSync(join(theme, file))) return join(theme, file);
      return join(builtinDir, file);
    };
  }

  /** `frameSrc`: origins the page may frame (the front-channel logout page's clients), besides its own. */
  async send(reply: FastifyReply, realm: Realm, template: string, data: Record<string, unknown>, status = 200, options: { frameSrc?: string[] } = {}): Promise<FastifyReply> {
    const t = await this.pageTranslator(reply, realm);
    const html = await this.eta.renderAsync(template, {
      realmName: realm.name,
      realmTitle: realm.displayName || realm.name,
      resources: `/realms/${encodeURIComponent(realm.name)}/login-actions/resources`,
      values: {},
      ...data,
      ...translatedTexts(t, data),
      locale: t.locale,
      dir: t.dir,
      msg: t.msg,
      localeMenu: localeMenu(reply.request, realm, t.locale),
    });
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .headers({
        'cache-control': 'no-store',
        'content-security-policy': options.frameSrc?.length ? `${contentSecurityPolicy}; frame-src 'self' ${options.frameSrc.filter(isOrigin).join(' ')}` : contentSecurityPolicy,
        'x-frame-options': 'DENY',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      })
      .send(html);
  }

  /** The texts of a locale for this realm: its overrides over the built-in bundles. */
  async translator(realm: Pick<Realm, 'id'>, locale: string): Promise<Translator> {
    return translator(locale, realm.id ? await this.realmTexts(realm.id) : {});
  }

  /**
   * The locale of the page this request answers (i18n.ts's precedence), with its texts. A language menu choice
   * (`kc_locale`) the realm supports is remembered in Keycloak's KEYCLOAK_LOCALE cookie.
   */
  async pageTranslator(reply: FastifyReply, realm: Realm): Promise<Translator> {
    const request = reply.request;
    const known = pageTranslators.get(request);
    if (known) return known;
    const t = await this.selectTranslator(reply, realm);
    pageTranslators.set(request, t);
    return t;
  }

  private async selectTranslator(reply: FastifyReply, realm: Realm): Promise<Translator> {
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
    if (kcLocale && realm.id && matchLocale(kcLocale, realmLocales(realm).supported) === locale && realmLocales(realm).enabled) {
      setCookie(reply, LOCALE_COOKIE, locale, { path: realmCookiePath(realm), secure: secureCookies(request, this.hostname) });
    }
    return this.translator(realm, locale);
  }

  /** The stylesheet: the theme's `style.css` when it has one. */
  stylesheet(): string {
    const themed = this.themeDir ? join(resolve(this.themeDir), 'style.css') : null;
    return readFileSync(themed && existsSync(themed) ? themed : join(staticDir, 'style.css'), 'utf8');
  }
}

/** The texts handlers pass (errors, a message, an error or info page's title, text and link), in the page's language. */
function translatedTexts(t: Translator, data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    errors: Object.fromEntries(Object.entries((data.errors ?? {}) as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? t.text(v) : v])),
  };
  const message = data.message as { type: string; text: string } | undefined;
  if (message && typeof message.text === 'string') out.message = { ...message, text: t.text(message.text) };
  for (const key of ['title', 'text', 'error']) if (typeof data[key] === 'string') out[key] = t.text(data[key] as string);
  const link = data.link as { href: string; label: string } | undefined;
  if (link && typeof link.label === 'string') out.link = { ...link, label: t.text(link.label) };
  return out;
}

/** The language menu: the realm's supported locales, each a link to this page with `kc_locale`; none when off or one. */
function localeMenu(request: FastifyRequest, realm: Realm, current: string): { locale: string; label: string; href: string; current: boolean }[] {
  const { enabled, supported } = realmLocales(realm);
  if (!enabled || supported.length < 2) return [];
  const url = new URL(request.url, 'http://localhost');
  // A posted page's parameters are in its body: its menu links to the login-actions page a GET shows again.
  if (request.method !== 'GET' && !url.pathname.includes('/login-actions/')) return [];
  return supported.map((locale) => {
    url.searchParams.set('kc_locale', locale);
    return { locale, label: localeLabel(locale), href: url.pathname + url.search, current: locale === current };
  });
}
