import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTemplate, ThemeError, Themes } from '../src/pages/themes.js';
import { masterAdminClient, tokenOfUserWithRoles } from './support/admin-client.js';
import { FormClient, firstForm, pkce, textOf } from './support/forms.js';
import { adminToken, api, eventually, REPO_ROOT, startServer, type TestServer, errorText } from './support/server.js';
import { launchBrowser, screenshot } from './support/browser.js';
import { ConsoleSession } from './support/admin-console.js';
import { decodeMail, startSmtp } from './support/smtp.js';

/** Issue 43 item 4: a theme directory, per realm by loginTheme / accountTheme / emailTheme. */

function write(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

const authPath = (realm: string) =>
  `/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'web', redirect_uri: 'http://127.0.0.1:9/cb', response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`;

/** A GET with the path sent as written (fetch would resolve `..` before sending). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('themes from the theme directory', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let themeDir: string;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    themeDir = mkdtempSync(join(tmpdir(), 'realmgate-themes-'));
    write(themeDir, 'shop/login/theme.properties', 'parent=keycloak\n');
    write(
      themeDir,
      'shop/login/templates/login.eta',
      [
        "<% layout('layout', { ...it, title: it.msg('loginAccountTitle') }) %>",
        '<img id="shop-logo" src="<%= it.resources %>/img/logo.svg" alt="">',
        '<p id="shop-intro"><%= it.msg(\'shopIntro\', it.realmTitle) %></p>',
        '<form id="kc-form-login" method="post" action="<%= it.action %>">',
        '  <input type="hidden" name="session_code" value="<%= it.csrf %>">',
        "  <%~ include('field', { name: 'username', label: it.msg('username'), value: it.values.username, error: it.errors.username }) %>",
        "  <%~ include('field', { name: 'password', label: it.msg('password'), type: 'password', error: it.errors.password }) %>",
        '  <%~ it.protectorHtml %>',
        '  <button type="submit" id="kc-login"><%= it.msg(\'doLogIn\') %></button>',
        '</form>',
      ].join('\n'),
    );
    write(themeDir, 'shop/login/resources/style.css', 'body { background: #fdf6e3; } /* shop-stylesheet */\n');
    write(themeDir, 'shop/login/resources/img/logo.svg', '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
    write(themeDir, 'shop/login/resources/notes.exe', 'not a resource type');
    write(themeDir, 'shop/login/messages/messages_en.properties', '# the shop\'s words\nshopIntro=Welcome to the {0} shop\nloginAccountTitle=Sign in to the shop\n');
    write(themeDir, 'shop/login/messages/messages_de.json', JSON.stringify({ shopIntro: 'Willkommen im Laden {0}', loginAccountTitle: 'Im Laden anmelden' }));
    // A child theme: only its own title; the rest from its parent, then the built-in theme.
    write(themeDir, 'shop-dark/login/theme.properties', 'parent=shop\n');
    write(themeDir, 'shop-dark/login/messages/messages_en.properties', 'loginAccountTitle=Sign in (dark)\n');
    // A template that compiles and fails when rendered: the page is the built-in one.
    write(themeDir, 'fragile/login/templates/login.eta', '<p><%= it.nothing.deeper %></p>');
    write(themeDir, 'shop/email/messages/messages_en.properties', 'passwordResetSubject=Your shop password\nshopMailHello=Hello {0}, from the shop\n');
    write(themeDir, 'shop/email/messages/messages_de.properties', 'shopMailHello=Hallo {0}, vom <b>Laden</b>\n');
    // E-mail bodies: the reset mail's HTML and text; a partial; a template that fails when rendered (execute-actions).
    write(themeDir, 'shop/email/templates/html/footer.eta', '<p id="shop-footer">The <%= it.realmTitle %> shop</p>');
    write(
      themeDir,
      'shop/email/templates/html/password-reset.eta',
      '<div lang="<%= it.locale %>" id="shop-mail"><h1><%= it.msg(\'shopMailHello\', it.user.username) %></h1><p><%= it.intro %></p><a href="<%= it.link %>"><%= it.linkLabel %></a><p><%= it.linkExpiration %></p><%~ include(\'footer\', it) %><p><%= it.user.firstName %></p></div>',
    );
    write(themeDir, 'shop/email/templates/text/password-reset.eta', "SHOP-TEXT <%= it.msg('shopMailHello', it.user.username) %>\n<%= it.link %>\n<%= it.user.firstName %>\n(<%= it.linkExpirationSeconds %> s)\n");
    write(themeDir, 'shop/email/templates/html/execute-actions.eta', '<p><%= it.nothing.deeper %></p>');
    write(themeDir, 'shop/account/templates/account.eta', "<% layout('layout', { ...it, title: 'Shop account' }) %><p id=\"shop-account\">Shop account page</p>");
    // Outside every theme: never served.
    write(themeDir, 'secret.txt', 'top secret');
    write(themeDir, 'shop/login/theme-notes.css', 'outside resources/');
    symlinkSync(join(themeDir, 'secret.txt'), join(themeDir, 'shop', 'login', 'resources', 'link.txt'));
    smtp = await startSmtp();

    t = await startServer({ config: { REALMGATE_THEME_DIR: themeDir } });
    kc = await masterAdminClient(t.url);
    for (const realm of ['themed', 'plain', 'child']) {
      await kc.realms.create({ realm, enabled: true, resetPasswordAllowed: true, smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@shop.example' } });
      await kc.clients.create({ realm, clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] });
    }
    await kc.users.create({ realm: 'themed', username: 'tia', email: 'tia@shop.example', enabled: true, credentials: [{ type: 'password', value: 'tia-pass-1' }] });
    await kc.users.create({ realm: 'themed', username: 'udo', email: 'udo@shop.example', firstName: 'Udo', enabled: true, attributes: { locale: ['de'] } });
    await kc.realms.update({ realm: 'themed' }, { loginTheme: 'shop', emailTheme: 'shop', accountTheme: 'shop', internationalizationEnabled: true, supportedLocales: ['en', 'de'] });
    await kc.realms.update({ realm: 'child' }, { loginTheme: 'shop-dark' });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
    rmSync(themeDir, { recursive: true, force: true });
  });

  it("renders the realm's theme: its template, texts and stylesheet; another realm keeps the built-in ones", async () => {
    const client = new FormClient(t.url);
    const login = await client.get(authPath('themed'));
    expect(login.status).toBe(200);
    expect(textOf(login.text, 'shop-intro')).toBe('Welcome to the themed shop');
    expect(textOf(login.text, 'page-title')).toBe('Sign in to the shop');
    expect(login.text).toContain('src="/realms/themed/login-actions/resources/img/logo.svg"');
    const css = await client.get('/realms/themed/login-actions/resources/style.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect(css.text).toContain('shop-stylesheet');
    const logo = await client.get('/realms/themed/login-actions/resources/img/logo.svg');
    expect(logo.status).toBe(200);
    expect(logo.headers.get('content-type')).toBe('image/svg+xml');
    expect(logo.headers.get('x-content-type-options')).toBe('nosniff');

    // The themed form signs in.
    const signedIn = await client.post(firstForm(login.text).action, { ...firstForm(login.text).hidden, username: 'tia', password: 'tia-pass-1' });
    expect(signedIn.status).toBe(302);
    expect(signedIn.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/cb\?code=/);
    // The account page is the account theme's.
    const account = await client.get('/realms/themed/account/profile');
    expect(account.status).toBe(200);
    expect(textOf(account.text, 'shop-account')).toBe('Shop account page');

    const plain = await new FormClient(t.url).get(authPath('plain'));
    expect(plain.status).toBe(200);
    expect(textOf(plain.text, 'shop-intro')).toBeNull();
    expect(textOf(plain.text, 'page-title')).toBe('Sign in to your account');
    const plainCss = await new FormClient(t.url).get('/realms/plain/login-actions/resources/style.css');
    expect(plainCss.text).not.toContain('shop-stylesheet');
    expect((await new FormClient(t.url).get('/realms/plain/login-actions/resources/img/logo.svg')).status).toBe(404);
  });

  it("the theme's texts in the page's language, under the realm's overrides; the effective messages show them", async () => {
    const german = await new FormClient(t.url).get(`${authPath('themed')}&kc_locale=de`);
    expect(textOf(german.text, 'shop-intro')).toBe('Willkommen im Laden themed');
    expect(textOf(german.text, 'page-title')).toBe('Im Laden anmelden');
    // A key the theme lacks in German comes from the built-in German bundle.
    expect(german.text).toContain('>Anmelden</button>');

    const token = await adminToken(t.url);
    expect((await api(t.url, 'PUT', '/admin/realms/themed/localization/en/loginAccountTitle', token, 'Sign in (realm override)', { 'content-type': 'text/plain' })).status).toBe(204);
    const overridden = await eventually(async () => {
      const page = await new FormClient(t.url).get(authPath('themed'));
      return textOf(page.text, 'page-title') === 'Sign in (realm override)' ? page : null;
    });
    expect(textOf(overridden.text, 'shop-intro')).toBe('Welcome to the themed shop');

    const effective = (await (await fetch(`${t.url}/resources/themed/login/en`)).json()) as { key: string; value: string }[];
    expect(effective.find((m) => m.key === 'shopIntro')?.value).toBe('Welcome to the {0} shop');
    expect(effective.find((m) => m.key === 'loginAccountTitle')?.value).toBe('Sign in (realm override)');
    const plainEffective = (await (await fetch(`${t.url}/resources/plain/login/en`)).json()) as { key: string; value: string }[];
    expect(plainEffective.find((m) => m.key === 'shopIntro')).toBeUndefined();
  });

  it("a child theme takes what it lacks from its parent (theme.properties parent=)", async () => {
    const page = await new FormClient(t.url).get(authPath('child'));
    expect(textOf(page.text, 'page-title')).toBe('Sign in (dark)');
    expect(textOf(page.text, 'shop-intro')).toBe('Welcome to the child shop');
    expect((await new FormClient(t.url).get('/realms/child/login-actions/resources/style.css')).text).toContain('shop-stylesheet');
  });

  it("the e-mail theme's texts (reset e-mail subject)", async () => {
    const client = new FormClient(t.url);
    await client.get(authPath('themed'));
    const reset = await client.get('/realms/themed/login-actions/reset-credentials');
    const sent = await client.post(firstForm(reset.text).action, { ...firstForm(reset.text).hidden, username: 'tia' });
    expect(sent.status).toBe(200);
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('tia@shop.example')));
    expect(mail.raw).toMatch(/^Subject: =\?UTF-8\?Q\?Your_shop_password_=C2=B7_themed\?=/m);
  });

  it("the e-mail theme's bodies (templates/html and templates/text), in the user's language, escaped; a failing one gives the built-in body", async () => {
    const client = new FormClient(t.url);
    await client.get(authPath('themed'));
    const reset = await client.get('/realms/themed/login-actions/reset-credentials');
    expect((await client.post(firstForm(reset.text).action, { ...firstForm(reset.text).hidden, username: 'udo' })).status).toBe(200);
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('udo@shop.example')));
    const { body } = decodeMail(mail);
    // The HTML body is the theme's, its texts in German (the user's locale), the user's data escaped.
    expect(body).toContain('id="shop-mail"');
    expect(body).toContain('lang="de"');
    expect(body).toContain('Hallo udo, vom &lt;b&gt;Laden&lt;/b&gt;');
    expect(body).toContain('<p id="shop-footer">The themed shop</p>');
    expect(body).toContain('<p>Udo</p>');
    expect(body).not.toContain('vom <b>Laden</b></h1>');
    // The text body is the theme's too, not escaped (plain text); the link is in both.
    expect(body).toContain('SHOP-TEXT Hallo udo, vom <b>Laden</b>');
    expect(body).toMatch(/SHOP-TEXT[^]*\r?\nUdo\r?\n\(300 s\)/);
    expect(body).toMatch(/login-actions\/action-token\?key=/);

    // execute-actions: the theme's HTML template fails when rendered; the e-mail goes with the built-in body, logged.
    const [udo] = await kc.users.find({ realm: 'themed', username: 'udo' });
    const token = await adminToken(t.url);
    expect((await api(t.url, 'PUT', `/admin/realms/themed/users/${udo.id}/execute-actions-email`, token, ['UPDATE_PASSWORD'])).status).toBe(204);
    const actions = await eventually(() => smtp.mails.filter((m) => m.to.includes('udo@shop.example'))[1]);
    const decoded = decodeMail(actions);
    expect(decoded.subject).toContain('Konto');
    expect(decoded.body).toMatch(/login-actions\/action-token\?key=/);
    expect(decoded.body).not.toContain('shop-mail');
    expect(t.logs.some((l) => l.template === 'html/execute-actions.eta' && String(l.msg).includes("e-mail theme's template failed"))).toBe(true);
  });

  it('a stylesheet or resource is revalidated (ETag, 304), so a realm that changes theme shows it on the next load', async () => {
    const first = await rawGet(t.url, '/realms/themed/login-actions/resources/style.css');
    expect(first.headers['cache-control']).toBe('no-cache');
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect((await rawGet(t.url, '/realms/themed/login-actions/resources/style.css', { 'if-none-match': etag })).status).toBe(304);
    // The same tag for another realm's (built-in) stylesheet does not match.
    expect((await rawGet(t.url, '/realms/plain/login-actions/resources/style.css', { 'if-none-match': etag })).status).toBe(200);
  });

  it('a template that fails when rendered gives the built-in page, logged with the file and line, never a 500', async () => {
    const token = await adminToken(t.url);
    expect((await api(t.url, 'PUT', '/admin/realms/plain', token, { loginTheme: 'fragile' })).status).toBe(204);
    const page = await new FormClient(t.url).get(authPath('plain'));
    expect(page.status).toBe(200);
    expect(textOf(page.text, 'page-title')).toBe('Sign in to your account');
    const logged = t.logs.find((l) => l.msg === "a theme's template failed; the page is the built-in one");
    expect(logged?.theme).toBe('fragile');
    expect(String((logged?.err as { message?: string })?.message)).toContain(`${join('fragile', 'login', 'templates', 'login.eta')}:1`);
    expect((await api(t.url, 'PUT', '/admin/realms/plain', token, { loginTheme: '' })).status).toBe(204);
    expect(((await api(t.url, 'GET', '/admin/realms/plain', token)).body as Record<string, unknown>).loginTheme).toBeUndefined();
  });

  it("serverinfo lists the directory's themes by type, with their locales, for the console's Themes tab", async () => {
    const token = await adminToken(t.url);
    const info = (await api(t.url, 'GET', '/admin/serverinfo', token)).body as { themes: Record<string, { name: string; locales: string[] }[]> };
    expect(info.themes.login.map((theme) => theme.name)).toEqual(['keycloak', 'fragile', 'shop', 'shop-dark']);
    expect(info.themes.login.find((theme) => theme.name === 'shop')?.locales).toEqual(expect.arrayContaining(['en', 'de', 'ja']));
    expect(info.themes.email.map((theme) => theme.name)).toEqual(['keycloak', 'shop']);
    expect(info.themes.account.map((theme) => theme.name)).toEqual(['keycloak.v3', 'shop']);
    expect(info.themes.admin.map((theme) => theme.name)).toEqual(['keycloak.v2']);
  });

  it('the realm carries its theme fields: read back, exported, not among its attributes, kept by a PUT of attributes', async () => {
    const token = await adminToken(t.url);
    await api(t.url, 'PUT', '/admin/realms/themed', token, { attributes: { colour: 'blue' } });
    const realm = (await api(t.url, 'GET', '/admin/realms/themed', token)).body as Record<string, unknown>;
    expect(realm).toMatchObject({ loginTheme: 'shop', emailTheme: 'shop', accountTheme: 'shop' });
    expect(realm.attributes).toEqual({ colour: 'blue' });
    const exported = (await api(t.url, 'POST', '/admin/realms/themed/partial-export', token)).body as Record<string, unknown>;
    expect(exported.loginTheme).toBe('shop');
  });

  it('refuses a theme the server does not have (400 naming the field), a path or NUL in a name; a stored unknown name passes a PUT back', async () => {
    const token = await adminToken(t.url);
    const unknown = await api(t.url, 'PUT', '/admin/realms/plain', token, { loginTheme: 'nope' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('realm.loginTheme: no login theme \\"nope\\"');
    // The account type has no "fragile".
    expect((await api(t.url, 'PUT', '/admin/realms/plain', token, { accountTheme: 'fragile' })).status).toBe(400);
    for (const name of ['../shop', 'shop/../../etc', '..', 'shop\0', '/etc/passwd', 'sh op']) {
      const bad = await api(t.url, 'PUT', '/admin/realms/plain', token, { loginTheme: name });
      expect(bad.status, name).toBe(400);
    }
    expect((await api(t.url, 'PUT', '/admin/realms/plain', token, { loginTheme: 'keycloak' })).status).toBe(204);

    // A realm file naming a theme this server lacks is imported (as Keycloak's); its pages are the built-in ones.
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm: 'imported', enabled: true, loginTheme: 'gone', clients: [{ clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] }] })).status).toBe(201);
    const page = await new FormClient(t.url).get(authPath('imported'));
    expect(page.status).toBe(200);
    expect(textOf(page.text, 'page-title')).toBe('Sign in to your account');
    expect(t.logs.some((l) => l.theme === 'gone' && l.realm === 'imported' && String(l.msg).includes('does not have'))).toBe(true);
    const rep = (await api(t.url, 'GET', '/admin/realms/imported', token)).body as Record<string, unknown>;
    expect(rep.loginTheme).toBe('gone');
    expect((await api(t.url, 'PUT', '/admin/realms/imported', token, { ...rep, displayName: 'Imported' })).status).toBe(204);
  });

  it('serves nothing outside the theme resources: ../, encoded ../, NUL, links out, unknown types', async () => {
    for (const path of [
      '/realms/themed/login-actions/resources/../../../../secret.txt',
      '/realms/themed/login-actions/resources/..%2f..%2f..%2fsecret.txt',
      '/realms/themed/login-actions/resources/img/..%2F..%2F..%2Ftheme.properties',
      '/realms/themed/login-actions/resources/%2e%2e/theme-notes.css',
      '/realms/themed/login-actions/resources/img%2flogo.svg%00.png',
      '/realms/themed/login-actions/resources/style.css%00',
      '/realms/themed/login-actions/resources/link.txt',
      '/realms/themed/login-actions/resources/notes.exe',
      '/realms/themed/login-actions/resources/',
      '/realms/%00/login-actions/resources/img/logo.svg',
      '/realms/themed/login-actions/resources/img\\..\\..\\secret.txt',
    ]) {
      const answer = await rawGet(t.url, path);
      expect(answer.status, path).toBeLessThan(500);
      expect(answer.body, path).not.toContain('top secret');
      expect(answer.body, path).not.toContain('outside resources/');
      expect(answer.body, path).not.toContain('parent=');
      if (!path.endsWith('style.css%00')) expect(answer.status, path).not.toBe(200);
    }
    expect(t.logs.some((l) => String(l.msg).includes("link.txt: not served (a link to outside the theme directory's resources)"))).toBe(true);
  });

  it("a client's login_theme attribute overrides the realm's loginTheme for that client's pages; the admin API keeps and checks it", async () => {
    const token = await adminToken(t.url);
    const clientAuth = (realm: string, clientId: string) => authPath(realm).replace('client_id=web', `client_id=${clientId}`);
    await kc.clients.create({ realm: 'plain', clientId: 'shopfront', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'], attributes: { login_theme: 'shop' } });
    await kc.clients.create({ realm: 'themed', clientId: 'classic', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'], attributes: { login_theme: 'keycloak' } });
    const [shopfront] = await kc.clients.find({ realm: 'plain', clientId: 'shopfront' });
    expect(shopfront.attributes?.login_theme).toBe('shop');

    // The plain realm's page for shopfront is the shop theme's: template, texts, its own stylesheet and images.
    const client = new FormClient(t.url);
    const page = await client.get(clientAuth('plain', 'shopfront'));
    expect(page.status).toBe(200);
    expect(textOf(page.text, 'shop-intro')).toBe('Welcome to the plain shop');
    expect(page.text).toContain('href="/realms/plain/login-actions/resources/themes/shop/style.css"');
    expect(page.text).toContain('src="/realms/plain/login-actions/resources/themes/shop/img/logo.svg"');
    expect((await client.get('/realms/plain/login-actions/resources/themes/shop/style.css')).text).toContain('shop-stylesheet');
    expect((await client.get('/realms/plain/login-actions/resources/themes/shop/img/logo.svg')).status).toBe(200);
    expect((await client.get('/realms/plain/login-actions/resources/themes/shop/builtin/style.css')).text).not.toContain('shop-stylesheet');
    // The realm's own path and its other client keep the built-in theme.
    expect((await client.get('/realms/plain/login-actions/resources/style.css')).text).not.toContain('shop-stylesheet');
    const web = await new FormClient(t.url).get(authPath('plain'));
    expect(textOf(web.text, 'shop-intro')).toBeNull();
    expect(web.text).toContain('href="/realms/plain/login-actions/resources/style.css"');
    // A page shown again after a failed sign-in stays in the client's theme.
    const failed = await client.post(firstForm(page.text).action, { ...firstForm(page.text).hidden, username: 'nobody', password: 'wrong-pass-1' });
    expect(failed.status).toBe(401);
    expect(textOf(failed.text, 'shop-intro')).toBe('Welcome to the plain shop');

    // A client naming the built-in theme in a themed realm gets the built-in page.
    const classic = await new FormClient(t.url).get(clientAuth('themed', 'classic'));
    expect(textOf(classic.text, 'shop-intro')).toBeNull();
    expect(classic.text).toContain('href="/realms/themed/login-actions/resources/themes/keycloak/style.css"');
    expect((await client.get('/realms/themed/login-actions/resources/themes/keycloak/style.css')).text).not.toContain('shop-stylesheet');

    // The admin API refuses a theme the server lacks and a name with path characters (400 naming the attribute).
    const rep = (await api(t.url, 'GET', `/admin/realms/plain/clients/${shopfront.id}`, token)).body as { attributes: Record<string, string> };
    const unknown = await api(t.url, 'PUT', `/admin/realms/plain/clients/${shopfront.id}`, token, { ...rep, attributes: { ...rep.attributes, login_theme: 'nope' } });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain('login_theme: no login theme \\"nope\\"');
    for (const name of ['../shop', 'shop/../../etc', '..', 'shop\0', '/etc/passwd']) {
      expect((await api(t.url, 'PUT', `/admin/realms/plain/clients/${shopfront.id}`, token, { ...rep, attributes: { ...rep.attributes, login_theme: name } })).status, name).toBe(400);
      expect((await api(t.url, 'POST', '/admin/realms/plain/clients', token, { clientId: `bad-${name.length}`, attributes: { login_theme: name } })).status, name).toBe(400);
    }
    expect((await api(t.url, 'PUT', `/admin/realms/plain/clients/${shopfront.id}`, token, { ...rep, attributes: { ...rep.attributes, login_theme: 'shop-dark' } })).status).toBe(204);
    const dark = await eventually(async () => {
      const p = await new FormClient(t.url).get(clientAuth('plain', 'shopfront'));
      return textOf(p.text, 'page-title') === 'Sign in (dark)' ? p : null;
    });
    expect(dark.text).toContain('/resources/themes/shop-dark/style.css');
    // Hostile paths below a client theme's path find nothing.
    for (const path of ['/realms/plain/login-actions/resources/themes/..%2f..%2fsecret.txt/x', '/realms/plain/login-actions/resources/themes/shop/..%2f..%2f..%2fsecret.txt', '/realms/plain/login-actions/resources/themes/nope/style.css', '/realms/plain/login-actions/resources/themes/shop/link.txt']) {
      const answer = await rawGet(t.url, path);
      expect(answer.status, path).toBe(404);
      expect(answer.body, path).not.toContain('top secret');
    }
  });
});

describe("the README's worked example (docs/theme-example) in Chromium", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startServer({ config: { REALMGATE_THEME_DIR: join(REPO_ROOT, 'docs', 'theme-example') } });
    const kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'acme', displayName: 'Acme', enabled: true, resetPasswordAllowed: true, internationalizationEnabled: true, supportedLocales: ['en', 'de'] });
    await kc.clients.create({ realm: 'acme', clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] });
  });

  it("the console's Realm settings → Themes tab offers the directory's theme", async () => {
    const session = await ConsoleSession.start(t);
    try {
      await session.signIn();
      const wait = { timeout: 30_000 };
      expect(await session.open('acme/realm-settings/themes', 'themes-tab', (p) => p.getByTestId('themes-tab-save').waitFor(wait))).toEqual([]);
      const { page } = session;
      await page.locator('#kc-login-theme').click();
      expect(await page.getByRole('option').allTextContents()).toEqual(expect.arrayContaining(['keycloak', 'acme']));
      await page.getByRole('option', { name: 'acme', exact: true }).click();
      expect(await page.locator('#kc-login-theme').textContent()).toContain('acme');
      await screenshot(page, 'themes-tab-chosen');
      // Save: Keycloak 26.7's console sends the realm to PUT /admin/realms/{realm}/ui-ext.
      const saved = page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === '/admin/realms/acme/ui-ext', wait);
      await page.getByTestId('themes-tab-save').click();
      expect((await saved).status()).toBe(204);
      expect(session.problems).toEqual([]);
      const kc = await masterAdminClient(t.url);
      expect((await kc.realms.findOne({ realm: 'acme' }))?.loginTheme).toBe('acme');
    } finally {
      await session.close();
    }
  }, 240_000);

  it("PUT …/ui-ext (the console's realm save): manage-realm only, the realm PUT's checks, upConfig as users/profile takes it", async () => {
    const kc = await masterAdminClient(t.url);
    kc.setConfig({ realmName: 'acme' });
    const viewer = await tokenOfUserWithRoles(kc, t.url, 'theme-viewer', ['view-realm']);
    const manager = await tokenOfUserWithRoles(kc, t.url, 'theme-manager', ['manage-realm']);
    const before = (await kc.realms.findOne({ realm: 'acme' }))!;
    const put = (token: string, body: unknown) => api(t.url, 'PUT', '/admin/realms/acme/ui-ext', token, body);
    expect((await put(viewer, { ...before, loginTheme: 'keycloak' })).status).toBe(403);
    expect((await kc.realms.findOne({ realm: 'acme' }))?.loginTheme).toBe(before.loginTheme);
    // The realm PUT's theme check, field named.
    const unknown = await put(manager, { loginTheme: 'nowhere' });
    expect(unknown.status).toBe(400);
    expect(errorText(unknown.body)).toContain('loginTheme');
    // A changed user profile is refused as PUT users/profile refuses it, and the realm is left as it was.
    const profile = await api(t.url, 'GET', '/admin/realms/acme/users/profile', manager);
    const changed = await put(manager, { displayName: 'Changed', upConfig: { ...profile.body, unmanagedAttributePolicy: 'ENABLED' } });
    expect(changed.status).toBe(400);
    expect((await kc.realms.findOne({ realm: 'acme' }))?.displayName).toBe('Acme');
    // The unchanged profile with a realm change: saved, recorded as the realm PUT records it.
    expect((await put(manager, { displayName: 'Acme Corp', upConfig: profile.body })).status).toBe(204);
    expect((await kc.realms.findOne({ realm: 'acme' }))?.displayName).toBe('Acme Corp');
    expect((await put(manager, { displayName: 'Acme' })).status).toBe(204);
    expect((await kc.realms.findOne({ realm: 'acme' }))?.displayName).toBe('Acme');
  });

  it("shows Acme's template, logo, colours (over the built-in stylesheet) and texts", async () => {
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: { width: 720, height: 640 } });
      const tab = await context.newPage();
      const failed: string[] = [];
      tab.on('response', (response) => {
        if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
      });
      await tab.goto(`${t.url}${authPath('acme')}`);
      expect(await tab.locator('h1').textContent()).toBe('Sign in to Acme');
      expect(await tab.locator('#acme-intro').textContent()).toBe('One account for every Acme service.');
      expect(await tab.locator('#acme-logo').evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(160);
      // Acme's accent on the button; the built-in stylesheet's layout under it (the card's width).
      expect(await tab.locator('#kc-login').evaluate((b) => getComputedStyle(b).backgroundColor)).toBe('rgb(194, 65, 12)');
      expect(await tab.locator('main.card').evaluate((c) => getComputedStyle(c).maxWidth)).toBe('440px');
      expect(failed).toEqual([]);
      await screenshot(tab, 'theme-acme');
      await tab.goto(`${t.url}${authPath('acme')}&kc_locale=de`);
      expect(await tab.locator('h1').textContent()).toBe('Bei Acme anmelden');
      await context.close();
    } finally {
      await browser.close();
    }
  });
});

describe('a theme that would give broken pages stops the start', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'realmgate-bad-themes-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const themeDir = (name: string, files: Record<string, string>) => {
    const root = join(dir, name);
    for (const [path, text] of Object.entries(files)) write(root, path, text);
    return root;
  };

  it('a template that does not compile: the server refuses to start, naming the file and line', async () => {
    const root = themeDir('syntax', { 'broken/login/templates/login.eta': '<p>one</p>\n<p>two</p>\n<% if (it.a) { foo( %>\n<% } %>\n' });
    await expect(startServer({ config: { REALMGATE_THEME_DIR: root } })).rejects.toThrow(`${join(root, 'broken', 'login', 'templates', 'login.eta')}:3: missing ) after argument list`);
  });

  it('names the line of an unclosed tag, of bad JavaScript, of a block never closed', () => {
    expect(() => checkTemplate('a.eta', 'x\ny\n<%= it.a \n')).toThrow(/^a\.eta:3: unclosed tag/);
    expect(() => checkTemplate('b.eta', 'x\n<%= it.a %>\n\n<%= it.b + %>\nz')).toThrow(/^b\.eta:4: Unexpected token/);
    expect(() => checkTemplate('c.eta', 'x\n<% if (it.a) { %>\nopen\n<%= it.b %>\n')).toThrow(/^c\.eta:4: a block opened here or before is not closed/);
    expect(() => checkTemplate('d.eta', "<% layout('layout', it) %>\n<p><%= it.msg('x') %></p>\n<% it.list.forEach(function (i) { %><%= i %><% }) %>")).not.toThrow();
  });

  it('refuses a parent that is not there, a loop of parents, the built-in name, the old flat layout, a missing directory', () => {
    expect(() => Themes.load(themeDir('orphan', { 'a/login/theme.properties': 'parent=missing\n' }))).toThrow(/theme.properties: parent theme "missing" not found/);
    expect(() => Themes.load(themeDir('loop', { 'a/login/theme.properties': 'parent=b\n', 'b/login/theme.properties': 'parent=a\n' }))).toThrow(/a loop/);
    expect(() => Themes.load(themeDir('builtin', { 'keycloak/login/theme.properties': '' }))).toThrow(ThemeError);
    expect(() => Themes.load(themeDir('flat', { 'login.eta': '<p></p>' }))).toThrow(/directly in the theme directory; a theme is now a directory <themeDir>\/<name>\/login\//);
    expect(() => Themes.load(themeDir('badjson', { 'a/login/messages/messages_en.json': '{"x": 1}' }))).toThrow(/messages_en.json: must be an object of message texts/);
    expect(() => Themes.load(join(dir, 'nowhere'))).toThrow(/not a directory/);
    // An e-mail theme's body that does not compile stops the start too, naming the file and line.
    expect(() => Themes.load(themeDir('badmail', { 'm/email/templates/html/password-reset.eta': '<p>\n<%= it.link %>\n<% if (it.x) { %>' }))).toThrow(/m\/email\/templates\/html\/password-reset\.eta:\d+: /);
    const mailWarnings: string[] = [];
    Themes.load(themeDir('oddmail', { 'm/email/templates/password-reset.eta': '<p></p>', 'm/email/templates/html/welcome.eta': '<p></p>' }), (w) => mailWarnings.push(w));
    expect(mailWarnings.join('\n')).toMatch(/templates\/password-reset\.eta: not used \(an e-mail theme's bodies are templates\/html/);
    expect(mailWarnings.join('\n')).toMatch(/welcome\.eta: no e-mail of that name/);
    const warnings: string[] = [];
    const themes = Themes.load(themeDir('odd', { '.hidden/login/templates/login.eta': '<% bad(', 'ok/login/templates/Login.ftl': '<#-- -->' }), (w) => warnings.push(w));
    expect(themes.names('login')).toEqual(['ok']);
    expect(warnings.join('\n')).toMatch(/\.hidden: not a theme/);
    expect(warnings.join('\n')).toMatch(/Login\.ftl: not a template/);
  });
});
