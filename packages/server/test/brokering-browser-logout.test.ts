import { decodeJwt } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { firstForm, pkce } from './support/forms.js';
import { APP_REDIRECT, BrokerBrowser as Browser, signInThroughUp } from './support/broker-browser.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 37: logging the upstream out through the browser (Keycloak's OIDCIdentityProvider.keycloakInitiatedBrowserLogout,
 * `backchannelSupported` off): the browser logout at `down` ends the brokered session here, then sends the browser to
 * the upstream's logout (a second realm, `up`, of the same server) with `state`, `id_token_hint` and
 * `post_logout_redirect_uri` = down's `/broker/up/endpoint/logout_response`, where the logout finishes (the
 * application's post-logout redirect).
 */

const APP_AFTER_LOGOUT = 'http://app.test/signed-out';
const SECRET = 'upstream-client-secret';

interface Provider {
  alias: string;
  config: Record<string, string>;
}

describe('logging the upstream out through the browser (backchannelSupported off)', () => {
  let t: TestServer;
  let token: string;
  let returnUrl: string;
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    returnUrl = `${t.url}/realms/down/broker/up/endpoint/logout_response`;
    ok(
      await admin('POST', '', {
        realm: 'up',
        enabled: true,
        clients: [
          {
            clientId: 'broker-client',
            enabled: true,
            publicClient: false,
            secret: SECRET,
            redirectUris: [`${t.url}/realms/down/broker/up/endpoint`],
            attributes: { 'post.logout.redirect.uris': returnUrl },
            standardFlowEnabled: true,
          },
        ],
        users: [{ username: 'upuser', enabled: true, email: 'upuser@example.com', emailVerified: true, firstName: 'Up', lastName: 'User', credentials: [{ type: 'password', value: 'Up-pass-123', temporary: false }] }],
      }),
    );
    const base = `${t.url}/realms/up/protocol/openid-connect`;
    ok(
      await admin('POST', '', {
        realm: 'down',
        enabled: true,
        eventsEnabled: true,
        clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], attributes: { 'post.logout.redirect.uris': APP_AFTER_LOGOUT }, standardFlowEnabled: true }],
        identityProviders: [
          {
            alias: 'up',
            displayName: 'Upstream realm',
            providerId: 'keycloak-oidc',
            enabled: true,
            config: {
              clientId: 'broker-client',
              clientSecret: SECRET,
              authorizationUrl: `${base}/auth`,
              tokenUrl: `${base}/token`,
              userInfoUrl: `${base}/userinfo`,
              jwksUrl: `${base}/certs`,
              logoutUrl: `${base}/logout`,
              issuer: `${t.url}/realms/up`,
              validateSignature: 'true',
              useJwksUrl: 'true',
              clientAuthMethod: 'client_secret_post',
              syncMode: 'IMPORT',
            },
          },
        ],
      }),
    );
  });
  afterAll(() => t?.close());
  // Each test starts with nobody signed in at up (a test that never reached up's logout leaves its session there).
  beforeEach(async () => {
    for (const session of await upSessions()) ok(await admin('DELETE', `/up/sessions/${session.id}`));
  });

  const upUserId = async () => ((await admin('GET', '/up/users?username=upuser&exact=true')).body as { id: string }[])[0].id;
  const upSessions = async () => (await admin('GET', `/up/users/${await upUserId()}/sessions`)).body as { id: string }[];
  const downUser = async () => ((await admin('GET', '/down/users?username=upuser&exact=true')).body as { id: string }[])[0];
  const downSessions = async () => (await admin('GET', `/down/users/${(await downUser()).id}/sessions`)).body as { id: string }[];
  const logoutErrors = async () => (await admin('GET', '/down/events?type=LOGOUT_ERROR&max=100')).body as { error?: string; details?: Record<string, string> }[];

  /** Changes the provider's config for one test, put back after it. */
  async function withConfig(change: Record<string, string | undefined>, run: () => Promise<void>) {
    const up = (await admin('GET', '/down/identity-provider/instances/up')).body as Provider;
    const config: Record<string, string> = { ...up.config, clientSecret: SECRET };
    for (const [key, value] of Object.entries(change)) {
      if (value === undefined) delete config[key];
      else config[key] = value;
    }
    ok(await admin('PUT', '/down/identity-provider/instances/up', { ...up, config }));
    try {
      await run();
    } finally {
      ok(await admin('PUT', '/down/identity-provider/instances/up', { ...up, config: { ...up.config, clientSecret: SECRET } }));
    }
  }

  const signIn = () => signInThroughUp(t.url);

  /** The app's RP-initiated logout at down in that browser. */
  const logoutAtDown = (browser: Browser, idToken: string) =>
    browser.get(`/realms/down/protocol/openid-connect/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: APP_AFTER_LOGOUT, state: 'bye' })}`);

  it("the browser logout at down ends the session here, goes to up's logout with state, id_token_hint and the return URL, and comes back to the app", async () => {
    const { browser, tokens } = await signIn();
    expect(await upSessions()).toHaveLength(1);
    expect(await downSessions()).toHaveLength(1);
    const toUpstream = await logoutAtDown(browser, tokens.id_token);
    expect(toUpstream.status).toBe(302);
    const location = new URL(toUpstream.location!);
    expect(`${location.origin}${location.pathname}`).toBe(`${t.url}/realms/up/protocol/openid-connect/logout`);
    expect(location.searchParams.get('post_logout_redirect_uri')).toBe(returnUrl);
    expect(location.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(location.searchParams.has('client_id')).toBe(false);
    // The hint is up's own ID token of that sign-in, not down's.
    const hint = decodeJwt(location.searchParams.get('id_token_hint')!);
    expect(hint.iss).toBe(`${t.url}/realms/up`);
    expect(hint.aud).toBe('broker-client');
    // The local session has already ended, and the SSO cookie is cleared: an upstream that never answers leaves nobody signed in here.
    expect(await downSessions()).toHaveLength(0);
    expect(toUpstream.setCookies).toContain('REALMGATE_SESSION');
    // up ends its session (the hint is its browser's session: no confirmation) and sends the browser back.
    const back = await browser.get(toUpstream.location!);
    expect(back.status, back.text.slice(0, 300)).toBe(302);
    expect(back.location!.startsWith(`${returnUrl}?`)).toBe(true);
    expect(new URL(back.location!).searchParams.get('state')).toBe(location.searchParams.get('state'));
    expect(await upSessions()).toHaveLength(0);
    const done = await browser.get(back.location!);
    expect(done.status).toBe(302);
    expect(done.location).toBe(`${APP_AFTER_LOGOUT}?state=bye`);
    // The state is spent: the same answer again finishes nothing (a 400 page and LOGOUT_ERROR).
    const before = (await logoutErrors()).length;
    const replay = await browser.get(back.location!);
    expect(replay.status).toBe(400);
    expect(replay.location).toBeNull();
    const errors = await logoutErrors();
    expect(errors).toHaveLength(before + 1);
    expect(errors[0]).toMatchObject({ error: 'user_session_not_found', details: { identity_provider: 'up' } });
  });

  it('a forged, missing or other-provider state finishes nothing: a 400 page, never a redirect', async () => {
    const { browser, tokens } = await signIn();
    const toUpstream = await logoutAtDown(browser, tokens.id_token);
    const state = new URL(toUpstream.location!).searchParams.get('state')!;
    for (const query of ['', '?state=', `?state=${'A'.repeat(32)}`, '?state=../../x']) {
      const answer = await browser.get(`${returnUrl}${query}`);
      expect(answer.status).toBe(400);
      expect(answer.location).toBeNull();
    }
    // The genuine state at another alias's path is refused, and spent.
    const elsewhere = await browser.get(`${t.url}/realms/down/broker/other/endpoint/logout_response?state=${state}`);
    expect(elsewhere.status).toBe(400);
    expect((await browser.get(`${returnUrl}?state=${state}`)).status).toBe(400);
    // A state of realm down means nothing at another realm's path.
    const again = await signIn();
    const second = new URL((await logoutAtDown(again.browser, again.tokens.id_token)).location!).searchParams.get('state')!;
    expect((await again.browser.get(`${t.url}/realms/up/broker/up/endpoint/logout_response?state=${second}`)).status).toBe(400);
  });

  it('sendIdTokenOnLogout "false": no ID token is sent (nor kept); up asks its user to confirm, then the logout finishes', async () => {
    await withConfig({ sendIdTokenOnLogout: 'false', sendClientIdOnLogout: 'true' }, async () => {
      const { browser, tokens } = await signIn();
      const sid = decodeJwt(tokens.id_token).sid as string;
      expect((await t.server.context.storage.sessions.byId(sid))?.brokerIdToken ?? null).toBeNull();
      const toUpstream = await logoutAtDown(browser, tokens.id_token);
      const location = new URL(toUpstream.location!);
      expect(location.searchParams.has('id_token_hint')).toBe(false);
      expect(location.searchParams.get('client_id')).toBe('broker-client');
      const confirm = await browser.get(toUpstream.location!);
      expect(confirm.status).toBe(200);
      expect(await upSessions()).toHaveLength(1);
      const form = firstForm(confirm.text);
      const back = await browser.post(form.action, form.hidden);
      expect(back.status, back.text.slice(0, 300)).toBe(302);
      expect(back.location!.startsWith(`${returnUrl}?`)).toBe(true);
      expect(await upSessions()).toHaveLength(0);
      expect((await browser.get(back.location!)).location).toBe(`${APP_AFTER_LOGOUT}?state=bye`);
    });
  });

  it("the app's front-channel logout frame is shown when the browser comes back", async () => {
    const app = ((await admin('GET', '/down/clients?clientId=app')).body as { id: string; attributes: Record<string, string>; frontchannelLogout?: boolean }[])[0];
    ok(await admin('PUT', `/down/clients/${app.id}`, { ...app, frontchannelLogout: true, attributes: { ...app.attributes, 'frontchannel.logout.url': 'http://app.test/fc-logout' } }));
    try {
      const { browser, tokens } = await signIn();
      const sid = decodeJwt(tokens.id_token).sid as string;
      const toUpstream = await logoutAtDown(browser, tokens.id_token);
      expect(toUpstream.status).toBe(302);
      const back = await browser.get(toUpstream.location!);
      const page = await browser.get(back.location!);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`http://app.test/fc-logout?sid=${sid}`);
      expect(page.text).toContain(APP_AFTER_LOGOUT);
    } finally {
      ok(await admin('PUT', `/down/clients/${app.id}`, app));
    }
  });

  it('no logoutUrl, or backchannelSupported: the browser goes straight to the app', async () => {
    await withConfig({ logoutUrl: undefined }, async () => {
      const { browser, tokens } = await signIn();
      const answer = await logoutAtDown(browser, tokens.id_token);
      expect(answer.location).toBe(`${APP_AFTER_LOGOUT}?state=bye`);
      expect(await downSessions()).toHaveLength(0);
      // Not logged out at up (nothing told it).
      expect(await upSessions()).toHaveLength(1);
    });
    await withConfig({ backchannelSupported: 'true' }, async () => {
      const { browser, tokens } = await signIn();
      const answer = await logoutAtDown(browser, tokens.id_token);
      expect(answer.location).toBe(`${APP_AFTER_LOGOUT}?state=bye`);
    });
  });

  it('a session signed in locally (no upstream) logs out without leaving the server', async () => {
    // A local user of down signs in with a password; its logout answers the app's redirect directly.
    ok(await admin('POST', '/down/users', { username: 'local', enabled: true, credentials: [{ type: 'password', value: 'Local-pass-123', temporary: false }] }));
    const browser = new Browser(t.url);
    const { challenge, verifier } = pkce();
    const query = new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 's', code_challenge: challenge, code_challenge_method: 'S256' });
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${query}`);
    const form = firstForm(page.text);
    const answer = await browser.post(form.action, { ...form.hidden, username: 'local', password: 'Local-pass-123' });
    const code = new URL(answer.location!).searchParams.get('code')!;
    const tokens = (await tokenRequest(t.url, 'down', { grant_type: 'authorization_code', client_id: 'app', code, redirect_uri: APP_REDIRECT, code_verifier: verifier })).body as Record<string, string>;
    expect((await logoutAtDown(browser, tokens.id_token)).location).toBe(`${APP_AFTER_LOGOUT}?state=bye`);
  });
});
