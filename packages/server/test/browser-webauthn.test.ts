import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { flow, step, subflow } from './support/flow-files.js';
import { realmExporter } from '../src/services/realm-export.js';
import { adminToken, api, startServer, startServerPair, type TestServer } from './support/server.js';

/**
 * Issue 38 in Chromium, with its virtual authenticator (DevTools' WebAuthn domain: CTAP2, internal transport,
 * resident keys, user verification): a security key registered as a second factor and used after the password; a
 * passkey registered, then used without a password; the authenticator removed; user verification required with an
 * authenticator that gives none; and the attacks: an answer replayed, another user's key, another realm's passkey, a
 * challenge answered on another node of the same deployment. Pages are opened on `localhost` (an IP address cannot
 * be a WebAuthn RP id), which reaches the test server on 127.0.0.1.
 */

const PASSWORD = 'Webauthn-pass-1';
let t: TestServer;
let base: string;
let token: string;
let browser: Browser;
let app: Server;
let callback: string;

/** A realm whose browser flow asks for a security key after the password (webauthn-authenticator, REQUIRED). */
const twoFactorRealm = (realm: string, extra: Record<string, unknown> = {}) => ({
  realm,
  enabled: true,
  browserFlow: 'key browser',
  authenticationFlows: [
    flow('key browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('key forms', 'ALTERNATIVE', 20)]),
    flow('key forms', false, [step('auth-username-password-form', 'REQUIRED', 10), step('webauthn-authenticator', 'REQUIRED', 20)]),
  ],
  clients: [{ clientId: 'web', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] }],
  ...extra,
});

/** A realm with the password flow bound, and a passkey-only flow ("usernameless": the passkey names the user) to bind to a client. */
const passkeyRealm = (realm: string) => ({
  realm,
  enabled: true,
  authenticationFlows: [
    flow('passkey browser', true, [step('auth-cookie', 'ALTERNATIVE', 10), subflow('passkey forms', 'ALTERNATIVE', 20)]),
    flow('passkey forms', false, [step('webauthn-authenticator-passwordless', 'REQUIRED', 10)]),
  ],
  clients: [
    { clientId: 'web', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] },
    { clientId: 'passkey-app', publicClient: true, standardFlowEnabled: true, redirectUris: [callback] },
  ],
});

const user = (username: string, requiredActions: string[] = []) => ({ username, enabled: true, firstName: username, lastName: 'Test', email: `${username}@example.com`, emailVerified: true, credentials: [{ type: 'password', value: PASSWORD }], requiredActions });

async function bindClientFlow(url: string, realm: string, clientId: string, flowAlias: string): Promise<void> {
  const flows = (await api(url, 'GET', `/admin/realms/${realm}/authentication/flows`, token)).body as { id: string; alias: string }[];
  const [client] = (await api(url, 'GET', `/admin/realms/${realm}/clients?clientId=${clientId}`, token)).body as { id: string }[];
  const id = flows.find((f) => f.alias === flowAlias)!.id;
  expect((await api(url, 'PUT', `/admin/realms/${realm}/clients/${client.id}`, token, { ...client, authenticationFlowBindingOverrides: { browser: id } })).status).toBe(204);
}

interface Device {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
}

const AUTHENTICATOR = { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true };

async function device(options: Partial<typeof AUTHENTICATOR> = {}): Promise<Device> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { ...AUTHENTICATOR, ...options } as never });
  return { context, page, cdp, authenticatorId };
}

async function credentialsOn(d: Device): Promise<{ credentialId: string; userHandle?: string; signCount: number }[]> {
  return (await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId })).credentials;
}

/** Opens an authorization request of `clientId` on `origin` (a new sign-in: the context's cookies are cleared first); its PKCE verifier. */
async function openAuthorization(d: Device, origin: string, realm: string, clientId = 'web'): Promise<string> {
  await d.context.clearCookies();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: callback, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
  await d.page.goto(`${origin}/realms/${realm}/protocol/openid-connect/auth?${query}`);
  return verifier;
}

async function signInWithPassword(d: Device, username: string): Promise<void> {
  await d.page.fill('#username', username);
  await d.page.fill('#password', PASSWORD);
  await d.page.click('#kc-login');
}

/**
 * Clicks the page's WebAuthn button and waits for the form post it makes; its status. A redirect is followed to the
 * page it lands on before this returns, so the next step never races the browser's navigation to it.
 */
async function ceremony(d: Device, button: string): Promise<number> {
  const landed = d.page.waitForEvent('framenavigated', { predicate: (frame) => frame === d.page.mainFrame() });
  landed.catch(() => {});
  const [response] = await Promise.all([d.page.waitForResponse((r) => r.request().method() === 'POST' && /login-actions\/(login-webauthn|webauthn-register)/.test(r.url())), d.page.click(button)]);
  if (response.status() === 302) await landed;
  return response.status();
}

/** Serves the page the form post answers with its WebAuthn options changed by `change` (what a tampering page script could do). */
async function tamperOptions(d: Device, change: (options: Record<string, unknown>) => void): Promise<void> {
  await d.page.route('**/login-actions/authenticate', async (route) => {
    const response = await route.fetch();
    const html = (await response.text()).replace(/data-options="([^"]*)"/, (_all, escaped: string) => {
      const options = JSON.parse(escaped.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')) as Record<string, unknown>;
      change(options);
      return `data-options="${JSON.stringify(options).replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"`;
    });
    await route.fulfill({ response, body: html });
  });
}

const atCallback = (d: Device) => d.page.url().startsWith(callback);

async function tokensFor(origin: string, realm: string, clientId: string, page: Page, verifier: string) {
  const code = new URL(page.url()).searchParams.get('code')!;
  const response = await fetch(`${origin}/realms/${realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: callback, code_verifier: verifier }),
  });
  return (await response.json()) as { access_token: string };
}
const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

async function userId(url: string, realm: string, username: string): Promise<string> {
  return ((await api(url, 'GET', `/admin/realms/${realm}/users?username=${username}&exact=true`, token)).body as { id: string }[])[0].id;
}

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

describe('a security key as the second factor (webauthn-register, webauthn-authenticator)', () => {
  let dana: Device;
  let replayable: string;

  beforeAll(async () => {
    expect((await api(t.url, 'POST', '/admin/realms', token, twoFactorRealm('keys', { users: [user('dana'), user('frank')] }))).status).toBe(201);
    dana = await device();
  });

  it('asks a user without a key to register one after the password, stores it in Keycloak’s format, then signs in with it', async () => {
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'dana');
    await dana.page.waitForSelector('#registerWebAuthn');
    await dana.page.fill('#authenticatorLabel', 'Dana laptop');
    expect(await ceremony(dana, '#registerWebAuthn')).toBe(302);
    await dana.page.waitForURL((u) => u.href.startsWith(callback));
    const [onDevice] = await credentialsOn(dana);
    const credentials = (await api(t.url, 'GET', `/admin/realms/keys/users/${await userId(t.url, 'keys', 'dana')}/credentials`, token)).body as Record<string, string>[];
    const key = credentials.find((c) => c.type === 'webauthn')!;
    expect(key.userLabel).toBe('Dana laptop');
    const data = JSON.parse(key.credentialData) as Record<string, unknown>;
    expect(Object.keys(data).sort()).toEqual(['aaguid', 'attestationStatementFormat', 'counter', 'credentialId', 'credentialPublicKey', 'transports']);
    expect(data.credentialId).toBe(onDevice.credentialId);
    expect(data.attestationStatementFormat).toBe('none');

    // Signing in again: the password, then the key.
    const posted: string[] = [];
    dana.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('login-webauthn')) posted.push(new URLSearchParams(r.postData() ?? '').get('response') ?? '');
    });
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'dana');
    await dana.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await ceremony(dana, '#authenticateWebAuthnButton')).toBe(302);
    await dana.page.waitForURL((u) => u.href.startsWith(callback));
    replayable = posted[0];
    expect(replayable).toContain('authenticatorData');
    const stored = JSON.parse(((await api(t.url, 'GET', `/admin/realms/keys/users/${await userId(t.url, 'keys', 'dana')}/credentials`, token)).body as Record<string, string>[]).find((c) => c.type === 'webauthn')!.credentialData);
    expect(stored.counter).toBe((await credentialsOn(dana))[0].signCount);
  });

  it('refuses an assertion replayed in a later sign-in (its challenge was used, and was another session’s)', async () => {
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'dana');
    await dana.page.waitForSelector('#authenticateWebAuthnButton');
    const [response] = await Promise.all([
      dana.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('login-webauthn')),
      dana.page.evaluate((old) => {
        const form = document.getElementById('webauthn-form') as HTMLFormElement;
        (form.elements.namedItem('response') as HTMLInputElement).value = old;
        form.submit();
      }, replayable),
    ]);
    expect(response.status()).toBe(401);
    expect(atCallback(dana)).toBe(false);
    // The real key still works on the same page afterwards.
    expect(await ceremony(dana, '#authenticateWebAuthnButton')).toBe(302);
  });

  it('refuses another user’s key: Dana’s authenticator answering Frank’s sign-in', async () => {
    // Frank registers a key of his own, on his own device.
    const frank = await device();
    await openAuthorization(frank, base, 'keys');
    await signInWithPassword(frank, 'frank');
    await frank.page.waitForSelector('#registerWebAuthn');
    expect(await ceremony(frank, '#registerWebAuthn')).toBe(302);
    // Frank's password typed on Dana's device; the page's options ask for her key instead of his, so hers answers.
    const [danaKey] = await credentialsOn(dana);
    await tamperOptions(dana, (options) => {
      expect(options.allowCredentials).toHaveLength(1);
      options.allowCredentials = [{ type: 'public-key', id: Buffer.from(danaKey.credentialId, 'base64').toString('base64url') }];
    });
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'frank');
    await dana.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await ceremony(dana, '#authenticateWebAuthnButton')).toBe(401);
    expect(atCallback(dana)).toBe(false);
    await dana.page.unroute('**/login-actions/authenticate');
  });

  it('fails cleanly when the authenticator is gone (no 5xx; the page offers to try again)', async () => {
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'dana');
    await dana.page.waitForSelector('#authenticateWebAuthnButton');
    await dana.cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: dana.authenticatorId });
    // A new, empty authenticator: it holds no key of this account, so the browser refuses and the page posts the error.
    const { authenticatorId } = await dana.cdp.send('WebAuthn.addVirtualAuthenticator', { options: AUTHENTICATOR as never });
    dana.authenticatorId = authenticatorId;
    const status = await ceremony(dana, '#authenticateWebAuthnButton');
    expect(status).toBe(400);
    expect(await dana.page.textContent('#page-message')).toContain('Failed to authenticate');
    expect(await dana.page.isVisible('#authenticateWebAuthnButton')).toBe(true);
    // The page's key takes five answers in all, the browser's refusals included; then the sign-in starts again.
    for (let i = 2; i <= 5; i++) expect(await ceremony(dana, '#authenticateWebAuthnButton')).toBe(400);
    expect(await ceremony(dana, '#authenticateWebAuthnButton')).toBe(400);
    expect(await dana.page.textContent('#page-message')).toContain('expired');
    expect(await dana.page.isVisible('#authenticateWebAuthnButton')).toBe(false);
  });
  it('lists, relabels and deletes the key through the admin API; without it the next sign-in asks for a new one', async () => {
    const id = await userId(t.url, 'keys', 'dana');
    const path = `/admin/realms/keys/users/${id}/credentials`;
    const key = ((await api(t.url, 'GET', path, token)).body as Record<string, string>[]).find((c) => c.type === 'webauthn')!;
    expect((await api(t.url, 'PUT', `${path}/${key.id}/userLabel`, token, 'Dana old laptop', { 'content-type': 'text/plain' })).status).toBe(204);
    expect(((await api(t.url, 'GET', path, token)).body as Record<string, string>[]).find((c) => c.id === key.id)?.userLabel).toBe('Dana old laptop');
    expect((await api(t.url, 'DELETE', `${path}/${key.id}`, token)).status).toBe(204);
    expect(((await api(t.url, 'GET', path, token)).body as Record<string, string>[]).map((c) => c.type)).toEqual(['password']);
    await openAuthorization(dana, base, 'keys');
    await signInWithPassword(dana, 'dana');
    await dana.page.waitForSelector('#registerWebAuthn');
  });
});

describe('user verification required by the policy', () => {
  it('refuses an assertion without user verification, even when the page is made to ask for none', async () => {
    expect((await api(t.url, 'POST', '/admin/realms', token, twoFactorRealm('uv', { users: [user('gina')] }))).status).toBe(201);
    const gina = await device();
    await openAuthorization(gina, base, 'uv');
    await signInWithPassword(gina, 'gina');
    await gina.page.waitForSelector('#registerWebAuthn');
    expect(await ceremony(gina, '#registerWebAuthn')).toBe(302);
    // Now the realm requires user verification, and the authenticator cannot verify the user.
    expect((await api(t.url, 'PUT', '/admin/realms/uv', token, { webAuthnPolicyUserVerificationRequirement: 'required' })).status).toBe(204);
    await gina.cdp.send('WebAuthn.setUserVerified', { authenticatorId: gina.authenticatorId, isUserVerified: false });
    await tamperOptions(gina, (options) => {
      expect(options.userVerification).toBe('required');
      options.userVerification = 'discouraged';
    });
    await openAuthorization(gina, base, 'uv');
    await signInWithPassword(gina, 'gina');
    await gina.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await ceremony(gina, '#authenticateWebAuthnButton')).toBe(401);
    expect(atCallback(gina)).toBe(false);
  });
});

describe('passkeys (webauthn-register-passwordless, webauthn-authenticator-passwordless)', () => {
  let erin: Device;

  beforeAll(async () => {
    expect((await api(t.url, 'POST', '/admin/realms', token, { ...passkeyRealm('passkeys'), users: [user('erin', ['webauthn-register-passwordless'])] })).status).toBe(201);
    expect((await api(t.url, 'POST', '/admin/realms', token, { ...passkeyRealm('other'), users: [user('erin')] })).status).toBe(201);
    await bindClientFlow(t.url, 'passkeys', 'passkey-app', 'passkey browser');
    await bindClientFlow(t.url, 'other', 'passkey-app', 'passkey browser');
    erin = await device();
  });

  it('registers a passkey, then signs in with it alone: no username, no password', async () => {
    await openAuthorization(erin, base, 'passkeys');
    await signInWithPassword(erin, 'erin');
    await erin.page.waitForSelector('#registerWebAuthn');
    expect(await ceremony(erin, '#registerWebAuthn')).toBe(302);
    const [onDevice] = await credentialsOn(erin);
    expect(Buffer.from(onDevice.userHandle!, 'base64').toString('utf8')).toBe(await userId(t.url, 'passkeys', 'erin'));

    const verifier = await openAuthorization(erin, base, 'passkeys', 'passkey-app');
    await erin.page.waitForSelector('#authenticateWebAuthnButton', { timeout: 3000 }).catch(async (e) => { console.log('PAGE', erin.page.url(), (await erin.page.content()).slice(0, 3000)); throw e; });
    expect(await erin.page.isVisible('#password')).toBe(false);
    expect(await ceremony(erin, '#authenticateWebAuthnButton')).toBe(302);
    await erin.page.waitForURL((u) => u.href.startsWith(callback));
    const { access_token } = await tokensFor(base, 'passkeys', 'passkey-app', erin.page, verifier);
    expect(claims(access_token).preferred_username).toBe('erin');
  });

  it('refuses a passkey of realm "passkeys" in realm "other", where a user of the same name exists', async () => {
    await openAuthorization(erin, base, 'other', 'passkey-app');
    await erin.page.waitForSelector('#authenticateWebAuthnButton');
    const status = await ceremony(erin, '#authenticateWebAuthnButton');
    expect(status).toBe(401);
    expect(atCallback(erin)).toBe(false);
  });

  it('imports a Keycloak-format export of the user and their passkey into another realm, where it signs in', async () => {
    const id = await userId(t.url, 'passkeys', 'erin');
    const exported = await api(t.url, 'POST', '/admin/realms/passkeys/partial-export', token);
    expect(exported.status).toBe(200);
    const credentials = (await api(t.url, 'GET', `/admin/realms/passkeys/users/${id}/credentials`, token)).body as Record<string, unknown>[];
    const passkey = credentials.find((c) => c.type === 'webauthn-passwordless')!;
    // Keycloak's export of a user: its id (the passkey's user handle), secretData "{}", credentialData as a JSON string.
    const file = {
      ...passkeyRealm('imported'),
      users: [{ id, username: 'erin', enabled: true, credentials: [{ type: 'webauthn-passwordless', userLabel: 'from Keycloak', createdDate: 1700000000000, secretData: '{}', credentialData: passkey.credentialData }] }],
    };
    expect((await api(t.url, 'POST', '/admin/realms', token, file)).status).toBe(201);
    await bindClientFlow(t.url, 'imported', 'passkey-app', 'passkey browser');
    const verifier = await openAuthorization(erin, base, 'imported', 'passkey-app');
    await erin.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await ceremony(erin, '#authenticateWebAuthnButton')).toBe(302);
    await erin.page.waitForURL((u) => u.href.startsWith(callback));
    expect(claims((await tokensFor(base, 'imported', 'passkey-app', erin.page, verifier)).access_token).preferred_username).toBe('erin');
    // And the export writes it back as Keycloak has it, under the id the authenticator holds (its user handle).
    const realm = (await t.server.context.storage.realms.byName('imported'))!;
    const { users } = await (await realmExporter(t.server.context, realm)).users(null, 10);
    const [written] = users as { id: string; credentials: Record<string, unknown>[] }[];
    expect(written.id).toBe(id);
    const back = written.credentials.find((c) => c.type === 'webauthn-passwordless')!;
    expect(back).toMatchObject({ type: 'webauthn-passwordless', userLabel: 'from Keycloak', createdDate: 1700000000000, secretData: '{}' });
    const data = JSON.parse(back.credentialData as string) as Record<string, unknown>;
    expect({ ...data, counter: 0 }).toEqual({ ...JSON.parse(passkey.credentialData as string), counter: 0 });
    expect(data.counter).toBeGreaterThan(0);
  });
  it('refuses a cloned authenticator: a sign counter lower than the one stored', async () => {
    const id = await userId(t.url, 'passkeys', 'erin');
    const storage = t.server.context.storage;
    const [stored] = await storage.credentials.ofUser(id, 'webauthn-passwordless');
    // The stored counter is ahead of the authenticator's: another copy of the key signed since.
    const ahead = { ...stored.credentialData, counter: 1_000_000 };
    expect(await storage.credentials.replaceData(id, stored.id, stored.credentialData, ahead)).toBe(true);
    await openAuthorization(erin, base, 'passkeys', 'passkey-app');
    await erin.page.waitForSelector('#authenticateWebAuthnButton');
    expect(await ceremony(erin, '#authenticateWebAuthnButton')).toBe(401);
    expect(atCallback(erin)).toBe(false);
    expect((await storage.credentials.ofUser(id, 'webauthn-passwordless'))[0].credentialData.counter).toBe(1_000_000);
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

  it('a challenge node A issued is answered on node B, once', async () => {
    const baseA = pair.a.url.replace('127.0.0.1', 'localhost');
    const baseB = pair.b.url.replace('127.0.0.1', 'localhost');
    const adminA = await adminToken(pair.a.url);
    // One deployment would have one hostname; here the nodes have a port each, so B accepts A's origin by policy.
    const realm = twoFactorRealm('nodes', { users: [user('hana')], webAuthnPolicyExtraOrigins: [baseA] });
    expect((await api(pair.a.url, 'POST', '/admin/realms', adminA, realm)).status).toBe(201);
    const hana = await device();
    await openAuthorization(hana, baseA, 'nodes');
    await signInWithPassword(hana, 'hana');
    await hana.page.waitForSelector('#registerWebAuthn');
    expect(await ceremony(hana, '#registerWebAuthn')).toBe(302);

    // The options come from A; the answer goes to B.
    await openAuthorization(hana, baseA, 'nodes');
    await signInWithPassword(hana, 'hana');
    await hana.page.waitForSelector('#authenticateWebAuthnButton');
    const sentToB: string[] = [];
    let answer = '';
    await hana.page.route('**/login-actions/login-webauthn', async (route) => {
      const url = route.request().url().replace(baseA, baseB);
      sentToB.push(url);
      answer = route.request().postData() ?? '';
      await route.continue({ url });
    });
    expect(await ceremony(hana, '#authenticateWebAuthnButton')).toBe(302);
    await hana.page.waitForURL((u) => u.href.startsWith(callback));
    expect(sentToB).toHaveLength(1);
    expect(sentToB[0].startsWith(baseB)).toBe(true);
    // The same answer posted again to A (its key and CSRF token with it) signs nobody in.
    const replay = await hana.page.request.post(`${baseA}/realms/nodes/login-actions/login-webauthn`, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, data: answer, maxRedirects: 0 });
    expect(replay.status()).toBeLessThan(500);
    expect(replay.status()).not.toBe(302);
  });
});
