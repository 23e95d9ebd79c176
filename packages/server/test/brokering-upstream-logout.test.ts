import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_REDIRECT, signInThroughUp } from './support/broker-browser.js';
import { adminToken, api, eventually, startServer, type TestServer } from './support/server.js';

/**
 * Issue 40: this server logging the upstream identity provider out (Keycloak's `backchannelSupported` on an OpenID
 * Connect provider, OIDCIdentityProvider.backchannelLogout): when a brokered session ends here, the provider's
 * `logoutUrl` is called from the background with `state` and the upstream's ID token as `id_token_hint`. The upstream
 * is a second realm of the same server (`up`), whose logout endpoint ends the session that ID token names.
 */

const SECRET = 'upstream-client-secret';

describe('logging the upstream identity provider out (backchannelSupported)', () => {
  let t: TestServer;
  let token: string;
  const admin = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms${path}`, token, body);

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    ok(
      await api(t.url, 'POST', '/admin/realms', token, {
        realm: 'up',
        enabled: true,
        clients: [{ clientId: 'broker-client', enabled: true, publicClient: false, secret: SECRET, redirectUris: [`${t.url}/realms/down/broker/up/endpoint`], standardFlowEnabled: true }],
        users: [{ username: 'upuser', enabled: true, email: 'upuser@example.com', emailVerified: true, firstName: 'Up', lastName: 'User', credentials: [{ type: 'password', value: 'Up-pass-123', temporary: false }] }],
      }),
    );
    const base = `${t.url}/realms/up/protocol/openid-connect`;
    ok(
      await api(t.url, 'POST', '/admin/realms', token, {
        realm: 'down',
        enabled: true,
        eventsEnabled: true,
        clients: [{ clientId: 'app', enabled: true, publicClient: true, redirectUris: [APP_REDIRECT], standardFlowEnabled: true }],
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
              backchannelSupported: 'true',
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

  const upUserId = async () => ((await admin('GET', '/up/users?username=upuser&exact=true')).body as { id: string }[])[0].id;
  const upSessions = async () => (await admin('GET', `/up/users/${await upUserId()}/sessions`)).body as { id: string }[];

  const brokerRows = async () => {
    const realmId = ((await admin('GET', '/down')).body as { id: string }).id;
    return t.server.context.logoutNotifications.store.list({ realmId, types: ['BROKER_BACKCHANNEL_LOGOUT'] });
  };

  const signIn = async () => (await signInThroughUp(t.url)).tokens;

  it("the app's logout at down ends upuser's session at up too (GET logoutUrl with state and id_token_hint, from the background)", async () => {
    const tokens = await signIn();
    expect((await upSessions()).length).toBe(1);
    const logout = await fetch(`${t.url}/realms/down/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'app', refresh_token: tokens.refresh_token }),
    });
    expect(logout.status).toBe(204);
    await eventually(async () => ((await upSessions()).length === 0 ? true : undefined));
    const [row] = await eventually(async () => ((await brokerRows()).some((r) => r.state === 'delivered') ? brokerRows() : undefined));
    const [attempt] = (await t.server.context.logoutNotifications.store.attempts([row.id])).get(row.id)!;
    expect(attempt.status).toBeLessThan(400);
  });

  it('an administrator ending the brokered session at down ends the upstream one too', async () => {
    await signIn();
    expect((await upSessions()).length).toBe(1);
    const downUser = ((await admin('GET', '/down/users?username=upuser&exact=true')).body as { id: string }[])[0];
    expect((await admin('POST', `/down/users/${downUser.id}/logout`)).status).toBe(204);
    await eventually(async () => ((await upSessions()).length === 0 ? true : undefined));
  });

  it("without backchannelSupported the upstream is not called: its session stays", async () => {
    const providers = (await admin('GET', '/down/identity-provider/instances')).body as { alias: string; config: Record<string, string> }[];
    const up = providers.find((p) => p.alias === 'up')!;
    expect((await admin('PUT', '/down/identity-provider/instances/up', { ...up, config: { ...up.config, backchannelSupported: 'false' } })).status).toBe(204);
    try {
      const tokens = await signIn();
      const logout = await fetch(`${t.url}/realms/down/protocol/openid-connect/logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: 'app', refresh_token: tokens.refresh_token }),
      });
      expect(logout.status).toBe(204);
      // Nothing was written for the upstream: the rows are the two of the tests before, both delivered.
      expect((await brokerRows()).map((row) => row.state)).toEqual(['delivered', 'delivered']);
      expect((await upSessions()).length).toBe(1);
    } finally {
      expect((await admin('PUT', '/down/identity-provider/instances/up', up)).status).toBe(204);
    }
  });

  it('a logout the upstream started (its logout token) is not sent back to the upstream', async () => {
    const upClient = ((await admin('GET', '/up/clients?clientId=broker-client')).body as { id: string; attributes?: Record<string, string> }[])[0];
    const backchannel = `${t.url}/realms/down/protocol/openid-connect/logout/backchannel-logout`;
    expect((await admin('PUT', `/up/clients/${upClient.id}`, { ...upClient, attributes: { ...upClient.attributes, 'backchannel.logout.url': backchannel } })).status).toBe(204);
    await signIn();
    const downUser = ((await admin('GET', '/down/users?username=upuser&exact=true')).body as { id: string }[])[0];
    const downSessions = async () => (await admin('GET', `/down/users/${downUser.id}/sessions`)).body as { id: string }[];
    expect((await downSessions()).length).toBe(1);
    const before = (await brokerRows()).length;
    for (const session of await upSessions()) expect((await admin('DELETE', `/up/sessions/${session.id}`)).status).toBe(204);
    // The upstream told this realm, whose brokered session ended; no row was written to call the upstream back.
    await eventually(async () => ((await downSessions()).length === 0 ? true : undefined));
    expect((await brokerRows()).length).toBe(before);
  });
});
