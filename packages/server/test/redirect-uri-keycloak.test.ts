import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOpenRedirectPattern, postLogoutRedirectAllowed, redirectUriAllowed } from '../src/model/redirect-uri.js';
import type { Client } from '../src/model/types.js';
import { FormClient, firstForm, pkce } from './support/forms.js';
import { httpDatabases, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Keycloak 26's redirect-URI rule (RedirectUtils.verifyRedirectUri / matchesRedirects, with the 26.4+ reading of
 * `host*` as `host/*`) as src/model/redirect-uri.ts implements it: what Keycloak takes is taken, and nothing more.
 * The patterns are those of the public realm files in fixtures/keycloak-exports (`http://127.0.0.1:*`, `http://127.0.0.1*`,
 * `*`, `dev.localhost.ionic:*`, `oc://…`), each with what a prefix match would let through.
 */

const BASE = 'http://127.0.0.1:9000';
const client = (redirectUris: string[], extra: Partial<Client> = {}) => ({ redirectUris, rootUrl: null, attributes: {}, ...extra }) as unknown as Client;
const allowed = (patterns: string[], candidate: string) => redirectUriAllowed(client(patterns), candidate, BASE);

/** [registered, candidate, taken] */
const TABLE: [string, string, boolean][] = [
  // Any port of a loopback host (ocis, sesame, jhipster).
  ['http://127.0.0.1:*', 'http://127.0.0.1:5555/', true],
  ['http://127.0.0.1:*', 'http://127.0.0.1:5555', true],
  ['http://127.0.0.1:*', 'http://127.0.0.1:5555/callback?x=1', true],
  ['http://127.0.0.1:*', 'http://127.0.0.1/', false], // a port must be written
  ['http://127.0.0.1:*', 'https://127.0.0.1:5555/', false],
  ['http://127.0.0.1:*', 'http://localhost:5555/', false],
  ['http://localhost:*', 'http://localhost:8080/app', true],
  ['https://localhost:*', 'https://localhost:8443/', true],
  ['http://[::1]:*', 'http://[::1]:8080/', true],
  // `host*` is `host/*` (Keycloak 26.4+), with RFC 8252's any loopback port (keycloakify).
  ['http://127.0.0.1*', 'http://127.0.0.1:5555/', true],
  ['http://127.0.0.1*', 'http://127.0.0.1/any/path', true],
  ['http://localhost*', 'http://localhost:3000/', true],
  ['http://portal.example.org*', 'http://portal.example.org/home', true],
  ['http://portal.example.org*', 'http://portal.example.org:8080/home', false], // not a loopback host: its port only
  // `*` alone: any http(s) URI.
  ['*', 'http://127.0.0.1:5555/callback', true],
  ['*', 'https://app.example/deep/link?q=1', true],
  // A path wildcard, compared without the query.
  ['http://evil.example/*', 'http://evil.example/x?y', true],
  ['http://localhost:8000/*', 'http://localhost:8000/callback', true],
  // Exact ones, with the loopback any-port rule.
  ['http://127.0.0.1/cb', 'http://127.0.0.1:53412/cb', true],
  ['http://localhost/cb', 'http://localhost:1/cb', true],
  ['http://[::1]/cb', 'http://[::1]:8080/cb', true],
  ['http://127.0.0.1/cb', 'http://127.0.0.1:53412/cb2', false],
  ['https://localhost/cb', 'https://localhost:8443/cb', false], // http only
  ['http://app.example/cb', 'http://app.example:8080/cb', false], // loopback only
  // Custom schemes (native apps).
  ['oc://android.owncloud.com', 'oc://android.owncloud.com', true],
  ['oc://android.owncloud.com', 'oc://android.owncloud.com.evil', false],
  ['dev.localhost.ionic:*', 'dev.localhost.ionic:/callback', true],
  ['dev.localhost.ionic:*', 'other.scheme:/callback', false],
  ['com.client.app.android://login-callback', 'com.client.app.android://login-callback', true],
  // A `*` in the middle is a character, as in Keycloak (2ZMeal's pattern takes no real URI).
  ['http://localhost:*/login/oauth2/code/*', 'http://localhost:8080/login/oauth2/code/keycloak', false],
  ['http://localhost:*/login/oauth2/code/*', 'http://localhost/login/oauth2/code/keycloak', false],
];

/** What a prefix match would let through, each refused. [registered, hostile candidate] */
const HOSTILE: [string, string][] = [
  ['http://evil.example/*', 'http://good.example/'],
  ['http://good.example/*', 'http://good.example.evil.example/'],
  ['http://good.example/*', 'http://good.example@evil.example/'],
  ['http://good.example/*', 'http://good.example:80@evil.example/'],
  ['http://good.example/app/*', 'http://good.example/app/../admin'],
  ['http://good.example/app/*', 'http://good.example/app/%2e%2e/admin'],
  ['http://good.example/app/*', 'http://good.example/app/%2E%2E%2fadmin/../../x'],
  ['http://good.example/app/*', 'http://good.example/app/..\\admin'],
  ['http://good.example/app/*', 'http://good.example/application'],
  ['http://127.0.0.1:*', 'http://127.0.0.1.evil.example/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1.evil.example:8080/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:8080@evil.example/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:8080%40evil.example/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:8080.evil.example/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:@evil.example/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1%2eevil.example:8080/'],
  ['http://127.0.0.1:*', 'http://user:pass@127.0.0.1:8080/'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:8080/#code=forged'],
  ['http://127.0.0.1:*', 'http://127.0.0.1:99999/'],
  ['http://127.0.0.1*', 'http://127.0.0.1.evil.example/'],
  ['http://127.0.0.1*', 'http://127.0.0.10/'],
  ['http://127.0.0.1*', 'http://127.0.0.1@evil.example/'],
  ['http://localhost*', 'http://localhost.evil.example/'],
  ['http://localhost*', 'http://localhostevil.example/'],
  ['http://portal.example.org*', 'http://portal.example.org.evil.example/'],
  ['http://portal.example.org*', 'http://portal.example.organ/'],
  ['http://localhost:*/login/oauth2/code/*', 'http://localhost:*/login/oauth2/code/x'],
  ['*', 'javascript:alert(1)'],
  ['*', 'data:text/html,<script>alert(1)</script>'],
  ['*', 'vbscript:msgbox(1)'],
  ['*', 'file:///etc/passwd'],
  ['*', 'oc://android.owncloud.com'],
  ['*', 'http://user@app.example/'],
  ['*', 'https://app.example/#access_token=forged'],
  ['*', '/relative/path'],
  ['*', '//evil.example/'],
  ['*', 'not a uri'],
  ['dev.localhost.ionic:*', 'javascript:alert(1)'],
  ['http://127.0.0.1/cb', 'http://127.0.0.1:8080/cb/../admin'],
  ['http://127.0.0.1/cb', 'http://127.0.0.1:8080@evil.example/cb'],
];

describe("Keycloak 26's redirect-URI rule", () => {
  it.each(TABLE)('%s with %s: %s', (registered, candidate, taken) => {
    expect(allowed([registered], candidate)).toBe(taken);
  });

  it.each(HOSTILE)('%s refuses %s', (registered, candidate) => {
    expect(allowed([registered], candidate)).toBe(false);
  });

  it('relative registrations resolve against the root URL, else the server, as before', () => {
    expect(redirectUriAllowed(client(['/*'], { rootUrl: '' }), `${BASE}/app`, BASE)).toBe(true);
    expect(redirectUriAllowed(client(['/*'], { rootUrl: '' }), 'http://127.0.0.1:9001/app', BASE)).toBe(false);
    expect(redirectUriAllowed(client(['/cb/*'], { rootUrl: 'https://app.example' }), 'https://app.example/cb/x', BASE)).toBe(true);
    expect(redirectUriAllowed(client(['/cb/*'], { rootUrl: 'https://app.example' }), 'https://app.example.evil/cb/x', BASE)).toBe(false);
  });

  it('post-logout: `*` takes any http(s) URI, `+` the redirect URIs, `-` nothing', () => {
    const withPostLogout = (value: string, redirectUris: string[] = ['http://127.0.0.1:*']) => client(redirectUris, { attributes: { 'post.logout.redirect.uris': value } });
    expect(postLogoutRedirectAllowed(withPostLogout('*'), 'https://app.example/bye', BASE)).toBe(true);
    expect(postLogoutRedirectAllowed(withPostLogout('*'), 'javascript:alert(1)', BASE)).toBe(false);
    expect(postLogoutRedirectAllowed(withPostLogout('+'), 'http://127.0.0.1:4000/bye', BASE)).toBe(true);
    expect(postLogoutRedirectAllowed(withPostLogout('+'), 'http://127.0.0.1.evil.example/bye', BASE)).toBe(false);
    expect(postLogoutRedirectAllowed(withPostLogout('-'), 'http://127.0.0.1:4000/bye', BASE)).toBe(false);
  });

  it('names the patterns any site matches', () => {
    expect(['*', 'http://*', 'https://*', 'HTTPS://*'].every(isOpenRedirectPattern)).toBe(true);
    expect(['http://127.0.0.1:*', 'http://127.0.0.1*', '/*', 'https://*.example.com/*', '+', 'dev.localhost.ionic:*'].some(isOpenRedirectPattern)).toBe(false);
  });
});

describe.each(httpDatabases)('redirect URIs through the admin API and the authorization endpoint (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  const REALM = 'redirects';
  const warnings = () => t.logs.filter((l) => l.level === 40 && typeof l.msg === 'string' && l.msg.includes('accepts any redirect URI'));

  beforeAll(async () => {
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: REALM, enabled: true });
    kc.setConfig({ realmName: REALM });
    await kc.users.create({ username: 'nat', enabled: true, credentials: [{ type: 'password', value: 'Native-pass-1', temporary: false }] });
    await kc.clients.create({ clientId: 'native', publicClient: true, redirectUris: ['http://127.0.0.1:*', 'http://localhost*'] });
    await kc.clients.create({ clientId: 'desktop', publicClient: true, redirectUris: ['http://127.0.0.1/callback'] });
  });
  afterAll(async () => {
    await t?.close();
  });

  const authorize = (clientId: string, redirectUri: string, client = new FormClient(t.url), challenge = pkce().challenge) =>
    client.get(`/realms/${REALM}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 's1', code_challenge: challenge, code_challenge_method: 'S256' })}`);

  it('stores the patterns Keycloak stores, as given', async () => {
    const [native] = await kc.clients.find({ clientId: 'native' });
    expect(native.redirectUris).toEqual(['http://127.0.0.1:*', 'http://localhost*']);
  });

  it('a native app on a loopback port of its choosing signs in: the code comes back to that port and is redeemed there', async () => {
    for (const [clientId, redirectUri] of [
      ['native', 'http://127.0.0.1:53682/'],
      ['native', 'http://localhost:4321/callback'],
      ['desktop', 'http://127.0.0.1:61234/callback'],
    ]) {
      const browser = new FormClient(t.url);
      const { verifier, challenge } = pkce();
      const page = await authorize(clientId, redirectUri, browser, challenge);
      expect(page.status, `${clientId} ${redirectUri}`).toBe(200);
      const form = firstForm(page.text);
      const signedIn = await browser.post(form.action, { ...form.hidden, username: 'nat', password: 'Native-pass-1' });
      expect(signedIn.status).toBe(302);
      const location = new URL(signedIn.location!);
      expect(`${location.origin}${location.pathname}`).toBe(new URL(redirectUri).href);
      const tokens = await tokenRequest(t.url, REALM, { grant_type: 'authorization_code', client_id: clientId, code: location.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier });
      expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
      expect(decodeJwt(tokens.body.id_token as string).preferred_username).toBe('nat');
    }
  });

  it('refuses with an error page, never a redirect, what the patterns must not take', async () => {
    for (const [clientId, redirectUri] of [
      ['native', 'http://127.0.0.1.evil.example:8080/'],
      ['native', 'http://127.0.0.1:8080@evil.example/'],
      ['native', 'http://localhost.evil.example/'],
      ['native', 'http://127.0.0.1/'],
      ['native', 'https://127.0.0.1:8443/'],
      ['native', 'http://127.0.0.1:8080/#code=forged'],
      ['desktop', 'http://127.0.0.1:61234/callback/../other'],
      ['desktop', 'http://127.0.0.1:61234/other'],
    ]) {
      const response = await authorize(clientId, redirectUri);
      expect({ redirectUri, status: response.status, location: response.location }).toEqual({ redirectUri, status: 400, location: null });
      expect(response.text).toContain('Invalid parameter: redirect_uri');
    }
  });

  it('`*` alone is taken through the admin API, with a warning naming the client; it then takes any http(s) URI', async () => {
    const before = warnings().length;
    const { id } = await kc.clients.create({ clientId: 'anything-goes', publicClient: true, redirectUris: ['*'] });
    expect(warnings().slice(before)).toEqual([expect.objectContaining({ realm: REALM, clientId: 'anything-goes', patterns: ['redirectUris: *'] })]);
    expect((await kc.clients.findOne({ id }))?.redirectUris).toEqual(['*']);
    expect((await authorize('anything-goes', 'https://app.example/callback')).status).toBe(200);
    expect((await authorize('anything-goes', 'javascript:alert(1)')).status).toBe(400);
    expect((await authorize('anything-goes', 'http://user@app.example/')).status).toBe(400);
  });

  it('an update warns when it gives `*` (redirect URIs or post-logout), not when the client keeps it', async () => {
    const [anything] = await kc.clients.find({ clientId: 'anything-goes' });
    const before = warnings().length;
    await kc.clients.update({ id: anything.id! }, { ...anything, description: 'still open' });
    expect(warnings().length).toBe(before);
    const [native] = await kc.clients.find({ clientId: 'native' });
    await kc.clients.update({ id: native.id! }, { ...native, attributes: { ...native.attributes, 'post.logout.redirect.uris': '*' } });
    expect(warnings().slice(before)).toEqual([expect.objectContaining({ clientId: 'native', patterns: ['attributes.post.logout.redirect.uris: *'] })]);
    // No warning for what only reaches the client's own hosts.
    await kc.clients.create({ clientId: 'own-hosts', publicClient: true, redirectUris: ['http://127.0.0.1:*', 'https://app.example/*', 'dev.localhost.ionic:*'] });
    expect(warnings().filter((w) => w.clientId === 'own-hosts')).toEqual([]);
  });

  it('a realm file given through the admin API (POST /admin/realms, partialImport) warns for its open clients too', async () => {
    const before = warnings().length;
    kc.setConfig({ realmName: 'master' });
    try {
      await kc.realms.create({ realm: 'open-file', enabled: true, clients: [{ clientId: 'wide', publicClient: true, redirectUris: ['*'] }] } as never);
      await kc.realms.partialImport({ realm: REALM, rep: { ifResourceExists: 'SKIP', clients: [{ clientId: 'wide-too', publicClient: true, redirectUris: ['*'] }] } as never });
    } finally {
      kc.setConfig({ realmName: REALM });
    }
    expect(warnings().slice(before).map((w) => [w.realm, w.clientId, w.source])).toEqual([
      ['open-file', 'wide', 'admin API realm import'],
      [REALM, 'wide-too', 'admin API partial import'],
    ]);
  });
});
