/**
 * End to end: the real server with this package (and Extension A for one case) installed from a providers
 * directory, configured with the official `@keycloak/keycloak-admin-client` as the original's description
 * says, driven by a real browser and by scripted form posts, delivering to real node:http receivers.
 *
 * Which client receives which event (the `clientId` the server puts on the event):
 *  - registration, login, logout, password reset: the client the browser flow started with (`shop`);
 *  - the e-mail verification link after a registration: the client the registration started with (`shop`);
 *  - everything on the account pages (`/realms/{r}/account/profile`, the server-rendered ones): `account-console`, the client those pages
 *    sign in through — its LOGIN, the UPDATE_EMAIL + VERIFY_EMAIL of the link mailed from there, and the
 *    user's own DELETE_ACCOUNT. So `account-console` gets api.url / api.key of its own here;
 *  - an administrator's deletion: every enabled client with a webhook.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from '../../server/test/support/browser.js';
import { api, eventually, startServer, tokenRequest, type TestServer } from '../../server/test/support/server.js';
import { linkIn, startSmtp } from '../../server/test/support/smtp.js';
import type { WebhookPayload } from '../src/payload.js';
import { formLogin, formRegister, type FormClient } from './form-login.js';
import { startReceiver } from './receiver.js';
import { masterAdminClient } from '../../server/test/support/admin-client.js';

const PACKAGES = resolve(import.meta.dirname, '../..');
const BROWSER_UA = 'Mozilla/5.0 (X11; Linux x86_64) RealmgateWebhookE2E/1';
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PAYLOAD_FIELDS = [
  'type', 'user_id', 'user_name', 'email', 'first_name', 'last_name', 'email_verified', 'created_timestamp', 'user_ip',
  'user_agent', 'delete_by_admin', 'user_roles', 'organizations', 'attributes', 'realm', 'error', 'details',
].sort();
/** After the expected deliveries arrived: how long nothing else may arrive. */
const QUIET_MS = 400;

/** A providers directory holding links to the named packages of this repository only. */
function providersDir(...names: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-webhook-e2e-'));
  for (const name of names) symlinkSync(join(PACKAGES, name), join(dir, name), 'dir');
  return dir;
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

interface Delivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
  payload: WebhookPayload;
}

/** Receivers by name, and how many of each one's requests a test has already looked at. */
class Receivers {
  readonly all = new Map<string, Receiver>();
  private readonly seen = new Map<string, number>();

  async add(name: string, answer: (n: number) => number | 'never' = () => 204): Promise<Receiver> {
    const receiver = await startReceiver(answer);
    this.all.set(name, receiver);
    this.seen.set(name, 0);
    return receiver;
  }

  url(name: string): string {
    return this.all.get(name)!.url;
  }

  total(): number {
    return [...this.all.values()].reduce((sum, r) => sum + r.received.length, 0);
  }

  private counts(): Record<string, number> {
    return Object.fromEntries([...this.all].map(([name, r]) => [name, r.received.length]));
  }

  /**
   * Waits for exactly `expected` new requests per receiver (others: none), then for QUIET_MS more in which
   * nothing else may arrive; returns the new ones.
   */
  async next(expected: Record<string, number>): Promise<Record<string, Delivery[]>> {
    const want = Object.fromEntries([...this.all.keys()].map((name) => [name, this.seen.get(name)! + (expected[name] ?? 0)]));
    const arrived = await eventually(() => Object.entries(want).every(([name, n]) => this.all.get(name)!.received.length >= n), 10_000).catch(() => false);
    if (arrived) await new Promise((r) => setTimeout(r, QUIET_MS));
    const counts = this.counts();
    const result: Record<string, Delivery[]> = {};
    for (const [name, receiver] of this.all) {
      const fresh = receiver.received.slice(this.seen.get(name)!);
      // Taken as seen even when the check below fails, so that one failure does not cascade to later tests.
      this.seen.set(name, receiver.received.length);
      if (fresh.length) {
        result[name] = fresh.map((r) => ({ headers: r.headers, body: r.body, payload: JSON.parse(r.body) as WebhookPayload }));
      }
    }
    expect(counts, 'requests per receiver').toEqual(want);
    return result;
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.all.values()].map((r) => r.close()));
  }
}

function expectHeaders(delivery: Delivery, key: string): void {
  expect(delivery.headers.authorization).toBe(`Bearer ${key}`);
  expect(delivery.headers['content-type']).toBe('application/json');
}

function expectPayload(delivery: Delivery, expected: WebhookPayload): void {
  expect(Object.keys(delivery.payload).sort()).toEqual(PAYLOAD_FIELDS);
  expect(delivery.payload).toStrictEqual(expected);
}

async function callbackServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb` };
}

// ---------------------------------------------------------------------------------------------------------

describe('the original setup, end to end (official admin client, real browser, real receivers)', () => {
  let t: TestServer;
  let dir: string;
  let browser: Browser;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let app: { server: Server; url: string };
  let kc: KcAdminClient;
  let sa: KcAdminClient;
  const hooks = new Receivers();
  let realm: { id: string; name: string; display_name: string | null };
  let org: { id: string; name: string; alias: string };
  let aliceId: string;
  let alice: Awaited<ReturnType<typeof userFields>>;
  let carolId: string;
  const keys = {
    shop: 'k-shop-3f9a',
    account: 'k-account-77b1',
    partner: 'k-partner-0c4e',
    proxied: 'k-proxied-5d21',
    off: 'k-off-9e0f',
    noauto: 'k-noauto-1a2b',
    quiet: 'k-quiet-4c5d',
  };

  /** GET the client as the service account, merge attributes, PUT it back — the README's step 3. */
  async function configure(realmName: string, clientId: string, attributes: Record<string, string>) {
    sa.setConfig({ realmName });
    const [found] = await sa.clients.find({ clientId });
    const client = await sa.clients.findOne({ id: found.id! });
    await sa.clients.update({ id: found.id! }, { ...client, attributes: { ...client!.attributes, ...attributes } });
  }

  async function enableListener(realmName: string) {
    const config = await kc.realms.getConfigEvents({ realm: realmName });
    await kc.realms.updateConfigEvents({ realm: realmName }, { ...config, eventsListeners: [...(config.eventsListeners ?? []), 'ext-event-webhook'] });
  }

  /** What the admin API says of the user now, in payload form (the fields a snapshot would carry). */
  async function userFields(id: string) {
    const user = (await kc.users.findOne({ id, realm: 'demo' }))!;
    return {
      user_id: user.id!,
      user_name: user.username!,
      email: user.email ?? null,
      first_name: user.firstName ?? null,
      last_name: user.lastName ?? null,
      email_verified: user.emailVerified ?? null,
      created_timestamp: user.createdTimestamp ?? null,
      attributes: (user.attributes ?? {}) as Record<string, string[]>,
    };
  }

  function payload(type: string, user: Awaited<ReturnType<typeof userFields>>, rest: Partial<WebhookPayload>): WebhookPayload {
    return {
      type,
      ...user,
      user_ip: '127.0.0.1',
      user_agent: BROWSER_UA,
      delete_by_admin: false,
      user_roles: ['default-roles-demo'],
      organizations: [],
      realm,
      error: null,
      details: null,
      ...rest,
    };
  }

  function registerError(email: string, firstName: string, lastName: string, error: string, details: Record<string, string>): WebhookPayload {
    return {
      type: 'REGISTER_ERROR',
      user_id: null,
      user_name: null,
      email,
      first_name: firstName,
      last_name: lastName,
      email_verified: null,
      created_timestamp: null,
      user_ip: '127.0.0.1',
      user_agent: BROWSER_UA,
      delete_by_admin: false,
      user_roles: [],
      organizations: [],
      attributes: {},
      realm,
      error,
      details,
    };
  }

  const shopClient = (): FormClient => ({ baseUrl: t.url, realm: 'demo', clientId: 'shop', redirectUri: app.url });
  const newContext = (): Promise<BrowserContext> => browser.newContext({ userAgent: BROWSER_UA });

  async function openRegistration(page: Page, clientId: string, realmName = 'demo', endpoint: 'registrations' | 'auth' = 'registrations') {
    const url = new URL(`${t.url}/realms/${realmName}/protocol/openid-connect/${endpoint}`);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: app.url,
      response_type: 'code',
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
    }).toString();
    await page.goto(url.href);
  }

  async function fillRegistration(page: Page, fields: { firstName: string; lastName: string; email: string; username: string; password: string }) {
    await page.fill('#firstName', fields.firstName);
    await page.fill('#lastName', fields.lastName);
    await page.fill('#email', fields.email);
    await page.fill('#username', fields.username);
    await page.fill('#password', fields.password);
    await page.fill('#password-confirm', fields.password);
    await page.click('button[type=submit]');
  }

  beforeAll(async () => {
    dir = providersDir('event-webhook', 'disposable-email');
    t = await startServer({ providersDir: dir });
    smtp = await startSmtp();
    app = await callbackServer();
    for (const name of ['shop', 'account', 'partner', 'proxied', 'nokey', 'off', 'noauto', 'quiet']) await hooks.add(name);

    kc = await masterAdminClient(t.url);
    await kc.realms.create({
      realm: 'demo',
      enabled: true,
      displayName: 'Demo Realm',
      registrationAllowed: true,
      resetPasswordAllowed: true,
      verifyEmail: true,
      organizationsEnabled: true,
      eventsEnabled: true,
      attributes: { deleteAccountAllowed: 'true' },
      smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@demo.example' },
    });
    // 1. the listener, added to the realm's list (read first: PUT replaces the whole configuration)
    await enableListener('demo');
    kc.setConfig({ realmName: 'demo' });
    const rep = await kc.realms.findOne({ realm: 'demo' });
    realm = { id: rep!.id!, name: 'demo', display_name: 'Demo Realm' };

    const publicClient = (clientId: string, extra: Record<string, unknown> = {}) =>
      kc.clients.create({ clientId, publicClient: true, redirectUris: [app.url], directAccessGrantsEnabled: true, ...extra });
    await publicClient('shop', { attributes: { 'post.logout.redirect.uris': `${app.url}?logged-out` } });
    await publicClient('partner');
    await publicClient('proxied');
    await publicClient('nourl');
    await publicClient('nokey');
    await publicClient('off', { enabled: false });

    // 2. a service-account client with manage-clients of realm-management
    const { id: saClient } = await kc.clients.create({
      clientId: 'webhook-admin',
      publicClient: false,
      serviceAccountsEnabled: true,
      standardFlowEnabled: false,
      directAccessGrantsEnabled: false,
    });
    const serviceAccount = await kc.clients.getServiceAccountUser({ id: saClient });
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    const manageClients = await kc.clients.findRole({ id: management.id!, roleName: 'manage-clients' });
    await kc.users.addClientRoleMappings({ id: serviceAccount.id!, clientUniqueId: management.id!, roles: [{ id: manageClients!.id!, name: manageClients!.name! }] });
    const secret = (await kc.clients.getClientSecret({ id: saClient })).value!;
    sa = new KcAdminClient({ baseUrl: t.url, realmName: 'demo' });
    await sa.auth({ grantType: 'client_credentials', clientId: 'webhook-admin', clientSecret: secret });

    // 3. api.url / api.key on the application clients, by the service account (GET + merged PUT)
    await configure('demo', 'shop', { 'api.url': hooks.url('shop'), 'api.key': keys.shop });
    await configure('demo', 'account-console', { 'api.url': hooks.url('account'), 'api.key': keys.account });
    await configure('demo', 'partner', { 'api.url': hooks.url('partner'), 'api.key': keys.partner, 'api.secret': SECRET });
    await configure('demo', 'proxied', { 'api.url': hooks.url('proxied'), 'api.key': keys.proxied, 'trusted.proxy.count': '2' });
    await configure('demo', 'nourl', { 'api.key': 'k-nourl' });
    await configure('demo', 'nokey', { 'api.url': hooks.url('nokey') });
    await configure('demo', 'off', { 'api.url': hooks.url('off'), 'api.key': keys.off });

    // Extension A bound as its README says: a copy of the registration flow with the form action REQUIRED.
    const copy = 'registration-with-domain-check';
    await kc.authenticationManagement.copyFlow({ flow: 'registration', newName: copy });
    await kc.authenticationManagement.addExecutionToFlow({ flow: `${copy} registration form`, provider: 'ext-email-domain-validation' });
    const executions = await kc.authenticationManagement.getExecutions({ flow: copy });
    const execution = executions.find((e) => e.providerId === 'ext-email-domain-validation')!;
    await kc.authenticationManagement.updateExecution({ flow: copy }, { ...execution, requirement: 'REQUIRED' });
    await kc.realms.update({ realm: 'demo' }, { registrationFlow: copy });

    const { id: orgId } = await kc.organizations.create({ name: 'Acme', alias: 'acme', domains: [{ name: 'acme.example', verified: false }] });
    org = { id: orgId, name: 'Acme', alias: 'acme' };
    await kc.roles.create({ name: 'vip' });
    ({ id: carolId } = await kc.users.create({
      username: 'carol',
      email: 'carol@example.com',
      emailVerified: true,
      firstName: 'Carol',
      lastName: 'Danvers',
      enabled: true,
      credentials: [{ type: 'password', value: 'carol-pass-1', temporary: false }],
    }));
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.close();
    await hooks.closeAll();
    app?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });


  it('the merged PUT kept the rest of the client', async () => {
    const [shop] = await kc.clients.find({ clientId: 'shop' });
    expect(shop.redirectUris).toEqual([app.url]);
    expect(shop.attributes).toMatchObject({ 'post.logout.redirect.uris': `${app.url}?logged-out`, 'api.url': hooks.url('shop'), 'api.key': keys.shop });
    expect(shop.publicClient).toBe(true);
  });

  it('REGISTER through shop: one POST with the bearer key and the full payload; then VERIFY_EMAIL from the mailed link', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await openRegistration(page, 'shop');
    await fillRegistration(page, { firstName: 'Alice', lastName: 'Liddell', email: 'alice@example.com', username: 'alice', password: 'wonderland-42' });
    expect(await page.locator('h1').textContent()).toContain('Verify your e-mail');
    [{ id: aliceId }] = await kc.users.find({ username: 'alice', exact: true }) as { id: string }[];

    const { shop: [registered] } = await hooks.next({ shop: 1 });
    expectHeaders(registered, keys.shop);
    alice = await userFields(aliceId);
    expect(alice.email_verified).toBe(false);
    expect(alice.created_timestamp).toBeGreaterThan(Date.now() - 120_000);
    expectPayload(registered, payload('REGISTER', alice, {}));

    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('alice@example.com')));
    await page.goto(linkIn(mail));
    expect(await page.locator('h1').textContent()).toContain('verified');
    const { shop: [verified] } = await hooks.next({ shop: 1 });
    expectHeaders(verified, keys.shop);
    alice = await userFields(aliceId);
    expect(alice.email_verified).toBe(true);
    expectPayload(verified, payload('VERIFY_EMAIL', alice, {}));
    await context.close();
  });

  it('REGISTER_ERROR for a duplicate username and for extension A\'s rejection: null user fields, the form\'s e-mail and names', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await openRegistration(page, 'shop');
    await fillRegistration(page, { firstName: 'Other', lastName: 'Alice', email: 'alice.two@example.com', username: 'alice', password: 'x-password-1' });
    expect(await page.locator('#input-error-username').textContent()).toMatch(/exists/i);
    const { shop: [duplicate] } = await hooks.next({ shop: 1 });
    expectHeaders(duplicate, keys.shop);
    expect(duplicate.payload.error).toBe('username_in_use');
    expect(duplicate.payload.details).toMatchObject({ username: 'alice', email: 'alice.two@example.com', first_name: 'Other', last_name: 'Alice' });
    expectPayload(duplicate, registerError('alice.two@example.com', 'Other', 'Alice', 'username_in_use', duplicate.payload.details!));

    await fillRegistration(page, { firstName: 'Bob', lastName: 'Builder', email: 'bob@mailinator.com', username: 'bob', password: 'x-password-1' });
    expect(await page.locator('#input-error-email').textContent()).toContain('Disposable');
    const { shop: [disposable] } = await hooks.next({ shop: 1 });
    expectHeaders(disposable, keys.shop);
    expectPayload(disposable, registerError('bob@mailinator.com', 'Bob', 'Builder', 'invalid_email_domain', disposable.payload.details!));
    expect(disposable.payload.details).toMatchObject({ username: 'bob', email: 'bob@mailinator.com', first_name: 'Bob', last_name: 'Builder' });
    expect((await kc.users.find({ username: 'bob', exact: true })).length).toBe(0);
    await context.close();
  });

  let tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  let shopConfig: oidc.Configuration;
  let loginContext: BrowserContext;

  it('other admin changes send nothing; LOGIN through shop carries organizations, attributes and realm roles', async () => {
    await kc.organizations.addMember({ orgId: org.id, userId: aliceId });
    const rep = await kc.users.findOne({ id: aliceId });
    await kc.users.update({ id: aliceId }, { ...rep, attributes: { ...rep!.attributes, phone: ['+1 555', '+1 556'] } });
    const vip = await kc.roles.findOneByName({ name: 'vip' });
    await kc.users.addRealmRoleMappings({ id: aliceId, roles: [{ id: vip!.id!, name: 'vip' }] });
    await hooks.next({});
    alice = await userFields(aliceId);
    expect(alice.attributes).toMatchObject({ phone: ['+1 555', '+1 556'] });

    shopConfig = await oidc.discovery(new URL(`${t.url}/realms/demo`), 'shop', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    loginContext = await newContext();
    const page = await loginContext.newPage();
    await page.goto(oidc.buildAuthorizationUrl(shopConfig, { redirect_uri: app.url, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).href);
    await page.fill('#username', 'alice');
    await page.fill('#password', 'wonderland-42');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(app.url)), page.click('#kc-login')]);
    tokens = await oidc.authorizationCodeGrant(shopConfig, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: oidc.skipStateCheck });

    const { shop: [login] } = await hooks.next({ shop: 1 });
    expectHeaders(login, keys.shop);
    expectPayload(login, payload('LOGIN', alice, { user_roles: ['default-roles-demo', 'vip'], organizations: [org] }));
  });

  it('LOGOUT (RP-initiated) through shop', async () => {
    const page = await loginContext.newPage();
    await page.goto(oidc.buildEndSessionUrl(shopConfig, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${app.url}?logged-out` }).href);
    expect(page.url()).toContain('logged-out');
    const { shop: [logout] } = await hooks.next({ shop: 1 });
    expectHeaders(logout, keys.shop);
    expectPayload(logout, payload('LOGOUT', alice, { user_roles: ['default-roles-demo', 'vip'], organizations: [org] }));
    await loginContext.close();
  });

  it('RESET_PASSWORD through the e-mailed link, started from shop\'s login page', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(oidc.buildAuthorizationUrl(shopConfig, { redirect_uri: app.url, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' }).href);
    await page.goto(`${t.url}/realms/demo/login-actions/reset-credentials`);
    const before = smtp.mails.length;
    await page.fill('#username', 'alice');
    await page.click('button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('receive an e-mail');
    const mail = await eventually(() => smtp.mails.slice(before).find((m) => m.to.includes('alice@example.com')));
    await page.goto(linkIn(mail));
    await page.fill('#password-new', 'looking-glass-7');
    await page.fill('#password-confirm', 'looking-glass-7');
    await page.click('button[type=submit]');
    expect(await page.locator('h1').textContent()).toContain('password has been updated');
    // SEND_RESET_PASSWORD is not one of the eight types: one delivery only.
    const { shop: [reset] } = await hooks.next({ shop: 1 });
    expectHeaders(reset, keys.shop);
    expectPayload(reset, payload('RESET_PASSWORD', alice, { user_roles: ['default-roles-demo', 'vip'], organizations: [org] }));
    await context.close();
  });

  it('account pages go to account-console: LOGIN, UPDATE_EMAIL + VERIFY_EMAIL from the mailed link, then DELETE_ACCOUNT by the user', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${t.url}/realms/demo/account/profile`);
    await page.fill('#username', 'alice');
    await page.fill('#password', 'looking-glass-7');
    await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
    const rest = { user_roles: ['default-roles-demo', 'vip'], organizations: [org] };
    const { account: [login] } = await hooks.next({ account: 1 });
    expectHeaders(login, keys.account);
    expectPayload(login, payload('LOGIN', alice, rest));

    await page.fill('#email', 'alice@new.example.com');
    await page.click('#account-profile button[type=submit]');
    expect(await page.locator('#page-message').textContent()).toContain('alice@new.example.com');
    await hooks.next({}); // nothing until the link is opened
    const mail = await eventually(() => smtp.mails.find((m) => m.to.includes('alice@new.example.com')));
    await page.goto(linkIn(mail));
    expect(await page.locator('h1').textContent()).toContain('verified');
    const { account: changed } = await hooks.next({ account: 2 });
    alice = await userFields(aliceId);
    expect(alice).toMatchObject({ email: 'alice@new.example.com', email_verified: true });
    const byType = Object.fromEntries(changed.map((d) => [d.payload.type, d]));
    expect(Object.keys(byType).sort()).toEqual(['UPDATE_EMAIL', 'VERIFY_EMAIL']);
    for (const type of ['UPDATE_EMAIL', 'VERIFY_EMAIL']) {
      expectHeaders(byType[type], keys.account);
      expectPayload(byType[type], payload(type, alice, rest));
    }

    await page.goto(`${t.url}/realms/demo/account/delete`);
    await page.click('#account-delete button[type=submit]');
    expect(await page.locator('h1').textContent()).toContain('deleted');
    await screenshot(page, 'webhook-account-deleted');
    expect(await kc.users.find({ username: 'alice', exact: true })).toEqual([]);
    const { account: [deleted] } = await hooks.next({ account: 1 });
    expectHeaders(deleted, keys.account);
    expectPayload(deleted, payload('DELETE_ACCOUNT', alice, rest));
    await context.close();
  });

  it('an admin deletion sends DELETE_ACCOUNT with delete_by_admin to every enabled client with a webhook, not to a disabled one', async () => {
    const { id } = await kc.users.create({
      username: 'bob',
      email: 'bob@example.com',
      emailVerified: true,
      firstName: 'Bob',
      lastName: 'Builder',
      enabled: true,
      attributes: { team: ['blue'] },
    });
    await kc.organizations.addMember({ orgId: org.id, userId: id });
    const bob = await userFields(id);
    await hooks.next({}); // creating a user and a membership sends nothing
    await kc.users.del({ id });
    const sent = await hooks.next({ shop: 1, account: 1, partner: 1, proxied: 1 });
    const expected = payload('DELETE_ACCOUNT', bob, { delete_by_admin: true, organizations: [org], user_agent: 'node' });
    for (const [name, key] of [['shop', keys.shop], ['account', keys.account], ['partner', keys.partner]] as const) {
      expectHeaders(sent[name][0], key);
      expectPayload(sent[name][0], expected);
    }
    // `proxied` trusts two proxies: the admin request had no X-Forwarded-For, so the socket address.
    expectPayload(sent.proxied[0], expected);
    // partner signs: the same event, each client its own webhook-id.
    expect(new Webhook(SECRET).verify(sent.partner[0].body, sent.partner[0].headers as Record<string, string>)).toEqual(expected);
  });

  it('different clients reach different URLs with different keys; api.secret deliveries verify with standardwebhooks; api.events limits the types', async () => {
    const password = (clientId: string) =>
      tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: clientId, username: 'carol', password: 'carol-pass-1', scope: 'openid' }, { 'user-agent': 'script/1' });
    expect((await password('partner')).status).toBe(200);
    const { partner: [login] } = await hooks.next({ partner: 1 });
    expectHeaders(login, keys.partner);
    const carol = await userFields(carolId);
    const expected = payload('LOGIN', carol, { user_agent: 'script/1' });
    expectPayload(login, expected);
    const verified = new Webhook(SECRET).verify(login.body, login.headers as Record<string, string>);
    expect(verified).toEqual(expected);
    expect(login.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]+$/);
    expect(Math.abs(Number(login.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    // A tampered body does not verify.
    expect(() => new Webhook(SECRET).verify(login.body.replace('carol', 'carla'), login.headers as Record<string, string>)).toThrow();

    expect((await password('shop')).status).toBe(200);
    const { shop: [shopLogin] } = await hooks.next({ shop: 1 });
    expectHeaders(shopLogin, keys.shop);
    expect(shopLogin.headers['webhook-signature']).toBeUndefined();
    expectPayload(shopLogin, expected);

    // partner now wants LOGOUT only (a change applies to the next event).
    await configure('demo', 'partner', { 'api.events': 'LOGOUT' });
    const second = await password('partner');
    expect(second.status).toBe(200);
    await hooks.next({});
    const logout = await fetch(`${t.url}/realms/demo/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'script/1' },
      body: new URLSearchParams({ client_id: 'partner', refresh_token: second.body.refresh_token as string }),
    });
    expect(logout.status).toBe(204);
    const { partner: [loggedOut] } = await hooks.next({ partner: 1 });
    expectPayload(loggedOut, { ...expected, type: 'LOGOUT' });
    expect(new Webhook(SECRET).verify(loggedOut.body, loggedOut.headers as Record<string, string>)).toEqual({ ...expected, type: 'LOGOUT' });
  });

  it('sends nothing for a client without api.url or without api.key', async () => {
    for (const clientId of ['nourl', 'nokey']) {
      expect((await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: clientId, username: 'carol', password: 'carol-pass-1' })).status).toBe(200);
    }
    // A later event of a configured client arrives, so the two above were handled by then.
    expect((await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'proxied', username: 'carol', password: 'carol-pass-1' })).status).toBe(200);
    await hooks.next({ proxied: 1 });
  });

  it('user_ip follows X-Forwarded-For by the client\'s trusted.proxy.count (scripted form login)', async () => {
    const login = (clientId: string, headers: Record<string, string>) =>
      formLogin({ ...shopClient(), clientId }, 'carol', 'carol-pass-1', { 'user-agent': 'script/2', ...headers });
    const forwarded = { 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'x-real-ip': '192.0.2.55' };

    let result = await login('shop', forwarded);
    expect(result.status).toBe(302);
    expect(result.location).toMatch(new RegExp(`^${app.url}\\?.*code=`));
    let { shop: [viaShop] } = await hooks.next({ shop: 1 });
    expect(viaShop.payload).toMatchObject({ type: 'LOGIN', user_name: 'carol', user_ip: '198.51.100.7', user_agent: 'script/2' });

    result = await login('proxied', forwarded);
    expect(result.status).toBe(302);
    const { proxied: [viaProxied] } = await hooks.next({ proxied: 1 });
    expect(viaProxied.payload).toMatchObject({ type: 'LOGIN', user_name: 'carol', user_ip: '203.0.113.9' });

    result = await login('shop', { 'x-real-ip': '192.0.2.55' });
    ({ shop: [viaShop] } = await hooks.next({ shop: 1 }));
    expect(viaShop.payload.user_ip).toBe('192.0.2.55');
  });

  it('sends nothing from a realm whose event listeners do not include ext-event-webhook', async () => {
    await kc.realms.create({ realm: 'quiet', enabled: true });
    await kc.clients.create({ realm: 'quiet', clientId: 'shop', publicClient: true, directAccessGrantsEnabled: true, attributes: { 'api.url': hooks.url('quiet'), 'api.key': keys.quiet } });
    await kc.users.create({ realm: 'quiet', username: 'dave', enabled: true, credentials: [{ type: 'password', value: 'dave-pass-1', temporary: false }] });
    expect((await tokenRequest(t.url, 'quiet', { grant_type: 'password', client_id: 'shop', username: 'dave', password: 'dave-pass-1' })).status).toBe(200);
    expect((await tokenRequest(t.url, 'demo', { grant_type: 'password', client_id: 'shop', username: 'carol', password: 'carol-pass-1' })).status).toBe(200);
    await hooks.next({ shop: 1 });
    expect(hooks.all.get('quiet')!.received).toEqual([]);
  });

  it('disable.autologin: registering through that client creates no session and shows "account created"', async () => {
    await kc.realms.create({ realm: 'plain', enabled: true, registrationAllowed: true });
    await enableListener('plain');
    await kc.clients.create({ realm: 'plain', clientId: 'noauto', publicClient: true, redirectUris: [app.url], attributes: { 'disable.autologin': 'true', 'api.url': hooks.url('noauto'), 'api.key': keys.noauto } });
    await kc.clients.create({ realm: 'plain', clientId: 'auto', publicClient: true, redirectUris: [app.url] });

    const context = await newContext();
    const page = await context.newPage();
    await openRegistration(page, 'noauto', 'plain');
    await fillRegistration(page, { firstName: 'Erin', lastName: 'Hunt', email: 'erin@example.com', username: 'erin', password: 'erin-pass-1' });
    expect(await page.locator('h1').textContent()).toBe('Your account has been created');
    expect(page.url().startsWith(app.url)).toBe(false);
    await screenshot(page, 'webhook-disable-autologin');
    expect((await context.cookies()).map((c) => c.name)).not.toContain('REALMGATE_SESSION');
    // No SSO session: a new authorization request shows the login form instead of returning a code.
    await openRegistration(page, 'noauto', 'plain', 'auth');
    expect(page.url().startsWith(app.url)).toBe(false);
    expect(await page.locator('#kc-form-login').count()).toBe(1);
    // REGISTER is delivered, LOGIN is not (there was none).
    const { noauto: [registered] } = await hooks.next({ noauto: 1 });
    expect(registered.payload).toMatchObject({ type: 'REGISTER', user_name: 'erin', realm: { name: 'plain' } });
    await context.close();

    // The same flow through a client without the attribute logs in (so the check above can fail).
    const other = await newContext();
    const otherPage = await other.newPage();
    await openRegistration(otherPage, 'auto', 'plain');
    await Promise.all([
      otherPage.waitForURL((u) => u.href.startsWith(app.url)),
      fillRegistration(otherPage, { firstName: 'Finn', lastName: 'Hunt', email: 'finn@example.com', username: 'finn', password: 'finn-pass-1' }),
    ]);
    expect((await other.cookies()).map((c) => c.name)).toContain('REALMGATE_SESSION');
    await other.close();
    await hooks.next({});
  });

  it('exposes delivery metrics at /metrics that match what the receivers got', async () => {
    const metrics = await api(t.url, 'GET', '/metrics', null);
    expect(metrics.status).toBe(200);
    const text = metrics.body as string;
    const value = (series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      if (!line) throw new Error(`no ${series} in /metrics`);
      return Number(line.slice(series.length + 1));
    };
    const total = hooks.total();
    expect(total).toBeGreaterThanOrEqual(20);
    expect(value('realmgate_webhook_deliveries_total{outcome="success"}')).toBe(total);
    expect(value('realmgate_webhook_deliveries_total{outcome="failed"}')).toBe(0);
    expect(value('realmgate_webhook_deliveries_total{outcome="dropped_queue_full"}')).toBe(0);
    expect(value('realmgate_webhook_attempts_total')).toBe(total);
    expect(value('realmgate_webhook_queue_depth')).toBe(0);
    expect(value('realmgate_webhook_delivery_seconds_count{outcome="success"}')).toBe(total);
    expect(value('realmgate_webhook_delivery_seconds_bucket{le="+Inf",outcome="success"}')).toBe(total);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('a receiver that hangs or is unreachable: never on the request path; bounded shutdown', () => {
  const GRACE_MS = 1500;
  let t: TestServer;
  let dir: string;
  let app: { server: Server; url: string };
  const hooks = new Receivers();
  let closedPort: number;

  const client = (clientId: string): FormClient => ({ baseUrl: t.url, realm: 'slow', clientId, redirectUri: app.url });

  beforeAll(async () => {
    dir = providersDir('event-webhook');
    t = await startServer({ providersDir: dir, env: { REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS: String(GRACE_MS) } });
    app = await callbackServer();
    await hooks.add('hanging', () => 'never');
    const spare = await startReceiver(() => 204);
    closedPort = Number(new URL(spare.url).port);
    await spare.close();

    const kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'slow', enabled: true, registrationAllowed: true, eventsListeners: ['ext-event-webhook'] });
    kc.setConfig({ realmName: 'slow' });
    const create = (clientId: string, attributes: Record<string, string> = {}) =>
      kc.clients.create({ clientId, publicClient: true, redirectUris: [app.url], directAccessGrantsEnabled: true, attributes });
    await create('hanging', { 'api.url': hooks.url('hanging'), 'api.key': 'k-hang' });
    await create('unreachable', { 'api.url': `http://127.0.0.1:${closedPort}/hook`, 'api.key': 'k-gone' });
    await create('baseline');
    await kc.users.create({ username: 'gina', enabled: true, email: 'gina@example.com', credentials: [{ type: 'password', value: 'gina-pass-1', temporary: false }] });
  });

  afterAll(async () => {
    await t?.close();
    await hooks.closeAll();
    app?.server.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('does not slow login or registration, and /health/live stays fast', async () => {
    // The hanging receiver never answers: a delivery to it ends only by the response timeout (or at shutdown). A
    // request that waited for its delivery would be answered only after such an end, so none may have come yet.
    const ended = () => t.logs.filter((l) => /^webhook delivery failed, attempt \d+\/\d+: timeout/.test(String(l.msg)));
    for (let round = 0; round < 4; round++) {
      for (const name of ['baseline', 'hanging', 'unreachable']) {
        expect((await formLogin(client(name), 'gina', 'gina-pass-1')).status).toBe(302);
        expect(ended()).toEqual([]);
      }
    }
    const registration = await formRegister(client('hanging'), { username: 'hank', email: 'hank@example.com', firstName: 'Hank', lastName: 'Hill', password: 'hank-pass-1' });
    expect(registration.status).toBe(302);

    // The deliveries were made, and are hanging (or refused) while the server answers.
    await eventually(() => hooks.all.get('hanging')!.received.length >= 5);
    await eventually(() => t.logs.some((l) => String(l.msg).startsWith('webhook delivery failed, attempt 1/3: connect ECONNREFUSED')));
    expect((await fetch(`${t.url}/health/live`)).status).toBe(200);
    // Every request above was answered while all five deliveries to the hanging receiver were still in flight.
    expect(ended()).toEqual([]);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/^realmgate_webhook_deliveries_total\{outcome="success"\} 0$/m);
  });

  it('close() waits the bounded grace for deliveries in flight, then logs what it drops', async () => {
    // The hanging deliveries never end by themselves: close() returning at all is the grace giving up on them.
    await t.close();
    const line = t.logs.find((l) => /^webhook dispatcher closed after \d+ ms grace: \d+ deliveries dropped$/.test(String(l.msg)));
    expect(line, JSON.stringify(t.logs.filter((l) => String(l.msg).includes('webhook')).slice(-5))).toBeDefined();
    // The dispatcher gets what is left of the configured grace once the listener's own lookups settled.
    const granted = Number(/^webhook dispatcher closed after (\d+) ms grace: /.exec(String(line!.msg))?.[1]);
    expect(granted).toBeGreaterThan(0);
    expect(granted).toBeLessThanOrEqual(GRACE_MS);
    expect(line!.level).toBe(40);
    expect(Number(line!.dropped)).toBeGreaterThanOrEqual(1);
    expect(line!.byEventType).toMatchObject({ LOGIN: expect.any(Number) });
  });
});
