import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recording } from './fixtures/providers/test-provider/index.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

const fixtures = resolve(import.meta.dirname, 'fixtures');
const goodProviders = join(fixtures, 'providers');

/**
 * A providers directory holding links to the named fixture packages, as an operator would install them.
 * The server loads them in name order; a `zz-` prefix on the link loads a package after test-provider.
 */
function providersDirWith(packages: string[]): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-providers-'));
  for (const link of packages) {
    const pkg = link.replace(/^zz-/, '');
    const source = pkg === 'test-provider' ? join(goodProviders, pkg) : join(fixtures, 'broken-providers', pkg);
    symlinkSync(source, join(dir, link), 'dir');
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function startWith(packages: string[], env: Record<string, string> = {}): Promise<TestServer> {
  const providers = providersDirWith(packages);
  try {
    return await startServer({ providersDir: providers.dir, env });
  } finally {
    providers.remove();
  }
}

describe('a provider package in the providers directory', () => {
  let t: TestServer;
  let admin: string;
  const password = 'Alice-pass-9';
  let aliceId: string;
  let serviceAccountId: string;
  let serviceSecret: string;

  beforeAll(async () => {
    t = await startServer({ providersDir: goodProviders, env: { TEST_RECORDER_ID: 'providers-test' } });
    admin = await adminToken(t.url);
    for (const realm of ['acme', 'other']) {
      expect((await api(t.url, 'POST', '/admin/realms', admin, { realm, enabled: true })).status).toBe(201);
      const user = await api(t.url, 'POST', `/admin/realms/${realm}/users`, admin, {
        username: 'alice',
        enabled: true,
        credentials: [{ type: 'password', value: password }],
      });
      expect(user.status).toBe(201);
      if (realm === 'acme') aliceId = user.headers.get('location')!.split('/').pop()!;
    }
    const created = await api(t.url, 'POST', '/admin/realms/acme/clients', admin, { clientId: 'svc', publicClient: false, serviceAccountsEnabled: true });
    expect(created.status).toBe(201);
    const clientUuid = created.headers.get('location')!.split('/').pop()!;
    serviceSecret = (await api(t.url, 'GET', `/admin/realms/acme/clients/${clientUuid}/client-secret`, admin)).body.value;
    serviceAccountId = (await api(t.url, 'GET', `/admin/realms/acme/clients/${clientUuid}/service-account-user`, admin)).body.id;
  });
  afterAll(() => t?.close());

  const whoami = (realm: string, token: string | null, headers: Record<string, string> = {}) =>
    api(t.url, 'GET', `/realms/${realm}/test-recorder/whoami`, token, undefined, headers);
  const passwordToken = async (realm: string) => {
    const response = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username: 'alice', password });
    expect(response.status).toBe(200);
    return response.body as { access_token: string; refresh_token: string };
  };

  it('is listed by GET /admin/serverinfo with its package and version, next to the built-in listener', async () => {
    const info = await api(t.url, 'GET', '/admin/serverinfo', admin);
    expect(info.status).toBe(200);
    const listeners = info.body.providers.eventsListener.providers;
    expect(Object.keys(listeners)).toEqual(expect.arrayContaining(['jboss-logging', 'test-recorder', 'test-slow', 'test-failing']));
    expect(listeners['test-recorder'].operationalInfo).toMatchObject({ package: '@realmgate-test/test-provider', version: '1.2.3', builtin: 'false' });
    expect(Object.keys(info.body.providers['realm-restapi-extension'].providers)).toEqual(['test-recorder']);
    expect(info.body.realmgateProviders).toContainEqual({
      id: 'test-recorder',
      kind: 'realm-resource',
      package: '@realmgate-test/test-provider',
      version: '1.2.3',
      builtin: false,
    });
  });

  it('is logged at start-up with its package name, version and provider ids', () => {
    const line = t.logs.find((l) => l.msg === 'provider package loaded' && l.package === '@realmgate-test/test-provider');
    expect(line).toMatchObject({ version: '1.2.3', providers: expect.arrayContaining(['test-recorder', 'test-slow']) });
  });

  it('serves its realm resource to a realm user holding a password-grant token', async () => {
    const tokens = await passwordToken('acme');
    const response = await whoami('acme', tokens.access_token);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ sub: aliceId, serviceAccount: false, username: 'alice', clientId: null, realm: 'acme' });
  });

  it('tells a service account (client_credentials token) apart', async () => {
    const tokens = await tokenRequest(t.url, 'acme', { grant_type: 'client_credentials', client_id: 'svc', client_secret: serviceSecret });
    expect(tokens.status).toBe(200);
    const response = await whoami('acme', tokens.body.access_token as string);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ sub: serviceAccountId, serviceAccount: true, clientId: 'svc' });
  });

  it('refuses a missing, malformed or tampered token, and a refresh token, with 401', async () => {
    expect((await whoami('acme', null)).status).toBe(401);
    expect((await whoami('acme', 'not-a-jwt')).status).toBe(401);
    const { access_token, refresh_token } = await passwordToken('acme');
    const [header, payload] = access_token.split('.');
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString());
    forged.sub = serviceAccountId;
    const tampered = `${header}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${access_token.split('.')[2]}`;
    const rejected = await whoami('acme', tampered);
    expect(rejected.status).toBe(401);
    expect(rejected.body.error).toBe('invalid_token');
    expect((await whoami('acme', refresh_token)).status).toBe(401);
  });

  it('refuses a valid token of another realm (401), including the master administrator', async () => {
    const other = await passwordToken('other');
    expect((await whoami('other', other.access_token)).status).toBe(200);
    const crossRealm = await whoami('acme', other.access_token);
    expect(crossRealm.status).toBe(401);
    expect((await whoami('acme', admin)).status).toBe(401);
  });

  it('answers 404 for a realm that does not exist', async () => {
    const tokens = await passwordToken('acme');
    expect((await whoami('nowhere', tokens.access_token)).status).toBe(404);
  });

  it('gets a shared store namespaced by its id', async () => {
    const put = await api(t.url, 'PUT', '/realms/acme/test-recorder/store/greeting', null, { value: 'hello' });
    expect(put.status).toBe(204);
    expect((await api(t.url, 'GET', '/realms/acme/test-recorder/store/greeting', null)).body).toEqual({ value: 'hello' });
    const whole = t.server.context.store;
    expect(await whole.get('provider:test-recorder:greeting')).toBe('hello');
    expect(await whole.get('greeting')).toBeNull();
    // A key written outside the namespace is invisible to the provider.
    await whole.set('secret-of-the-host', 'x');
    expect((await api(t.url, 'GET', '/realms/acme/test-recorder/store/secret-of-the-host', null)).body).toEqual({ value: null });
  });
});

describe('each server of a process gets factories of its own from createProviders()', () => {
  it('two servers with the webhook extension hold different factory objects, and closing one leaves the other working', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-providers-'));
    symlinkSync(resolve(import.meta.dirname, '../../event-webhook'), join(dir, 'event-webhook'), 'dir');
    const first = await startServer({ providersDir: dir });
    let firstOpen = true;
    const second = await startServer({ providersDir: dir });
    try {
      const factoryOf = (t: TestServer) => t.server.context.providers.get('event-listener', 'ext-event-webhook')!.factory;
      expect(factoryOf(first)).toBeDefined();
      expect(factoryOf(first)).not.toBe(factoryOf(second));
      await first.close();
      firstOpen = false;
      // The second server's listener was not closed with the first one's.
      const response = await tokenRequest(second.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: 'admin', password: 'wrong' });
      expect(response.status).toBe(400);
      expect(second.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
    } finally {
      if (firstOpen) await first.close();
      await second.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a provider's client-attribute check (SPI validateClientAttributes) on the clients API", () => {
  it('answers 400 naming the attribute and writes nothing; the webhook extension refuses internal targets in production mode only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-providers-'));
    symlinkSync(resolve(import.meta.dirname, '../../event-webhook'), join(dir, 'event-webhook'), 'dir');
    const production = await startServer({ providersDir: dir, config: { REALMGATE_MODE: 'production', REALMGATE_HOSTNAME: 'https://auth.example.test' } });
    const development = await startServer({ providersDir: dir });
    try {
      const token = await adminToken(production.url);
      const attributes = (url: string) => ({ 'api.url': url, 'api.key': 'k-1' });
      const refusedCreate = await api(production.url, 'POST', '/admin/realms/master/clients', token, { clientId: 'meta', attributes: attributes('http://2852039166/latest/meta-data/') });
      expect(refusedCreate.status).toBe(400);
      expect(JSON.stringify(refusedCreate.body)).toContain('api.url: 169.254.169.254 is a link-local address');
      const none = await api(production.url, 'GET', '/admin/realms/master/clients?clientId=meta', token);
      expect(none.body).toEqual([]);

      const created = await api(production.url, 'POST', '/admin/realms/master/clients', token, { clientId: 'shop', attributes: attributes('https://hooks.example.test/in') });
      expect(created.status).toBe(201);
      const [shop] = (await api(production.url, 'GET', '/admin/realms/master/clients?clientId=shop', token)).body as { id: string; attributes: Record<string, string> }[];
      for (const url of ['http://127.0.0.1:8080/dev/webhooks/inbox', 'http://localhost/', 'http://[::ffff:169.254.169.254]/', 'ftp://hooks.example.test/']) {
        const refused = await api(production.url, 'PUT', `/admin/realms/master/clients/${shop.id}`, token, { ...shop, attributes: attributes(url) });
        expect(refused.status, url).toBe(400);
        expect(JSON.stringify(refused.body), url).toContain('api.url: ');
      }
      const after = await api(production.url, 'GET', `/admin/realms/master/clients/${shop.id}`, token);
      expect((after.body as { attributes: Record<string, string> }).attributes['api.url']).toBe('https://hooks.example.test/in');
      const moved = await api(production.url, 'PUT', `/admin/realms/master/clients/${shop.id}`, token, { ...shop, attributes: attributes('http://10.0.0.9:8080/in') });
      expect(moved.status).toBe(204);

      // Development mode: the demo realm's inbox lives on the server itself.
      const devToken = await adminToken(development.url);
      const local = await api(development.url, 'POST', '/admin/realms/master/clients', devToken, { clientId: 'local', attributes: attributes('http://127.0.0.1:8080/dev/webhooks/inbox') });
      expect(local.status).toBe(201);
    } finally {
      await production.close();
      await development.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a provider that cannot be installed stops start-up', () => {
  it('refuses two providers that share an id, naming the id and both packages', async () => {
    const start = startWith(['test-provider', 'duplicate-id']);
    await expect(start).rejects.toThrow(/"test-recorder"/);
    await expect(start).rejects.toThrow(/@realmgate-test\/test-provider/);
    await expect(start).rejects.toThrow(/@realmgate-test\/duplicate-id/);
  });

  it('refuses a package whose import throws, naming the package and the cause', async () => {
    const start = startWith(['import-throws']);
    await expect(start).rejects.toThrow(/@realmgate-test\/import-throws/);
    await expect(start).rejects.toThrow(/exploded at import/);
  });

  it('refuses a package that exports no providers, naming it', async () => {
    // Its package.json has conditional exports without a "." key, so this also checks the entry is found.
    await expect(startWith(['no-providers'])).rejects.toThrow('provider package @realmgate-test/no-providers exports neither createProviders() nor a "providers" array');
  });

  it('refuses a package whose createProviders() throws, naming the package and the cause', async () => {
    await expect(startWith(['create-providers-throws'])).rejects.toThrow(/@realmgate-test\/create-providers-throws failed to create its providers: no factories today/);
  });

  it('refuses an id another package holds, even for another kind (ids name store namespaces)', async () => {
    await expect(startWith(['builtin-clash'])).rejects.toThrow(/"jboss-logging".*event-listener in @realmgate\/server.*realm-resource in @realmgate-test\/builtin-clash/);
  });

  it('refuses a provider whose init fails, naming it, and closes the providers already initialized', async () => {
    await expect(startWith(['test-provider', 'zz-init-fails'], { TEST_RECORDER_ID: 'init-fails' })).rejects.toThrow(
      /test-init-fails \(@realmgate-test\/init-fails\) failed to initialize: no licence key configured/,
    );
    expect(recording('init-fails').closed).toEqual(expect.arrayContaining(['event-listener:test-recorder', 'realm-resource:test-recorder']));
  });

  it('refuses a provider whose create() throws, naming it, and closes what was initialized', async () => {
    await expect(startWith(['test-provider', 'zz-create-throws'], { TEST_RECORDER_ID: 'create-throws' })).rejects.toThrow(
      /test-create-throws \(@realmgate-test\/create-throws\).*listener constructor failed/,
    );
    expect(recording('create-throws').closed).toContain('event-listener:test-recorder');
  });

  it('refuses a realm resource whose routes cannot be mounted, naming the provider and the route', async () => {
    await expect(startWith(['test-provider', 'route-clash'], { TEST_RECORDER_ID: 'route-clash' })).rejects.toThrow(
      /realm resource test-route-clash cannot mount GET \/realms\/:realm\/test-route-clash\/same/,
    );
    expect(recording('route-clash').closed).toContain('realm-resource:test-recorder');
  });

  it('starts with the built-in providers only when the providers directory does not exist', async () => {
    const t = await startServer({ providersDir: join(fixtures, 'no-such-directory') });
    try {
      const info = await api(t.url, 'GET', '/admin/serverinfo', await adminToken(t.url));
      expect(info.body.realmgateProviders.map((p: { id: string }) => p.id)).toEqual(['jboss-logging']);
    } finally {
      await t.close();
    }
  });
});

describe('closing providers', () => {
  it('closes every provider on shutdown, and does not wait beyond the grace period for one that hangs', async () => {
    const t = await startServer({
      providersDir: goodProviders,
      env: { TEST_RECORDER_ID: 'hang-on-close', TEST_PROVIDER_HANG_ON_CLOSE: '1' },
      config: { REALMGATE_SHUTDOWN_GRACE_MS: '300' },
    });
    // The resource's close() never settles: close() returning at all is the grace period giving up on it.
    await t.close();
    // Reverse load order: the resource (which hangs) first, then each listener all the same.
    expect(recording('hang-on-close').closed).toEqual([
      'realm-resource:test-recorder',
      'event-listener:test-slow',
      'event-listener:test-failing',
      'event-listener:test-bystander',
      'event-listener:test-recorder',
    ]);
    expect(t.logs.filter((l) => l.msg === 'provider failed to close')).toEqual([expect.objectContaining({ provider: 'test-recorder', err: expect.objectContaining({ message: 'did not close within 300 ms' }) })]);
  });
});
