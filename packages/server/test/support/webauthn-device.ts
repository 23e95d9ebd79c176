import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { launchBrowser } from './browser.js';
import { adminToken, api, startServer, type TestServer } from './server.js';

/**
 * A browser context with Chromium's virtual authenticator (DevTools' WebAuthn domain: CTAP2, internal transport,
 * resident keys, user verification), and what the passkey tests do with it: open an authorization request, read the
 * credentials the authenticator holds, redeem the code.
 */

export interface Device {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
}

export const AUTHENTICATOR = { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true };

export async function virtualDevice(browser: Browser, options: Partial<typeof AUTHENTICATOR> = {}): Promise<Device> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { ...AUTHENTICATOR, ...options } as never });
  return { context, page, cdp, authenticatorId };
}

export async function credentialsOn(d: Device): Promise<{ credentialId: string; userHandle?: string; signCount: number }[]> {
  return (await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId })).credentials;
}

/** The query of an authorization request of `clientId` with PKCE, and its verifier. */
export function authorizationQuery(clientId: string, callback: string): { query: URLSearchParams; verifier: string } {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({ client_id: clientId, redirect_uri: callback, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
  return { query, verifier };
}

/** The code at the callback the page landed on, redeemed for tokens. */
export async function redeemCode(origin: string, realm: string, clientId: string, page: Page, callback: string, verifier: string): Promise<{ access_token: string }> {
  const code = new URL(page.url()).searchParams.get('code')!;
  const response = await fetch(`${origin}/realms/${realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: callback, code_verifier: verifier }),
  });
  return (await response.json()) as { access_token: string };
}

export const jwtClaims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;

/** What a WebAuthn test file in Chromium runs against: a server (its pages opened on `localhost`, an RP id), its admin token, a browser, a callback. */
export interface WebAuthnBed {
  t: TestServer;
  base: string;
  token: string;
  browser: Browser;
  callback: string;
}

/** Starts the bed before the file's tests (filled in then) and stops it after them. */
export function webAuthnBed(): WebAuthnBed {
  const bed = {} as WebAuthnBed;
  let app: Server | undefined;
  beforeAll(async () => {
    app = createServer((req, res) => res.end(`callback ${req.url}`));
    await new Promise<void>((r) => app!.listen(0, '127.0.0.1', r));
    bed.callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
    bed.t = await startServer();
    bed.base = bed.t.url.replace('127.0.0.1', 'localhost');
    bed.token = await adminToken(bed.t.url);
    bed.browser = await launchBrowser();
  });
  afterAll(async () => {
    await bed.browser?.close();
    await bed.t?.close();
    app?.close();
  });
  return bed;
}

/** The id of the user `username` of `realm`, through the admin API. */
export async function userIdOf(bed: Pick<WebAuthnBed, 't' | 'token'>, realm: string, username: string): Promise<string> {
  return ((await api(bed.t.url, 'GET', `/admin/realms/${realm}/users?username=${username}&exact=true`, bed.token)).body as { id: string }[])[0].id;
}

/** On a sign-in page: the name and the password, then the passkey or key the user's required action asks for registered; back at `callback`. */
export async function signInAndRegister(d: Device, username: string, password: string, callback: string): Promise<void> {
  await d.page.fill('#username', username);
  await d.page.fill('#password', password);
  await d.page.click('#kc-login');
  await d.page.waitForSelector('#registerWebAuthn');
  await d.page.click('#registerWebAuthn');
  await d.page.waitForURL((u) => u.href.startsWith(callback));
}
