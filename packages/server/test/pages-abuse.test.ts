import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { SignJWT, decodeJwt } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { FormClient, inputValue, pkce, textOf, type FormResponse } from './support/forms.js';
import { eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { linkIn, startSmtp, type ReceivedMail } from './support/smtp.js';
import { masterAdminClient } from './support/admin-client.js';

const REALM = 'abuse';
const R = `/realms/${REALM}`;
const PASSWORD = 'Correct-horse-7';
const SCRIPTS = ['"><script>alert(1)</script>', "'><img src=x onerror=alert(2)>"];

let t: TestServer;
let kc: KcAdminClient;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let app: Server;
let origin: string;
let callback: string;

beforeAll(async () => {
  t = await startServer();
  smtp = await startSmtp();
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
  callback = `${origin}/cb`;
  kc = await masterAdminClient(t.url);
  await kc.realms.create({
    realm: REALM,
    enabled: true,
    displayName: 'Abuse Inc.',
    registrationAllowed: true,
    resetPasswordAllowed: true,
    verifyEmail: true,
    eventsEnabled: true,
    attributes: { deleteAccountAllowed: 'true' },
    smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@abuse.example' },
  });
  kc.setConfig({ realmName: REALM });
  await kc.clients.create({
    clientId: 'web',
    publicClient: true,
    redirectUris: [callback, `${origin}/wild/*`],
    attributes: { 'post.logout.redirect.uris': `${callback}?bye` },
  });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  app?.close();
});

// The admin client types `type` as its own union of Keycloak's event names.
const events = (type: string) => kc.realms.findEvents({ realm: REALM, type: type as never, max: 1000 });
const userNamed = async (username: string) => (await kc.users.find({ username, exact: true }))[0];
const createUser = (username: string, emailVerified = true) =>
  kc.users.create({ username, email: `${username}@example.com`, emailVerified, firstName: 'First', lastName: 'Last', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
const passwordWorks = async (username: string, password: string) =>
  (await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username, password })).status === 200;
const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));
const sessionsOf = (userId: string) => t.server.context.storage.db.selectFrom('user_session').select('id').where('user_id', '=', userId).execute();
const settle = () => new Promise((r) => setTimeout(r, 300));

function authQuery(extra: Record<string, string> = {}, challenge = pkce().challenge): string {
  return new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', ...extra }).toString();
}

/** Opens the login page; returns it with its CSRF token. */
async function startLogin(client: FormClient, challenge?: string): Promise<{ html: string; csrf: string }> {
  const page = await client.get(`${R}/protocol/openid-connect/auth?${authQuery({}, challenge)}`);
  expect(page.status).toBe(200);
  return { html: page.text, csrf: inputValue(page.text, 'session_code')! };
}

/** The full code flow without a browser; the client ends up with an SSO cookie. */
async function codeLogin(client: FormClient, username: string, password = PASSWORD): Promise<{ id_token: string; refresh_token: string }> {
  const { verifier, challenge } = pkce();
  const { csrf } = await startLogin(client, challenge);
  const done = await client.post(`${R}/login-actions/authenticate`, { username, password, session_code: csrf });
  expect(done.status).toBe(302);
  const code = new URL(done.location!).searchParams.get('code')!;
  const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: callback, code_verifier: verifier });
  expect(tokens.status).toBe(200);
  return tokens.body as { id_token: string; refresh_token: string };
}

/** Signs in to the account pages; returns the profile page and its CSRF token. */
async function accountLogin(client: FormClient, username: string): Promise<{ html: string; csrf: string }> {
  const login = await client.get(`${R}/account/profile`);
  const done = await client.post(`${R}/login-actions/authenticate`, { username, password: PASSWORD, session_code: inputValue(login.text, 'session_code')! });
  expect(done.status).toBe(302);
  const page = await client.get(done.location!);
  expect(textOf(page.text, 'page-title')).toBe('Your account');
  return { html: page.text, csrf: inputValue(page.text, 'session_code')! };
}

/** A refusal page: the status, an explanation on an error page, no redirect, no sign-in. */
function expectErrorPage(response: FormResponse, status: number, text: RegExp): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('text/html');
  expect(response.location).toBeNull();
  expect(textOf(response.text, 'error-text')).toMatch(text);
  expect(response.setCookies).not.toContain('REALMGATE_SESSION');
}

/** Re-signs an e-mailed link's token with other claims, as the server's own key would. */
async function resign(token: string, changes: Record<string, unknown>): Promise<string> {
  const realm = (await t.server.context.storage.realms.byName(REALM))!;
  const key = await t.server.context.keys.signingKey(realm.id);
  return new SignJWT({ ...decodeJwt(token), ...changes }).setProtectedHeader({ alg: 'RS256', kid: key.kid }).sign(key.key);
}

const keyOf = (link: string) => new URL(link).searchParams.get('key')!;

async function requestReset(username: string): Promise<string> {
  const client = new FormClient(t.url);
  const { csrf } = await startLogin(client);
  const sent = await client.post(`${R}/login-actions/reset-credentials`, { username, session_code: csrf });
  expect(textOf(sent.text, 'page-message')).toContain('receive an e-mail');
  const mail = await eventually(() => mailsTo(`${username}@example.com`).at(-1));
  return linkIn(mail);
}

describe('CSRF tokens on every form', () => {
  const bad: Record<string, string>[] = [{}, { session_code: 'forged-token-value' }];

  it('refuses the login, registration and reset-request forms without the page token: 400 page, nothing changed', async () => {
    await createUser('cora');
    const other = new FormClient(t.url);
    const { csrf: othersToken } = await startLogin(other);
    for (const token of [...bad, { session_code: othersToken }] as Record<string, string>[]) {
      const client = new FormClient(t.url);
      await startLogin(client);
      const login = await client.post(`${R}/login-actions/authenticate`, { username: 'cora', password: PASSWORD, ...token });
      expectErrorPage(login, 400, /expired or was not sent from this page/);
      const registration = await client.post(`${R}/login-actions/registration`, {
        firstName: 'Reg',
        lastName: 'Istrant',
        email: 'csrf-reg@example.com',
        username: 'csrf-reg',
        password: PASSWORD,
        'password-confirm': PASSWORD,
        ...token,
      });
      expectErrorPage(registration, 400, /expired or was not sent from this page/);
      const reset = await client.post(`${R}/login-actions/reset-credentials`, { username: 'cora', ...token });
      expectErrorPage(reset, 400, /expired or was not sent from this page/);
    }
    // Without an auth session at all (a cross-site post from a page that never showed the form).
    const stranger = new FormClient(t.url);
    expectErrorPage(await stranger.post(`${R}/login-actions/authenticate`, { username: 'cora', password: PASSWORD, session_code: othersToken }), 400, /no longer valid/);

    await settle();
    expect(await userNamed('csrf-reg')).toBeUndefined();
    expect(mailsTo('cora@example.com')).toEqual([]);
    const coraId = (await userNamed('cora'))!.id!;
    expect((await events('LOGIN')).filter((e) => e.userId === coraId)).toEqual([]);
    expect((await events('SEND_RESET_PASSWORD')).filter((e) => e.userId === coraId)).toEqual([]);
    // The same forms with their token work, so the refusals above were the token's.
    const client = new FormClient(t.url);
    const { csrf } = await startLogin(client);
    expect((await client.post(`${R}/login-actions/authenticate`, { username: 'cora', password: PASSWORD, session_code: csrf })).status).toBe(302);
  });

  it('refuses the new-password form without its link token, and the account forms without theirs', async () => {
    await createUser('cody');
    const link = await requestReset('cody');
    const client = new FormClient(t.url);
    for (const token of bad) {
      const response = await client.post(`${R}/login-actions/reset-password`, { 'password-new': 'Changed-pass-1', 'password-confirm': 'Changed-pass-1', ...token });
      expectErrorPage(response, 400, /expired or has already been used/);
    }
    expect(await passwordWorks('cody', PASSWORD)).toBe(true);
    // The link itself is still good: nothing consumed it.
    expect((await client.get(link)).status).toBe(200);

    const { csrf } = await accountLogin(client, 'cody');
    const before = await userNamed('cody');
    for (const token of bad) {
      expectErrorPage(await client.post(`${R}/account`, { firstName: 'Hacked', lastName: 'Hacked', email: 'hacked@example.com', ...token }), 400, /expired or was not sent/);
      expectErrorPage(await client.post(`${R}/account/password`, { password: PASSWORD, 'password-new': 'Hacked-pass-1', 'password-confirm': 'Hacked-pass-1', ...token }), 400, /expired or was not sent/);
      expectErrorPage(await client.post(`${R}/account/delete`, { confirm: 'yes', ...token }), 400, /expired or was not sent/);
    }
    // Another account's token does not work either.
    await createUser('cleo');
    const cleo = new FormClient(t.url);
    const { csrf: cleosToken } = await accountLogin(cleo, 'cleo');
    expectErrorPage(await client.post(`${R}/account/delete`, { confirm: 'yes', session_code: cleosToken }), 400, /expired or was not sent/);
    await settle();
    expect(await userNamed('cody')).toEqual(before);
    expect(await passwordWorks('cody', PASSWORD)).toBe(true);
    expect(mailsTo('hacked@example.com')).toEqual([]);
    expect(await userNamed('cleo')).toBeDefined();
    // With its token the form works.
    const saved = await client.post(`${R}/account`, { firstName: 'Cody', lastName: 'Last', email: 'cody@example.com', session_code: csrf });
    expect(saved.status).toBe(200);
    expect((await userNamed('cody'))!.firstName).toBe('Cody');
  });

  it('refuses a logout confirmation with a wrong token, or one fetched by another browser, and stays signed in', async () => {
    await createUser('lana');
    const client = new FormClient(t.url);
    await codeLogin(client, 'lana');
    const lanaId = (await userNamed('lana'))!.id!;
    const sessions = async () => (await sessionsOf(lanaId)).length;
    const attacker = new FormClient(t.url);
    const theirs = await attacker.get(`${R}/protocol/openid-connect/logout`);
    expect(textOf(theirs.text, 'page-title')).toBe('Sign out');
    for (const session_code of ['forged-token-value', inputValue(theirs.text, 'session_code')!]) {
      const response = await client.post(`${R}/protocol/openid-connect/logout`, { session_code });
      expectErrorPage(response, 400, /expired or was not sent from this page/);
    }
    expect(await sessions()).toBe(1);
    const mine = await client.get(`${R}/protocol/openid-connect/logout`);
    const out = await client.post(`${R}/protocol/openid-connect/logout`, { session_code: inputValue(mine.text, 'session_code')! });
    expect(textOf(out.text, 'page-title')).toBe('You are signed out');
    expect(await sessions()).toBe(0);
  });
});

describe('e-mailed links', () => {
  it('refuses expired, tampered, wrong-type and reused reset links with a clear message, changing nothing', async () => {
    await createUser('erin');
    const link = await requestReset('erin');
    const key = keyOf(link);
    const now = Math.floor(Date.now() / 1000);
    const expired = await resign(key, { iat: now - 900, exp: now - 600 });
    const client = new FormClient(t.url);
    const page = (k: string) => client.get(`${R}/login-actions/action-token?key=${encodeURIComponent(k)}`);
    const submit = (k: string, password: string) => client.post(`${R}/login-actions/reset-password`, { 'password-new': password, 'password-confirm': password, session_code: k });

    expectErrorPage(await page(expired), 400, /This link has expired or has already been used. Please ask for a new one./);
    expectErrorPage(await submit(expired, 'Expired-pass-1'), 400, /expired/);
    const tampered = `${key.slice(0, -4)}${key.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    expectErrorPage(await page(tampered), 400, /expired/);
    expectErrorPage(await submit(tampered, 'Tampered-pass-1'), 400, /expired/);
    expectErrorPage(await submit(await resign(key, { typ: 'verify-email' }), 'Wrong-type-1'), 400, /expired/);
    expectErrorPage(await page('not-a-token'), 400, /expired/);
    expect(await passwordWorks('erin', PASSWORD)).toBe(true);

    expect(textOf((await page(key)).text, 'page-title')).toBe('Choose a new password');
    expect(textOf((await submit(key, 'First-new-pass-1')).text, 'page-title')).toBe('Your password has been updated');
    expectErrorPage(await submit(key, 'Second-new-pass-1'), 400, /already been used/);
    expectErrorPage(await page(key), 400, /already been used/);
    expect(await passwordWorks('erin', 'First-new-pass-1')).toBe(true);
    expect(await passwordWorks('erin', 'Second-new-pass-1')).toBe(false);
    expect((await events('RESET_PASSWORD')).filter((e) => e.details?.username === 'erin')).toHaveLength(1);
  });

  it('refuses expired and reused verification links; the address stays unverified until a good one', async () => {
    await createUser('fay', false);
    const client = new FormClient(t.url);
    const { csrf } = await startLogin(client);
    await client.post(`${R}/login-actions/authenticate`, { username: 'fay', password: PASSWORD, session_code: csrf });
    const key = keyOf(linkIn(await eventually(() => mailsTo('fay@example.com').at(0))));
    const now = Math.floor(Date.now() / 1000);
    const open = (k: string) => client.get(`${R}/login-actions/action-token?key=${encodeURIComponent(k)}`);

    expectErrorPage(await open(await resign(key, { iat: now - 900, exp: now - 600 })), 400, /expired/);
    expectErrorPage(await open(await resign(key, { email: 'attacker@evil.example', sub: 'someone-else' })), 400, /expired/);
    expect((await userNamed('fay'))!.emailVerified).toBe(false);
    expect(textOf((await open(key)).text, 'page-title')).toBe('E-mail address verified');
    expect((await userNamed('fay'))!.emailVerified).toBe(true);
    expectErrorPage(await open(key), 400, /already been used/);
    expect((await events('VERIFY_EMAIL')).filter((e) => e.details?.email === 'fay@example.com')).toHaveLength(1);
  });
});

describe('open redirects', () => {
  it('shows an error page, never a redirect, for a redirect_uri that is not registered as it is followed', async () => {
    const port = new URL(origin).port;
    const attempts = [
      'https://evil.example/cb',
      `${origin}/other`,
      `${callback}/../other`,
      `${callback}?extra=1`,
      `${callback}#fragment`,
      `https://127.0.0.1:${port}/cb`,
      `http://127.0.0.1:${port}@evil.example/cb`,
      `http://good@evil.example/cb`,
      `http://user@127.0.0.1:${port}/cb`,
      `${callback}@evil.example`,
      '//evil.example/cb',
      'javascript:alert(1)//',
      `${origin}/wild/../admin`,
      `${origin}/wild/%2e%2e/admin`,
      `${origin}/wild/%2E%2E/%2e%2e/evil`,
      `${origin}/wild/..\\admin`,
      `${origin}/wild/x#code=forged`,
      `${origin}/wild/x#/route?state=forged`,
      `${origin}/wild/x#a&iss=https://evil.example`,
      `${origin}/wildcard`,
      `http://127.0.0.1:${port}.evil.example/wild/x`,
      `http://evil.example/wild/x`,
      `http://127.0.0.1:${port}/wild`,
    ];
    const client = new FormClient(t.url);
    for (const redirect_uri of attempts) {
      for (const extra of [{}, { response_type: 'token' }] as Record<string, string>[]) {
        const response = await client.get(`${R}/protocol/openid-connect/auth?${authQuery({ redirect_uri, ...extra })}`);
        expect({ redirect_uri, status: response.status, location: response.location }).toEqual({ redirect_uri, status: 400, location: null });
        expect(textOf(response.text, 'error-text')).toBe('Invalid parameter: redirect_uri');
      }
    }
    // The registered ones work, so the refusals above were the redirect_uri's; under a wildcard, an app's route in
    // the fragment too (Keycloak's admin console signs in again on a deep link), as Keycloak.
    for (const redirect_uri of [callback, `${origin}/wild/deep/page?x=1`, `${origin}/wild/x#frag`, `${origin}/wild/#/master/users`]) {
      const response = await client.get(`${R}/protocol/openid-connect/auth?${authQuery({ redirect_uri })}`);
      expect(response.status).toBe(200);
      expect(inputValue(response.text, 'session_code')).toBeTruthy();
    }
  });

  it('shows an error page, never a redirect, for a post_logout_redirect_uri that is not registered, and stays signed in', async () => {
    await createUser('lou');
    const client = new FormClient(t.url);
    const tokens = await codeLogin(client, 'lou');
    const attempts = ['https://evil.example/bye', callback, `${callback}?bye#x`, `${callback}?bye&more`, `http://127.0.0.1:${new URL(origin).port}@evil.example/cb?bye`, `${origin}/cb/../cb?bye`];
    const logout = (params: Record<string, string>) => client.get(`${R}/protocol/openid-connect/logout?${new URLSearchParams(params)}`);
    for (const uri of attempts) {
      expectErrorPage(await logout({ id_token_hint: tokens.id_token, post_logout_redirect_uri: uri }), 400, /Invalid redirect uri/);
      expectErrorPage(await logout({ client_id: 'web', post_logout_redirect_uri: uri }), 400, /Invalid redirect uri/);
    }
    // A registered URI without any client to register it against.
    expectErrorPage(await logout({ post_logout_redirect_uri: `${callback}?bye` }), 400, /Invalid redirect uri/);

    // A confirmation page for a good URI, posted back with another one.
    const confirm = await logout({ client_id: 'web', post_logout_redirect_uri: `${callback}?bye`, state: 's1' });
    expect(textOf(confirm.text, 'page-title')).toBe('Sign out');
    const csrf = inputValue(confirm.text, 'session_code')!;
    expectErrorPage(await client.post(`${R}/protocol/openid-connect/logout`, { client_id: 'web', post_logout_redirect_uri: 'https://evil.example/bye', session_code: csrf }), 400, /Invalid redirect uri/);
    expect((await client.get(`${R}/account/profile`)).text).toContain('Your account');

    const out = await client.post(`${R}/protocol/openid-connect/logout`, { client_id: 'web', post_logout_redirect_uri: `${callback}?bye`, state: 's1', session_code: csrf });
    expect(out.status).toBe(302);
    expect(out.location).toBe(`${callback}?bye=&state=s1`);
    expect(textOf((await client.get(`${R}/account/profile`)).text, 'page-title')).toContain('Sign in');
  });
});

describe('hostile and oversized input', () => {
  /** Every payload came back, and only escaped: not one raw tag or broken-out attribute in the HTML. */
  function expectEscaped(html: string): void {
    for (const payload of SCRIPTS) expect(html).not.toContain(payload);
    expect(html).not.toMatch(/<script>alert|<img src=x|onerror=alert\(2\)>/);
  }

  it('escapes script injected into every field and parameter it shows again', async () => {
    for (const payload of SCRIPTS) {
      const client = new FormClient(t.url);
      const { csrf } = await startLogin(client);
      const login = await client.post(`${R}/login-actions/authenticate`, { username: payload, password: 'wrong', session_code: csrf });
      expect(login.status).toBe(401);
      expectEscaped(login.text);
      expect(inputValue(login.text, 'username')).toBe(payload);

      const fields = { firstName: payload, lastName: payload, email: payload, username: payload };
      const registration = await client.post(`${R}/login-actions/registration`, { ...fields, password: PASSWORD, 'password-confirm': 'different', session_code: csrf });
      expect(registration.status).toBe(400);
      expectEscaped(registration.text);
      for (const [name, value] of Object.entries(fields)) expect(inputValue(registration.text, name)).toBe(value);

      const reset = await client.post(`${R}/login-actions/reset-credentials`, { username: payload, session_code: csrf });
      expect(reset.status).toBe(200);
      expectEscaped(reset.text);

      // An error sent back as a self-submitting form (response_mode=form_post) with the client's state in it.
      const formPost = await client.get(`${R}/protocol/openid-connect/auth?${authQuery({ response_mode: 'form_post', response_type: 'token', state: payload })}`);
      expect(formPost.status).toBe(200);
      expectEscaped(formPost.text);
      expect(inputValue(formPost.text, 'state')).toBe(payload);

      const confirm = await client.get(`${R}/protocol/openid-connect/logout?${new URLSearchParams({ client_id: 'web', post_logout_redirect_uri: `${callback}?bye`, state: payload })}`);
      expectEscaped(confirm.text);
      expect(inputValue(confirm.text, 'state')).toBe(payload);
    }
    await createUser('xena');
    const client = new FormClient(t.url);
    const { csrf } = await accountLogin(client, 'xena');
    for (const payload of SCRIPTS) {
      const profile = await client.post(`${R}/account`, { firstName: payload, lastName: payload, email: payload, session_code: csrf });
      expect(profile.status).toBe(400);
      expectEscaped(profile.text);
      for (const name of ['firstName', 'lastName', 'email']) expect(inputValue(profile.text, name)).toBe(payload);
    }
    expect(await kc.users.find({ search: 'script' })).toEqual([]);
    expect((await userNamed('xena'))!.firstName).toBe('First');
  });

  it('answers over-long fields with a message next to the field, never a 500, and creates or changes nothing', async () => {
    const long = 'a'.repeat(10_000);
    const longEmail = `${'a'.repeat(10_000)}@example.com`;
    const users = await kc.users.count();
    const client = new FormClient(t.url);
    const { csrf } = await startLogin(client);

    const login = await client.post(`${R}/login-actions/authenticate`, { username: long, password: long, session_code: csrf });
    expect(login.status).toBe(400);
    expect(textOf(login.text, 'input-error-username')).toBe('Must be at most 255 characters.');
    expect(textOf(login.text, 'input-error-password')).toBe('Password is too long.');

    const registration = await client.post(`${R}/login-actions/registration`, { firstName: long, lastName: long, email: longEmail, username: long, password: long, 'password-confirm': long, session_code: csrf });
    expect(registration.status).toBe(400);
    for (const field of ['firstName', 'lastName', 'email', 'username']) expect(textOf(registration.text, `input-error-${field}`)).toBe('Must be at most 255 characters.');
    expect(textOf(registration.text, 'input-error-password')).toBe('Password is too long.');
    // Only the password is too long: still refused (login would never accept it).
    const longPassword = 'P'.repeat(5000);
    const onlyPassword = await client.post(`${R}/login-actions/registration`, {
      firstName: 'Long',
      lastName: 'Password',
      email: 'longpw@example.com',
      username: 'longpw',
      password: longPassword,
      'password-confirm': longPassword,
      session_code: csrf,
    });
    expect(onlyPassword.status).toBe(400);
    expect(textOf(onlyPassword.text, 'input-error-password')).toBe('Password is too long.');

    const reset = await client.post(`${R}/login-actions/reset-credentials`, { username: long, session_code: csrf });
    expect(reset.status).toBe(400);
    expect(textOf(reset.text, 'input-error-username')).toBe('Must be at most 255 characters.');

    // Parameters of the authorization request: an error page, not a silently dropped state.
    const auth = await client.get(`${R}/protocol/openid-connect/auth?${authQuery({ state: 's'.repeat(10_000) })}`);
    expectErrorPage(auth, 400, /state is too long/);
    expectErrorPage(await client.get(`${R}/protocol/openid-connect/auth?${authQuery({ redirect_uri: `${origin}/wild/${long}` })}`), 400, /redirect_uri/);

    await createUser('olga');
    const link = await requestReset('olga');
    const newPassword = await client.post(`${R}/login-actions/reset-password`, { 'password-new': long, 'password-confirm': long, session_code: keyOf(link) });
    expect(newPassword.status).toBe(400);
    expect(textOf(newPassword.text, 'input-error-password-new')).toBe('Password is too long.');

    const account = new FormClient(t.url);
    const { csrf: accountCsrf } = await accountLogin(account, 'olga');
    const profile = await account.post(`${R}/account`, { firstName: long, lastName: 'Ok', email: longEmail, session_code: accountCsrf });
    expect(profile.status).toBe(400);
    expect(textOf(profile.text, 'input-error-firstName')).toBe('Must be at most 255 characters.');
    expect(textOf(profile.text, 'input-error-email')).toBeTruthy();
    const password = await account.post(`${R}/account/password`, { password: PASSWORD, 'password-new': long, 'password-confirm': long, session_code: accountCsrf });
    expect(password.status).toBe(400);
    expect(textOf(password.text, 'input-error-password-new')).toBe('Password is too long.');

    expect(await kc.users.count()).toBe(users + 1);
    expect(await userNamed('longpw')).toBeUndefined();
    expect(await userNamed('olga')).toMatchObject({ firstName: 'First', lastName: 'Last', email: 'olga@example.com' });
    expect(await passwordWorks('olga', PASSWORD)).toBe(true);
    expect(t.logs.filter((l) => l.msg === 'unhandled error')).toEqual([]);
  });

  it('refuses a form body over 64 KiB with 413 on every form', async () => {
    const client = new FormClient(t.url);
    const { csrf } = await startLogin(client);
    const body = `session_code=${csrf}&username=${'a'.repeat(65 * 1024)}`;
    for (const path of ['login-actions/authenticate', 'login-actions/registration', 'login-actions/reset-credentials', 'login-actions/reset-password', 'account', 'account/password', 'protocol/openid-connect/logout']) {
      const response = await client.post(`${R}/${path}`, body);
      expect({ path, status: response.status }).toEqual({ path, status: 413 });
    }
    // Just under the limit is read (and refused for what it says, not for its size).
    const under = await client.post(`${R}/login-actions/authenticate`, `session_code=${csrf}&username=x&password=${'a'.repeat(60 * 1024)}`);
    expect(under.status).toBe(400);
  });
});

describe('e-mail verification on login and mail in development mode', () => {
  it('does not complete the login of an unverified address: sends the link, explains, and continues after verification', async () => {
    await createUser('gil', false);
    const gilId = (await userNamed('gil'))!.id!;
    const client = new FormClient(t.url);
    const { verifier, challenge } = pkce();
    const { csrf } = await startLogin(client, challenge);
    const held = await client.post(`${R}/login-actions/authenticate`, { username: 'gil', password: PASSWORD, session_code: csrf });
    expect(held.status).toBe(200);
    expect(held.location).toBeNull();
    expect(held.setCookies).not.toContain('REALMGATE_SESSION');
    expect(textOf(held.text, 'page-title')).toBe('Verify your e-mail address');
    expect(held.text).toContain('gil@example.com');
    const mail = await eventually(() => mailsTo('gil@example.com').at(0));
    expect((await eventually(async () => (await events('SEND_VERIFY_EMAIL')).find((e) => e.userId === gilId))).details).toMatchObject({ email: 'gil@example.com' });
    expect((await events('LOGIN')).filter((e) => e.userId === gilId)).toEqual([]);
    expect(await sessionsOf(gilId)).toEqual([]);
    // A wrong password says nothing about the address and sends nothing.
    const wrong = await client.post(`${R}/login-actions/authenticate`, { username: 'gil', password: 'wrong-password', session_code: csrf });
    expect(wrong.status).toBe(401);
    expect(wrong.text).not.toContain('gil@example.com');

    const verified = await client.get(linkIn(mail));
    expect(textOf(verified.text, 'page-title')).toBe('E-mail address verified');
    expect(verified.text).toContain(`href="${R}/login-actions/authenticate"`);
    const again = await client.get(`${R}/login-actions/authenticate`);
    const done = await client.post(`${R}/login-actions/authenticate`, { username: 'gil', password: PASSWORD, session_code: inputValue(again.text, 'session_code')! });
    expect(done.status).toBe(302);
    const code = new URL(done.location!).searchParams.get('code')!;
    expect((await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: callback, code_verifier: verifier })).body).toMatchObject({
      token_type: 'Bearer',
    });
  });

  it('logs mails when a realm has no SMTP server (development mode), and never logs the SMTP password', async () => {
    kc.setConfig({ realmName: 'master' });
    const deadPort = await new Promise<number>((resolvePort) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolvePort(port));
      });
    });
    const secret = 'Smtp-Secret-Passw0rd-93';
    try {
      await kc.realms.create({ realm: 'quiet', enabled: true, resetPasswordAllowed: true });
      await kc.realms.create({
        realm: 'secretive',
        enabled: true,
        resetPasswordAllowed: true,
        smtpServer: { host: '127.0.0.1', port: String(deadPort), from: 'noreply@secret.example', auth: 'true', user: 'mailer', password: secret },
      });
      for (const realm of ['quiet', 'secretive']) {
        kc.setConfig({ realmName: realm });
        await kc.users.create({ username: 'mo', email: `mo@${realm}.example`, emailVerified: true, enabled: true });
        kc.setConfig({ realmName: 'master' });
        const client = new FormClient(t.url);
        const login = await client.get(`/realms/${realm}/account/profile`);
        const sent = await client.post(`/realms/${realm}/login-actions/reset-credentials`, { username: 'mo', session_code: inputValue(login.text, 'session_code')! });
        expect(textOf(sent.text, 'page-message')).toContain('receive an e-mail');
      }
    } finally {
      kc.setConfig({ realmName: REALM });
    }
    const logged = await eventually(() => t.logs.find((l) => l.to === 'mo@quiet.example'));
    expect(logged).toMatchObject({ realm: 'quiet', msg: expect.stringContaining('no SMTP configured') });
    expect(logged.body).toMatch(/\/realms\/quiet\/login-actions\/action-token\?key=/);
    expect(mailsTo('mo@quiet.example')).toEqual([]);
    await eventually(() => t.logs.find((l) => l.msg === 'sending e-mail failed' && l.realm === 'secretive'), 15_000);
    expect(JSON.stringify(t.logs)).not.toContain(secret);
  });
});

describe('every page, as a user sees it', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  const shot = async (page: Page, name: string, title: string | RegExp) => {
    await expect.poll(() => page.locator('h1').textContent()).toMatch(title);
    // Every page is a product page: the realm's name, a title, no raw protocol codes in the visible text.
    expect(await page.locator('.realm').textContent()).toBe('Abuse Inc.');
    expect(await page.title()).toMatch(/ · Abuse Inc\.$/);
    await screenshot(page, `page-${name}`);
  };

  it('takes a screenshot of each page', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(`${t.url}${R}/protocol/openid-connect/auth?${authQuery()}`);
    await shot(page, 'login', 'Sign in to your account');
    await page.fill('#username', 'nobody');
    await page.fill('#password', 'wrong');
    await page.click('#kc-login');
    await shot(page, 'login-error', 'Sign in to your account');

    await page.click('text=Register');
    await shot(page, 'register', 'Register');
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, 'register-phone', 'Register');
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.fill('#email', 'not-an-email');
    await page.fill('#username', 'tour');
    await page.fill('#password', 'Tour-pass-1');
    await page.fill('#password-confirm', 'different');
    await page.click('#kc-register-form button[type=submit]');
    await shot(page, 'register-errors', 'Register');
    await page.fill('#firstName', 'Tom');
    await page.fill('#lastName', 'Tourist');
    await page.fill('#email', 'tour@example.com');
    await page.fill('#password', 'Tour-pass-1');
    await page.fill('#password-confirm', 'Tour-pass-1');
    await page.click('#kc-register-form button[type=submit]');
    await shot(page, 'verify-email-sent', 'Verify your e-mail address');
    await page.goto(linkIn(await eventually(() => mailsTo('tour@example.com').at(0))));
    await shot(page, 'email-verified', 'E-mail address verified');

    await page.goto(`${t.url}${R}/login-actions/reset-credentials`);
    await shot(page, 'reset-request', 'Forgot your password?');
    await page.fill('#username', 'tour');
    await page.click('#kc-reset-password-form button[type=submit]');
    await shot(page, 'reset-sent', 'Sign in to your account');
    const resetMail = await eventually(() => mailsTo('tour@example.com').find((m: ReceivedMail) => m.raw.includes('reset the password of your account')));
    await page.goto(linkIn(resetMail));
    await shot(page, 'update-password', 'Choose a new password');
    await page.fill('#password-new', 'Tour-pass-2');
    await page.fill('#password-confirm', 'mismatch');
    await page.click('#kc-passwd-update-form button[type=submit]');
    await shot(page, 'update-password-error', 'Choose a new password');
    await page.fill('#password-new', 'Tour-pass-2');
    await page.fill('#password-confirm', 'Tour-pass-2');
    await page.click('#kc-passwd-update-form button[type=submit]');
    await shot(page, 'password-updated', 'Your password has been updated');
    await page.goto(linkIn(resetMail));
    await shot(page, 'link-expired', 'We are sorry…');

    await page.goto(`${t.url}${R}/account/profile`);
    await page.fill('#username', 'tour');
    await page.fill('#password', 'Tour-pass-2');
    await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
    await shot(page, 'account-profile', 'Your account');
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, 'account-profile-phone', 'Your account');
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.fill('#firstName', '<b>');
    await page.click('#account-profile button[type=submit]');
    await shot(page, 'account-profile-error', 'Your account');
    await page.goto(`${t.url}${R}/account/password`);
    await shot(page, 'account-password', 'Your account');
    await page.goto(`${t.url}${R}/account/delete`);
    await shot(page, 'account-delete', 'Your account');

    await page.goto(`${t.url}${R}/protocol/openid-connect/logout`);
    await shot(page, 'logout-confirm', 'Sign out');
    await page.click('button[type=submit]');
    await shot(page, 'signed-out', 'You are signed out');

    await createUser('uma', false);
    await page.goto(`${t.url}${R}/protocol/openid-connect/auth?${authQuery()}`);
    await page.fill('#username', 'uma');
    await page.fill('#password', PASSWORD);
    await page.click('#kc-login');
    await shot(page, 'login-verify-email', 'Verify your e-mail address');

    await page.goto(`${t.url}${R}/protocol/openid-connect/auth?${authQuery({ redirect_uri: 'https://evil.example/cb' })}`);
    await shot(page, 'error', 'We are sorry…');

    await page.goto(`${t.url}${R}/account/profile`);
    await page.fill('#username', 'tour');
    await page.fill('#password', 'Tour-pass-2');
    await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
    await page.goto(`${t.url}${R}/account/delete`);
    await page.click('#account-delete button[type=submit]');
    await shot(page, 'account-deleted', 'Your account has been deleted');
    await page.close();
  }, 90_000);
});
