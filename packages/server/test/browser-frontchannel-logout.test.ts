import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { pkce } from './support/forms.js';
import { Receiver } from './support/logout-receiver.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Front-channel logout in Chromium (issue 40, item 5): the logout page loads each front-channel client's
 * `frontchannel.logout.url` in a frame, with `sid` and `iss`, and then goes on to the post-logout redirect.
 */

const REALM = 'fcl';
const PASSWORD = 'Front-channel-7';
let t: TestServer;
let browser: Browser;
const app = new Receiver();

beforeAll(async () => {
  await app.start();
  t = await startServer();
  const token = await adminToken(t.url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'fay', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
  for (const clientId of ['shop', 'blog']) {
    ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, {
      clientId,
      publicClient: true,
      redirectUris: [app.url(`/${clientId}/cb`)],
      frontchannelLogout: true,
      attributes: { 'frontchannel.logout.url': app.url(`/${clientId}/logout`), 'post.logout.redirect.uris': app.url('/bye') },
    }));
  }
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await app.stop();
});

describe('front-channel logout in a browser', () => {
  it('frames both clients with sid and iss, then follows the post-logout redirect', async () => {
    const page = await browser.newPage();
    const tokens: Record<string, Record<string, string>> = {};
    for (const clientId of ['shop', 'blog']) {
      const { verifier, challenge } = pkce();
      const redirect = app.url(`/${clientId}/cb`);
      const query = new URLSearchParams({ client_id: clientId, redirect_uri: redirect, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
      await page.goto(`${t.url}/realms/${REALM}/protocol/openid-connect/auth?${query}`);
      if (clientId === 'shop') {
        await page.fill('#username', 'fay');
        await page.fill('#password', PASSWORD);
        await page.click('button[type=submit]');
      }
      await page.waitForURL((url) => url.pathname === `/${clientId}/cb`);
      const code = new URL(page.url()).searchParams.get('code')!;
      const answer = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: redirect, code_verifier: verifier });
      expect(answer.status).toBe(200);
      tokens[clientId] = answer.body as Record<string, string>;
    }
    const sid = JSON.parse(Buffer.from(tokens.shop.id_token.split('.')[1], 'base64url').toString()).sid as string;
    app.received.length = 0;
    const logout = new URLSearchParams({ id_token_hint: tokens.shop.id_token, post_logout_redirect_uri: app.url('/bye'), state: 'done' });
    await page.goto(`${t.url}/realms/${REALM}/protocol/openid-connect/logout?${logout}`);
    await page.waitForURL((url) => url.pathname === '/bye');
    expect(new URL(page.url()).searchParams.get('state')).toBe('done');
    await eventually(() => app.received.filter((r) => r.path.endsWith('/logout')).length === 2);
    const frames = app.received.filter((r) => r.path.endsWith('/logout'));
    for (const frame of frames) {
      expect(frame.method).toBe('GET');
      expect(frame.query.get('sid')).toBe(sid);
      expect(frame.query.get('iss')).toBe(`${t.url}/realms/${REALM}`);
    }
    expect(frames.map((f) => f.path).sort()).toEqual(['/blog/logout', '/shop/logout']);
    // Both frames had loaded before the page went on.
    const order = app.received.map((r) => r.path);
    expect(order.indexOf('/bye')).toBeGreaterThan(Math.max(order.indexOf('/shop/logout'), order.indexOf('/blog/logout')));
    await page.close();
  });
});
