import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 40, item 8: the token endpoint and its neighbours answer as Keycloak 26.7.3 (measured there): a wrong client
 * secret, a wrong user password, a JSON body, GET, introspection by a client outside the token's audience, userinfo
 * with the token in a form, and the RFC 8414 metadata.
 */

const REALM = 'answers';
const PASSWORD = 'Answers-password-5';
let t: TestServer;

const form = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, any> });
const passwordGrant = (clientId: string, secret: string, password = PASSWORD) =>
  tokenRequest(t.url, REALM, { grant_type: 'password', client_id: clientId, client_secret: secret, username: 'erin', password, scope: 'openid' });

beforeAll(async () => {
  t = await startServer();
  const token = await adminToken(t.url);
  const ok = (response: { status: number; body: unknown }) => expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  ok(await api(t.url, 'POST', '/admin/realms', token, { realm: REALM, enabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'app', secret: 'app-secret', directAccessGrantsEnabled: true }));
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'outsider', secret: 'outsider-secret', serviceAccountsEnabled: true }));
  // `resource` is in app's tokens' audience through an audience mapper on app.
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/clients`, token, { clientId: 'resource', secret: 'resource-secret', serviceAccountsEnabled: true }));
  const appId = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=app`, token)).body[0].id as string;
  ok(
    await api(t.url, 'POST', `/admin/realms/${REALM}/clients/${appId}/protocol-mappers/models`, token, {
      name: 'resource audience',
      protocol: 'openid-connect',
      protocolMapper: 'oidc-audience-mapper',
      config: { 'included.client.audience': 'resource', 'access.token.claim': 'true', 'introspection.token.claim': 'true' },
    }),
  );
  ok(await api(t.url, 'POST', `/admin/realms/${REALM}/users`, token, { username: 'erin', email: 'erin@example.com', emailVerified: true, firstName: 'Erin', lastName: 'Doe', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] }));
});
afterAll(() => t?.close());

describe('the token endpoint answers as Keycloak 26.7.3', () => {
  it('a wrong or missing client secret: 401 unauthorized_client; an unknown client: 401 invalid_client', async () => {
    const wrong = { status: 401, body: { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' } };
    expect(await passwordGrant('app', 'nope')).toEqual(wrong);
    expect(await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'outsider' })).toEqual(wrong);
    const basic = { authorization: `Basic ${Buffer.from('outsider:nope').toString('base64')}` };
    expect(await tokenRequest(t.url, REALM, { grant_type: 'client_credentials' }, basic)).toEqual(wrong);
    expect(await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'x' })).toEqual({
      status: 401,
      body: { error: 'invalid_client', error_description: 'Invalid client or Invalid client credentials' },
    });
  });

  it('a wrong user password: 400 invalid_grant "Invalid user credentials"', async () => {
    expect(await passwordGrant('app', 'app-secret', 'wrong')).toEqual({ status: 400, body: { error: 'invalid_grant', error_description: 'Invalid user credentials' } });
    expect((await passwordGrant('app', 'app-secret')).status).toBe(200);
  });

  it('a JSON body is no form: no token, 400 invalid_request naming the missing grant_type', async () => {
    const body = JSON.stringify({ grant_type: 'password', client_id: 'app', client_secret: 'app-secret', username: 'erin', password: PASSWORD });
    const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(await json(response)).toEqual({ status: 400, body: { error: 'invalid_request', error_description: 'Missing form parameter: grant_type' } });
  });

  it('GET: 405', async () => {
    const response = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/token`);
    expect(response.status).toBe(405);
    expect(await response.json()).toEqual({ error: 'HTTP 405 Method Not Allowed' });
  });
});

describe('introspection and userinfo', () => {
  it('introspects an access token only for a client in its audience: active false for any other, its own client included', async () => {
    const access = (await passwordGrant('app', 'app-secret')).body.access_token as string;
    const introspect = async (clientId: string, secret: string) => (await json(await form('token/introspect', { token: access, client_id: clientId, client_secret: secret }))).body;
    expect(await introspect('outsider', 'outsider-secret')).toEqual({ active: false });
    expect(await introspect('app', 'app-secret')).toEqual({ active: false });
    expect(await introspect('resource', 'resource-secret')).toMatchObject({ active: true, azp: 'app', username: 'erin' });
    // A wrong or missing secret at introspection: Keycloak's 401 invalid_client "Client authentication failed." (the
    // token endpoint's unauthorized_client is not what introspection says).
    for (const secret of [{ client_secret: 'nope' }, {}] as Record<string, string>[]) {
      expect(await json(await form('token/introspect', { token: access, client_id: 'resource', ...secret }))).toEqual({ status: 401, body: { error: 'invalid_client', error_description: 'Client authentication failed.' } });
    }
    // A refresh token is not held to it.
    const refresh = (await passwordGrant('app', 'app-secret')).body.refresh_token as string;
    expect((await json(await form('token/introspect', { token: refresh, client_id: 'outsider', client_secret: 'outsider-secret' }))).body.active).toBe(true);
  });

  it('userinfo by POST with the token as the form parameter access_token: 200', async () => {
    const access = (await passwordGrant('app', 'app-secret')).body.access_token as string;
    const info = await json(await form('userinfo', { access_token: access }));
    expect(info).toMatchObject({ status: 200, body: { preferred_username: 'erin' } });
    expect((await form('userinfo', { access_token: 'not-a-token' })).status).toBe(401);
    expect((await form('userinfo', {})).status).toBe(401);
  });
});

describe('RFC 8414 metadata', () => {
  it('/.well-known/oauth-authorization-server answers the realm metadata at the realm path and at the RFC path', async () => {
    const oidc = await json(await fetch(`${t.url}/realms/${REALM}/.well-known/openid-configuration`));
    expect(oidc.body).toMatchObject({
      device_authorization_endpoint: `${t.url}/realms/${REALM}/protocol/openid-connect/auth/device`,
      pushed_authorization_request_endpoint: `${t.url}/realms/${REALM}/protocol/openid-connect/ext/par/request`,
      require_pushed_authorization_requests: false,
    });
    expect(oidc.body.grant_types_supported).toContain('urn:ietf:params:oauth:grant-type:device_code');
    for (const path of [`/realms/${REALM}/.well-known/oauth-authorization-server`, `/.well-known/oauth-authorization-server/realms/${REALM}`]) {
      const metadata = await json(await fetch(`${t.url}${path}`));
      expect(metadata.status, path).toBe(200);
      expect(metadata.body, path).toEqual(oidc.body);
    }
    expect((await fetch(`${t.url}/.well-known/oauth-authorization-server/realms/no-such-realm`)).status).toBe(404);
  });
});
