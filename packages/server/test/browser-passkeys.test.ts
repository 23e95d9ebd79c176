import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { flow, step, subflow } from './support/flow-files.js';
import { CodeSource, fromBase32 } from './support/totp.js';
import { adminToken, api, startServer, startServerPair, type TestServer } from './support/server.js';
import { authorizationQuery, credentialsOn, jwtClaims, redeemCode, signInAndRegister, virtualDevice, type Device } from './support/webauthn-device.js';

/**
 * Keycloak 26's passkeys on the username form (realm `webAuthnPolicyPasswordlessPasskeysEnabled`), in Chromium with
 * its virtual authenticator: the username field offers the passkeys (autocomplete "username webauthn", conditional
 * mediation, which the virtual authenticator answers at once with the passkey it holds) and a passkey picked there
 * signs its owner in without a password. And the attacks on that form: another user's handle, a handle naming
 * nobody, an assertion replayed in a later sign-in, the same assertion sent to two nodes at once. Then "try another
 * way" (Keycloak's select-authenticator) at a level of alternative second factors: the list, the choice going back
 * through the flow, switching back, and a choice the page did not offer.
 */

const PASSWORD = 'Passkeys-pass-1';
let t: TestServer;
let base: string;
let token: string;
let browser: Browser;
let app: Server;
let callback: string;

const user = (username: string, requiredActions: string[] = []) => ({ username, enabled: true, firstName: username, lastName: 'Test', email: `${username}@example.com`, emailVerified: true, credentials: [{ type: 'password', value: PASSWORD }], requiredActions });
const realmFile = (realm: string, passkeys: boolean, extra: Record<string, unknown> = {}) => ({
  realm,
  enabled: true,
  webAuthnPolicyPasswordlessPasskeysEnabled: passkeys,
  clients: [{ clientId: 'web', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] }],
  ...extra,
});

/** Opens a new sign-in (the context's cookies cleared first); `commit`: return once the page starts loading (its autofill may post before it has loaded). */
async function openAuthorization(d: Device, origin: string, realm: string, waitUntil: 'load' | 'commit' = 'load'): Promise<string> {
  // Away from the page first: a sign-in page shown again after a refusal starts its autofill again, which the virtual authenticator answers at once.
  await d.page.goto('about:blank');
  await d.context.clearCookies();
  const { query, verifier } = authorizationQuery('web', callback);
  await d.page.goto(`${origin}/realms/${realm}/protocol/openid-connect/auth?${query}`, { waitUntil });
  return verifier;
}

/** Opens a sign-in whose page posts the passkey at once (the autofill); the status of that post, after any redirect landed. */
async function autofillSignIn(d: Device, origin: string, realm: string): Promise<{ status: number; verifier: string }> {
  await d.page.goto('about:blank');
  const posted = d.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/login-actions/authenticate') && r.status() !== 204);
  const verifier = await openAuthorization(d, origin, realm, 'commit');
  const response = await posted;
  if (response.status() === 302) await d.page.waitForURL((u) => u.href.startsWith(callback));
  else await d.page.waitForLoadState();
  return { status: response.status(), verifier };
}

/** Signs in with the password and registers a passkey (the user has `webauthn-register-passwordless`). */
async function registerPasskey(d: Device, origin: string, realm: string, username: string): Promise<void> {
  await openAuthorization(d, origin, realm);
  await signInAndRegister(d, username, PASSWORD, callback);
}

/**
 * The next post of the sign-in form, with its passkey answer changed by `change`. The page a refusal shows starts
 * its autofill again, which the virtual authenticator answers at once: that second post is dropped (a 204, so the
 * browser stays on the page), and untamper() waits for it before it leaves the page.
 */
async function tamperPosted(d: Device & { settled?: Promise<void> }, change: (response: Record<string, unknown>) => void = () => {}): Promise<void> {
  let posts = 0;
  let dropped = () => {};
  d.settled = new Promise<void>((resolve) => (dropped = resolve));
  await d.page.route('**/login-actions/authenticate', async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    if (posts++ > 0) {
      await route.fulfill({ status: 204 });
      return dropped();
    }
    const form = new URLSearchParams(route.request().postData() ?? '');
    const response = JSON.parse(form.get('response') ?? '{}') as Record<string, unknown>;
    change(response);
    form.set('response', JSON.stringify(response));
    await route.continue({ postData: form.toString() });
  });
}

/** Once the refusal page's own autofill has posted (and was dropped), leaves it and stops tampering. */
async function untamper(d: Device & { settled?: Promise<void> }): Promise<void> {
  await d.settled;
  await d.page.goto('about:blank');
  await d.page.unroute('**/login-actions/authenticate');
}

async function userId(url: string, realm: string, username: string): Promise<string> {
  return ((await api(url, 'GET', `/admin/realms/${realm}/users?username=${username}&exact=true`, token)).body as { id: string }[])[0].id;
}

const atCallback = (d: Device) => d.page.url().startsWith(callback);

beforeAll(async () => {
  app = createServer((req, res) => res.end(`callback ${req.url}`));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  t = await startServer();
  base = t.url.replace('127.0.0.1', 'localhost');
  token = await adminToken(t.url);
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  app?.close();
});

describe('passkeys on the username form (conditional mediation)', () => {
  let ivy: Device;
  let jack: Device;
  let ivyAnswer = '';

  beforeAll(async () => {
    const users = [user('ivy', ['webauthn-register-passwordless']), user('jack', ['webauthn-register-passwordless']), user('kim')];
    expect((await api(t.url, 'POST', '/admin/realms', token, realmFile('autofill', true, { users }))).status).toBe(201);
    expect((await api(t.url, 'POST', '/admin/realms', token, realmFile('typed', false, { users: [user('kim')] }))).status).toBe(201);
    ivy = await virtualDevice(browser);
    jack = await virtualDevice(browser);
  });

  it('offers the autofill only where the realm has passkeys on', async () => {
    const kim = await virtualDevice(browser);
    await openAuthorization(kim, base, 'autofill');
    expect(await kim.page.getAttribute('#username', 'autocomplete')).toBe('username webauthn');
    expect(await kim.page.isVisible('#authenticateWebAuthnButton')).toBe(true);
    // Without a passkey on the device the autofill offers nothing; the password still signs in.
    await kim.page.fill('#username', 'kim');
    await kim.page.fill('#password', PASSWORD);
    await kim.page.click('#kc-login');
    await kim.page.waitForURL((u) => u.href.startsWith(callback));
    await openAuthorization(kim, base, 'typed');
    expect(await kim.page.getAttribute('#username', 'autocomplete')).toBe('username');
    expect(await kim.page.$('#authenticateWebAuthnButton')).toBeNull();
    expect(await kim.page.$('script[src$="webauthn.js"]')).toBeNull();
  });

  it('signs in with the passkey picked in the username field: no name, no password typed', async () => {
    await registerPasskey(ivy, base, 'autofill', 'ivy');
    expect(await credentialsOn(ivy)).toHaveLength(1);
    ivy.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/login-actions/authenticate')) ivyAnswer ||= new URLSearchParams(r.postData() ?? '').get('response') ?? '';
    });
    const { status, verifier } = await autofillSignIn(ivy, base, 'autofill');
    expect(status).toBe(302);
    expect(jwtClaims((await redeemCode(base, 'autofill', 'web', ivy.page, callback, verifier)).access_token).preferred_username).toBe('ivy');
    expect(ivyAnswer).toContain('authenticatorData');
    // The sign counter moved with it.
    const [stored] = ((await api(t.url, 'GET', `/admin/realms/autofill/users/${await userId(t.url, 'autofill', 'ivy')}/credentials`, token)).body as Record<string, string>[]).filter((c) => c.type === 'webauthn-passwordless');
    expect(JSON.parse(stored.credentialData).counter).toBe((await credentialsOn(ivy))[0].signCount);
  });

  it('refuses a passkey answer whose user handle names another user (Jack’s passkey presented as Ivy’s)', async () => {
    await registerPasskey(jack, base, 'autofill', 'jack');
    const ivyId = await userId(t.url, 'autofill', 'ivy');
    await tamperPosted(jack, (response) => {
      (response.response as Record<string, unknown>).userHandle = Buffer.from(ivyId).toString('base64url');
    });
    const { status } = await autofillSignIn(jack, base, 'autofill');
    expect(status).toBe(401);
    expect(atCallback(jack)).toBe(false);
    expect(await jack.page.textContent('#page-message')).toContain('Failed to authenticate');
    await untamper(jack);
  });

  it('refuses a passkey answer whose user handle names nobody', async () => {
    await tamperPosted(jack, (response) => {
      (response.response as Record<string, unknown>).userHandle = Buffer.from('no-such-user').toString('base64url');
    });
    const { status } = await autofillSignIn(jack, base, 'autofill');
    expect(status).toBe(401);
    expect(atCallback(jack)).toBe(false);
    await untamper(jack);
    // Jack's own answer, untouched, still signs him in.
    expect((await autofillSignIn(jack, base, 'autofill')).status).toBe(302);
  });

  it('refuses a passkey answer of an earlier sign-in replayed in a new one', async () => {
    expect(ivyAnswer).not.toBe('');
    await tamperPosted(ivy, (response) => {
      for (const key of Object.keys(response)) delete response[key];
      Object.assign(response, JSON.parse(ivyAnswer));
    });
    const { status } = await autofillSignIn(ivy, base, 'autofill');
    expect(status).toBe(401);
    expect(atCallback(ivy)).toBe(false);
    await untamper(ivy);
  });

  it('refuses the passkey of a disabled user', async () => {
    const id = await userId(t.url, 'autofill', 'ivy');
    expect((await api(t.url, 'PUT', `/admin/realms/autofill/users/${id}`, token, { enabled: false })).status).toBe(204);
    await tamperPosted(ivy);
    const { status } = await autofillSignIn(ivy, base, 'autofill');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    expect(atCallback(ivy)).toBe(false);
    await untamper(ivy);
    expect((await api(t.url, 'PUT', `/admin/realms/autofill/users/${id}`, token, { enabled: true })).status).toBe(204);
    expect((await autofillSignIn(ivy, base, 'autofill')).status).toBe(302);
  });
});

describe('two nodes on one PostgreSQL and one Redis', () => {
  let pair: Awaited<ReturnType<typeof startServerPair>>;
  beforeAll(async () => {
    pair = await startServerPair();
  }, 120_000);
  afterAll(async () => {
    await pair?.close();
  });

  it('one passkey answer sent to both nodes at once signs in once', async () => {
    const baseA = pair.a.url.replace('127.0.0.1', 'localhost');
    const baseB = pair.b.url.replace('127.0.0.1', 'localhost');
    const adminA = await adminToken(pair.a.url);
    // One deployment would have one hostname; here the nodes have a port each, so B accepts A's origin by policy.
    const realm = realmFile('nodes', true, { users: [user('lena', ['webauthn-register-passwordless'])], webAuthnPolicyPasswordlessExtraOrigins: [baseA] });
    expect((await api(pair.a.url, 'POST', '/admin/realms', adminA, realm)).status).toBe(201);
    const lena = await virtualDevice(browser);
    await registerPasskey(lena, baseA, 'nodes', 'lena');
    // The autofill's post is held back; its body goes to A and B together, with the browser's cookies.
    let body = '';
    const held = new Promise<void>((resolve) => {
      void lena.page.route('**/login-actions/authenticate', async (route) => {
        if (route.request().method() !== 'POST') return route.continue();
        body = route.request().postData() ?? '';
        resolve();
        await route.abort();
      });
    });
    await openAuthorization(lena, baseA, 'nodes');
    await held;
    expect(body).toContain('authenticatorData');
    const post = (origin: string) => lena.page.request.post(`${origin}/realms/nodes/login-actions/authenticate`, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, data: body, maxRedirects: 0 });
    const answers = await Promise.all([post(baseA), post(baseB)]);
    const signedIn = answers.filter((r) => r.status() === 302 && (r.headers().location ?? '').startsWith(callback));
    expect(signedIn).toHaveLength(1);
    for (const r of answers) expect(r.status()).toBeLessThan(500);
  });
});

describe('"try another way" between alternative second factors', () => {
  const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DP';
  const codes = new CodeSource(fromBase32(SECRET), { window: 1 });
  let mia: Device;

  const waysRealm = () => ({
    ...realmFile('ways', false),
    browserFlow: 'ways browser',
    authenticationFlows: [
      flow('ways browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('ways forms', 'ALTERNATIVE', 20)]),
      flow('ways forms', false, [step('auth-username-password-form', 'REQUIRED', 10), subflow('ways second', 'REQUIRED', 20)]),
      flow('ways second', false, [step('webauthn-authenticator', 'ALTERNATIVE', 10), step('auth-otp-form', 'ALTERNATIVE', 20), step('auth-recovery-authn-code-form', 'ALTERNATIVE', 30)]),
    ],
    users: [
      {
        ...user('mia', ['webauthn-register']),
        credentials: [
          { type: 'password', value: PASSWORD },
          { type: 'otp', userLabel: 'phone', secretData: JSON.stringify({ value: SECRET }), credentialData: JSON.stringify({ subType: 'totp', digits: 6, period: 30, algorithm: 'HmacSHA1', secretEncoding: 'BASE32' }) },
        ],
      },
    ],
  });

  async function passwordFirst(): Promise<void> {
    await openAuthorization(mia, base, 'ways');
    await mia.page.fill('#username', 'mia');
    await mia.page.fill('#password', PASSWORD);
    await mia.page.click('#kc-login');
  }
  const ways = () => mia.page.$$eval('button[name="authenticationExecution"] strong', (names) => names.map((n) => n.textContent));
  async function choose(name: string): Promise<void> {
    await mia.page.click('#try-another-way');
    await mia.page.waitForSelector('#kc-select-credential-form');
    await mia.page.click(`button[name="authenticationExecution"]:has-text("${name}")`);
  }

  beforeAll(async () => {
    const created = await api(t.url, 'POST', '/admin/realms', token, waysRealm());
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    mia = await virtualDevice(browser);
  });

  it('offers no other way while the user has only one (the code), then registers a security key', async () => {
    await passwordFirst();
    await mia.page.waitForSelector('#otp');
    expect(await mia.page.$('#try-another-way')).toBeNull();
    await mia.page.fill('#otp', codes.next());
    await mia.page.click('#kc-login');
    await mia.page.waitForSelector('#registerWebAuthn');
    await mia.page.click('#registerWebAuthn');
    await mia.page.waitForURL((u) => u.href.startsWith(callback));
  });

  it('lists the user’s ways, and the one chosen is asked next: the code instead of the key', async () => {
    await passwordFirst();
    await mia.page.waitForSelector('#authenticateWebAuthnButton');
    await mia.page.click('#try-another-way');
    await mia.page.waitForSelector('#kc-select-credential-form');
    // Security key first (the step that asked), then the code; recovery codes are not set up, so not offered.
    expect(await ways()).toEqual(['Security key', 'Authenticator app']);
    await mia.page.click('button[name="authenticationExecution"]:has-text("Authenticator app")');
    await mia.page.waitForSelector('#otp');
    // A wrong code: the code page again, still with the way back.
    await mia.page.fill('#otp', '000000');
    await mia.page.click('#kc-login');
    await mia.page.waitForSelector('#otp');
    expect(await mia.page.textContent('#input-error-otp')).toContain('Invalid');
    expect(await mia.page.isVisible('#try-another-way')).toBe(true);
    await mia.page.fill('#otp', codes.next());
    await mia.page.click('#kc-login');
    await mia.page.waitForURL((u) => u.href.startsWith(callback));
  });

  it('switches back: key, then code, then the key again, which signs in', async () => {
    await passwordFirst();
    await mia.page.waitForSelector('#authenticateWebAuthnButton');
    await choose('Authenticator app');
    await mia.page.waitForSelector('#otp');
    await choose('Security key');
    await mia.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await mia.page.$('#otp')).toBeNull();
    await mia.page.click('#authenticateWebAuthnButton');
    await mia.page.waitForURL((u) => u.href.startsWith(callback));
    expect(atCallback(mia)).toBe(true);
  });

  it('refuses a way the page did not offer, and a list of another sign-in', async () => {
    const executions = (await api(t.url, 'GET', '/admin/realms/ways/authentication/flows/ways%20forms/executions', token)).body as { id: string; providerId?: string }[];
    const passwordStep = executions.find((e) => e.providerId === 'auth-username-password-form')!;
    expect(passwordStep).toBeDefined();
    await passwordFirst();
    await mia.page.waitForSelector('#authenticateWebAuthnButton');
    await mia.page.click('#try-another-way');
    await mia.page.waitForSelector('#kc-select-credential-form');
    const key = await mia.page.getAttribute('#kc-select-credential-form input[name="key"]', 'value');
    // The button's value changed to a step that was not offered (the password step before it).
    await mia.page.$eval('button[name="authenticationExecution"]', (b, id) => ((b as HTMLButtonElement).value = id), passwordStep.id);
    const [refused] = await Promise.all([mia.page.waitForResponse((r) => r.request().method() === 'POST'), mia.page.click('button[name="authenticationExecution"]')]);
    expect(refused.status()).toBe(400);
    expect(await ways()).toEqual(['Security key', 'Authenticator app']);
    expect(atCallback(mia)).toBe(false);
    // The list's key in a new sign-in (another auth session): expired, nothing chosen.
    await openAuthorization(mia, base, 'ways');
    const csrf = await mia.page.getAttribute('input[name="session_code"]', 'value');
    const executionsOffered = await api(t.url, 'GET', '/admin/realms/ways/authentication/flows/ways%20second/executions', token);
    const otpStep = (executionsOffered.body as { id: string; providerId?: string }[]).find((e) => e.providerId === 'auth-otp-form')!;
    const stale = await mia.page.request.post(`${base}/realms/ways/login-actions/select-authenticator`, {
      form: { session_code: csrf!, key: key!, authenticationExecution: otpStep.id },
      maxRedirects: 0,
    });
    expect(stale.status()).toBe(400);
    expect(await stale.text()).toContain('expired');
  });
});

describe('the last way in (account API)', () => {
  it('a user without a password cannot remove their only passkey; with a password they can; an administrator can', async () => {
    const users = [user('nora', ['webauthn-register-passwordless']), user('otto', ['webauthn-register-passwordless'])];
    expect((await api(t.url, 'POST', '/admin/realms', token, realmFile('lastway', true, { users }))).status).toBe(201);
    const signedIn = async (name: string) => {
      const d = await virtualDevice(browser);
      await registerPasskey(d, base, 'lastway', name);
      const { status, verifier } = await autofillSignIn(d, base, 'lastway');
      expect(status).toBe(302);
      const bearer = (await redeemCode(base, 'lastway', 'web', d.page, callback, verifier)).access_token;
      const id = await userId(t.url, 'lastway', name);
      const passkeys = async () => ((await api(t.url, 'GET', `/admin/realms/lastway/users/${id}/credentials`, token)).body as { id: string; type: string }[]).filter((c) => c.type === 'webauthn-passwordless');
      const listed = async () => ((await api(t.url, 'GET', '/realms/lastway/account/credentials?type=webauthn-passwordless', bearer)).body as { removeable: boolean }[])[0];
      return { id, bearer, passkeys, listed };
    };

    // Otto keeps his password: his only passkey is removable, and removed.
    const otto = await signedIn('otto');
    expect((await otto.listed()).removeable).toBe(true);
    const [ottoKey] = await otto.passkeys();
    expect((await api(t.url, 'DELETE', `/realms/lastway/account/credentials/${ottoKey.id}`, otto.bearer)).status).toBe(204);
    expect(await otto.passkeys()).toEqual([]);

    // Nora's password removed by an administrator: her passkey is now her only way in.
    const nora = await signedIn('nora');
    const password = ((await api(t.url, 'GET', `/admin/realms/lastway/users/${nora.id}/credentials`, token)).body as { id: string; type: string }[]).find((c) => c.type === 'password')!;
    expect((await api(t.url, 'DELETE', `/admin/realms/lastway/users/${nora.id}/credentials/${password.id}`, token)).status).toBe(204);
    expect((await nora.listed()).removeable).toBe(false);
    const [noraKey] = await nora.passkeys();
    const refused = await api(t.url, 'DELETE', `/realms/lastway/account/credentials/${noraKey.id}`, nora.bearer);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ errorMessage: 'The last way to sign in cannot be removed' });
    expect(await nora.passkeys()).toHaveLength(1);
    // Two passkeys removed at once: each request sees the other passkey, yet one stays.
    const storage = t.server.context.storage;
    const [stored] = await storage.credentials.ofUser(nora.id, 'webauthn-passwordless');
    await storage.credentials.insert({ ...stored, id: randomUUID(), userLabel: 'second' });
    const both = (await nora.passkeys()).map((c) => c.id);
    expect(both).toHaveLength(2);
    const statuses = await Promise.all(both.map(async (id) => (await api(t.url, 'DELETE', `/realms/lastway/account/credentials/${id}`, nora.bearer)).status));
    expect(statuses).toContain(400);
    expect((await nora.passkeys()).length).toBeGreaterThanOrEqual(1);
    // An administrator may remove the last one (as in Keycloak).
    for (const key of await nora.passkeys()) expect((await api(t.url, 'DELETE', `/admin/realms/lastway/users/${nora.id}/credentials/${key.id}`, token)).status).toBe(204);
    expect(await nora.passkeys()).toEqual([]);
  });
});
