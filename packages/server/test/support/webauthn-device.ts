import { createHash, randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';

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
