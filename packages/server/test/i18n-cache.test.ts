import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Realm } from '../src/model/types.js';
import { realmLocales, selectLocale } from '../src/pages/i18n.js';
import { localeMenu, PageRenderer } from '../src/pages/render.js';
import { defaultBrowserSecurityHeaders } from '../src/model/browser-security-headers.js';

/**
 * What the pages read once per realm version (pages/render.ts, model/locales.ts, pages/i18n.ts): a change of the
 * realm's overrides or locale settings is on the next page all the same. The other node: i18n.test.ts.
 */

const frozenRealm = (attributes: Record<string, string>, id = 'r1') =>
  Object.freeze({ id, name: 'acme', attributes: Object.freeze({ ...attributes }), browserSecurityHeaders: defaultBrowserSecurityHeaders() }) as unknown as Realm;
const INTL = { internationalizationEnabled: 'true', supportedLocales: 'en,de,fr', defaultLocale: 'en' };

/** The login page's HTML as a request with this Accept-Language and URL sees it. */
async function page(pages: PageRenderer, realm: Realm, acceptLanguage: string, url = '/realms/acme/login-actions/authenticate'): Promise<string> {
  let html = '';
  const reply = {
    request: { query: {}, headers: { 'accept-language': acceptLanguage }, url, method: 'GET' },
    code: () => reply,
    type: () => reply,
    headers: () => reply,
    header: () => reply,
    send: (body: string) => ((html = body), reply),
  };
  await pages.send(reply as unknown as FastifyReply, realm, 'login', { action: '/x', csrf: 'c', values: {}, errors: {} });
  return html;
}

describe('realm overrides on the next page (translators made once per overrides version)', () => {
  /** As the configuration cache answers: the same frozen object until an override is written, then a new one. */
  function cachedOverrides() {
    let current: Record<string, Record<string, string>> = Object.freeze({});
    return {
      texts: async () => current,
      write(locale: string, key: string, text: string) {
        current = Object.freeze({ ...current, [locale]: Object.freeze({ ...current[locale], [key]: text }) });
      },
      remove(locale: string, key: string) {
        const { [key]: _gone, ...rest } = current[locale] ?? {};
        current = Object.freeze({ ...current, [locale]: Object.freeze(rest) });
      },
    };
  }

  it('an override written after a page was shown is on the next page, and one removed is gone from it', async () => {
    const overrides = cachedOverrides();
    const pages = new PageRenderer(undefined, overrides.texts);
    const realm = frozenRealm(INTL);
    expect(await page(pages, realm, 'de')).toContain('Bei Ihrem Konto anmelden');
    overrides.write('de', 'loginAccountTitle', 'Willkommen bei Acme');
    expect(await page(pages, realm, 'de')).toContain('Willkommen bei Acme');
    expect(await page(pages, realm, 'fr')).not.toContain('Willkommen bei Acme');
    overrides.write('de', 'loginAccountTitle', 'Hallo, wer sind Sie?');
    const second = await page(pages, realm, 'de');
    expect(second).toContain('Hallo, wer sind Sie?');
    expect(second).not.toContain('Willkommen bei Acme');
    overrides.remove('de', 'loginAccountTitle');
    expect(await page(pages, realm, 'de')).toContain('Bei Ihrem Konto anmelden');
  });

  it('one realm\'s overrides are not another\'s, and unfrozen overrides (the cache bypassed) are read on each page', async () => {
    const byRealm: Record<string, Record<string, Record<string, string>>> = { a: Object.freeze({ de: Object.freeze({ loginAccountTitle: 'Nur A' }) }), b: { de: { loginAccountTitle: 'Nur B' } } };
    const pages = new PageRenderer(undefined, async (id) => byRealm[id]);
    expect(await page(pages, frozenRealm(INTL, 'a'), 'de')).toContain('Nur A');
    expect(await page(pages, frozenRealm(INTL, 'b'), 'de')).toContain('Nur B');
    byRealm.b.de.loginAccountTitle = 'B geändert';
    expect(await page(pages, frozenRealm(INTL, 'b'), 'de')).toContain('B geändert');
  });
});

describe("the realm's locale settings read once per realm version", () => {
  it('a new realm version (a new frozen object, as the cache loads) is read anew; an unfrozen realm each time', () => {
    const before = frozenRealm(INTL);
    expect(realmLocales(before).supported).toEqual(['en', 'de', 'fr']);
    expect(realmLocales(before)).toBe(realmLocales(before));
    const after = frozenRealm({ ...INTL, supportedLocales: 'en,ja', defaultLocale: 'ja' });
    expect(realmLocales(after)).toEqual({ enabled: true, supported: ['en', 'ja'], defaultLocale: 'ja' });
    expect(selectLocale(after, { acceptLanguage: 'de' })).toBe('ja');
    const editable = { attributes: { ...INTL } as Record<string, string> };
    expect(selectLocale(editable, { acceptLanguage: 'de' })).toBe('de');
    editable.attributes.internationalizationEnabled = 'false';
    expect(selectLocale(editable, { acceptLanguage: 'de' })).toBe('en');
  });

  it('the same Accept-Language read again gives the same locale, for each realm its own', () => {
    const header = 'fr-CH, fr;q=0.9, de;q=0.8, *;q=0.5';
    expect(selectLocale(frozenRealm(INTL), { acceptLanguage: header })).toBe('fr');
    expect(selectLocale(frozenRealm(INTL), { acceptLanguage: header })).toBe('fr');
    expect(selectLocale(frozenRealm({ ...INTL, supportedLocales: 'en,de' }), { acceptLanguage: header })).toBe('de');
    expect(selectLocale(frozenRealm(INTL), { acceptLanguage: 'it, de;q=0' })).toBe('en');
  });
});

describe("the language menu's links", () => {
  /** What the links were before they were made from one serialization: URLSearchParams.set on the page's URL. */
  const reference = (url: string, locale: string) => {
    const u = new URL(url, 'http://localhost');
    u.searchParams.set('kc_locale', locale);
    return u.pathname + u.search;
  };

  it('are the page URL with kc_locale set as URLSearchParams.set sets it (in place, duplicates dropped, else last)', () => {
    const realm = frozenRealm({ ...INTL, supportedLocales: 'en,de,pt-BR,zh_Hant_TW' });
    const urls = [
      '/realms/acme/login-actions/authenticate',
      '/realms/acme/protocol/openid-connect/auth?client_id=web&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&scope=openid%20email&state=a+b',
      '/realms/acme/login-actions/authenticate?kc_locale=ja&execution=e1&kc_locale=fr&tab_id=t',
      '/realms/acme/login-actions/authenticate?execution=e1&kc_locale=ja',
      '/realms/acme/login-actions/authenticate?a=%3Cscript%3E&b=&c&d=%E6%97%A5%E6%9C%AC&e=%26%3D%3F',
      '/realms/acme/a/../login-actions/./authenticate?x=1',
    ];
    for (const url of urls) {
      const menu = localeMenu({ url, method: 'GET' }, realm, 'de');
      expect(menu.map((m) => m.locale)).toEqual(['en', 'de', 'pt-BR', 'zh_Hant_TW']);
      for (const entry of menu) expect(entry.href, url).toBe(reference(url, entry.locale));
      expect(menu.filter((m) => m.current).map((m) => m.locale)).toEqual(['de']);
    }
    expect(localeMenu({ url: '/realms/acme/login-actions/authenticate', method: 'GET' }, realm, 'de').map((m) => m.label)).toEqual(['English', 'Deutsch', 'Português (Brasil)', expect.any(String)]);
  });

  it("are written on the page as the entries say: each link escaped, the page's locale marked, names as character references", async () => {
    const realm = frozenRealm({ ...INTL, supportedLocales: 'en,de,ja,ar' });
    const escape = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
    for (const url of ['/realms/acme/login-actions/authenticate?a=%3Cscript%3E&b=%22x%22&kc_locale=ja&c=%26', '/realms/acme/login-actions/authenticate']) {
      const html = await page(new PageRenderer(), realm, 'de', url);
      const items = /<ul>\s*([\s\S]*?)\s*<\/ul>/.exec(html)![1];
      // No name of another script in the markup: the page stays a one-byte string.
      expect(items).toMatch(/^[\x00-\x7f]*$/);
      const decoded = items.replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)));
      const expected = localeMenu({ url, method: 'GET' }, realm, 'de')
        .map((m) => `<li><a href="${escape(m.href)}" lang="${m.locale}" hreflang="${m.locale}" id="kc-locale-${m.locale}"${m.current ? ' aria-current="true"' : ''}>${escape(m.label)}</a></li>`)
        .join('');
      expect(decoded).toBe(expected);
      expect(decoded).toContain('>日本語</a>');
    }
  });

  it('none for a realm without internationalization or with one locale, and none on a post outside login-actions', () => {
    expect(localeMenu({ url: '/x', method: 'GET' }, frozenRealm({}), 'en')).toEqual([]);
    expect(localeMenu({ url: '/x', method: 'GET' }, frozenRealm({ ...INTL, supportedLocales: 'en' }), 'en')).toEqual([]);
    expect(localeMenu({ url: '/realms/acme/protocol/openid-connect/auth', method: 'POST' }, frozenRealm(INTL), 'en')).toEqual([]);
    expect(localeMenu({ url: '/realms/acme/login-actions/authenticate', method: 'POST' }, frozenRealm(INTL), 'en')).toHaveLength(3);
  });
});
