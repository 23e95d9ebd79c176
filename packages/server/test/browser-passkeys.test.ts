import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { adminToken, api, startServer, startServerPair, type TestServer } from './support/server.js';
import { authorizationQuery, credentialsOn, jwtClaims, redeemCode, virtualDevice, type Device } from './support/webauthn-device.js';

/**
 * Keycloak 26's passkeys on the username form (realm `webAuthnPolicyPasswordlessPasskeysEnabled`), in Chromium with
 * its virtual authenticator: the username field offers the passkeys (autocomplete "username webauthn", conditional
 * mediation, which the virtual authenticator answers at once with the passkey it holds) and a passkey picked there
 * signs its owner in without a password. And the attacks on that form: another user's handle, a handle naming
 * nobody, an assertion replayed in a later sign-in, the same assertion sent to two nodes at once.
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
  await d.context.clearCookies();
  const { query, verifier } = authorizationQuery('web', callback);
  await d.page.goto(`${origin}/realms/${realm}/protocol/openid-connect/auth?${query}`, { waitUntil });
  return verifier;
}

/** Opens a sign-in whose page posts the passkey at once (the autofill); the status of that post, after any redirect landed. */
async function autofillSignIn(d: Device, origin: string, realm: string): Promise<{ status: number; verifier: string }> {
  const posted = d.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/login-actions/authenticate'));
  const verifier = await openAuthorization(d, origin, realm, 'commit');
  const response = await posted;
  if (response.status() === 302) await d.page.waitForURL((u) => u.href.startsWith(callback));
  else await d.page.waitForLoadState();
  return { status: response.status(), verifier };
}

/** Signs in with the password and registers a passkey (the user has `webauthn-register-passwordless`). */
async function registerPasskey(d: Device, origin: string, realm: string, username: string): Promise<void> {
  await openAuthorization(d, origin, realm);
  await d.page.fill('#username', username);
  await d.page.fill('#password', PASSWORD);
  await d.page.click('#kc-login');
  await d.page.waitForSelector('#registerWebAuthn');
  await d.page.click('#registerWebAuthn');
  await d.page.waitForURL((u) => u.href.startsWith(callback));
}

/** The next post of the sign-in form with its passkey answer changed by `change`. */
async function tamperPosted(d: Device, change: (response: Record<string, unknown>) => void): Promise<void> {
  await d.page.route('**/login-actions/authenticate', async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const form = new URLSearchParams(route.request().postData() ?? '');
    const response = JSON.parse(form.get('response') ?? '{}') as Record<string, unknown>;
    change(response);
    form.set('response', JSON.stringify(response));
    await route.continue({ postData: form.toString() });
  });
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
    await jack.page.unroute('**/login-actions/authenticate');
  });

  it('refuses a passkey answer whose user handle names nobody', async () => {
    await tamperPosted(jack, (response) => {
      (response.response as Record<string, unknown>).userHandle = Buffer.from('no-such-user').toString('base64url');
    });
    const { status } = await autofillSignIn(jack, base, 'autofill');
    expect(status).toBe(401);
    expect(atCallback(jack)).toBe(false);
    await jack.page.unroute('**/login-actions/authenticate');
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
    await ivy.page.unroute('**/login-actions/authenticate');
  });

  it('refuses the passkey of a disabled user', async () => {
    const id = await userId(t.url, 'autofill', 'ivy');
    expect((await api(t.url, 'PUT', `/admin/realms/autofill/users/${id}`, token, { enabled: false })).status).toBe(204);
    const { status } = await autofillSignIn(ivy, base, 'autofill');
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    expect(atCallback(ivy)).toBe(false);
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
