import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundles, formatMessage, selectLocale, translator } from '../src/pages/i18n.js';
import { launchBrowser, screenshot } from './support/browser.js';
import { decodeEntities, firstForm, FormClient, pkce } from './support/forms.js';
import { decodeMail, startSmtp } from './support/smtp.js';
import { eventually, startServer, startServerPair, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/** Issue 43: the pages and e-mails in the user's language. */

const SUPPORTED = ['en', 'de', 'fr', 'es', 'pt-BR', 'ja', 'ar'];
const REDIRECT = 'http://127.0.0.1:9/cb';
const intlRealm = (attributes: Record<string, string>) => ({ attributes: { internationalizationEnabled: 'true', supportedLocales: SUPPORTED.join(','), defaultLocale: 'en', ...attributes } });

describe('locale selection (pages/i18n.ts)', () => {
  const realm = intlRealm({});
  it("follows Keycloak's precedence: menu, user, ui_locales, cookie, Accept-Language, realm default", () => {
    const all = { kcLocale: 'ja', userLocale: 'es', uiLocales: 'fr', cookie: 'de', acceptLanguage: 'pt-BR' };
    expect(selectLocale(realm, all)).toBe('ja');
    expect(selectLocale(realm, { ...all, kcLocale: undefined })).toBe('es');
    expect(selectLocale(realm, { ...all, kcLocale: undefined, userLocale: undefined })).toBe('fr');
    expect(selectLocale(realm, { cookie: 'de', acceptLanguage: 'pt-BR' })).toBe('de');
    expect(selectLocale(realm, { acceptLanguage: 'it;q=1, pt;q=0.8, de;q=0.5' })).toBe('pt-BR');
    expect(selectLocale(realm, { acceptLanguage: 'de-AT,de;q=0.9' })).toBe('de');
    expect(selectLocale(realm, {})).toBe('en');
    expect(selectLocale(intlRealm({ defaultLocale: 'fr' }), { acceptLanguage: 'it' })).toBe('fr');
  });

  it('skips what is unsupported or not a locale; with internationalization off it is the default', () => {
    expect(selectLocale(realm, { kcLocale: 'it', uiLocales: 'xx zz de' })).toBe('de');
    expect(selectLocale(realm, { kcLocale: '<script>', cookie: '../../etc/passwd', acceptLanguage: 'ja' })).toBe('ja');
    expect(selectLocale({ attributes: {} }, { kcLocale: 'de', acceptLanguage: 'de' })).toBe('en');
    expect(selectLocale({ attributes: { internationalizationEnabled: 'false', supportedLocales: 'de', defaultLocale: 'de' } }, { acceptLanguage: 'fr' })).toBe('de');
  });

  it('has every language with every English key and the same parameters', () => {
    expect(Object.keys(bundles).sort()).toEqual([...SUPPORTED].sort());
    const params = (text: string) => [...new Set(text.match(/\{\d/g) ?? [])].sort();
    for (const locale of SUPPORTED) {
      expect(Object.keys(bundles[locale]).sort(), locale).toEqual(Object.keys(bundles.en).sort());
      for (const [key, text] of Object.entries(bundles.en)) expect(params(bundles[locale][key]), `${locale} ${key}`).toEqual(params(text));
    }
  });

  it('formats parameters and plural forms per language; overrides win; unknown keys show the key', () => {
    expect(formatMessage('en', '{0,plural,one{# hour} other{# hours}}', [1])).toBe('1 hour');
    expect(formatMessage('en', '{0,plural,one{# hour} other{# hours}}', [5])).toBe('5 hours');
    expect(translator('ar').msg('linkExpirationFormatter.timePeriodUnit.minutes', 3)).toBe('3 دقائق');
    expect(translator('ar').msg('linkExpirationFormatter.timePeriodUnit.minutes', 2)).toBe('دقيقتين');
    expect(translator('de').msg('passwordResetBody', 'anna')).toContain('anna');
    expect(translator('de', { de: { doLogIn: 'Los' } }).msg('doLogIn')).toBe('Los');
    expect(translator('pt-BR').msg('doLogIn')).toBe('Entrar');
    expect(translator('de').msg('noSuchKey')).toBe('noSuchKey');
    // A handler's English sentence is shown in the page's language.
    expect(translator('fr').text('Invalid username or password.')).toBe('Nom d’utilisateur ou mot de passe incorrect.');
    expect(translator('ar').dir).toBe('rtl');
    expect(translator('de').dir).toBe('ltr');
  });
});

describe('pages and e-mails in the user language', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let browser: Browser;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer();
    kc = await masterAdminClient(t.url);
    await kc.realms.create({
      realm: 'intl',
      enabled: true,
      sslRequired: 'none',
      resetPasswordAllowed: true,
      internationalizationEnabled: true,
      supportedLocales: SUPPORTED,
      defaultLocale: 'en',
      smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@intl.example' },
    });
    await kc.realms.create({ realm: 'plain', enabled: true, sslRequired: 'none' });
    for (const realm of ['intl', 'plain']) {
      kc.setConfig({ realmName: realm });
      await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [REDIRECT] });
    }
    kc.setConfig({ realmName: 'intl' });
    await kc.users.create({ username: 'lucia', email: 'lucia@intl.example', enabled: true, attributes: { locale: ['es'] }, credentials: [{ type: 'password', value: 'Lucia-pass-1', temporary: false }] });
    await kc.users.create({ username: 'max', email: 'max@intl.example', firstName: 'Max', lastName: 'M', enabled: true, credentials: [{ type: 'password', value: 'Max-pass-1', temporary: false }] });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
  });

  const fixed = pkce();
  const authPath = (realm: string, extra: Record<string, string> = {}) =>
    `/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid profile', code_challenge: fixed.challenge, code_challenge_method: 'S256', ...extra })}`;
  const page = (path: string, headers: Record<string, string> = {}) => fetch(`${t.url}${path}`, { headers, redirect: 'manual' });

  it('keeps the realm settings: a PUT reads back; a bad locale is a 400 naming the field', async () => {
    const realm = await kc.realms.findOne({ realm: 'intl' });
    expect(realm?.internationalizationEnabled).toBe(true);
    expect(realm?.supportedLocales).toEqual(SUPPORTED);
    expect(realm?.defaultLocale).toBe('en');
    await kc.realms.update({ realm: 'plain' }, { defaultLocale: 'de', supportedLocales: ['de', 'fr'] });
    const plain = await kc.realms.findOne({ realm: 'plain' });
    expect(plain).toMatchObject({ internationalizationEnabled: false, supportedLocales: ['de', 'fr'], defaultLocale: 'de' });
    await kc.realms.update({ realm: 'plain' }, { defaultLocale: '', supportedLocales: [] });
    const bad = await fetch(`${t.url}/admin/realms/plain`, { method: 'PUT', headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'application/json' }, body: JSON.stringify({ supportedLocales: ['de', '../x'] }) });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('supportedLocales');
    const badDefault = await fetch(`${t.url}/admin/realms/plain`, { method: 'PUT', headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'application/json' }, body: JSON.stringify({ defaultLocale: '<b>' }) });
    expect(badDefault.status).toBe(400);
  });

  it('Accept-Language de: the German login page, with the language menu; a realm without internationalization stays English', async () => {
    const de = await page(authPath('intl'), { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' });
    const html = await de.text();
    expect(html).toContain('<html lang="de">');
    expect(html).toContain('Bei Ihrem Konto anmelden');
    expect(html).toContain('>Benutzername oder E-Mail<');
    expect(html).not.toContain('Sign in to your account');
    for (const locale of SUPPORTED) expect(html).toContain(`id="kc-locale-${locale}"`);
    expect(html).toContain('hreflang="ja"');
    const plain = await (await page(authPath('plain'), { 'accept-language': 'de' })).text();
    expect(plain).toContain('<html lang="en">');
    expect(plain).toContain('Sign in to your account');
    expect(plain).not.toContain('kc-locale');
  });

  it('ui_locales=fr and kc_locale=ja switch; kc_locale is remembered in KEYCLOAK_LOCALE; Arabic is right to left', async () => {
    const fr = await (await page(authPath('intl', { ui_locales: 'it fr' }), { 'accept-language': 'de' })).text();
    expect(fr).toContain('<html lang="fr">');
    expect(fr).toContain('Connectez-vous à votre compte');

    const browserLike = new FormClient(t.url);
    const first = await browserLike.get(authPath('intl', { ui_locales: 'fr' }));
    expect(first.text).toContain('lang="fr"');
    // The auth session keeps ui_locales for the login-actions pages.
    const again = await browserLike.get('/realms/intl/login-actions/authenticate');
    expect(again.text).toContain('Connectez-vous');
    const ja = await browserLike.get('/realms/intl/login-actions/authenticate?kc_locale=ja');
    expect(ja.text).toContain('<html lang="ja">');
    expect(ja.text).toContain('アカウントにサインイン');
    expect(browserLike.cookies.get('KEYCLOAK_LOCALE')).toBe('ja');

    const ar = await (await page(authPath('intl', { kc_locale: 'ar' }))).text();
    expect(ar).toContain('<html lang="ar" dir="rtl">');
    expect(ar).toContain('سجّل الدخول إلى حسابك');
    expect(fr).not.toContain('dir="rtl"');
  });

  it("the menu links as Keycloak's: to the sign-in's login-actions page with the client and kc_locale, not the authorization request's query", async () => {
    const menuLinks = (html: string) => [...html.matchAll(/<a href="([^"]*)" lang="[^"]*" hreflang="[^"]*" id="kc-locale-([^"]+)"/g)].map(([, href, locale]) => ({ locale, href: decodeEntities(href) }));
    const browserLike = new FormClient(t.url);
    const login = await browserLike.get(authPath('intl', { state: 'state-of-the-application' }));
    expect(menuLinks(login.text)).toEqual(SUPPORTED.map((locale) => ({ locale, href: `/realms/intl/login-actions/authenticate?client_id=web&kc_locale=${locale}` })));
    // The authorization request is the auth session's (the cookie), nowhere on the page.
    expect(login.text).not.toContain('state-of-the-application');
    expect(login.text).not.toContain('code_challenge');
    const ja = await browserLike.get(menuLinks(login.text).find((l) => l.locale === 'ja')!.href);
    expect(ja.status).toBe(200);
    expect(ja.text).toContain('<html lang="ja">');
    expect(ja.text).toContain('アカウントにサインイン');
    expect(browserLike.cookies.get('KEYCLOAK_LOCALE')).toBe('ja');
    // A posted page links to the same page as a shown one.
    const { action, hidden } = firstForm(ja.text);
    const wrong = await browserLike.post(action, { ...hidden, username: 'max', password: 'nope' });
    expect(wrong.status).toBe(401);
    expect(menuLinks(wrong.text).map((l) => l.href)).toEqual(SUPPORTED.map((locale) => `/realms/intl/login-actions/authenticate?client_id=web&kc_locale=${locale}`));
    // The reset page's menu links to the reset page, which the language switches.
    const reset = await browserLike.get('/realms/intl/login-actions/reset-credentials');
    expect(menuLinks(reset.text).map((l) => l.href)).toEqual(SUPPORTED.map((locale) => `/realms/intl/login-actions/reset-credentials?client_id=web&kc_locale=${locale}`));
    const resetFr = await browserLike.get(menuLinks(reset.text).find((l) => l.locale === 'fr')!.href);
    expect(resetFr.text).toContain('<html lang="fr">');
    expect(firstForm(resetFr.text).action).toBe('/realms/intl/login-actions/reset-credentials');
  });

  it('a hostile kc_locale (markup, path characters) or an unsupported one is ignored: no cookie, nothing reflected', async () => {
    for (const hostile of ['<script>alert(1)</script>', '../../../etc/passwd', 'de"><img src=x>', 'it']) {
      const response = await page(authPath('intl', { kc_locale: hostile }), { 'accept-language': 'es' });
      expect(response.status).toBe(200);
      expect(response.headers.getSetCookie().some((c) => c.startsWith('KEYCLOAK_LOCALE='))).toBe(false);
      const html = await response.text();
      expect(html).toContain('<html lang="es">');
      expect(html).not.toContain('<script>alert');
      expect(html).not.toContain('<img src=x>');
    }
    const cookie = await (await page(authPath('intl'), { cookie: 'KEYCLOAK_LOCALE=../de', 'accept-language': 'pt-BR' })).text();
    expect(cookie).toContain('lang="pt-BR"');
  });

  it('realm overrides replace bundle texts at once; their HTML is escaped, never markup', async () => {
    const token = await kc.getAccessToken();
    const put = (locale: string, key: string, text: string) =>
      fetch(`${t.url}/admin/realms/intl/localization/${locale}/${key}`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: text });
    expect((await put('de', 'loginAccountTitle', 'Willkommen <b onmouseover="x()">zurück</b>')).status).toBe(204);
    const html = await (await page(authPath('intl'), { 'accept-language': 'de' })).text();
    expect(html).toContain('Willkommen &lt;b onmouseover=&quot;x()&quot;&gt;zurück&lt;/b&gt;');
    expect(html).not.toContain('<b onmouseover');
    // Other locales keep their bundle text.
    expect(await (await page(authPath('intl'), { 'accept-language': 'fr' })).text()).toContain('Connectez-vous à votre compte');
    const gone = await fetch(`${t.url}/admin/realms/intl/localization/de/loginAccountTitle`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    expect(gone.status).toBe(204);
    expect(await (await page(authPath('intl'), { 'accept-language': 'de' })).text()).toContain('Bei Ihrem Konto anmelden');
    // The console's fallback to the realm default locale's texts.
    await put('en', 'doLogIn', 'Go');
    const withFallback = await (await fetch(`${t.url}/admin/realms/intl/localization/fr?useRealmDefaultLocaleFallback=true`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(withFallback).toEqual({ doLogIn: 'Go' });
    expect(await (await fetch(`${t.url}/admin/realms/intl/localization/fr`, { headers: { authorization: `Bearer ${token}` } })).json()).toEqual({});
    await fetch(`${t.url}/admin/realms/intl/localization/en`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  });

  it('answers the effective login messages of a locale, overrides applied, as the theme resource does', async () => {
    const token = await kc.getAccessToken();
    await fetch(`${t.url}/admin/realms/intl/localization/de/doLogIn`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: 'Einloggen' });
    const de = (await (await fetch(`${t.url}/resources/intl/login/de`)).json()) as { key: string; value: string }[];
    expect(de.find((m) => m.key === 'doLogIn')?.value).toBe('Einloggen');
    expect(de.find((m) => m.key === 'loginAccountTitle')?.value).toBe('Bei Ihrem Konto anmelden');
    expect(de.map((m) => m.key)).toEqual([...de.map((m) => m.key)].sort());
    // A locale without a bundle answers English; one that is not a locale is a 400; an unknown realm a 404.
    expect(((await (await fetch(`${t.url}/resources/intl/login/it`)).json()) as { key: string; value: string }[]).find((m) => m.key === 'doLogIn')?.value).toBe('Sign in');
    expect((await fetch(`${t.url}/resources/intl/login/${encodeURIComponent('<x>')}`)).status).toBe(400);
    expect((await fetch(`${t.url}/resources/nowhere/login/de`)).status).toBe(404);
    await fetch(`${t.url}/admin/realms/intl/localization/de/doLogIn`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  });

  it('errors are in the page language; the menu choice is stored on the user at sign-in and is the ID token locale claim', async () => {
    const client = new FormClient(t.url);
    const { verifier, challenge } = pkce();
    const login = await client.get(authPath('intl', { code_challenge: challenge, code_challenge_method: 'S256' }));
    const menu = await client.get('/realms/intl/login-actions/authenticate?kc_locale=de');
    expect(menu.text).toContain('Bei Ihrem Konto anmelden');
    const { action, hidden } = firstForm(login.text);
    const wrong = await client.post(action, { ...hidden, username: 'max', password: 'nope' });
    expect(wrong.text).toContain('Benutzername oder Passwort ist falsch.');
    const right = await client.post(firstForm(wrong.text).action, { ...firstForm(wrong.text).hidden, username: 'max', password: 'Max-pass-1' });
    expect(right.status).toBe(302);
    const code = new URL(right.location!).searchParams.get('code')!;
    const tokens = await tokenRequest(t.url, 'intl', { grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(tokens.status).toBe(200);
    const idToken = (tokens.body as { id_token: string }).id_token;
    const claims = JSON.parse(Buffer.from(idToken.split('.')[1], 'base64url').toString('utf8'));
    expect(claims.locale).toBe('de');
    const [max] = await kc.users.find({ username: 'max', exact: true });
    expect(max.attributes?.locale).toEqual(['de']);
  });

  it("a required action's page is in the user's locale once the sign-in knows the user", async () => {
    await kc.users.create({ username: 'jun', enabled: true, attributes: { locale: ['ja'] }, requiredActions: ['UPDATE_PASSWORD'], credentials: [{ type: 'password', value: 'Jun-pass-1', temporary: false }] });
    const client = new FormClient(t.url);
    const login = await client.get(authPath('intl'));
    expect(login.text).toContain('<html lang="en">');
    const { action, hidden } = firstForm(login.text);
    const next = await client.post(action, { ...hidden, username: 'jun', password: 'Jun-pass-1' });
    expect(next.text).toContain('<html lang="ja">');
    expect(next.text).toContain('新しいパスワードを設定');
    const mismatch = await client.post(firstForm(next.text).action, { ...firstForm(next.text).hidden, 'password-new': 'Jun-pass-2', 'password-confirm': 'Jun-pass-3' });
    expect(mismatch.text).toContain('パスワードが一致しません。');
  });

  it('a reset e-mail to a user whose locale is es is Spanish, subject and body', async () => {
    const client = new FormClient(t.url);
    await client.get(authPath('intl'));
    const reset = await client.get('/realms/intl/login-actions/reset-credentials');
    expect(reset.status).toBe(200);
    const { action, hidden } = firstForm(reset.text);
    const sent = await client.post(action, { ...hidden, username: 'lucia' });
    expect(sent.status).toBe(200);
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('lucia@intl.example')));
    const { subject, body } = decodeMail(mail);
    expect(subject).toContain('Restablece tu contraseña');
    expect(body).toContain('Alguien pidió restablecer la contraseña de tu cuenta lucia');
    expect(body).toContain('Este enlace caduca en');
    expect(body).not.toContain('Reset your password');
  });

  it('Chromium with Accept-Language de sees the German login page; Arabic is laid out right to left', async () => {
    const context = await browser.newContext({ locale: 'de-DE' });
    const tab = await context.newPage();
    await tab.goto(`${t.url}${authPath('intl')}`);
    expect(await tab.locator('h1').textContent()).toBe('Bei Ihrem Konto anmelden');
    expect(await tab.locator('label[for=username]').textContent()).toBe('Benutzername oder E-Mail');
    expect(await tab.locator('html').getAttribute('lang')).toBe('de');
    await screenshot(tab, 'login-de');
    await tab.locator('#kc-locale-ar').click();
    await tab.waitForURL(/kc_locale=ar/);
    expect(await tab.locator('html').getAttribute('dir')).toBe('rtl');
    expect(await tab.evaluate(() => getComputedStyle(document.body).direction)).toBe('rtl');
    await screenshot(tab, 'login-ar');
    await tab.locator('#kc-locale-ja').click();
    await tab.waitForURL(/kc_locale=ja/);
    expect(await tab.locator('h1').textContent()).toBe('アカウントにサインイン');
    await tab.locator('#kc-locale-fr').click();
    await tab.waitForURL(/kc_locale=fr/);
    expect(await tab.locator('h1').textContent()).toBe('Connectez-vous à votre compte');
    await screenshot(tab, 'login-fr');
    await context.close();
  });
});

describe('an override made on one node', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    pair = await startServerPair();
    const kc = await masterAdminClient(pair.a.url);
    await kc.realms.create({ realm: 'intl2', enabled: true, sslRequired: 'none', internationalizationEnabled: true, supportedLocales: ['en', 'de'], defaultLocale: 'en' });
    kc.setConfig({ realmName: 'intl2' });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [REDIRECT] });
  });
  afterAll(async () => {
    await pair?.close();
  });

  it('appears on the next page load on the other node', async () => {
    const path = `/realms/intl2/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`;
    const onB = async () => (await fetch(`${pair.b.url}${path}`, { headers: { 'accept-language': 'de' } })).text();
    expect(await onB()).toContain('Bei Ihrem Konto anmelden');
    const kc = await masterAdminClient(pair.a.url);
    const put = await fetch(`${pair.a.url}/admin/realms/intl2/localization/de/loginAccountTitle`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'text/plain' },
      body: 'Hallo, wer sind Sie?',
    });
    expect(put.status).toBe(204);
    await eventually(async () => (await onB()).includes('Hallo, wer sind Sie?'));
  });

  it('a change of an override already shown is on the next page load on the same node at once, and on the other node', async () => {
    const path = `/realms/intl2/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`;
    const on = async (url: string) => (await fetch(`${url}${path}`, { headers: { 'accept-language': 'de' } })).text();
    const kc = await masterAdminClient(pair.a.url);
    const put = async (text: string) =>
      (await fetch(`${pair.a.url}/admin/realms/intl2/localization/de/loginAccountTitle`, { method: 'PUT', headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'text/plain' }, body: text })).status;
    expect(await put('Erste Fassung')).toBe(204);
    expect(await on(pair.a.url)).toContain('Erste Fassung');
    await eventually(async () => (await on(pair.b.url)).includes('Erste Fassung'));
    expect(await put('Zweite Fassung')).toBe(204);
    const sameNode = await on(pair.a.url);
    expect(sameNode).toContain('Zweite Fassung');
    expect(sameNode).not.toContain('Erste Fassung');
    await eventually(async () => (await on(pair.b.url)).includes('Zweite Fassung'));
    const removed = await fetch(`${pair.a.url}/admin/realms/intl2/localization/de/loginAccountTitle`, { method: 'DELETE', headers: { authorization: `Bearer ${await kc.getAccessToken()}` } });
    expect(removed.status).toBe(204);
    expect(await on(pair.a.url)).toContain('Bei Ihrem Konto anmelden');
    await eventually(async () => (await on(pair.b.url)).includes('Bei Ihrem Konto anmelden'));
  });
});
