import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

let t: TestServer;
const REALM = 'cors';
/** The '*' client lives in a realm of its own: it makes every origin pass the realm's preflight. */
const ANY = 'cors-any';
const token = (form: Record<string, string>, origin?: string, realm = form.client_id === 'star' ? ANY : REALM) =>
  fetch(`${t.url}/realms/${realm}/protocol/openid-connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) },
    body: new URLSearchParams(form),
  });
const password = (clientId: string, origin?: string) => token({ grant_type: 'password', client_id: clientId, username: 'carol', password: 'carol-password-1' }, origin);
const preflight = (path: string, headers: Record<string, string>) =>
  fetch(`${t.url}/realms/${REALM}/${path}`, { method: 'OPTIONS', headers });
const corsHeaders = (response: Response) => [...response.headers.keys()].filter((h) => h.startsWith('access-control-'));

beforeAll(async () => {
  t = await startServer();
  const admin = await adminToken(t.url);
  expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
  expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: ANY, enabled: true })).status).toBe(201);
  const client = (clientId: string, extra: Record<string, unknown>, realm = REALM) =>
    api(t.url, 'POST', `/admin/realms/${realm}/clients`, admin, { clientId, publicClient: true, directAccessGrantsEnabled: true, ...extra });
  expect((await client('listed', { webOrigins: ['https://app.example'], redirectUris: ['https://other.example/cb'] })).status).toBe(201);
  expect((await client('plus', { webOrigins: ['+'], redirectUris: ['https://spa.example:8443/app/*', '/relative/*'], rootUrl: 'https://root.example' })).status).toBe(201);
  expect((await client('star', { webOrigins: ['*'], redirectUris: ['https://star.example/*'] }, ANY)).status).toBe(201);
  expect((await client('none', { webOrigins: [], redirectUris: ['https://none.example/*'] })).status).toBe(201);
  // A confidential client (introspection) and a device client, both allowing https://app.example only.
  expect((await client('conf', { publicClient: false, secret: 'conf-secret-1', webOrigins: ['https://app.example'], redirectUris: ['https://app.example/cb'] })).status).toBe(201);
  expect((await client('tv', { webOrigins: ['https://app.example'], redirectUris: ['https://app.example/cb'], attributes: { 'oauth2.device.authorization.grant.enabled': 'true' } })).status).toBe(201);
  for (const realm of [REALM, ANY]) {
    const user = await api(t.url, 'POST', `/admin/realms/${realm}/users`, admin, {
      username: 'carol',
      enabled: true,
      credentials: [{ type: 'password', value: 'carol-password-1', temporary: false }],
    });
    expect(user.status).toBe(201);
  }
});
afterAll(() => t?.close());

describe('CORS on the token endpoint, by the client\'s webOrigins', () => {
  it("'*' in some client makes the realm's preflight grant any well-formed origin", async () => {
    const response = await fetch(`${t.url}/realms/${ANY}/protocol/openid-connect/token`, { method: 'OPTIONS', headers: { origin: 'https://whoever.example', 'access-control-request-method': 'POST' } });
    expect(response.headers.get('access-control-allow-origin')).toBe('https://whoever.example');
  });

  it('grants a listed origin, with credentials, echoing it (never *)', async () => {
    const response = await password('listed', 'https://app.example');
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
    expect(response.headers.get('vary')).toContain('Origin');
  });

  it("'+' grants the origins of the redirect URIs (relative ones through rootUrl), nothing else", async () => {
    expect((await password('plus', 'https://spa.example:8443')).headers.get('access-control-allow-origin')).toBe('https://spa.example:8443');
    expect((await password('plus', 'https://root.example')).headers.get('access-control-allow-origin')).toBe('https://root.example');
    const other = await password('plus', 'https://spa.example');
    expect(other.status).toBe(403);
    expect(corsHeaders(other)).toEqual([]);
  });

  it("'*' grants any well-formed origin", async () => {
    expect((await password('star', 'http://localhost:3000')).headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
  });

  it('a disallowed origin is refused, 403 "Invalid origin" without CORS headers (Keycloak 26.6.3 and later), no token issued', async () => {
    for (const [clientId, origin] of [['listed', 'https://evil.example'], ['none', 'https://none.example'], ['listed', 'https://app.example.evil.example'], ['listed', 'null']]) {
      const response = await password(clientId, origin);
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ error: 'Invalid origin' });
      expect(corsHeaders(response)).toEqual([]);
    }
  });

  it("the server's own origin (same-origin) passes without a grant; a wrong client secret is still answered first", async () => {
    const own = await password('none', new URL(t.url).origin);
    expect(own.status).toBe(200);
    expect(corsHeaders(own)).toEqual([]);
    const unknown = await token({ grant_type: 'password', client_id: 'nobody', username: 'x', password: 'y' }, 'https://evil.example');
    expect(unknown.status).toBe(401);
  });

  it('an error after the client is known carries the grant, so the app can read it', async () => {
    const response = await token({ grant_type: 'refresh_token', client_id: 'listed', refresh_token: 'garbage' }, 'https://app.example');
    expect(response.status).toBe(400);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const unknown = await token({ grant_type: 'password', client_id: 'nobody', username: 'x', password: 'y' }, 'https://app.example');
    expect(unknown.status).toBe(401);
    expect(corsHeaders(unknown)).toEqual([]);
  });

  it('no Origin, no CORS headers', async () => {
    expect(corsHeaders(await password('star'))).toEqual([]);
  });
});

describe('CORS on the other endpoints', () => {
  it('userinfo, revoke and logout grant by the token\'s client; discovery and JWKS any origin', async () => {
    const tokens = await (await password('listed')).json();
    const userinfo = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}`, origin: 'https://app.example' } });
    expect(userinfo.status).toBe(200);
    expect(userinfo.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const denied = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}`, origin: 'https://evil.example' } });
    expect(denied.status).toBe(403);
    expect(corsHeaders(denied)).toEqual([]);
    const evilForm = (body: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' }, body: new URLSearchParams(body) });
    expect((await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/revoke`, evilForm({ client_id: 'listed', token: tokens.access_token }))).status).toBe(403);
    expect((await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/logout`, evilForm({ client_id: 'listed', refresh_token: tokens.refresh_token }))).status).toBe(403);
    // Refused before anything was done: the token still works.
    expect((await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(200);
    const form = (body: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://app.example' }, body: new URLSearchParams(body) });
    const revoke = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/revoke`, form({ client_id: 'listed', token: tokens.access_token }));
    expect(revoke.status).toBe(200);
    expect(revoke.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const logout = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/logout`, form({ client_id: 'listed', refresh_token: tokens.refresh_token }));
    expect(logout.status).toBe(204);
    expect(logout.headers.get('access-control-allow-origin')).toBe('https://app.example');
    for (const path of ['.well-known/openid-configuration', 'protocol/openid-connect/certs', '']) {
      const response = await fetch(`${t.url}/realms/${REALM}${path ? `/${path}` : ''}`, { headers: { origin: 'https://anyone.example' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('https://anyone.example');
    }
  });
});

describe('device authorization refuses a foreign Origin as the token endpoint does; introspection as Keycloak does not', () => {
  const post = (path: string, body: Record<string, string>, origin?: string) =>
    fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(origin ? { origin } : {}) },
      body: new URLSearchParams(body),
    });

  it('introspection is not refused by Origin (Keycloak 26.7.3 checks no origin there): a foreign one gets the answer without CORS headers', async () => {
    const tokens = await (await token({ grant_type: 'password', client_id: 'conf', client_secret: 'conf-secret-1', username: 'carol', password: 'carol-password-1' })).json();
    const form = { client_id: 'conf', client_secret: 'conf-secret-1', token: tokens.refresh_token };
    for (const origin of ['https://evil.example', 'https://app.example.evil.example', 'null']) {
      const foreign = await post('token/introspect', form, origin);
      expect(foreign.status, origin).toBe(200);
      expect(corsHeaders(foreign)).toEqual([]);
    }
    const allowed = await post('token/introspect', form, 'https://app.example');
    expect(allowed.status).toBe(200);
    expect((await allowed.json()).active).toBe(true);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect((await post('token/introspect', { ...form, client_secret: 'wrong' }, 'https://evil.example')).status).toBe(401);
  });

  it('device authorization: 403 "Invalid origin" and no device code for a foreign origin; granted for the client\'s own', async () => {
    for (const origin of ['https://evil.example', 'https://none.example']) {
      const refused = await post('auth/device', { client_id: 'tv' }, origin);
      expect(refused.status, origin).toBe(403);
      const body = await refused.json();
      expect(body).toEqual({ error: 'Invalid origin' });
      expect(body.device_code).toBeUndefined();
      expect(corsHeaders(refused)).toEqual([]);
    }
    const allowed = await post('auth/device', { client_id: 'tv' }, 'https://app.example');
    expect(allowed.status).toBe(200);
    expect(typeof (await allowed.json()).device_code).toBe('string');
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    // The server's own origin passes as at the token endpoint.
    expect((await post('auth/device', { client_id: 'tv' }, new URL(t.url).origin)).status).toBe(200);
  });
});

describe('preflight', () => {
  const ask = { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' };

  it('grants an origin some client of the realm allows, the endpoint\'s methods and headers', async () => {
    for (const path of ['protocol/openid-connect/token', 'protocol/openid-connect/revoke', 'protocol/openid-connect/logout', 'protocol/openid-connect/token/introspect', 'protocol/openid-connect/auth/device']) {
      const response = await preflight(path, ask);
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(response.headers.get('access-control-allow-credentials')).toBe('true');
      expect(response.headers.get('access-control-allow-methods')).toContain('POST');
      expect(response.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
      expect(response.headers.get('access-control-max-age')).toBe('3600');
    }
    const userinfo = await preflight('protocol/openid-connect/userinfo', { ...ask, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' });
    expect(userinfo.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const certs = await preflight('protocol/openid-connect/certs', { origin: 'https://anyone.example', 'access-control-request-method': 'GET' });
    expect(certs.headers.get('access-control-allow-origin')).toBe('https://anyone.example');
  });

  it('refuses (200, no CORS headers) an origin no client allows, unknown methods or headers', async () => {
    const refusals: Record<string, string>[] = [
      { ...ask, origin: 'https://evil.example' },
      { ...ask, 'access-control-request-method': 'DELETE' },
      { ...ask, 'access-control-request-method': 'PATCH' },
      { ...ask, 'access-control-request-headers': 'content-type, x-custom-thing' },
      { ...ask, 'access-control-request-headers': 'x'.repeat(5000) },
      { origin: 'https://app.example' },
    ];
    for (const headers of refusals) {
      const response = await preflight('protocol/openid-connect/token', headers);
      expect(response.status).toBe(200);
      expect(corsHeaders(response)).toEqual([]);
    }
  });
});

describe('bad origins: no CORS grant, never a 5xx', () => {
  const raw = (method: string, path: string, headers: Record<string, string | string[]>, body?: string) =>
    new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const url = new URL(`${t.url}/realms/${ANY}/${path}`);
      const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const granted = (headers: Record<string, unknown>) => Object.keys(headers).filter((h) => h.startsWith('access-control-'));
  const bad: (string | string[])[] = [
    'null',
    'https://app.example, https://evil.example',
    ['https://app.example', 'https://evil.example'],
    `https://${'a'.repeat(5000)}.example`,
    `https://${'a'.repeat(290)}.ex`,
    'https://app.example/',
    'https://app.example/path',
    'https://user:pw@app.example',
    'file://',
    'app.example',
    'javascript:alert(1)',
    'https://%zz',
    'https://[::1',
    '*',
  ];

  it('on the token endpoint, the certs and the preflight, even for a client with webOrigins "*"', async () => {
    const form = 'grant_type=password&client_id=star&username=carol&password=carol-password-1';
    for (const origin of bad) {
      const post = await raw('POST', 'protocol/openid-connect/token', { origin, 'content-type': 'application/x-www-form-urlencoded' }, form);
      expect(post.status, String(origin)).toBe(200);
      expect(granted(post.headers), String(origin)).toEqual([]);
      const certs = await raw('GET', 'protocol/openid-connect/certs', { origin });
      expect(certs.status).toBe(200);
      expect(granted(certs.headers)).toEqual([]);
      const options = await raw('OPTIONS', 'protocol/openid-connect/token', { origin, 'access-control-request-method': 'POST' });
      expect(options.status).toBeLessThan(500);
      expect(granted(options.headers)).toEqual([]);
    }
  });

  it('a preflight for an unknown realm or path is a 404 without a grant', async () => {
    const unknownRealm = await fetch(`${t.url}/realms/nope/protocol/openid-connect/token`, { method: 'OPTIONS', headers: ask() });
    expect(unknownRealm.status).toBe(404);
    expect(corsHeaders(unknownRealm)).toEqual([]);
    const unknownPath = await fetch(`${t.url}/realms/${REALM}/protocol/openid-connect/nothing`, { method: 'OPTIONS', headers: ask() });
    expect(unknownPath.status).toBe(404);
    expect(corsHeaders(unknownPath)).toEqual([]);
  });
  const ask = () => ({ origin: 'https://app.example', 'access-control-request-method': 'POST' });
});
