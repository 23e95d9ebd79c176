import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildAccountConsole } from '../../account-console/build.js';
import { startServer, type TestServer } from './support/server.js';

// Issue 14, point 7: an anonymous visit to the account pages once logged a TypeError while showing the sign-in
// form. Every way a visitor without a session arrives must show the form and log nothing at error level.
let t: TestServer;
beforeAll(async () => {
  // The console's page is served from its build (npm test builds it first; a file run alone builds it here).
  await buildAccountConsole({ quiet: true });
  t = await startServer();
});
afterAll(() => t?.close());

it('an anonymous GET of the server-rendered account pages shows the sign-in form and logs no error', async () => {
  const visits: [string, Record<string, string>][] = [
    ['/realms/master/account/profile', {}],
    ['/realms/master/account/profile', { accept: 'text/html,application/xhtml+xml' }],
    ['/realms/master/account/password', {}],
    ['/realms/master/account/delete', {}],
    ['/realms/master/account/profile', { cookie: 'REALMGATE_SESSION=no-such-session; AUTH_SESSION=forged' }],
    ['/realms/master/account/profile?referrer=x&referrer_uri=https://evil.example', {}],
  ];
  for (const [path, headers] of visits) {
    const response = await fetch(`${t.url}${path}`, { headers });
    expect(response.status, path).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html, path).toContain('id="kc-form-login"');
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  // pino levels: 50 error, 60 fatal; a TypeError caught by Fastify is logged at 50.
  expect(t.logs.filter((line) => (line.level as number) >= 50)).toEqual([]);
});

// Issue 42: /account/ is Keycloak's account console, which signs in through keycloak-js (no form on the page).
it('an anonymous GET of /account/ answers the account console page, its environment as JSON', async () => {
  for (const [path, headers] of [['/realms/master/account/', { accept: 'text/html,application/xhtml+xml' }], ['/realms/master/account/account-security/signing-in', {}]] as const) {
    const response = await fetch(`${t.url}${path}`, { headers });
    expect(response.status, path).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await response.text();
    expect(html).not.toContain('id="kc-form-login"');
    const environment = JSON.parse(/<script id="environment" type="application\/json">(.*?)<\/script>/s.exec(html)![1]) as Record<string, unknown>;
    expect(environment).toMatchObject({ realm: 'master', clientId: 'account-console', baseUrl: `${t.url}/realms/master/account/`, referrerUrl: '' });
  }
  // Where a console page shares its path with an API resource: the page for a browser's navigation, the API otherwise.
  const page = await fetch(`${t.url}/realms/master/account/applications`, { headers: { accept: 'text/html,application/xhtml+xml' } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('<script id="environment"');
  for (const headers of [{}, { accept: 'application/json' }, { accept: '*/*' }] as Record<string, string>[]) {
    const api = await fetch(`${t.url}/realms/master/account/applications`, { headers });
    expect(api.status, JSON.stringify(headers)).toBe(401);
    expect(api.headers.get('content-type')).toMatch(/^application\/json/);
  }
  // A script asking for JSON at a path the API does not have gets a 404, not the console's page.
  expect((await fetch(`${t.url}/realms/master/account/no-such-resource`, { headers: { accept: 'application/json' } })).status).toBe(404);
  const bare = await fetch(`${t.url}/realms/master/account?referrer=x`, { redirect: 'manual' });
  expect(bare.status).toBe(302);
  expect(bare.headers.get('location')).toBe('/realms/master/account/?referrer=x');
  // A referrer_uri the referring client may not redirect to is dropped, as Keycloak drops it.
  const evil = await (await fetch(`${t.url}/realms/master/account/?referrer=security-admin-console&referrer_uri=https://evil.example/`)).text();
  expect(evil).not.toContain('evil.example');
  const back = await (await fetch(`${t.url}/realms/master/account/?referrer=security-admin-console&referrer_uri=${encodeURIComponent(`${t.url}/admin/master/console/`)}`)).text();
  expect(back).toContain(`"referrerUrl":"${t.url}/admin/master/console/"`);
});
