import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from './support/server.js';

// Issue 14, point 7: an anonymous visit to the account pages once logged a TypeError while showing the sign-in
// form. Every way a visitor without a session arrives must show the form and log nothing at error level.
let t: TestServer;
beforeAll(async () => {
  t = await startServer();
});
afterAll(() => t?.close());

it('an anonymous GET of the account pages shows the sign-in form and logs no error', async () => {
  const visits: [string, Record<string, string>][] = [
    ['/realms/master/account', {}],
    ['/realms/master/account/', { accept: 'text/html,application/xhtml+xml' }],
    ['/realms/master/account/password', {}],
    ['/realms/master/account/delete', {}],
    ['/realms/master/account', { cookie: 'REALMGATE_SESSION=no-such-session; AUTH_SESSION=forged' }],
    ['/realms/master/account?referrer=x&referrer_uri=https://evil.example', {}],
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
