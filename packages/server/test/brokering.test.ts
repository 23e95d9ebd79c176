import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstForm, inputValue, pkce } from './support/forms.js';
import { BrokerBrowser as Browser } from './support/broker-browser.js';
import { LOOK_AHEAD, newOtpUser, OTP_CALLBACK, withOtp } from './support/otp-users.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';

/**
 * Issue 37: signing in through an OpenID Connect identity provider, against a second realm of the same server as
 * the upstream (`up`, a Keycloak-like OpenID provider on loopback). The broker realm `down` has the provider `up`
 * (PKCE, signature checked by the upstream's JWKS), a disabled one and a hidden one, and mappers. Each browser is
 * two cookie jars (one per realm: the test client ignores cookie paths).
 */

const APP_REDIRECT = 'http://app.test/callback';
const SECRET = 'upstream-client-secret';

const { challenge } = pkce();
const authQuery = (extra: Record<string, string> = {}) =>
  new URLSearchParams({ client_id: 'app', redirect_uri: APP_REDIRECT, response_type: 'code', scope: 'openid', state: 'app-state', code_challenge: challenge, code_challenge_method: 'S256', ...extra }).toString();

describe('signing in through an identity provider (another realm as the upstream)', () => {
  let t: TestServer;
  let token: string;
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);
  const events = async (type: string) => ((await admin('GET', `/down/events?type=${type}&max=100`)).body as { type: string; userId?: string; details?: Record<string, string>; error?: string }[]);
  const downUser = async (username: string) => ((await admin('GET', `/down/users?username=${encodeURIComponent(username)}&exact=true`)).body as { id: string; username: string; email?: string; attributes?: Record<string, string[]> }[])[0];

  /** The login page of `down`, then its button for `up`, then the upstream's login (unless signed in there already): the callback URL. */
  async function toCallback(browser: Browser, upstreamLogin: { username: string; password: string } | null) {
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
    expect(page.status).toBe(200);
    const href = /id="social-up"[^>]*href="([^"]+)"|href="([^"]+)"[^>]*id="social-up"/.exec(page.text);
    expect(href).not.toBeNull();
    const toUpstream = await browser.get((href![1] ?? href![2]).replace(/&amp;/g, '&'));
    expect(toUpstream.status).toBe(302);
    return followUpstream(browser, toUpstream.location!, upstreamLogin);
  }

  async function followUpstream(browser: Browser, upstreamUrl: string, upstreamLogin: { username: string; password: string } | null) {
    const upstream = new URL(upstreamUrl);
    expect(upstream.pathname).toBe('/realms/up/protocol/openid-connect/auth');
    let answer = await browser.get(upstreamUrl);
    if (upstreamLogin) {
      expect(answer.status).toBe(200);
      const form = firstForm(answer.text);
      answer = await browser.post(form.action, { ...form.hidden, username: upstreamLogin.username, password: upstreamLogin.password });
    }
    expect(answer.status).toBe(302);
    expect(answer.location).toContain('/realms/down/broker/up/endpoint?');
    return answer.location!;
  }

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'up',
      enabled: true,
      duplicateEmailsAllowed: true,
      clients: [{ clientId: 'broker-client', enabled: true, publicClient: false, secret: SECRET, redirectUris: [`${t.url}/realms/down/broker/up/endpoint`], standardFlowEnabled: true }],
      users: [
        { username: 'upuser', enabled: true, email: 'upuser@example.com', emailVerified: true, firstName: 'Up', lastName: 'User', credentials: [{ type: 'password', value: 'Up-pass-123', temporary: false }] },
        { username: 'mallory', enabled: true, email: 'alice@example.com', emailVerified: true, firstName: 'Mal', lastName: 'Lory', credentials: [{ type: 'password', value: 'Mal-pass-123', temporary: false }] },
        { username: 'mallory2', enabled: true, email: 'alice@example.com', firstName: 'Mal', lastName: 'Two', credentials: [{ type: 'password', value: 'Mal-pass-123' }] },
        { username: 'nomail', enabled: true, firstName: 'No', lastName: 'Mail', credentials: [{ type: 'password', value: 'No-pass-123', temporary: false }] },
        { username: 'pbluser', enabled: true, email: 'pbl@example.com', emailVerified: true, firstName: 'Post', lastName: 'Broker', credentials: [{ type: 'password', value: 'Pbl-pass-123', temporary: false }] },
        { username: 'pblnew', enabled: true, email: 'pblnew@example.com', emailVerified: true, firstName: 'Post', lastName: 'New', credentials: [{ type: 'password', value: 'Pbl-pass-123', temporary: false }] },
      ],
    });
    expect(created.status).toBe(201);
    const base = `${t.url}/realms/up/protocol/openid-connect`;
    const oidc = (extra: Record<string, string> = {}) => ({
      clientId: 'broker-client',
      clientSecret: SECRET,
      authorizationUrl: `${base}/auth`,
      tokenUrl: `${base}/token`,
      userInfoUrl: `${base}/userinfo`,
      jwksUrl: `${base}/certs`,
      issuer: `${t.url}/realms/up`,
      validateSignature: 'true',
      useJwksUrl: 'true',
      pkceEnabled: 'true',
      pkceMethod: 'S256',
      clientAuthMethod: 'client_secret_post',
      syncMode: 'IMPORT',
      ...extra,
    });
    const down = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'down',
      enabled: true,
      eventsEnabled: true,
      roles: { realm: [{ name: 'brokered' }] },
      groups: [{ name: 'partners' }],
      clients: [
        { clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true },
        { clientId: 'web', enabled: true, publicClient: true, directAccessGrantsEnabled: true, redirectUris: [OTP_CALLBACK] },
      ],
      otpPolicyLookAheadWindow: LOOK_AHEAD,
      users: [{ username: 'alice', enabled: true, email: 'alice@example.com', emailVerified: true, firstName: 'Alice', lastName: 'Local', credentials: [{ type: 'password', value: 'Alice-pass-123', temporary: false }] }],
      identityProviders: [
        { alias: 'up', displayName: 'Upstream realm', providerId: 'keycloak-oidc', enabled: true, storeToken: true, config: oidc({ guiOrder: '1' }) },
        { alias: 'off', displayName: 'Disabled one', providerId: 'oidc', enabled: false, config: oidc() },
        { alias: 'hidden', displayName: 'Hidden one', providerId: 'oidc', enabled: true, hideOnLogin: true, config: oidc() },
        { alias: 'linkonly', displayName: 'Link only', providerId: 'oidc', enabled: true, linkOnly: true, config: oidc() },
      ],
      identityProviderMappers: [
        { name: 'role', identityProviderAlias: 'up', identityProviderMapper: 'oidc-hardcoded-role-idp-mapper', config: { role: 'brokered', syncMode: 'INHERIT' } },
        { name: 'family', identityProviderAlias: 'up', identityProviderMapper: 'oidc-user-attribute-idp-mapper', config: { claim: 'family_name', 'user.attribute': 'upstreamFamily', syncMode: 'INHERIT' } },
        { name: 'group', identityProviderAlias: 'up', identityProviderMapper: 'oidc-hardcoded-group-idp-mapper', config: { group: '/partners', syncMode: 'INHERIT' } },
      ],
    });
    expect(down.status).toBe(201);
    // No copy of the browser flow: the built-in one has Keycloak 26's identity-provider-redirector.
    const browser = (await admin('GET', '/down/authentication/flows/browser/executions')).body as { providerId?: string; displayName: string; requirement: string; level: number }[];
    expect(browser.filter((e) => e.level === 0).map((e) => `${e.providerId ?? e.displayName}:${e.requirement}`)).toEqual(['auth-cookie:ALTERNATIVE', 'identity-provider-redirector:ALTERNATIVE', 'forms:ALTERNATIVE']);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('offers the enabled providers as buttons, not a disabled or hidden one', async () => {
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="social-up"');
    expect(page.text).toContain('Upstream realm');
    expect(page.text).not.toContain('social-off');
    expect(page.text).not.toContain('social-hidden');
    expect(page.text).not.toContain('social-linkonly');
  });

  it('sends the upstream state, nonce and PKCE, and never the client secret', async () => {
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'up' })}`);
    expect(page.status).toBe(302);
    const toUpstream = await browser.get(page.location!);
    expect(toUpstream.status).toBe(302);
    const upstream = new URL(toUpstream.location!);
    expect(upstream.searchParams.get('client_id')).toBe('broker-client');
    expect(upstream.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(upstream.searchParams.get('nonce')).toBeTruthy();
    expect(upstream.searchParams.get('code_challenge_method')).toBe('S256');
    expect(toUpstream.location).not.toContain(SECRET);
  });

  it('first login creates the user with the mapped role, attribute and group; the second login finds the same user', async () => {
    const browser = new Browser(t.url);
    const callback = await toCallback(browser, { username: 'upuser', password: 'Up-pass-123' });
    const done = await browser.get(callback);
    expect(done.status).toBe(302);
    expect(done.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    const user = await downUser('upuser');
    expect(user.email).toBe('upuser@example.com');
    expect(user.attributes?.upstreamFamily).toEqual(['User']);
    const roles = (await admin('GET', `/down/users/${user.id}/role-mappings/realm`)).body as { name: string }[];
    expect(roles.map((r) => r.name)).toContain('brokered');
    const groups = (await admin('GET', `/down/users/${user.id}/groups`)).body as { name: string }[];
    expect(groups.map((g) => g.name)).toEqual(['partners']);
    const links = (await admin('GET', `/down/users/${user.id}/federated-identity`)).body as { identityProvider: string; userName: string }[];
    expect(links).toMatchObject([{ identityProvider: 'up', userName: 'upuser' }]);
    await eventually(async () => (await events('IDENTITY_PROVIDER_FIRST_LOGIN')).length > 0);
    expect((await events('FEDERATED_IDENTITY_LINK'))[0]).toMatchObject({ userId: user.id, details: { identity_provider: 'up', identity_provider_identity: 'upuser' } });

    // Second login: signed in upstream already, so straight through; the same local user.
    const again = new Browser(t.url);
    (again.up.cookies as Map<string, string>).clear();
    for (const [name, value] of browser.up.cookies) again.up.cookies.set(name, value);
    const second = await again.get(await toCallback(again, null));
    expect(second.status).toBe(302);
    expect(second.location).toMatch(/code=/);
    expect(((await admin('GET', `/down/users?username=upuser&exact=true`)).body as unknown[]).length).toBe(1);
    const login = await eventually(async () => (await events('IDENTITY_PROVIDER_LOGIN')).find((e) => e.userId === user.id));
    expect(login.details).toMatchObject({ identity_provider: 'up' });
  });

  it('kc_idp_hint skips the local login page', async () => {
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'up' })}`);
    expect(page.status).toBe(302);
    expect(page.location).toMatch(/^\/realms\/down\/broker\/up\/login\?session_code=/);
    // A hint naming a disabled provider shows the login page.
    const off = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'off' })}`);
    expect(off.status).toBe(200);
    expect(off.text).toContain('kc-form-login');
  });

  it('kc_idp_hint naming a disabled, link-only or unknown provider shows the login page; a hidden one is followed', async () => {
    for (const hint of ['off', 'linkonly', 'nope', 'UP']) {
      const page = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: hint })}`);
      expect(page.status, hint).toBe(200);
      expect(page.text).toContain('kc-form-login');
    }
    // The broker login URL of a link-only provider, reached directly, is refused too (no upstream redirect).
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
    const direct = await browser.get(`/realms/down/broker/linkonly/login?session_code=${encodeURIComponent(inputValue(page.text, 'session_code')!)}`);
    expect(direct.status).toBe(400);
    expect(direct.location).toBeNull();
    const hidden = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'hidden' })}`);
    expect(hidden.status).toBe(302);
    expect(hidden.location).toMatch(/^\/realms\/down\/broker\/hidden\/login\?session_code=/);
  });

  it("the built-in redirector's defaultProvider sends every sign-in to that provider; a hint still wins; the cookie comes first", async () => {
    const executions = (await admin('GET', '/down/authentication/flows/browser/executions')).body as { id: string; providerId?: string }[];
    const redirector = executions.find((e) => e.providerId === 'identity-provider-redirector')!;
    const created = await admin('POST', `/down/authentication/executions/${redirector.id}/config`, { alias: 'default idp', config: { defaultProvider: 'up' } });
    expect(created.status).toBe(201);
    const configId = (((await admin('GET', '/down/authentication/flows/browser/executions')).body as { id: string; authenticationConfig?: string }[]).find((e) => e.id === redirector.id))!.authenticationConfig!;
    try {
      // A realm export carries the built-in flow's redirector and its config; a realm made from it has both.
      const exported = (await admin('POST', '/down/partial-export')).body as { authenticationFlows: { alias: string; builtIn: boolean; authenticationExecutions: { authenticator?: string; authenticatorConfig?: string; requirement: string }[] }[]; authenticatorConfig: { alias: string; config: Record<string, string> }[] };
      const exportedBrowser = exported.authenticationFlows.find((f) => f.alias === 'browser')!;
      expect(exportedBrowser.builtIn).toBe(true);
      expect(exportedBrowser.authenticationExecutions.find((e) => e.authenticator === 'identity-provider-redirector')).toMatchObject({ requirement: 'ALTERNATIVE', authenticatorConfig: 'default idp' });
      expect(exported.authenticatorConfig.find((c) => c.alias === 'default idp')?.config).toEqual({ defaultProvider: 'up' });
      const copy = await api(t.url, 'POST', '/admin/realms', token, { ...exported, id: undefined, realm: 'down-copy' });
      expect(copy.status, JSON.stringify(copy.body)).toBe(201);
      const copied = (await api(t.url, 'GET', '/admin/realms/down-copy/authentication/flows/browser/executions', token)).body as { providerId?: string; authenticationConfig?: string; level: number }[];
      const copiedRedirector = copied.find((e) => e.providerId === 'identity-provider-redirector')!;
      expect((await api(t.url, 'GET', `/admin/realms/down-copy/authentication/config/${copiedRedirector.authenticationConfig}`, token)).body).toMatchObject({ alias: 'default idp', config: { defaultProvider: 'up' } });
      expect((await api(t.url, 'DELETE', '/admin/realms/down-copy', token)).status).toBe(204);

      const browser = new Browser(t.url);
      const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
      expect(page.status).toBe(302);
      expect(page.location).toMatch(/^\/realms\/down\/broker\/up\/login\?session_code=/);
      const hinted = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'hidden' })}`);
      expect(hinted.location).toMatch(/^\/realms\/down\/broker\/hidden\/login/);
      // As Keycloak's: a hint naming a provider that cannot sign in is the login page, not the default provider.
      for (const hint of ['off', '']) {
        const refused = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: hint })}`);
        expect(refused.status, hint).toBe(200);
        expect(refused.text).toContain('kc-form-login');
      }
      // Signed in (through the default provider), the next authorization request is answered by the SSO cookie.
      const toUpstream = await browser.get(page.location!);
      const callback = await followUpstream(browser, toUpstream.location!, { username: 'upuser', password: 'Up-pass-123' });
      expect((await browser.get(callback)).location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
      const again = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
      expect(again.status).toBe(302);
      expect(again.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    } finally {
      expect((await admin('DELETE', `/down/authentication/config/${configId}`)).status).toBe(204);
    }
    const plain = await new Browser(t.url).get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
    expect(plain.status).toBe(200);
  });

  describe("the provider's post broker login flow (postBrokerLoginFlowAlias)", () => {
    const withPostFlow = async (alias: string | undefined, run: () => Promise<void>) => {
      const provider = (await admin('GET', '/down/identity-provider/instances/up')).body as Record<string, unknown>;
      expect((await admin('PUT', '/down/identity-provider/instances/up', { ...provider, postBrokerLoginFlowAlias: alias })).status).toBe(204);
      try {
        await run();
      } finally {
        expect((await admin('PUT', '/down/identity-provider/instances/up', { ...provider, postBrokerLoginFlowAlias: undefined })).status).toBe(204);
      }
    };
    let app: Awaited<ReturnType<typeof withOtp>>;

    beforeAll(async () => {
      // A local user with an authenticator app, linked to the upstream's pbluser; a flow asking for the app's code.
      const r = { t, token, realm: 'down' };
      const local = await newOtpUser(r, { username: 'pbllocal' });
      app = await withOtp(r, local);
      const upstream = ((await api(t.url, 'GET', '/admin/realms/up/users?username=pbluser&exact=true', token)).body as { id: string }[])[0];
      expect((await admin('POST', `/down/users/${local.id}/federated-identity/up`, { identityProvider: 'up', userId: upstream.id, userName: 'pbluser' })).status).toBe(204);
      expect((await admin('POST', '/down/authentication/flows', { alias: 'pbl otp', providerId: 'basic-flow', topLevel: true, builtIn: false, description: 'after an upstream sign-in' })).status).toBe(201);
      expect((await admin('POST', '/down/authentication/flows/pbl%20otp/executions/execution', { provider: 'auth-otp-form' })).status).toBe(201);
      const [otp] = (await admin('GET', '/down/authentication/flows/pbl%20otp/executions')).body as Record<string, unknown>[];
      expect((await admin('PUT', '/down/authentication/flows/pbl%20otp/executions', { ...otp, requirement: 'REQUIRED' })).status).toBe(204);
    });

    it('asks the linked user for their code before any session or code; the callback replayed or the key posted elsewhere skips nothing', async () => {
      await withPostFlow('pbl otp', async () => {
        const browser = new Browser(t.url);
        const callback = await toCallback(browser, { username: 'pbluser', password: 'Pbl-pass-123' });
        const asked = await browser.get(callback);
        expect(asked.status).toBe(200);
        expect(asked.location).toBeNull();
        expect(asked.text).toContain('kc-otp-login-form');
        const form = firstForm(asked.text);
        expect(form.action).toMatch(/\/realms\/down\/login-actions\/post-broker-login$/);
        // The upstream's callback again: its state is spent, nothing is exchanged, no code.
        const replayed = await browser.get(callback);
        expect(replayed.status).toBe(400);
        expect(replayed.location).toBeNull();
        // The page's key on the first broker login's route: opens nothing there.
        const elsewhere = await browser.post(form.action.replace('post-broker-login', 'first-broker-login'), { ...form.hidden, otp: app.wrongCode() });
        expect(elsewhere.status).toBe(400);
        expect(elsewhere.location).toBeNull();
        // No SSO session exists yet: the same cookies at the authorization endpoint get the login page.
        const peek = new Browser(t.url);
        for (const [name, value] of browser.down.cookies) peek.down.cookies.set(name, value);
        const notSignedIn = await peek.get(`/realms/down/protocol/openid-connect/auth?${authQuery({ prompt: 'none' })}`);
        expect(notSignedIn.location).toMatch(/error=login_required/);
        // Without a code, and with a wrong one: the page again, no code.
        expect((await browser.post(form.action, { ...form.hidden })).status).toBe(200);
        const wrong = await browser.post(form.action, { ...form.hidden, otp: app.wrongCode() });
        expect(wrong.status).toBe(401);
        expect(wrong.location).toBeNull();
        // The right code: the application gets its code.
        const right = await browser.post(form.action, { ...form.hidden, otp: app.codes.next() });
        expect(right.status).toBe(302);
        expect(right.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
        // The key is spent with the flow.
        expect((await browser.post(form.action, { ...form.hidden, otp: app.codes.next() })).status).toBe(400);
      });
    });

    it('runs after a first login too: the new user, without an app, is asked to set one up before any code', async () => {
      await withPostFlow('pbl otp', async () => {
        const browser = new Browser(t.url);
        const answer = await browser.get(await toCallback(browser, { username: 'pblnew', password: 'Pbl-pass-123' }));
        expect(answer.status).toBe(200);
        expect(answer.location).toBeNull();
        expect(answer.text).toContain('kc-totp-secret-key');
        const created = await downUser('pblnew');
        expect((await admin('GET', `/down/users/${created.id}/federated-identity`)).body).toMatchObject([{ identityProvider: 'up', userName: 'pblnew' }]);
        expect(((await admin('GET', `/down/users/${created.id}`)).body as { requiredActions: string[] }).requiredActions).toContain('CONFIGURE_TOTP');
      });
    });

    it('a post broker login flow the realm does not have: refused when saved (400 naming the field); gone later, the sign-in is refused, never skipped', async () => {
      const provider = (await admin('GET', '/down/identity-provider/instances/up')).body as Record<string, unknown>;
      const refused = await admin('PUT', '/down/identity-provider/instances/up', { ...provider, postBrokerLoginFlowAlias: 'no such flow' });
      expect(refused.status).toBe(400);
      expect(refused.body.errorMessage).toContain('postBrokerLoginFlowAlias');
      // A flow deleted after the provider named it.
      expect((await admin('POST', '/down/authentication/flows', { alias: 'doomed', providerId: 'basic-flow', topLevel: true, builtIn: false, description: '' })).status).toBe(201);
      await withPostFlow('doomed', async () => {
        const doomed = ((await admin('GET', '/down/authentication/flows')).body as { id: string; alias: string }[]).find((f) => f.alias === 'doomed')!;
        expect((await admin('DELETE', `/down/authentication/flows/${doomed.id}`)).status).toBe(204);
        const browser = new Browser(t.url);
        const answer = await browser.get(await toCallback(browser, { username: 'pbluser', password: 'Pbl-pass-123' }));
        expect(answer.status).toBe(400);
        expect(answer.location).toBeNull();
      });
      // Without it, the same upstream account signs straight in.
      const browser = new Browser(t.url);
      const answer = await browser.get(await toCallback(browser, { username: 'pbluser', password: 'Pbl-pass-123' }));
      expect(answer.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    });
  });

  it("the upstream's back-channel logout ends the brokered session; a forged or eventless logout token ends nothing", async () => {
    const upClient = ((await api(t.url, 'GET', '/admin/realms/up/clients?clientId=broker-client', token)).body as { id: string; attributes?: Record<string, string> }[])[0];
    const backchannel = `${t.url}/realms/down/protocol/openid-connect/logout/backchannel-logout`;
    expect((await api(t.url, 'PUT', `/admin/realms/up/clients/${upClient.id}`, token, { ...upClient, attributes: { ...upClient.attributes, 'backchannel.logout.url': backchannel } })).status).toBe(204);
    const browser = new Browser(t.url);
    expect((await browser.get(await toCallback(browser, { username: 'upuser', password: 'Up-pass-123' }))).location).toMatch(/code=/);
    const local = await downUser('upuser');
    const downSessions = async () => (await admin('GET', `/down/users/${local.id}/sessions`)).body as { id: string }[];
    expect((await downSessions()).length).toBeGreaterThanOrEqual(1);
    // Forged: the right issuer, audience and event, signed by a key that is not the upstream's.
    const upstreamUser = ((await api(t.url, 'GET', '/admin/realms/up/users?username=upuser&exact=true', token)).body as { id: string }[])[0];
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, sub: upstreamUser.id })
      .setProtectedHeader({ alg: 'RS256', kid: 'forged', typ: 'logout+jwt' })
      .setIssuer(`${t.url}/realms/up`)
      .setAudience('broker-client')
      .setIssuedAt()
      .setJti('forged-1')
      .sign(privateKey);
    const post = (logout_token: string) => fetch(backchannel, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ logout_token }) });
    expect((await post(forged)).status).toBe(400);
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify({ iss: `${t.url}/realms/up`, aud: 'broker-client', sub: upstreamUser.id, iat: Math.floor(Date.now() / 1000), events: { 'http://schemas.openid.net/event/backchannel-logout': {} } })).toString('base64url')}.`;
    expect((await post(unsigned)).status).toBe(400);
    expect((await post('')).status).toBe(400);
    expect((await downSessions()).length).toBeGreaterThanOrEqual(1);
    // The upstream ends its session (an administrator there): it tells this realm, whose brokered session ends.
    const upSessions = (await api(t.url, 'GET', `/admin/realms/up/users/${upstreamUser.id}/sessions`, token)).body as { id: string }[];
    expect(upSessions.length).toBeGreaterThanOrEqual(1);
    const before = (await downSessions()).length;
    for (const session of upSessions) expect((await api(t.url, 'DELETE', `/admin/realms/up/sessions/${session.id}`, token)).status).toBe(204);
    await eventually(async () => ((await downSessions()).length < before ? true : undefined));
    const logout = await eventually(async () => ((await admin('GET', '/down/events?type=LOGOUT&max=100')).body as { userId?: string; details?: Record<string, string> }[]).find((e) => e.userId === local.id && e.details?.identity_provider === 'up'));
    expect(logout).toBeDefined();
    expect((await admin('GET', '/down/events?type=LOGOUT_ERROR&max=100')).body).toHaveLength(3);
  });

  it('a disabled provider cannot be used even by its URL', async () => {
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`);
    const csrf = inputValue(page.text, 'session_code')!;
    const direct = await browser.get(`/realms/down/broker/off/login?session_code=${encodeURIComponent(csrf)}`);
    expect(direct.status).toBe(400);
    expect(direct.location).toBeNull();
  });

  it('refuses a replayed state and a state swapped into another browser; never a 5xx', async () => {
    const browser = new Browser(t.url);
    const callback = await toCallback(browser, { username: 'upuser', password: 'Up-pass-123' });
    // The attacker's callback (their code and state) fed to a victim's browser with a sign-in of its own.
    const victim = new Browser(t.url);
    expect((await victim.get(`/realms/down/protocol/openid-connect/auth?${authQuery()}`)).status).toBe(200);
    const swapped = await victim.get(callback);
    expect(swapped.status).toBe(400);
    expect(swapped.location).toBeNull();
    // The state was taken by that attempt: the rightful browser's replay of it is refused too.
    const replayed = await browser.get(callback);
    expect(replayed.status).toBe(400);
    // A fresh one works once, then not again.
    const fresh = await toCallback(browser, null);
    expect((await browser.get(fresh)).status).toBe(302);
    const replay = await browser.get(fresh);
    expect(replay.status).toBe(400);
    expect(replay.location).toBeNull();
    const errors = await eventually(async () => (await events('IDENTITY_PROVIDER_LOGIN_ERROR')).filter((e) => e.error === 'invalid_code'));
    expect(errors.length).toBeGreaterThanOrEqual(2);
  });

  it('an upstream error or cancel is the login page with a message, not a 5xx', async () => {
    const browser = new Browser(t.url);
    const page = await browser.get(`/realms/down/protocol/openid-connect/auth?${authQuery({ kc_idp_hint: 'up' })}`);
    const toUpstream = await browser.get(page.location!);
    const state = new URL(toUpstream.location!).searchParams.get('state')!;
    const cancelled = await browser.get(`/realms/down/broker/up/endpoint?error=access_denied&state=${state}`);
    expect(cancelled.status).toBe(400);
    expect(cancelled.text).toContain('was cancelled');
    expect(cancelled.text).toContain('kc-form-login');
    // A made-up code with a good state: the token endpoint refuses it, the user sees the login page.
    const again = await browser.get(`/realms/down/broker/up/login?session_code=${encodeURIComponent(inputValue(cancelled.text, 'session_code')!)}`);
    const state2 = new URL(again.location!).searchParams.get('state')!;
    const badCode = await browser.get(`/realms/down/broker/up/endpoint?code=made-up&state=${state2}`);
    expect(badCode.status).toBe(400);
    expect(badCode.text).toContain('failed');
  });

  it('an upstream user with a local user’s e-mail is not signed in as that user without her password', async () => {
    const browser = new Browser(t.url);
    const callback = await toCallback(browser, { username: 'mallory', password: 'Mal-pass-123' });
    const confirm = await browser.get(callback);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Account already exists');
    expect(confirm.location).toBeNull();
    const alice = await downUser('alice');
    const linksOfAlice = async () => (await admin('GET', `/down/users/${alice.id}/federated-identity`)).body as unknown[];
    expect(await linksOfAlice()).toEqual([]);
    // Confirming the link asks for Alice's password; a wrong one gets nowhere.
    const form = firstForm(confirm.text);
    const reauth = await browser.post(form.action, { ...form.hidden, submitAction: 'linkAccount' });
    expect(reauth.status).toBe(200);
    expect(reauth.text).toContain('alice');
    const reauthForm = firstForm(reauth.text);
    const wrong = await browser.post(reauthForm.action, { ...reauthForm.hidden, password: 'Mal-pass-123' });
    expect(wrong.status).toBe(401);
    expect(wrong.location).toBeNull();
    expect(await linksOfAlice()).toEqual([]);
    // Skipping the pages (posting a password straight with the key) is the same re-authentication, nothing less.
    const skip = await browser.post(form.action, { ...form.hidden, password: '' });
    expect(skip.status).toBe(401);
    expect(await linksOfAlice()).toEqual([]);
    expect(await downUser('mallory')).toBeUndefined();
    // Alice herself, with her password, links her account.
    const right = await browser.post(reauthForm.action, { ...reauthForm.hidden, password: 'Alice-pass-123' });
    expect(right.status).toBe(302);
    expect(right.location).toMatch(/^http:\/\/app\.test\/callback\?.*code=/);
    expect(await linksOfAlice()).toMatchObject([{ identityProvider: 'up', userName: 'mallory' }]);
  });

  it('a local user linked already to one upstream account is not linked to a second one (409 page, no 5xx)', async () => {
    const browser = new Browser(t.url);
    const confirm = await browser.get(await toCallback(browser, { username: 'mallory2', password: 'Mal-pass-123' }));
    const form = firstForm(confirm.text);
    const reauth = await browser.post(form.action, { ...form.hidden, submitAction: 'linkAccount' });
    const answer = await browser.post(firstForm(reauth.text).action, { ...firstForm(reauth.text).hidden, password: 'Alice-pass-123' });
    expect(answer.status).toBe(409);
    expect(answer.location).toBeNull();
    const alice = await downUser('alice');
    expect((await admin('GET', `/down/users/${alice.id}/federated-identity`)).body).toMatchObject([{ identityProvider: 'up', userName: 'mallory' }]);
  });

  it('asks for the missing e-mail on the review page before creating the user', async () => {
    const browser = new Browser(t.url);
    const review = await browser.get(await toCallback(browser, { username: 'nomail', password: 'No-pass-123' }));
    expect(review.status).toBe(200);
    expect(review.text).toContain('kc-idp-review-profile-form');
    const form = firstForm(review.text);
    const bad = await browser.post(form.action, { ...form.hidden, username: 'nomail', email: 'not-an-address', firstName: 'No', lastName: 'Mail' });
    expect(bad.status).toBe(400);
    expect(await downUser('nomail')).toBeUndefined();
    const good = await browser.post(form.action, { ...form.hidden, username: 'nomail', email: 'nomail@example.com', firstName: 'No', lastName: 'Mail' });
    expect(good.status).toBe(302);
    expect((await downUser('nomail')).email).toBe('nomail@example.com');
  });

  it('answers the stored upstream token only to a token with broker read-token, and masks the client secret', async () => {
    const provider = (await admin('GET', '/down/identity-provider/instances/up')).body as { config: Record<string, string> };
    expect(provider.config.clientSecret).toBe('**********');
    const response = await api(t.url, 'GET', '/realms/down/broker/up/token', null);
    expect(response.status).toBe(401);
    expect(JSON.stringify(t.logs)).not.toContain(SECRET);
  });
});
