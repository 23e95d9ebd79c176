import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, adminToken, api, startServer, type TestServer } from './support/server.js';

const executionsOf = (t: TestServer, token: string, realm: string, flow: string) =>
  api(t.url, 'GET', `/admin/realms/${realm}/authentication/flows/${encodeURIComponent(flow)}/executions`, token);

describe('the demo realm file', () => {
  let t: TestServer;
  let token: string;
  beforeAll(async () => {
    t = await startServer({ providersDir: join(REPO_ROOT, 'providers'), config: { REALMGATE_IMPORT_REALM: join(REPO_ROOT, 'demo') } });
    token = await adminToken(t.url);
  });
  afterAll(() => t?.close());

  it('binds its registration flow copy with Email Domain Validation and proof of work, and enables the webhook', async () => {
    const realm = (await api(t.url, 'GET', '/admin/realms/demo', token)).body;
    expect(realm).toMatchObject({ registrationAllowed: true, registrationFlow: 'demo registration' });
    expect(realm.eventsListeners).toContain('ext-event-webhook');
    const executions = (await executionsOf(t, token, 'demo', 'demo registration')).body as { providerId?: string; requirement: string }[];
    const required = executions.filter((e) => e.requirement === 'REQUIRED').map((e) => e.providerId);
    expect(required).toEqual(['registration-page-form', 'ext-pow', 'registration-user-creation', 'ext-email-domain-validation', 'registration-password-action']);
  });

  it("points the demo client's webhook at this server's inbox, the placeholder replaced at import", async () => {
    const [client] = (await api(t.url, 'GET', '/admin/realms/demo/clients?clientId=demo', token)).body;
    expect(client.publicClient).toBe(true);
    expect(client.attributes['api.url']).toBe('http://127.0.0.1:0/dev/webhooks/inbox');
    expect(client.redirectUris).toEqual(['/dev/welcome']);
  });
});

describe('realm import of authenticationFlows and authenticatorConfig', () => {
  let t: TestServer;
  let token: string;
  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
  });
  afterAll(() => t?.close());

  /** A Keycloak export's shape: the built-in flows listed too, a copy of `browser` with a configured step. */
  const realmWithFlows = (name: string) => ({
    realm: name,
    enabled: true,
    browserFlow: 'my browser',
    authenticationFlows: [
      { id: 'x1', alias: 'browser', providerId: 'basic-flow', topLevel: true, builtIn: true, authenticationExecutions: [{ authenticator: 'auth-cookie', requirement: 'ALTERNATIVE', priority: 10 }] },
      {
        id: 'x2',
        alias: 'my browser',
        description: 'copy',
        providerId: 'basic-flow',
        topLevel: true,
        builtIn: false,
        authenticationExecutions: [
          { authenticator: 'auth-cookie', authenticatorFlow: false, requirement: 'ALTERNATIVE', priority: 10, userSetupAllowed: false, authenticatorConfig: 'cookie settings' },
          { authenticatorFlow: true, autheticatorFlow: true, flowAlias: 'my forms', requirement: 'ALTERNATIVE', priority: 20 },
        ],
      },
      {
        alias: 'my forms',
        providerId: 'basic-flow',
        topLevel: false,
        builtIn: false,
        authenticationExecutions: [{ authenticator: 'auth-username-password-form', authenticatorFlow: false, requirement: 'REQUIRED', priority: 10 }],
      },
    ],
    authenticatorConfig: [{ id: 'c1', alias: 'cookie settings', config: { note: 'kept' } }],
  });

  it('creates the non-built-in flows with their subflows and configs, and binds them', async () => {
    expect((await api(t.url, 'POST', '/admin/realms', token, realmWithFlows('flows-ok'))).status).toBe(201);
    expect((await api(t.url, 'GET', '/admin/realms/flows-ok', token)).body.browserFlow).toBe('my browser');
    const executions = (await executionsOf(t, token, 'flows-ok', 'my browser')).body as Record<string, unknown>[];
    expect(executions.map((e) => [e.level, e.displayName ?? e.providerId, e.requirement])).toEqual([
      [0, 'Cookie', 'ALTERNATIVE'],
      [0, 'my forms', 'ALTERNATIVE'],
      [1, 'Username Password Form', 'REQUIRED'],
    ]);
    const config = await api(t.url, 'GET', `/admin/realms/flows-ok/authentication/config/${executions[0].authenticationConfig}`, token);
    expect(config.body).toMatchObject({ alias: 'cookie settings', config: { note: 'kept' } });
    // The built-in browser flow is the realm's own, not a second one from the file.
    const flows = (await api(t.url, 'GET', '/admin/realms/flows-ok/authentication/flows', token)).body as { alias: string }[];
    expect(flows.filter((f) => f.alias === 'browser')).toHaveLength(1);
  });

  it.each([
    ['an unknown requirement', (r: any) => (r.authenticationFlows[1].authenticationExecutions[0].requirement = 'SOMETIMES'), /realm\.authenticationFlows\[1\]\.authenticationExecutions\[0\]\.requirement/],
    ['a requirement the provider does not allow', (r: any) => (r.authenticationFlows[2].authenticationExecutions[0].requirement = 'DISABLED'), /realm\.authenticationFlows\[2\]\.authenticationExecutions\[0\]\.requirement: DISABLED is not one of REQUIRED/],
    ['a subflow that is not in the file', (r: any) => (r.authenticationFlows[1].authenticationExecutions[1].flowAlias = 'nowhere'), /realm\.authenticationFlows\[1\]\.authenticationExecutions\[1\]\.flowAlias: no flow "nowhere"/],
    ['a config that is not in the file', (r: any) => (r.authenticatorConfig = []), /realm\.authenticationFlows\[1\]\.authenticationExecutions\[0\]\.authenticatorConfig: no authenticatorConfig entry with alias "cookie settings"/],
    ['an alias a built-in flow has', (r: any) => (r.authenticationFlows[1].alias = 'registration'), /realm\.authenticationFlows\[1\]\.alias: flow "registration" already exists/],
    ['a form action in a basic flow', (r: any) => (r.authenticationFlows[2].authenticationExecutions[0].authenticator = 'registration-user-creation'), /realm\.authenticationFlows\[2\]\.authenticationExecutions\[0\]\.authenticator: "registration-user-creation" is a form-action/],
    ['a binding to no flow', (r: any) => (r.browserFlow = 'missing'), /realm\.browserFlow: no flow "missing"/],
  ])('refuses %s, naming the JSON path, and creates nothing', async (_name, spoil, message) => {
    const body = realmWithFlows('flows-bad');
    spoil(body);
    const response = await api(t.url, 'POST', '/admin/realms', token, body);
    expect(response.status).toBe(400);
    expect(response.body.errorMessage).toMatch(message);
    expect((await api(t.url, 'GET', '/admin/realms/flows-bad', token)).status).toBe(404);
  });
});

describe('the development routes', () => {
  let dev: TestServer;
  let production: TestServer;
  beforeAll(async () => {
    dev = await startServer({ config: { REALMGATE_MODE: 'development' } });
    production = await startServer({ config: { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME: 'http://auth.example.test' } });
  });
  afterAll(async () => {
    await dev?.close();
    await production?.close();
  });

  it('do not exist in production mode', async () => {
    for (const [method, path] of [['GET', '/dev/webhooks'], ['POST', '/dev/webhooks/inbox'], ['GET', '/dev/welcome']]) {
      expect((await api(production.url, method, path, null, method === 'POST' ? { type: 'REGISTER' } : undefined)).status, path).toBe(404);
    }
  });

  it('show deliveries newest first, escaped, the Authorization header masked, and only the last 100', async () => {
    const post = (body: unknown) => api(dev.url, 'POST', '/dev/webhooks/inbox', null, body, { authorization: 'Bearer very-secret-key-abcd' });
    for (let i = 0; i < 103; i++) expect((await post({ type: 'LOGIN', n: i })).status).toBe(204);
    expect((await post({ type: '<img src=x onerror=alert(1)>', user_name: '</pre><script>alert(1)</script>' })).status).toBe(204);
    const page = await fetch(`${dev.url}/dev/webhooks`);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html.match(/<article>/g)).toHaveLength(100);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('••••••••abcd');
    expect(html).not.toContain('very-secret-key');
    // Newest first: the escaped one, then LOGIN 102 … down to 4 (0 to 3 fell off).
    const at = (n: number) => html.indexOf(`&quot;n&quot;: ${n}\n`);
    expect(html.indexOf('&lt;img')).toBeLessThan(at(102));
    expect(at(102)).toBeGreaterThan(0);
    expect(at(102)).toBeLessThan(at(4));
    expect(at(3)).toBe(-1);
  });

  it('answers a landing without a code with a page, not an error', async () => {
    const response = await fetch(`${dev.url}/dev/welcome?error=access_denied&error_description=%3Cb%3Enope`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('access_denied');
    expect(html).toContain('&lt;b&gt;nope');
  });
});
