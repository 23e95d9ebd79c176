/**
 * Keycloak's admin console as the server serves it, over HTTP (the browser test drives it in Chromium): the page
 * with its environment, redirects, the assets' caching and compression, the messages, the security-admin-console
 * client of every realm (new and existing), and what the console-only endpoints tell a limited administrator.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../../admin-console/build.js';
import { scriptJson } from '../src/http/ui-bundle.js';
import { upgradeAdminConsoleClient } from '../src/services/index.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let kc: KcAdminClient;

beforeAll(async () => {
  await buildConsole({ quiet: true });
  t = await startServer();
  kc = await masterAdminClient(t.url);
}, 300_000);
afterAll(() => t?.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${t.url}${path}`, { headers, redirect: 'manual' });

/** The environment JSON the page carries. */
async function environmentOf(path: string): Promise<Record<string, unknown>> {
  const html = await (await get(path)).text();
  const json = /<script id="environment" type="application\/json">(.*?)<\/script>/s.exec(html)?.[1];
  expect(json, html.slice(0, 500)).toBeDefined();
  return JSON.parse(json!) as Record<string, unknown>;
}

describe('the console page and its assets', () => {
  it('/admin/ and /admin/{realm}/console redirect to the page; unknown realms are 404', async () => {
    for (const path of ['/admin', '/admin/']) {
      const response = await get(path);
      expect(response.status, path).toBe(302);
      expect(response.headers.get('location')).toBe('/admin/master/console/');
    }
    const bare = await get('/admin/master/console');
    expect(bare.status).toBe(302);
    expect(bare.headers.get('location')).toBe('/admin/master/console/');
    expect((await get('/admin/nowhere/console/')).status).toBe(404);
    expect((await get('/admin/nowhere/console')).status).toBe(404);
  });

  it('serves the page with the environment injected as JSON, a strict policy and no caching of the page', async () => {
    const response = await get('/admin/master/console/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const policy = response.headers.get('content-security-policy')!;
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toMatch(/script-src[^;]*unsafe/);
    expect(policy).toContain("frame-ancestors 'self'");
    expect(await environmentOf('/admin/master/console/')).toMatchObject({
      serverBaseUrl: t.url,
      adminBaseUrl: t.url,
      authUrl: t.url,
      authServerUrl: t.url,
      realm: 'master',
      clientId: 'security-admin-console',
      resourceUrl: '/resources/admin-console',
      consoleBaseUrl: '/admin/master/console/',
      masterRealm: 'master',
      resourceVersion: expect.stringMatching(/^[0-9a-f]{12}$/),
    });
  });

  it('escapes the environment so no value can close the script element', () => {
    const text = scriptJson({ realm: '</script><script>alert(1)</script>', other: '<!-- & \u2028' });
    expect(text).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(text)).toEqual({ realm: '</script><script>alert(1)</script>', other: '<!-- & \u2028' });
  });

  it('hashed assets are immutable for a year and compressed (br, gzip) as the browser accepts', async () => {
    const html = await (await get('/admin/master/console/')).text();
    const script = /src="(\/resources\/admin-console\/assets\/[^"]+\.js)"/.exec(html)![1];
    const style = /href="(\/resources\/admin-console\/assets\/[^"]+\.css)"/.exec(html)![1];
    const plain = await get(script);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const body = Buffer.from(await plain.arrayBuffer());
    // fetch decompresses by itself: read the raw bytes with an explicit Accept-Encoding through node:http instead.
    const raw = async (path: string, encoding: string) => {
      const { request } = await import('node:http');
      return new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
        request(`${t.url}${path}`, { headers: { 'accept-encoding': encoding } }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }));
        })
          .on('error', reject)
          .end();
      });
    };
    const br = await raw(script, 'gzip, deflate, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toBe('accept-encoding');
    expect(brotliDecompressSync(br.body).equals(body)).toBe(true);
    const gz = await raw(style, 'gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).length).toBeGreaterThan(gz.body.length * 3);
    const identity = await raw(style, 'identity');
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect((await get('/resources/admin-console/assets/nothing-here.js')).status).toBe(404);
    expect((await get('/resources/admin-console/../../package.json')).status).toBe(404);
    expect((await get('/resources/admin-console/logo.svg')).headers.get('cache-control')).toBe('public, max-age=3600');
  });

  it("answers the messages as Keycloak's list of { key, value }; a bad locale is 400, an unknown realm 404", async () => {
    const messages = await api(t.url, 'GET', '/resources/master/admin/en', null);
    expect(messages.status).toBe(200);
    expect(Array.isArray(messages.body)).toBe(true);
    // About 400 kB, fetched on every console load: compressed, and revalidated by its ETag (304, no body).
    // fetch decompresses by itself (and says so in content-encoding): the body it hands over is the JSON.
    const compressed = await get('/resources/master/admin/en', { 'accept-encoding': 'br, gzip' });
    expect(compressed.headers.get('content-encoding')).toBe('br');
    expect(await compressed.json()).toEqual(messages.body);
    const etag = compressed.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[\w-]+"$/);
    const again = await get('/resources/master/admin/en', { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect((await get('/resources/master/admin/en', { 'if-none-match': 'W/"other"' })).status).toBe(200);
    // Present when the build could fetch Keycloak's theme artifact (Maven); the console shows keys without it.
    if (messages.body.length) expect(messages.body).toContainEqual({ key: 'realmSettings', value: 'Realm settings' });
    expect((await api(t.url, 'GET', '/resources/master/admin/xx', null)).body).toEqual([]);
    expect((await api(t.url, 'GET', '/resources/master/admin/%3Cscript%3E', null)).status).toBe(400);
    expect((await api(t.url, 'GET', '/resources/nowhere/admin/en', null)).status).toBe(404);
  });
});

describe('the security-admin-console client', () => {
  it('every new realm has it, as Keycloak: public, PKCE S256, redirects to its console only, web origin +', async () => {
    await kc.realms.create({ realm: 'fresh', enabled: true });
    for (const realm of ['master', 'fresh']) {
      kc.setConfig({ realmName: realm });
      const [client] = await kc.clients.find({ clientId: 'security-admin-console' });
      expect(client, realm).toMatchObject({
        publicClient: true,
        standardFlowEnabled: true,
        directAccessGrantsEnabled: false,
        baseUrl: `/admin/${realm}/console/`,
        redirectUris: [`/admin/${realm}/console/*`],
        webOrigins: ['+'],
        attributes: expect.objectContaining({ 'pkce.code.challenge.method': 'S256' }),
      });
    }
    kc.setConfig({ realmName: 'master' });
  });

  it('a realm made before it gets it at start-up (once)', async () => {
    await kc.realms.create({ realm: 'older', enabled: true });
    const storage = t.server.context.storage;
    const realm = (await storage.realms.byName('older'))!;
    await storage.db.deleteFrom('client').where('realm_id', '=', realm.id).where('client_id', '=', 'security-admin-console').execute();
    expect(await storage.transaction((trx) => upgradeAdminConsoleClient(storage, trx))).toEqual(['older']);
    expect(await storage.transaction((trx) => upgradeAdminConsoleClient(storage, trx))).toEqual([]);
    kc.setConfig({ realmName: 'older' });
    expect((await kc.clients.find({ clientId: 'security-admin-console' }))[0]?.redirectUris).toEqual(['/admin/older/console/*']);
    kc.setConfig({ realmName: 'master' });
  });

  it('refuses a redirect outside the console and a password grant', async () => {
    const auth = (redirect: string) =>
      get(`/realms/master/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'security-admin-console', redirect_uri: redirect, response_type: 'code', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`);
    expect((await auth(`${t.url}/admin/master/console/#/master/users`)).status).toBe(200);
    expect((await auth(`${t.url}/admin/fresh/console/`)).status).toBe(400);
    expect((await auth(`${t.url}/realms/master/account/`)).status).toBe(400);
    expect((await auth(`${t.url}/admin/master/console/#code=forged`)).status).toBe(400);
    const grant = await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'security-admin-console', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
    expect(grant.status).toBe(400);
  });
});

describe('console-only endpoints, by role', () => {
  const demo = '/admin/realms/limited';
  let admin: string;
  /** A token of a user of realm `limited` holding the named realm-management roles (none: an ordinary user). */
  const tokenWith = async (username: string, roles: string[]) => {
    kc.setConfig({ realmName: 'limited' });
    const { id } = await kc.users.create({ username, enabled: true, emailVerified: true, firstName: 'Lee', lastName: username, credentials: [{ type: 'password', value: `${username}-password-1` }] });
    if (roles.length) {
      const [management] = await kc.clients.find({ clientId: 'realm-management' });
      const available = await kc.clients.listRoles({ id: management.id! });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: available.filter((r) => roles.includes(r.name!)).map((r) => ({ id: r.id!, name: r.name! })) });
    }
    kc.setConfig({ realmName: 'master' });
    const response = await tokenRequest(t.url, 'limited', { grant_type: 'password', client_id: 'admin-cli', username, password: `${username}-password-1` });
    return { token: response.body.access_token as string, id };
  };

  beforeAll(async () => {
    await kc.realms.create({ realm: 'limited', enabled: true });
    admin = await adminToken(t.url);
  });

  it('whoami: the master administrator sees every role over the realm it asks about, and may create realms', async () => {
    const me = await api(t.url, 'GET', '/admin/master/console/whoami?currentRealm=limited', admin);
    expect(me.status).toBe(200);
    expect(me.headers.get('cache-control')).toBe('no-store');
    expect(me.body).toMatchObject({ realm: 'master', displayName: ADMIN_USERNAME, createRealm: true, temporary: false, userId: expect.any(String) });
    expect(Object.keys(me.body.realm_access)).toEqual(['limited']);
    expect(me.body.realm_access.limited).toEqual(expect.arrayContaining(['view-realm', 'manage-realm', 'view-users', 'manage-users', 'view-clients', 'manage-clients', 'view-events', 'query-realms']));
  });

  it('the session list and the flow list, as the console reads them', async () => {
    await tokenWith('signed-in', ['view-realm']);
    const sessions = await api(t.url, 'GET', `${demo}/ui-ext/sessions?first=0&max=10&type=ALL&search=signed`, admin);
    expect(sessions.status).toBe(200);
    expect(sessions.body).toEqual([expect.objectContaining({ username: 'signed-in', type: 'REGULAR', clients: expect.any(Object) })]);
    expect((await api(t.url, 'GET', `${demo}/ui-ext/sessions?type=OFFLINE`, admin)).body).toEqual([]);
    const flows = await api(t.url, 'GET', `${demo}/ui-ext/authentication-management/flows`, admin);
    expect(flows.body.find((f: { alias: string }) => f.alias === 'browser')).toMatchObject({ builtIn: true, topLevel: true, usedBy: { type: 'DEFAULT', values: ['browser'] } });
    expect(flows.body.find((f: { alias: string }) => f.alias === 'direct grant')?.usedBy).toBeUndefined();
    expect((await api(t.url, 'GET', `${demo}/ui-ext/realms/names?search=LIMIT`, admin)).body).toEqual([{ name: 'limited', displayName: '' }]);
  });

  it('a user holding only view-users: whoami shows view-users and what it implies, nothing more; the console endpoints answer only that', async () => {
    const { token } = await tokenWith('viewer', ['view-users']);
    const me = await api(t.url, 'GET', '/admin/limited/console/whoami?currentRealm=limited', token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ realm: 'limited', displayName: 'Lee viewer', createRealm: false });
    expect(me.body.realm_access).toEqual({ limited: ['query-groups', 'query-users', 'view-users'] });
    // Another realm: no access listed; the master page's whoami is not this token's.
    expect((await api(t.url, 'GET', '/admin/limited/console/whoami?currentRealm=master', token)).body.realm_access).toEqual({});
    expect((await api(t.url, 'GET', '/admin/master/console/whoami', token)).status).toBe(404);
    expect((await api(t.url, 'GET', `${demo}/ui-ext/info`, token)).status).toBe(200);
    expect((await api(t.url, 'GET', `${demo}/localization/en`, token)).status).toBe(200);
    const users = await api(t.url, 'GET', `${demo}/ui-ext/brute-force-user?first=0&max=11`, token);
    expect(users.status).toBe(200);
    expect(users.body.map((u: { username: string }) => u.username)).toContain('viewer');
    expect(users.body[0].bruteForceStatus).toEqual({ numFailures: 0, numTemporaryLockouts: 0, numSecondaryAuthFailures: 0, disabled: false, lastIPFailure: 'n/a', lastFailure: 0, failedLoginNotBefore: 0 });
    expect((await api(t.url, 'GET', `${demo}/ui-ext/sessions?type=ALL`, token)).status).toBe(200);
    expect((await api(t.url, 'GET', `${demo}/ui-ext/available-event-listeners`, token)).status).toBe(200);
    // The realm picker names only the realm it administers; the flows are realm settings it may not read.
    expect((await api(t.url, 'GET', `${demo}/ui-ext/realms/names`, token)).body).toEqual([{ name: 'limited', displayName: '' }]);
    expect((await api(t.url, 'GET', `${demo}/ui-ext/authentication-management/flows`, token)).status).toBe(403);
    expect((await api(t.url, 'GET', `${demo}/authentication/required-actions`, token)).status).toBe(403);
    expect((await api(t.url, 'GET', `${demo}/ui-ext/sessions/client?clientId=${randomUUID()}`, token)).status).toBe(403);
    // Not an administrator of master, not of its realm settings.
    expect((await api(t.url, 'GET', '/admin/realms/master/ui-ext/info', token)).status).toBe(403);
    expect((await api(t.url, 'GET', '/admin/realms/master/ui-ext/brute-force-user', token)).status).toBe(403);
  });

  it('an ordinary user: whoami lists no realm; every console endpoint is 403; no token is 401', async () => {
    const { token } = await tokenWith('plain', []);
    const me = await api(t.url, 'GET', '/admin/limited/console/whoami?currentRealm=limited', token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ realm_access: {}, createRealm: false });
    for (const path of [`${demo}/ui-ext/realms/names`, `${demo}/ui-ext/info`, `${demo}/ui-ext/brute-force-user`, `${demo}/localization/en`, `${demo}/localization`, `${demo}/ui-ext/sessions`, `${demo}/ui-ext/available-event-listeners`, `${demo}/ui-ext/authentication-management/flows`]) {
      expect((await api(t.url, 'GET', path, token)).status, path).toBe(403);
      expect((await api(t.url, 'GET', path, null)).status, path).toBe(401);
    }
    expect((await api(t.url, 'GET', '/admin/limited/console/whoami', null)).status).toBe(401);
    expect((await api(t.url, 'GET', '/admin/limited/console/whoami', 'not-a-token')).status).toBe(401);
  });
});
