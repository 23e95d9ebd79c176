import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACTION_ID, SHIELD_ID } from './fixtures/page-providers/page-test-provider/index.js';
import { launchBrowser, screenshot } from './support/browser.js';
import { FormClient, inputValue, pkce, textOf } from './support/forms.js';
import { eventually, startServer, type TestServer } from './support/server.js';
import { startSmtp } from './support/smtp.js';
import { masterAdminClient } from './support/admin-client.js';

const providersDir = resolve(import.meta.dirname, 'fixtures', 'page-providers');
const serverSrc = resolve(import.meta.dirname, '..', 'src');

describe('form actions and form protectors from a provider package, through the real pages', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let browser: Browser;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let app: Server;
  let callback: string;

  // The admin client types `type` as its own union of Keycloak's event names.
  const events = (type: string) => kc.realms.findEvents({ realm: 'plug', type: type as never, max: 500 });
  const usersNamed = async (username: string) => kc.users.find({ username, exact: true });

  const authUrl = (entry: 'auth' | 'registrations') =>
    `${t.url}/realms/plug/protocol/openid-connect/${entry}?${new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`;

  /** Expected elements are there at once; a missing one fails in seconds, not at the test's timeout. */
  const newPage = async (): Promise<Page> => {
    const page = await browser.newPage();
    page.setDefaultTimeout(5000);
    return page;
  };

  /** Fills the registration form in a fresh browser context (no SSO cookie from an earlier registration). */
  async function register(fields: { username: string; email: string }): Promise<Page> {
    const page = await newPage();
    await page.goto(authUrl('registrations'));
    await page.fill('#firstName', 'Test');
    await page.fill('#lastName', 'Person');
    await page.fill('#email', fields.email);
    await page.fill('#username', fields.username);
    await page.fill('#password', 'register-pass-1');
    await page.fill('#password-confirm', 'register-pass-1');
    // Either back at the client, or the form again (its URL is then the form's action).
    await Promise.all([
      page.waitForURL((u) => u.href.startsWith(callback) || u.pathname.endsWith('/login-actions/registration')),
      page.click('#kc-register-form button[type=submit]'),
    ]);
    return page;
  }

  beforeAll(async () => {
    t = await startServer({ providersDir });
    smtp = await startSmtp();
    app = createServer((req, res) => res.end(`callback ${req.url}`));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
    kc = await masterAdminClient(t.url);
    await kc.realms.create({
      realm: 'plug',
      enabled: true,
      registrationAllowed: true,
      resetPasswordAllowed: true,
      eventsEnabled: true,
      smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@plug.example' },
    });
    kc.setConfig({ realmName: 'plug' });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [callback] });
    await kc.users.create({ username: 'pat', email: 'pat@example.com', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: 'pat-pass-1' }] });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
    app?.close();
  });

  it('the protector puts its hidden fields and its script (served by its own resource) on the login, registration and reset pages', async () => {
    const script = await fetch(`${t.url}/realms/plug/${SHIELD_ID}/shield.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(await script.text()).toContain('shield-proof');

    const page = await newPage();
    const pages = [
      { url: authUrl('auth'), form: '#kc-form-login' },
      { url: authUrl('registrations'), form: '#kc-register-form' },
      { url: `${t.url}/realms/plug/login-actions/reset-credentials`, form: '#kc-reset-password-form' },
    ];
    for (const { url, form } of pages) {
      await page.goto(url);
      expect(await page.locator(`${form} input[type=hidden][name=shield-token]`).count()).toBe(1);
      expect(await page.locator(`${form} script[src="/realms/plug/${SHIELD_ID}/shield.js"]`).count()).toBe(1);
      // The script ran under the page's CSP: it filled in its proof.
      const token = await page.inputValue(`${form} input[name=shield-token]`);
      await expect.poll(() => page.inputValue(`${form} input[name=shield-proof]`)).toBe(`solved:${token}`);
    }
    await page.goto(authUrl('auth'));
    await screenshot(page, 'plugin-login-protected');
    await page.fill('#username', 'pat');
    await page.fill('#password', 'pat-pass-1');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#kc-login')]);
    await page.close();
  });

  it('the protector refuses a login before the password is checked: a correct password is refused, LOGIN_ERROR carries its error', async () => {
    const page = await newPage();
    for (const password of ['pat-pass-1', 'a-wrong-password']) {
      await page.goto(authUrl('auth'));
      await expect.poll(() => page.inputValue('input[name=shield-proof]')).toMatch(/^solved:/);
      // As a bot that never ran the script would post it.
      await page.evaluate(() => void ((document.querySelector('input[name=shield-proof]') as HTMLInputElement).value = ''));
      await page.fill('#username', 'pat');
      await page.fill('#password', password);
      const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#kc-login')]);
      expect(response.status()).toBe(400);
      expect(page.url().startsWith(callback)).toBe(false);
      expect(await page.locator('#page-message').textContent()).toContain('could not verify');
    }
    await screenshot(page, 'plugin-login-refused');
    const errors = await eventually(async () => {
      const list = (await events('LOGIN_ERROR')).filter((e) => e.error === 'shield_failed');
      return list.length === 2 ? list : null;
    });
    expect(errors[0].details).toMatchObject({ protector: SHIELD_ID, reason: 'unsolved', username: 'pat' });
    const all = await events('LOGIN_ERROR');
    expect(all.filter((e) => e.error === 'invalid_user_credentials')).toEqual([]);
    // The only LOGIN is the one of the previous test.
    expect(await events('LOGIN')).toHaveLength(1);

    // The same refusal without a browser: the right password, the page's CSRF token, no proof.
    const client = new FormClient(t.url);
    const html = (await client.get(authUrl('auth'))).text;
    const refused = await client.post('/realms/plug/login-actions/authenticate', {
      username: 'pat',
      password: 'pat-pass-1',
      session_code: inputValue(html, 'session_code')!,
      'shield-token': inputValue(html, 'shield-token')!,
    });
    expect(refused.status).toBe(400);
    expect(refused.location).toBeNull();
    expect(client.cookies.has('REALMGATE_SESSION')).toBe(false);
    await page.close();
  });

  it('the protector refuses registration and reset requests that lack its proof: no user, no mail, *_ERROR events', async () => {
    const page = await newPage();
    await page.goto(authUrl('registrations'));
    await expect.poll(() => page.inputValue('input[name=shield-proof]')).toMatch(/^solved:/);
    await page.evaluate(() => void ((document.querySelector('input[name=shield-proof]') as HTMLInputElement).value = 'forged'));
    await page.fill('#firstName', 'No');
    await page.fill('#lastName', 'Proof');
    await page.fill('#email', 'noproof@example.com');
    await page.fill('#username', 'noproof');
    await page.fill('#password', 'register-pass-1');
    await page.fill('#password-confirm', 'register-pass-1');
    await page.click('#kc-register-form button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('could not verify');
    expect(await page.inputValue('#username')).toBe('noproof');
    expect(await usersNamed('noproof')).toEqual([]);
    const registerError = await eventually(async () => (await events('REGISTER_ERROR')).find((e) => e.details?.username === 'noproof'));
    expect(registerError.error).toBe('shield_failed');

    await page.goto(`${t.url}/realms/plug/login-actions/reset-credentials`);
    await expect.poll(() => page.inputValue('input[name=shield-proof]')).toMatch(/^solved:/);
    await page.evaluate(() => void ((document.querySelector('input[name=shield-proof]') as HTMLInputElement).value = ''));
    await page.fill('#username', 'pat');
    await page.click('#kc-reset-password-form button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('could not verify');
    const resetError = await eventually(async () => (await events('RESET_PASSWORD_ERROR')).find((e) => e.error === 'shield_failed'));
    expect(resetError.details).toMatchObject({ username: 'pat', reason: 'unsolved' });
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.mails.filter((m) => m.to.includes('pat@example.com'))).toEqual([]);
    expect(await events('SEND_RESET_PASSWORD')).toEqual([]);

    // With its proof the same request goes through, so the refusal above was the protector's.
    await page.goto(`${t.url}/realms/plug/login-actions/reset-credentials`);
    await expect.poll(() => page.inputValue('input[name=shield-proof]')).toMatch(/^solved:/);
    await page.fill('#username', 'pat');
    await page.click('#kc-reset-password-form button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('receive an e-mail');
    await eventually(() => smtp.mails.find((m) => m.to.includes('pat@example.com')));
    await page.close();
  });

  it('a form action added through the admin API refuses registrations with a field error and REGISTER_ERROR; not added or DISABLED it does nothing', async () => {
    const am = kc.authenticationManagement;
    // Installed but in no flow: the built-in registration flow does not run it.
    let page = await register({ username: 'ann', email: 'ann@blocked.test' });
    expect(page.url().startsWith(callback)).toBe(true);
    expect(await usersNamed('ann')).toHaveLength(1);
    await page.close();

    await am.copyFlow({ flow: 'registration', newName: 'plug registration' });
    const { id } = await am.addExecutionToFlow({ flow: 'plug registration registration form', provider: ACTION_ID });
    await kc.realms.update({ realm: 'plug' }, { registrationFlow: 'plug registration' });
    const execution = (await am.getExecutions({ flow: 'plug registration' })).find((e) => e.id === id)!;
    expect(execution.requirement).toBe('DISABLED');
    page = await register({ username: 'bea', email: 'bea@blocked.test' });
    expect(page.url().startsWith(callback)).toBe(true);
    expect(await usersNamed('bea')).toHaveLength(1);
    await page.close();

    await am.updateExecution({ flow: 'plug registration' }, { ...execution, requirement: 'REQUIRED' });
    page = await register({ username: 'cid', email: 'cid@blocked.test' });
    expect(page.url().startsWith(callback)).toBe(false);
    expect(await page.locator('#input-error-email').textContent()).toBe('Addresses at blocked.test are not accepted.');
    expect(await page.getAttribute('#email', 'aria-invalid')).toBe('true');
    expect(await page.getAttribute('#email', 'aria-describedby')).toBe('input-error-email');
    expect(await page.inputValue('#email')).toBe('cid@blocked.test');
    await screenshot(page, 'plugin-register-refused');
    await page.close();
    expect(await usersNamed('cid')).toEqual([]);
    const refused = await eventually(async () => (await events('REGISTER_ERROR')).find((e) => e.details?.username === 'cid'));
    expect(refused.error).toBe('test_domain_blocked');
    expect(refused.userId ?? null).toBeNull();

    // An error on a field the page does not have is still shown, not swallowed.
    page = await register({ username: 'robot7', email: 'robot7@example.com' });
    expect(await page.locator('#page-message').textContent()).toContain('Robots may not register here.');
    await page.close();
    expect(await usersNamed('robot7')).toEqual([]);
    expect((await eventually(async () => (await events('REGISTER_ERROR')).find((e) => e.details?.username === 'robot7'))).error).toBe('test_robot');

    await am.updateExecution({ flow: 'plug registration' }, { ...execution, requirement: 'DISABLED' });
    page = await register({ username: 'dan', email: 'dan@blocked.test' });
    expect(page.url().startsWith(callback)).toBe(true);
    expect(await usersNamed('dan')).toHaveLength(1);
    await page.close();
  }, 60_000);

  it('the page and flow code know no extension by its id', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(serverSrc);
    expect(files.length).toBeGreaterThan(50);
    const offending: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // Doc comments may name an example; code, templates and styles may not.
          if (/^\s*(\*|\/\/|\/\*)/.test(line)) return;
          if (/\bext-[a-z]|@realmgate\/(pow|disposable-email|event-webhook)|test-page-/.test(line)) offending.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offending).toEqual([]);
  });
});

describe('a theme directory', () => {
  let t: TestServer;
  let themeDir: string;

  beforeAll(async () => {
    themeDir = mkdtempSync(join(tmpdir(), 'realmgate-theme-'));
    mkdirSync(join(themeDir, 'shop', 'login', 'templates'), { recursive: true });
    mkdirSync(join(themeDir, 'shop', 'login', 'resources'), { recursive: true });
    writeFileSync(
      join(themeDir, 'shop', 'login', 'templates', 'login.eta'),
      [
        "<% layout('layout', { ...it, title: 'Welcome to the themed shop' }) %>",
        '<p id="themed-intro">Sign in with your shop account, <%= it.realmTitle %> customer.</p>',
        '<form id="kc-form-login" method="post" action="<%= it.action %>">',
        '  <input type="hidden" name="session_code" value="<%= it.csrf %>">',
        "  <%~ include('field', { name: 'username', label: 'Shop login', value: it.values.username, error: it.errors.username }) %>",
        "  <%~ include('field', { name: 'password', label: 'Secret', type: 'password', error: it.errors.password }) %>",
        '  <%~ it.protectorHtml %>',
        '  <button type="submit" id="kc-login">Enter</button>',
        '</form>',
      ].join('\n'),
    );
    writeFileSync(join(themeDir, 'shop', 'login', 'resources', 'style.css'), 'body { background: #fdf6e3; } /* themed-stylesheet */\n');
    t = await startServer({ config: { REALMGATE_THEME_DIR: themeDir } });
    const kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'themed', enabled: true, displayName: 'Themed <Shop>', registrationAllowed: true, loginTheme: 'shop' });
    kc.setConfig({ realmName: 'themed' });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] });
    await kc.users.create({ username: 'tia', enabled: true, credentials: [{ type: 'password', value: 'tia-pass-1' }] });
  });
  afterAll(async () => {
    await t?.close();
    rmSync(themeDir, { recursive: true, force: true });
  });

  it("replaces the login template (inside the built-in layout) and the stylesheet; other pages keep the built-in ones", async () => {
    const client = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: 'http://127.0.0.1:9/cb', response_type: 'code', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const login = await client.get(`/realms/themed/protocol/openid-connect/auth?${query}`);
    expect(login.status).toBe(200);
    expect(textOf(login.text, 'themed-intro')).toBe('Sign in with your shop account, Themed <Shop> customer.');
    expect(login.text).toContain('Themed &lt;Shop&gt;');
    expect(textOf(login.text, 'page-title')).toBe('Welcome to the themed shop');
    expect(login.text).toContain('<label for="username">Shop login</label>');
    // Still the built-in layout: the stylesheet link and the footer.
    expect(login.text).toContain('href="/realms/themed/login-actions/resources/style.css"');
    expect(login.text).toContain('Secured by Realmgate');

    const css = await client.get('/realms/themed/login-actions/resources/style.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toContain('text/css');
    expect(css.text).toContain('themed-stylesheet');

    // The themed form still signs in; a page the theme does not override is the built-in one.
    const failed = await client.post('/realms/themed/login-actions/authenticate', { username: 'tia', password: 'nope', session_code: inputValue(login.text, 'session_code')! });
    expect(failed.status).toBe(401);
    expect(textOf(failed.text, 'themed-intro')).not.toBeNull();
    expect(textOf(failed.text, 'input-error-username')).toBe('Invalid username or password.');
    const register = await client.get('/realms/themed/login-actions/registration');
    expect(textOf(register.text, 'page-title')).toBe('Register');
    const ok = await client.post('/realms/themed/login-actions/authenticate', { username: 'tia', password: 'tia-pass-1', session_code: inputValue(login.text, 'session_code')! });
    expect(ok.status).toBe(302);
    expect(ok.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/cb\?code=/);
  });
});
