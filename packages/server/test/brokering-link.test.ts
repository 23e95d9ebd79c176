import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstForm, pkce } from './support/forms.js';
import { BrokerBrowser as Browser } from './support/broker-browser.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 37 item 4: client-initiated account linking (`/realms/{r}/broker/{alias}/link`), a signed-in user of `down`
 * linking an account of the upstream realm `up` (same server, loopback), and the account API's deprecated link URI.
 * Each browser is two cookie jars (one per realm: the test client ignores cookie paths).
 */

const APP_REDIRECT = 'http://app.test/callback';
const SECRET = 'upstream-client-secret';

const linkHash = (nonce: string, sessionId: string, clientId: string, alias: string) => createHash('sha256').update(nonce + sessionId + clientId + alias).digest('base64url');

describe('client-initiated account linking', () => {
  let t: TestServer;
  let token: string;
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);
  const downUser = async (username: string) => ((await admin('GET', `/down/users?username=${username}&exact=true`)).body as { id: string }[])[0];
  const linksOf = async (userId: string) => (await admin('GET', `/down/users/${userId}/federated-identity`)).body as { identityProvider: string; userName: string }[];
  const sessionsOf = async (userId: string) => ((await admin('GET', `/down/users/${userId}/sessions`)).body as { id: string }[]).map((s) => s.id);

  /** Signs a local user of `down` in to a client (or passes through the SSO session): the authorization code. */
  async function signIn(browser: Browser, user: { username: string; password: string } | null, clientId = 'app', redirectUri = APP_REDIRECT, challenge = pkce().challenge) {
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
    let answer = await browser.get(`/realms/down/protocol/openid-connect/auth?${query}`);
    if (user) {
      expect(answer.status).toBe(200);
      const form = firstForm(answer.text);
      answer = await browser.post(form.action, { ...form.hidden, username: user.username, password: user.password });
    }
    expect(answer.status).toBe(302);
    const code = new URL(answer.location!).searchParams.get('code');
    expect(code).toBeTruthy();
    return code!;
  }

  const linkUrl = (params: Record<string, string>) => `/realms/down/broker/up/link?${new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, ...params })}`;

  /** The upstream's login (unless signed in there already), then back: the broker callback URL. */
  async function throughUpstream(browser: Browser, upstreamUrl: string, login: { username: string; password: string } | null) {
    expect(new URL(upstreamUrl).pathname).toBe('/realms/up/protocol/openid-connect/auth');
    let answer = await browser.get(upstreamUrl);
    if (login) {
      expect(answer.status).toBe(200);
      const form = firstForm(answer.text);
      answer = await browser.post(form.action, { ...form.hidden, ...login });
    }
    expect(answer.status).toBe(302);
    expect(answer.location).toContain('/realms/down/broker/up/endpoint?');
    return answer.location!;
  }

  /** A signed-in browser of `down` for this user, and its SSO session id. */
  async function signedIn(username: string, password: string, clientId = 'app') {
    const browser = new Browser(t.url);
    const user = await downUser(username);
    const before = new Set(await sessionsOf(user.id));
    const { verifier, challenge } = pkce();
    const code = await signIn(browser, { username, password }, clientId, APP_REDIRECT, challenge);
    // The application's tokens (its client session: what the link's hash is checked against).
    expect((await tokenRequest(t.url, 'down', { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: APP_REDIRECT, code_verifier: verifier })).status).toBe(200);
    const sessionId = (await sessionsOf(user.id)).find((id) => !before.has(id))!;
    expect(sessionId).toBeTruthy();
    return { browser, user, sessionId };
  }

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    const upUser = (username: string) => ({ username, enabled: true, email: `${username}@up.example.com`, emailVerified: true, firstName: 'Up', lastName: username, credentials: [{ type: 'password', value: 'Up-pass-123', temporary: false }] });
    expect(
      (
        await api(t.url, 'POST', '/admin/realms', token, {
          realm: 'up',
          enabled: true,
          clients: [{ clientId: 'broker-client', enabled: true, publicClient: false, secret: SECRET, redirectUris: [`${t.url}/realms/down/broker/up/endpoint`], standardFlowEnabled: true }],
          users: [upUser('upalice'), upUser('upcarol'), upUser('updave'), upUser('upeve')],
        })
      ).status,
    ).toBe(201);
    const base = `${t.url}/realms/up/protocol/openid-connect`;
    const localUser = (username: string) => ({ username, enabled: true, email: `${username}@example.com`, emailVerified: true, firstName: username, lastName: 'Local', credentials: [{ type: 'password', value: `${username}-Pass-123`, temporary: false }] });
    expect(
      (
        await api(t.url, 'POST', '/admin/realms', token, {
          realm: 'down',
          enabled: true,
          eventsEnabled: true,
          clients: [
            { clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true },
            // Its tokens carry no account roles: it may not start a link.
            { clientId: 'narrow', enabled: true, publicClient: true, fullScopeAllowed: false, redirectUris: [APP_REDIRECT], standardFlowEnabled: true },
          ],
          users: [localUser('alice'), localUser('bob'), localUser('carol'), localUser('dave'), localUser('eve'), localUser('frank')],
          identityProviders: [
            {
              alias: 'up',
              displayName: 'Upstream realm',
              providerId: 'keycloak-oidc',
              enabled: true,
              config: { clientId: 'broker-client', clientSecret: SECRET, authorizationUrl: `${base}/auth`, tokenUrl: `${base}/token`, userInfoUrl: `${base}/userinfo`, jwksUrl: `${base}/certs`, issuer: `${t.url}/realms/up`, validateSignature: 'true', useJwksUrl: 'true', pkceEnabled: 'true', pkceMethod: 'S256', clientAuthMethod: 'client_secret_post' },
            },
            { alias: 'off', providerId: 'oidc', enabled: false, config: { clientId: 'broker-client', clientSecret: SECRET, authorizationUrl: `${base}/auth`, tokenUrl: `${base}/token` } },
          ],
        })
      ).status,
    ).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('links an upstream account to the signed-in user; signing in through the upstream later is that user', async () => {
    const { browser, user, sessionId } = await signedIn('alice', 'alice-Pass-123');
    const nonce = randomUUID();
    const toUpstream = await browser.get(linkUrl({ nonce, hash: linkHash(nonce, sessionId, 'app', 'up') }));
    expect(toUpstream.status).toBe(302);
    expect(toUpstream.location).not.toContain('link_error');
    const callback = await throughUpstream(browser, toUpstream.location!, { username: 'upalice', password: 'Up-pass-123' });
    const back = await browser.get(callback);
    expect(back.status).toBe(302);
    expect(back.location).toBe(APP_REDIRECT);
    expect(await linksOf(user.id)).toMatchObject([{ identityProvider: 'up', userName: 'upalice' }]);
    const events = async (type: string) => (await admin('GET', `/down/events?type=${type}&max=100`)).body as { userId?: string; details?: Record<string, string> }[];
    const linked = await eventually(async () => (await events('FEDERATED_IDENTITY_LINK')).find((e) => e.userId === user.id));
    expect(linked.details).toMatchObject({ identity_provider: 'up', identity_provider_identity: 'upalice' });
    // No new local user was made.
    expect(await downUser('upalice')).toBeUndefined();

    // Later, a fresh browser signed in upstream as upalice signs in to `down` through `up` as alice.
    const later = new Browser(t.url);
    for (const [name, value] of browser.up.cookies) later.up.cookies.set(name, value);
    const page = await later.get(`/realms/down/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', kc_idp_hint: 'up' })}`);
    const loginPage = page.status === 302 ? page : null;
    const login = loginPage ?? (await later.get((/href="([^"]*\/broker\/up\/login[^"]*)"/.exec(page.text)![1]).replace(/&amp;/g, '&')));
    const start = login.location!.includes('/broker/up/login') ? await later.get(login.location!) : login;
    const signedInAgain = await later.get(await throughUpstream(later, start.location!, null));
    expect(signedInAgain.status).toBe(302);
    expect(signedInAgain.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const viaUpstream = await eventually(async () => (await events('IDENTITY_PROVIDER_LOGIN')).find((e) => e.details?.identity_provider === 'up'));
    expect(viaUpstream.userId).toBe(user.id);
  });

  it('refuses a wrong hash, a browser without an SSO session, and the hash of another session', async () => {
    const { browser, user, sessionId } = await signedIn('bob', 'bob-Pass-123');
    const nonce = randomUUID();
    const refused = (answer: { status: number; location: string | null }, error: string) => {
      expect(answer.status).toBe(302);
      const url = new URL(answer.location!);
      expect(`${url.origin}${url.pathname}`).toBe(APP_REDIRECT);
      expect(url.searchParams.get('link_error')).toBe(error);
      expect(url.searchParams.get('nonce')).toBe(nonce);
    };
    refused(await browser.get(linkUrl({ nonce, hash: linkHash(nonce, sessionId, 'app', 'other') })), 'invalid_token');
    refused(await browser.get(linkUrl({ nonce, hash: linkHash(`${nonce}x`, sessionId, 'app', 'up') })), 'invalid_token');
    // The right hash in a browser without the session.
    refused(await new Browser(t.url).get(linkUrl({ nonce, hash: linkHash(nonce, sessionId, 'app', 'up') })), 'not_logged_in');
    // The hash of bob's other session (another browser) in this one.
    const other = await signedIn('bob', 'bob-Pass-123');
    expect(other.sessionId).not.toBe(sessionId);
    refused(await browser.get(linkUrl({ nonce, hash: linkHash(nonce, other.sessionId, 'app', 'up') })), 'invalid_token');
    expect(await linksOf(user.id)).toEqual([]);
  });

  it('refuses a client whose scope lacks the account client’s manage-account(-links)', async () => {
    const { browser, user, sessionId } = await signedIn('bob', 'bob-Pass-123', 'narrow');
    const nonce = randomUUID();
    const answer = await browser.get(linkUrl({ client_id: 'narrow', nonce, hash: linkHash(nonce, sessionId, 'narrow', 'up') }));
    expect(answer.status).toBe(302);
    expect(new URL(answer.location!).searchParams.get('link_error')).toBe('not_allowed');
    expect(await linksOf(user.id)).toEqual([]);
  });

  it('refuses a redirect URI the client does not allow, and an unknown client, with a page', async () => {
    const { browser, sessionId } = await signedIn('bob', 'bob-Pass-123');
    const nonce = randomUUID();
    const hash = linkHash(nonce, sessionId, 'app', 'up');
    const badRedirect = await browser.get(linkUrl({ nonce, hash, redirect_uri: 'http://evil.test/steal' }));
    expect(badRedirect.status).toBe(400);
    expect(badRedirect.location).toBeNull();
    const badClient = await browser.get(linkUrl({ nonce, hash, client_id: 'nope' }));
    expect(badClient.status).toBe(400);
    expect(badClient.location).toBeNull();
    const noNonce = await browser.get(linkUrl({ hash }));
    expect(noNonce.status).toBe(400);
  });

  it('an upstream account linked to another user is not linked (the attacker case)', async () => {
    const alice = await downUser('alice');
    const before = await linksOf(alice.id);
    expect(before).toMatchObject([{ identityProvider: 'up', userName: 'upalice' }]);
    const { browser, user: bob, sessionId } = await signedIn('bob', 'bob-Pass-123');
    const nonce = randomUUID();
    const toUpstream = await browser.get(linkUrl({ nonce, hash: linkHash(nonce, sessionId, 'app', 'up') }));
    expect(toUpstream.status).toBe(302);
    const answer = await browser.get(await throughUpstream(browser, toUpstream.location!, { username: 'upalice', password: 'Up-pass-123' }));
    expect(answer.status).toBe(400);
    expect(answer.location).toBeNull();
    expect(answer.text).toContain('already linked to another user');
    expect(await linksOf(bob.id)).toEqual([]);
    expect(await linksOf(alice.id)).toEqual(before);
  });

  it('a callback of a link is refused in another browser (the state is bound to the SSO session)', async () => {
    const { browser, sessionId } = await signedIn('bob', 'bob-Pass-123');
    const nonce = randomUUID();
    const toUpstream = await browser.get(linkUrl({ nonce, hash: linkHash(nonce, sessionId, 'app', 'up') }));
    const callback = await throughUpstream(browser, toUpstream.location!, { username: 'upcarol', password: 'Up-pass-123' });
    const victim = await signedIn('carol', 'carol-Pass-123');
    const answer = await victim.browser.get(callback);
    expect(answer.status).toBe(400);
    expect(await linksOf(victim.user.id)).toEqual([]);
  });

  describe('kc_action=idp_link:{alias} (Keycloak 26’s application-initiated linking)', () => {
    /** The application asks a signed-in browser for the action: where the authorization endpoint sends it, followed. */
    async function askAction(browser: Browser, action: string, clientId = 'app') {
      const query = new URLSearchParams({ client_id: clientId, redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 'aia', code_challenge: pkce().challenge, code_challenge_method: 'S256', kc_action: action });
      const start = await browser.get(`/realms/down/protocol/openid-connect/auth?${query}`);
      expect(start.status).toBe(302);
      return start.location!.startsWith('/realms/down/login-actions/required-action') ? browser.get(start.location!) : start;
    }
    const statusOf = (answer: { status: number; location: string | null }) => {
      expect(answer.status).toBe(302);
      const url = new URL(answer.location!);
      expect(`${url.origin}${url.pathname}`).toBe(APP_REDIRECT);
      expect(url.searchParams.get('code')).toBeTruthy();
      return { status: url.searchParams.get('kc_action_status'), action: url.searchParams.get('kc_action') };
    };
    const linkErrors = async (userId: string) =>
      ((await admin('GET', '/down/events?type=FEDERATED_IDENTITY_LINK_ERROR&max=100')).body as { userId?: string; error?: string }[]).filter((e) => e.userId === userId).map((e) => e.error);

    it('is registered as Keycloak registers it (Linking Identity Provider, priority 120, enabled)', async () => {
      expect((await admin('GET', '/down/authentication/required-actions/idp_link')).body).toMatchObject({ alias: 'idp_link', name: 'Linking Identity Provider', providerId: 'idp_link', enabled: true, defaultAction: false, priority: 120 });
    });

    it('the user confirms, signs in upstream, and the account is linked; the application gets kc_action_status=success', async () => {
      const { browser, user } = await signedIn('dave', 'dave-Pass-123');
      const page = await askAction(browser, 'idp_link:up');
      expect(page.status).toBe(200);
      expect(page.text).toContain('kc-link-idp-form');
      expect(page.text).toContain('Upstream realm');
      const form = firstForm(page.text);
      const toUpstream = await browser.post(form.action, { ...form.hidden, link: 'true' });
      expect(toUpstream.status).toBe(302);
      const callback = await throughUpstream(browser, toUpstream.location!, { username: 'updave', password: 'Up-pass-123' });
      // The callback in another signed-in browser is not this auth session's: refused, nothing linked there.
      const other = await signedIn('frank', 'frank-Pass-123');
      expect((await other.browser.get(callback)).status).toBe(400);
      expect(await linksOf(other.user.id)).toEqual([]);
      // That attempt spent the state; a fresh one from the same page key is not possible either (the key's action went on).
      expect((await browser.get(callback)).status).toBe(400);
      const again = await askAction(browser, 'idp_link:up');
      const form2 = firstForm(again.text);
      const toUpstream2 = await browser.post(form2.action, { ...form2.hidden, link: 'true' });
      const back = await browser.get(await throughUpstream(browser, toUpstream2.location!, null));
      expect(statusOf(back)).toEqual({ status: 'success', action: 'idp_link' });
      expect(await linksOf(user.id)).toMatchObject([{ identityProvider: 'up', userName: 'updave' }]);
      // Signing in through the upstream is now dave.
      const login = await eventually(async () => ((await admin('GET', '/down/events?type=FEDERATED_IDENTITY_LINK&max=100')).body as { userId?: string; details?: Record<string, string> }[]).find((e) => e.userId === user.id));
      expect(login.details).toMatchObject({ identity_provider: 'up', identity_provider_identity: 'updave' });
    });

    it('"No" ends the action as cancelled, nothing linked', async () => {
      const { browser, user } = await signedIn('eve', 'eve-Pass-123');
      const page = await askAction(browser, 'idp_link:up');
      const form = firstForm(page.text);
      expect(statusOf(await browser.post(form.action, { ...form.hidden, 'cancel-aia': 'true' }))).toEqual({ status: 'cancelled', action: 'idp_link' });
      expect(await linksOf(user.id)).toEqual([]);
    });

    it('a client whose scope lacks manage-account(-links), a disabled, unknown or missing provider: no page, kc_action_status=error', async () => {
      const narrow = await signedIn('eve', 'eve-Pass-123', 'narrow');
      expect(statusOf(await askAction(narrow.browser, 'idp_link:up', 'narrow')).status).toBe('error');
      const { browser, user } = await signedIn('eve', 'eve-Pass-123');
      for (const action of ['idp_link:off', 'idp_link:nope', 'idp_link']) expect(statusOf(await askAction(browser, action)).status, action).toBe('error');
      expect(await linksOf(user.id)).toEqual([]);
      const errors = await eventually(async () => ((await linkErrors(user.id)).length >= 4 ? linkErrors(user.id) : undefined));
      expect(errors).toEqual(expect.arrayContaining(['not_allowed', 'identity_provider_not_found']));
    });

    it('an upstream account linked to another user is not linked through it: an error page, nothing linked', async () => {
      const { browser, user } = await signedIn('eve', 'eve-Pass-123');
      const page = await askAction(browser, 'idp_link:up');
      const form = firstForm(page.text);
      const toUpstream = await browser.post(form.action, { ...form.hidden, link: 'true' });
      const answer = await browser.get(await throughUpstream(browser, toUpstream.location!, { username: 'updave', password: 'Up-pass-123' }));
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
      expect(answer.text).toContain('already linked to another user');
      expect(await linksOf(user.id)).toEqual([]);
      expect((await linksOf((await downUser('dave')).id)).map((l) => l.userName)).toEqual(['updave']);
    });
  });

  it('the account API’s deprecated link URI links the account end to end', async () => {
    const { browser, user } = await signedIn('carol', 'carol-Pass-123');
    const consoleRedirect = `${t.url}/realms/down/account/`;
    const { verifier, challenge } = pkce();
    const code = await signIn(browser, null, 'account-console', consoleRedirect, challenge);
    const tokens = await tokenRequest(t.url, 'down', { grant_type: 'authorization_code', client_id: 'account-console', code, redirect_uri: consoleRedirect, code_verifier: verifier });
    expect(tokens.status).toBe(200);
    const accessToken = tokens.body.access_token as string;
    const missing = await api(t.url, 'GET', '/realms/down/account/linked-accounts/up', accessToken);
    expect(missing.status).toBe(400);
    const unknown = await api(t.url, 'GET', `/realms/down/account/linked-accounts/nope?redirectUri=${encodeURIComponent(consoleRedirect)}`, accessToken);
    expect(unknown.status).toBe(400);
    const answer = await api(t.url, 'GET', `/realms/down/account/linked-accounts/up?redirectUri=${encodeURIComponent(consoleRedirect)}`, accessToken);
    expect(answer.status).toBe(200);
    const { accountLinkUri, nonce, hash } = answer.body as { accountLinkUri: string; nonce: string; hash: string };
    const link = new URL(accountLinkUri);
    expect(link.pathname).toBe('/realms/down/broker/up/link');
    expect(link.searchParams.get('client_id')).toBe('account-console');
    expect(link.searchParams.get('nonce')).toBe(nonce);
    expect(link.searchParams.get('hash')).toBe(hash);
    const toUpstream = await browser.get(accountLinkUri);
    expect(toUpstream.status).toBe(302);
    const back = await browser.get(await throughUpstream(browser, toUpstream.location!, { username: 'upcarol', password: 'Up-pass-123' }));
    expect(back.status).toBe(302);
    expect(back.location).toBe(consoleRedirect);
    expect(await linksOf(user.id)).toMatchObject([{ identityProvider: 'up', userName: 'upcarol' }]);
    // Without a token: 401.
    expect((await api(t.url, 'GET', `/realms/down/account/linked-accounts/up?redirectUri=${encodeURIComponent(consoleRedirect)}`, null)).status).toBe(401);
  });
});
