/**
 * Extension A against the real server: the admin-API setup of the original (official admin client and the
 * README's curl commands), registration in Chromium, the check and refresh endpoints, and a refresh reaching
 * a second server process through Redis.
 *
 * The server loads the package from a providers directory holding only a link to it (the repository's
 * `providers/` also links the proof-of-work package, whose protector would join every registration form).
 *
 * The second server is a real process started with the CLI: two servers started in this process would load
 * the package once and share its one list, so a refresh would reach the "other" server whether or not the
 * broadcast works. Needs Redis (REALMGATE_TEST_REDIS_URL), Chromium, and bash, curl and jq for the README.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from '../../server/test/support/browser.js';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  REPO_ROOT,
  api,
  eventually,
  redisUrl,
  startServer,
  tokenRequest,
  type TestServer,
} from '../../server/test/support/server.js';
import { masterAdminClient } from '../../server/test/support/admin-client.js';

const PACKAGE_DIR = join(REPO_ROOT, 'packages', 'disposable-email');
const README = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
const RESOURCE = 'ext-disposable-email-resource-provider';
// Copied, not imported: the test checks what the server shows, not what the module says it shows.
const REJECTION = 'Disposable e-mail addresses are not accepted. Please use a permanent address.';
const COPY = 'registration-with-domain-check';

let scratch: string;
let providersDir: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'disposable-email-e2e-'));
  providersDir = join(scratch, 'providers');
  mkdirSync(providersDir);
  symlinkSync(PACKAGE_DIR, join(providersDir, 'disposable-email'));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function claimsOf(token: string): Record<string, any> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
}

// ---------------------------------------------------------------------------------------------------------

describe('setup through the admin API, then registration in Chromium', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let browser: Browser;
  let app: Server;
  let callback: string;

  beforeAll(async () => {
    t = await startServer({ providersDir, env: { REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST: 'partner.mailinator.com' } });
    app = createServer((req, res) => res.end(`callback ${req.url}`));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'demo', enabled: true, registrationAllowed: true, eventsEnabled: true });
    kc.setConfig({ realmName: 'demo' });
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: [callback] });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    app?.close();
  });

  function registrationUrl(): string {
    const url = new URL(`${t.url}/realms/demo/protocol/openid-connect/registrations`);
    url.search = new URLSearchParams({
      client_id: 'web',
      redirect_uri: callback,
      response_type: 'code',
      scope: 'openid',
      // Any S256 challenge will do: these tests never redeem the code.
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString();
    return url.href;
  }

  interface Entry {
    firstName: string;
    lastName: string;
    email: string;
    username: string;
  }

  async function fillForm(page: Page, entry: Entry): Promise<void> {
    await page.fill('#firstName', entry.firstName);
    await page.fill('#lastName', entry.lastName);
    await page.fill('#username', entry.username);
    await page.fill('#password', 'Long-enough-pass-1');
    await page.fill('#password-confirm', 'Long-enough-pass-1');
    await page.fill('#email', entry.email);
  }

  async function open(context: Browser | BrowserContext = browser): Promise<Page> {
    const page = await context.newPage();
    await page.goto(registrationUrl());
    expect(await page.locator('h1').textContent()).toBe('Register');
    return page;
  }

  async function registerSucceeds(entry: Entry): Promise<void> {
    const page = await open();
    await fillForm(page, entry);
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('button[type=submit]')]);
    const [user] = await kc.users.find({ username: entry.username, exact: true });
    expect(user).toMatchObject({ email: entry.email.toLowerCase(), firstName: entry.firstName, lastName: entry.lastName });
    await page.close();
  }

  /** Submits the form; resolves once the answer page has loaded in place of the form. */
  async function submit(page: Page) {
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.waitForEvent('framenavigated', (frame) => frame === page.mainFrame()),
      page.click('button[type=submit]'),
    ]);
    await page.waitForLoadState('load');
    return response;
  }

  const usersNamed = async (username: string) => (await kc.users.find({ username, exact: true })).length;

  async function registerError(username: string) {
    const event = await eventually(async () => {
      const events = await kc.realms.findEvents({ realm: 'demo', type: 'REGISTER_ERROR' });
      return events.find((e) => e.details?.username === username);
    });
    return event!;
  }

  it('does nothing while only installed: the built-in flow lets a disposable address register, without the script', async () => {
    expect(t.logs.find((l) => l.msg === 'provider package loaded')).toMatchObject({
      package: '@realmgate/disposable-email',
      providers: ['ext-email-domain-validation', RESOURCE],
    });
    expect(t.logs.find((l) => l.msg === 'disposable-email domain list ready')).toMatchObject({ domains: expect.any(Number), allowlist: 1 });
    const page = await open();
    expect(await page.locator(`script[src*="${RESOURCE}"]`).count()).toBe(0);
    await page.close();
    await registerSucceeds({ firstName: 'Ada', lastName: 'Early', email: 'early@mailinator.com', username: 'early' });
  });

  it('follows the original set-up with the official admin client: copy, add, REQUIRED, bind', async () => {
    const providers = await kc.authenticationManagement.getFormActionProviders();
    expect(providers).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: 'ext-email-domain-validation', displayName: 'Email Domain Validation' })]),
    );

    await kc.authenticationManagement.copyFlow({ flow: 'registration', newName: COPY });
    await kc.authenticationManagement.addExecutionToFlow({ flow: `${COPY} registration form`, provider: 'ext-email-domain-validation' });
    const executions = await kc.authenticationManagement.getExecutions({ flow: COPY });
    const execution = executions.find((e) => e.providerId === 'ext-email-domain-validation')!;
    expect(execution).toMatchObject({ displayName: 'Email Domain Validation', level: 1 });
    expect(execution.requirementChoices).toEqual(['REQUIRED', 'DISABLED']);
    await kc.authenticationManagement.updateExecution({ flow: COPY }, { ...execution, requirement: 'REQUIRED' });
    const updated = (await kc.authenticationManagement.getExecutions({ flow: COPY })).find((e) => e.id === execution.id);
    expect(updated?.requirement).toBe('REQUIRED');
    // The built-in flow is untouched.
    const builtIn = await kc.authenticationManagement.getExecutions({ flow: 'registration' });
    expect(builtIn.some((e) => e.providerId === 'ext-email-domain-validation')).toBe(false);

    // Added and REQUIRED, but not bound yet: a disposable address still registers.
    await registerSucceeds({ firstName: 'Bea', lastName: 'Before', email: 'before@x.mailinator.com', username: 'before-binding' });

    await kc.realms.update({ realm: 'demo' }, { registrationFlow: COPY });
    expect((await kc.realms.findOne({ realm: 'demo' }))?.registrationFlow).toBe(COPY);
  });

  it('with JavaScript on: the error appears when the e-mail field loses focus, without a page load', async () => {
    const page = await open();
    expect(await page.locator(`script[src$="/${RESOURCE}/assets/email-check.js"]`).count()).toBe(1);
    const entry = { firstName: 'Dora', lastName: 'Dispos', email: 'someone@mailinator.com', username: 'dora' };
    await fillForm(page, entry);
    let navigations = 0;
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) navigations++;
    });
    const documents: string[] = [];
    page.on('request', (request) => {
      if (request.resourceType() === 'document') documents.push(request.url());
    });
    await page.evaluate(() => ((window as unknown as { probe: string }).probe = 'same page'));

    const check = page.waitForResponse((r) => r.url().includes(`/${RESOURCE}/check-email?`));
    await page.focus('#username'); // the e-mail field loses focus
    const response = await check;
    expect(response.status()).toBe(200);
    expect(await response.json()).toEqual({ disposable: true });
    await expect.poll(() => page.locator('#input-error-email').textContent()).toBe(REJECTION);
    expect(await page.getAttribute('#email', 'aria-invalid')).toBe('true');
    expect(await page.locator('#input-error-email').isVisible()).toBe(true);
    expect(navigations).toBe(0);
    expect(documents).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { probe: string }).probe)).toBe('same page');
    expect(await page.inputValue('#firstName')).toBe('Dora');
    const inlineColor = await page.locator('#input-error-email').evaluate((el) => getComputedStyle(el).color);
    await screenshot(page, 'disposable-email-inline');

    // A subdomain is caught too, and fixing the address clears the message.
    const answerFor = (email: string) =>
      page.waitForResponse((r) => r.url().endsWith(`check-email?email=${encodeURIComponent(email)}`)).then((r) => r.json());
    await page.fill('#email', 'someone@x.mailinator.com');
    let answer = answerFor('someone@x.mailinator.com');
    await page.focus('#lastName');
    expect(await answer).toEqual({ disposable: true });
    expect(await page.locator('#input-error-email').textContent()).toBe(REJECTION);
    await page.fill('#email', 'dora@example.com');
    answer = answerFor('dora@example.com');
    await page.focus('#lastName');
    expect(await answer).toEqual({ disposable: false });
    await expect.poll(() => page.locator('#input-error-email').textContent()).toBe('');
    expect(await page.getAttribute('#email', 'aria-invalid')).toBeNull();

    // The server is still the gate: submitting a disposable address with the hint showing is refused.
    await page.fill('#email', entry.email);
    expect((await submit(page)).status()).toBe(400);
    expect(navigations).toBe(1);
    expect(await page.evaluate(() => (window as unknown as { probe?: string }).probe)).toBeUndefined();
    expect(await page.locator('#input-error-email').textContent()).toBe(REJECTION);
    expect(await page.inputValue('#lastName')).toBe('Dispos');
    // The message the script writes looks like the server's.
    expect(await page.locator('#input-error-email').evaluate((el) => getComputedStyle(el).color)).toBe(inlineColor);
    expect(await usersNamed('dora')).toBe(0);
    await page.close();
  });

  it('with JavaScript off the server refuses on submit: error at the field, values kept, no account, REGISTER_ERROR', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    for (const [i, email] of ['someone@mailinator.com', 'someone@x.mailinator.com', 'SomeOne@X.MailInator.COM'].entries()) {
      const page = await open(context);
      const entry = { firstName: 'Nojs', lastName: `Submitter${i}`, email, username: `nojs-${i}` };
      await fillForm(page, entry);
      await page.focus('#username');
      // No script ran: nothing was shown before submitting.
      expect(await page.locator('#input-error-email').count()).toBe(0);
      expect((await submit(page)).status()).toBe(400);
      expect(await page.locator('#input-error-email').textContent()).toBe(REJECTION);
      expect(await page.getAttribute('#email', 'aria-invalid')).toBe('true');
      // The error sits next to the e-mail field, not on another one.
      expect(await page.locator('[id^="input-error-"]').count()).toBe(1);
      expect(await page.inputValue('#firstName')).toBe(entry.firstName);
      expect(await page.inputValue('#lastName')).toBe(entry.lastName);
      expect(await page.inputValue('#username')).toBe(entry.username);
      expect(await page.inputValue('#email')).toBe(email);
      expect(await page.inputValue('#password')).toBe('');
      if (i === 1) await screenshot(page, 'disposable-email-refused');
      expect(await usersNamed(entry.username)).toBe(0);
      const event = await registerError(entry.username);
      expect(event.error).toBe('invalid_email_domain');
      expect(event.details).toMatchObject({ email, first_name: entry.firstName, last_name: entry.lastName, username: entry.username });
      await page.close();
    }
    await context.close();
    // Logged with the domain only, never the address.
    const rejections = t.logs.filter((l) => l.msg === 'registration rejected: disposable e-mail domain');
    expect(rejections.map((l) => l.domain)).toEqual(['mailinator.com', 'mailinator.com', 'x.mailinator.com', 'x.mailinator.com']);
    expect(JSON.stringify(rejections)).not.toContain('someone@');
    // The JavaScript-on refusal of the previous test was recorded the same way.
    const dora = await registerError('dora');
    expect(dora.error).toBe('invalid_email_domain');
    expect(dora.details).toMatchObject({ email: 'someone@mailinator.com', first_name: 'Dora', last_name: 'Dispos', username: 'dora' });
  });

  it('registers an ordinary domain normally, and an allowlisted subdomain of a listed one', async () => {
    await registerSucceeds({ firstName: 'Olga', lastName: 'Ordinary', email: 'olga@example.com', username: 'olga' });
    // REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST=partner.mailinator.com (this server's environment)
    await registerSucceeds({ firstName: 'Pat', lastName: 'Partner', email: 'pat@sales.partner.mailinator.com', username: 'pat' });
    const check = async (email: string) => (await api(t.url, 'GET', `/realms/demo/${RESOURCE}/check-email?email=${encodeURIComponent(email)}`, null)).body;
    expect(await check('pat@partner.mailinator.com')).toEqual({ disposable: false });
    expect(await check('pat@mailinator.com')).toEqual({ disposable: true });
    expect(await check('pat@otherpartner.mailinator.com')).toEqual({ disposable: true });
    const registered = (await kc.realms.findEvents({ realm: 'demo', type: 'REGISTER' })).map((e) => e.details?.username);
    expect(registered).toEqual(expect.arrayContaining(['olga', 'pat']));
  });

  it('refuses a disposable address on the account page too, and keeps the old one', async () => {
    await registerSucceeds({ firstName: 'Mia', lastName: 'Mover', email: 'mia@example.com', username: 'mia' });
    const page = await browser.newPage();
    await page.goto(`${t.url}/realms/demo/account/profile`);
    await page.fill('#username', 'mia');
    await page.fill('#password', 'Long-enough-pass-1');
    await Promise.all([page.waitForURL(/\/account\/profile\?code=/), page.click('#kc-login')]);
    await page.fill('#email', 'mia@sub.mailinator.com');
    await Promise.all([page.waitForLoadState('load'), page.click('#account-profile button[type=submit]')]);
    await expect.poll(() => page.locator('#input-error-email').textContent()).toBe(REJECTION);
    expect(await page.locator('#email').getAttribute('aria-invalid')).toBe('true');
    const [mia] = await kc.users.find({ username: 'mia', exact: true });
    expect(mia.email).toBe('mia@example.com');
    const refused = await eventually(async () => (await kc.realms.findEvents({ realm: 'demo', type: 'UPDATE_EMAIL_ERROR' as never })).find((e) => e.userId === mia.id));
    expect(refused).toMatchObject({ error: 'invalid_email_domain', details: { updated_email: 'mia@sub.mailinator.com' } });
    // A permanent address goes through as before.
    await page.fill('#email', 'mia@example.org');
    await Promise.all([page.waitForLoadState('load'), page.click('#account-profile button[type=submit]')]);
    await expect.poll(async () => (await kc.users.find({ username: 'mia', exact: true }))[0].email).toBe('mia@example.org');
    await page.close();
  });

  it('gives malformed addresses the normal e-mail validation message, not a crash', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    // Keycloak's e-mail rule: a trailing dot makes no address (`someone@mailinator`, without one, is an address).
    const malformed = ['not-an-email', 'someone@', '@mailinator.com', 'a@b@mailinator.com', 'some one@mailinator.com', 'someone@mailinator.com.', 'someone@mailinator..com'];
    // One page: each refusal shows the form again, ready for the next attempt.
    const page = await open(context);
    for (const [i, email] of malformed.entries()) {
      await fillForm(page, { firstName: 'Mal', lastName: 'Formed', email, username: `malformed-${i}` });
      expect((await submit(page)).status(), email).toBe(400);
      expect(await page.inputValue('#username'), email).toBe(`malformed-${i}`);
      expect(await page.locator('#input-error-email').textContent(), email).toBe('Invalid email address.');
      expect(await usersNamed(`malformed-${i}`)).toBe(0);
    }
    await context.close();
    for (const email of malformed) {
      const answer = await api(t.url, 'GET', `/realms/demo/${RESOURCE}/check-email?email=${encodeURIComponent(email)}`, null);
      expect(answer.status, email).toBe(200);
      expect(typeof answer.body.disposable, email).toBe('boolean');
    }
    expect(t.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------

interface Child {
  url: string;
  stdout(): string;
  stop(): Promise<void>;
}

/** A second server process, started as an operator would (the CLI), sharing Redis with the first. */
async function startChildServer(name: string, env: Record<string, string>): Promise<Child> {
  const dir = join(scratch, name);
  mkdirSync(dir);
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      REALMGATE_MODE: 'production',
      // Its port is chosen at start, so its public URL cannot be given beforehand: taken from each request.
      REALMGATE_HOSTNAME_STRICT: 'false',
      REALMGATE_HTTP_PORT: '0',
      REALMGATE_HTTP_HOST: '127.0.0.1',
      REALMGATE_DB_URL: `sqlite:${join(dir, 'realmgate.db')}`,
      REALMGATE_PROVIDERS_DIR: providersDir,
      REALMGATE_BOOTSTRAP_ADMIN_USERNAME: ADMIN_USERNAME,
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
  };
  const deadline = Date.now() + 45_000;
  for (;;) {
    const match = /"url":"(http:\/\/[^"]+)"/.exec(stdout);
    if (match) return { url: match[1], stdout: () => stdout, stop };
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`second server did not start (exit ${child.exitCode}):\n${stdout}\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The README's table row for a refresh-domain-list case: `| case | status | body |`. */
function documented(caseText: string): { status: number; body: unknown } {
  const row = README.split('\n').find((line) => line.startsWith(`| ${caseText} |`));
  if (!row) throw new Error(`README has no row "${caseText}"`);
  const [, status, body] = row.split(' | ');
  return { status: Number(status), body: JSON.parse(body.replace(/^`|`\s*\|?$/g, '').replace(/`$/, '')) };
}

describe('refresh-domain-list and check-email on the real server, two processes sharing Redis', () => {
  let a: TestServer;
  let b: Child;
  let kc: KcAdminClient;
  let extraSource: string;
  const refreshPath = `/realms/demo/${RESOURCE}/refresh-domain-list`;
  const checkPath = (email: string) => `/realms/demo/${RESOURCE}/check-email?email=${encodeURIComponent(email)}`;

  /** A confidential client with a service account; `realmAdmin` maps realm-management's realm-admin to it. */
  async function serviceAccount(client: KcAdminClient, realm: string, clientId: string, realmAdmin: boolean): Promise<string> {
    client.setConfig({ realmName: realm });
    const { id } = await client.clients.create({ clientId, publicClient: false, serviceAccountsEnabled: true, standardFlowEnabled: false });
    if (realmAdmin) {
      const user = await client.clients.getServiceAccountUser({ id });
      const [management] = await client.clients.find({ clientId: 'realm-management' });
      const role = await client.clients.findRole({ id: management.id!, roleName: 'realm-admin' });
      await client.users.addClientRoleMappings({ id: user.id!, clientUniqueId: management.id!, roles: [{ id: role!.id!, name: role!.name! }] });
    }
    const secret = (await client.clients.getClientSecret({ id })).value!;
    const token = await tokenRequest(a.url, realm, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });
    expect(token.status).toBe(200);
    client.setConfig({ realmName: 'demo' });
    return token.body.access_token as string;
  }

  /** The second process's log lines (complete ones only). */
  const childLogs = () =>
    b.stdout().split('\n').slice(0, -1).map((line) => JSON.parse(line) as Record<string, unknown>);
  /** Refreshes the second process ran on a broadcast, successful or not. */
  const broadcastRefreshes = () =>
    childLogs().filter((l) => l.trigger === 'broadcast' && String(l.msg).startsWith('disposable-email domain list refresh'));
  /** Refreshes asked of the first server through the endpoint. */
  const apiRefreshes = () => a.logs.filter((l) => l.trigger === 'api' && l.msg === 'disposable-email domain list refreshed').length;

  beforeAll(async () => {
    extraSource = join(scratch, 'extra-domains.txt');
    writeFileSync(extraSource, '# local additions\nfirst-extra.example\n');
    const env = { REALMGATE_DISPOSABLE_EMAIL_EXTRA_SOURCES: extraSource };
    [a, b] = await Promise.all([
      startServer({ providersDir, env, config: { REALMGATE_REDIS_URL: redisUrl } }),
      startChildServer('second', { ...env, REALMGATE_REDIS_URL: redisUrl }),
    ]);
    kc = await masterAdminClient(a.url);
    await kc.realms.create({ realm: 'demo', enabled: true });
    await kc.realms.create({ realm: 'other', enabled: true });
    const kcB = await masterAdminClient(b.url);
    await kcB.realms.create({ realm: 'demo', enabled: true });
    kc.setConfig({ realmName: 'demo' });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.close();
  });

  it('runs the README curl set-up unchanged against the server: flow copy bound, service account refreshes', async () => {
    const blocks = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    let script = blocks.join('\n');
    expect(script).toContain('BASE=http://localhost:8080');
    script = script.replace('BASE=http://localhost:8080', `BASE=${a.url}`);
    // Any HTTP error stops the script: the README's commands must all succeed as written.
    const prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; }\n';
    const run = spawn('bash', ['-c', prelude + script], { env: { PATH: process.env.PATH ?? '', ADMIN_PASSWORD } });
    let out = '';
    let err = '';
    run.stdout.on('data', (c: Buffer) => (out += c.toString()));
    run.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => run.on('exit', resolve));
    expect(code, `${out}\n${err}`).toBe(0);
    const last = JSON.parse(out.trim().split('\n').at(-1)!);
    expect(last).toEqual({ success: true, message: 'Domain list refreshed.', domains: expect.any(Number) });

    const realm = await kc.realms.findOne({ realm: 'demo' });
    expect(realm?.registrationFlow).toBe(COPY);
    const executions = await kc.authenticationManagement.getExecutions({ flow: COPY });
    expect(executions.find((e) => e.providerId === 'ext-email-domain-validation')?.requirement).toBe('REQUIRED');
    const [client] = await kc.clients.find({ clientId: 'list-refresher' });
    expect(client?.serviceAccountsEnabled).toBe(true);
  });

  it('answers 401 without a token, with a malformed one, and with one of another realm', async () => {
    const noHeader = await api(a.url, 'POST', refreshPath, null);
    expect(noHeader.status).toBe(401);
    expect(noHeader.body).toEqual(documented('no `Authorization` header').body);
    expect(noHeader.headers.get('www-authenticate')).toBe('Bearer realm="demo"');
    expect(noHeader.headers.get('cache-control')).toBe('no-store');

    const basic = await api(a.url, 'POST', refreshPath, null, undefined, { authorization: 'Basic YWRtaW46YWRtaW4=' });
    expect(basic.status).toBe(401);
    expect(basic.body).toEqual(documented('header not `Bearer <token>`').body);

    const invalid = documented('token invalid, expired, or from another realm');
    for (const token of ['not-a-token', 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl']) {
      const answer = await api(a.url, 'POST', refreshPath, token);
      expect(answer.status, token).toBe(401);
      expect(answer.body).toEqual(invalid.body);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="demo", error="invalid_token"');
    }
    // A genuine token, with the right role, but from another realm of the same server.
    const otherRealm = await serviceAccount(kc, 'other', 'other-refresher', true);
    expect(claimsOf(otherRealm).resource_access['realm-management'].roles).toContain('realm-admin');
    const cross = await api(a.url, 'POST', refreshPath, otherRealm);
    expect(cross.status).toBe(401);
    expect(cross.body).toEqual(invalid.body);
    // The master administrator's token is another realm's too.
    const master = await tokenRequest(a.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
    expect((await api(a.url, 'POST', refreshPath, master.body.access_token as string)).status).toBe(401);
  });

  it('answers 403 to a service account without realm-admin and to an administrator user with it', async () => {
    const plain = await serviceAccount(kc, 'demo', 'no-rights', false);
    const noRole = await api(a.url, 'POST', refreshPath, plain);
    expect(noRole.status).toBe(403);
    expect(noRole.body).toEqual(documented('service account without `realm-admin` in `resource_access["realm-management"].roles`').body);
    expect(noRole.headers.get('www-authenticate')).toBe('Bearer realm="demo", error="insufficient_scope"');

    const { id: userId } = await kc.users.create({ username: 'realm-boss', enabled: true, firstName: 'Realm', lastName: 'Boss', email: 'boss@example.com' });
    await kc.users.resetPassword({ id: userId, credential: { type: 'password', value: 'Boss-pass-123', temporary: false } });
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    const role = await kc.clients.findRole({ id: management.id!, roleName: 'realm-admin' });
    await kc.users.addClientRoleMappings({ id: userId, clientUniqueId: management.id!, roles: [{ id: role!.id!, name: role!.name! }] });
    const login = await tokenRequest(a.url, 'demo', { grant_type: 'password', client_id: 'admin-cli', username: 'realm-boss', password: 'Boss-pass-123' });
    expect(login.status).toBe(200);
    const userToken = login.body.access_token as string;
    // It is an administrator: realm-admin is in the token, and the admin API accepts it.
    expect(claimsOf(userToken).resource_access['realm-management'].roles).toContain('realm-admin');
    expect((await api(a.url, 'GET', '/admin/realms/demo/users?max=1', userToken)).status).toBe(200);
    const admin = await api(a.url, 'POST', refreshPath, userToken);
    expect(admin.status).toBe(403);
    expect(admin.body).toEqual(documented('valid token of a user (an administrator\'s too)').body);
  });

  it('refreshes for a service account with realm-admin, and the refresh reaches the other server process', async () => {
    const token = await serviceAccount(kc, 'demo', 'refresher', true);
    const before = await api(a.url, 'POST', refreshPath, token);
    expect(before.status).toBe(200);
    expect(before.body).toEqual({ ...(documented('refreshed').body as object), domains: expect.any(Number) });
    const countBefore = before.body.domains as number;
    // The other process has handled every broadcast so far (it re-reads the file then; changing the file
    // before that would let it see the change without the refresh below).
    await eventually(() => broadcastRefreshes().length >= apiRefreshes(), 10_000);
    expect(countBefore).toBeGreaterThan(50_000);
    expect((await api(b.url, 'GET', checkPath('x@first-extra.example'), null)).body).toEqual({ disposable: true });
    expect((await api(b.url, 'GET', checkPath('x@sub.second-extra.example'), null)).body).toEqual({ disposable: false });

    writeFileSync(extraSource, '# local additions\nfirst-extra.example\nsecond-extra.example\n');
    // The other process does not pick the file up on its own.
    await new Promise((r) => setTimeout(r, 300));
    expect((await api(b.url, 'GET', checkPath('x@sub.second-extra.example'), null)).body).toEqual({ disposable: false });

    const after = await api(a.url, 'POST', refreshPath, token);
    expect(after.status).toBe(200);
    expect(after.body).toEqual({ success: true, message: 'Domain list refreshed.', domains: countBefore + 1 });
    expect((await api(a.url, 'GET', checkPath('x@sub.second-extra.example'), null)).body).toEqual({ disposable: true });
    await eventually(async () => (await api(b.url, 'GET', checkPath('x@sub.second-extra.example'), null)).body.disposable === true, 10_000);
    // …by a refresh of its own on the broadcast, which it logs (the line may trail the swap a little).
    const logged = await eventually(() => broadcastRefreshes().find((l) => l.domains === countBefore + 1));
    expect(logged).toMatchObject({ msg: 'disposable-email domain list refreshed', sources: [{ domains: 2, invalid: 0 }] });
  });

  it('keeps the old list and answers 500 when the rebuild fails', async () => {
    const token = await serviceAccount(kc, 'demo', 'refresher-2', true);
    writeFileSync(extraSource, '<html><body>Service unavailable</body></html>\n');
    const failed = await api(a.url, 'POST', refreshPath, token);
    expect(failed.status).toBe(500);
    expect(failed.body).toEqual({ success: false, message: expect.stringMatching(/previous list \(\d+ domains\) is kept: .*extra-domains\.txt: no domain names found/) });
    expect((await api(a.url, 'GET', checkPath('x@second-extra.example'), null)).body).toEqual({ disposable: true });
    expect((await api(a.url, 'GET', checkPath('x@mailinator.com'), null)).body).toEqual({ disposable: true });
  });

  it('answers check-email publicly, and 400 without an address', async () => {
    const missing = await api(a.url, 'GET', `/realms/demo/${RESOURCE}/check-email`, null);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: 'invalid_request', error_description: 'The email query parameter is required.' });
    expect((await api(a.url, 'GET', checkPath('A@MAILINATOR.COM.'), null)).body).toEqual({ disposable: true });
    expect((await api(a.url, 'GET', checkPath('a@gmail.com'), null)).body).toEqual({ disposable: false });
    expect((await api(a.url, 'GET', `/realms/nowhere/${RESOURCE}/check-email?email=a@b.example`, null)).status).toBe(404);
  });
});
