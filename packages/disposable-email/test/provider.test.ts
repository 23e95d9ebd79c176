import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Script } from 'node:vm';
import type {
  FormAction,
  FormActionFactory,
  HttpMethod,
  RealmResource,
  RealmResourceFactory,
  ResourceResponse,
  TokenVerification,
} from '@realmgate/spi';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Blocklist, defaultBlocklist } from '../src/blocklist.js';
import * as entry from '../src/index.js';
import {
  FORM_ACTION_ID,
  REFRESH_CHANNEL,
  REJECTION_MESSAGE,
  RESOURCE_ID,
  createProviders,
} from '../src/provider.js';
import { FakeBus, fakeContext, realm, requestInfo, tempDir, until, writeDataFile } from './helpers.js';
import type { FakeContext } from './helpers.js';

let dir: { path: string; remove: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
});
afterAll(async () => {
  await dir.remove();
});

let counter = 0;
async function newList(domains: string[] = ['disposable.example', 'trash.example']) {
  const dataPath = await writeDataFile(join(dir.path, `data-${counter++}.js`), domains);
  return { dataPath, list: new Blocklist({ dataPath }) };
}

interface Setup {
  formAction: FormActionFactory;
  resource: RealmResourceFactory;
  action: FormAction;
  routes: RealmResource;
  fake: FakeContext;
  list: Blocklist;
  dataPath: string;
}

async function setUp(options: Parameters<typeof fakeContext>[0] & { domains?: string[] } = {}): Promise<Setup> {
  const { list, dataPath } = await newList(options.domains);
  const [formAction, resource] = createProviders(list) as [FormActionFactory, RealmResourceFactory];
  const fake = fakeContext(options);
  await formAction.init?.(fakeContext().context);
  await resource.init?.(fake.context);
  return { formAction, resource, action: formAction.create(), routes: resource.create(), fake, list, dataPath };
}

function call(
  routes: RealmResource,
  method: HttpMethod,
  path: string,
  request: { query?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<ResourceResponse> {
  const route = routes.routes.find((r) => r.method === method && r.path === path);
  if (!route) throw new Error(`no route ${method} ${path}`);
  return Promise.resolve(
    route.handler({
      realm,
      method,
      params: {},
      query: request.query ?? {},
      headers: request.headers ?? {},
      body: undefined,
      request: requestInfo,
    }),
  );
}

const serviceAccountAdmin: TokenVerification = {
  valid: true,
  serviceAccount: true,
  claims: {
    iss: 'http://localhost/realms/demo',
    sub: 'sa-id',
    exp: 2e9,
    iat: 1e9,
    jti: 'j',
    typ: 'Bearer',
    client_id: 'list-refresher',
    resource_access: { 'realm-management': { roles: ['view-users', 'realm-admin'] } },
  },
};

/** Token verifier by token text, as the host's would answer. */
function verifier(token: string): TokenVerification {
  const claims = serviceAccountAdmin.valid ? serviceAccountAdmin.claims : never();
  switch (token) {
    case 'sa-admin':
      return serviceAccountAdmin;
    case 'user-admin':
      return { valid: true, serviceAccount: false, claims: { ...claims, sub: 'user-id', client_id: undefined } };
    case 'sa-no-role':
      return { valid: true, serviceAccount: true, claims: { ...claims, resource_access: { 'realm-management': { roles: ['manage-users'] } } } };
    case 'sa-role-elsewhere':
      return { valid: true, serviceAccount: true, claims: { ...claims, resource_access: { account: { roles: ['realm-admin'] } } } };
    case 'sa-realm-role':
      return { valid: true, serviceAccount: true, claims: { ...claims, resource_access: undefined, realm_access: { roles: ['realm-admin'] } } };
    default:
      return { valid: false, reason: 'bad signature' };
  }
}

function never(): never {
  throw new Error('unreachable');
}

describe('the package entry', () => {
  it('exports both factories as `providers`, around the process-wide list', () => {
    expect(entry.providers.map((p) => [p.kind, p.id])).toEqual([
      ['form-action', FORM_ACTION_ID],
      ['realm-resource', RESOURCE_ID],
    ]);
    expect(entry.isDisposableEmail).toBeTypeOf('function');
    expect(entry.size()).toBe(defaultBlocklist.size);
  });

  it('describes the form action as the admin console lists it', () => {
    const [formAction] = createProviders(defaultBlocklist) as [FormActionFactory];
    expect(formAction).toMatchObject({
      id: 'ext-email-domain-validation',
      displayName: 'Email Domain Validation',
      requirementChoices: ['REQUIRED', 'DISABLED'],
    });
  });
});

describe('form action', () => {
  it('rejects a disposable domain or subdomain with an error on the e-mail field', async () => {
    const { action } = await setUp();
    for (const email of ['someone@disposable.example', 'Someone@Mail.Trash.Example']) {
      const result = await action.validate({ realm, clientId: 'app', form: { email, username: 'u' }, config: {}, request: requestInfo });
      expect(result).toEqual({
        ok: false,
        error: 'invalid_email_domain',
        fieldErrors: [{ field: 'email', message: REJECTION_MESSAGE }],
      });
    }
  });

  it('accepts other domains, a missing e-mail, and malformed input', async () => {
    const { action } = await setUp();
    const forms: Record<string, string>[] = [{ email: 'someone@example.com' }, {}, { email: '' }, { email: 'disposable.example' }, { email: 'x@' }];
    for (const form of forms) {
      const result = await action.validate({ realm, clientId: null, form, config: {}, request: requestInfo });
      expect(result, JSON.stringify(form)).toEqual({ ok: true });
    }
  });

  it('logs the domain of a rejection, never the address, and counts it', async () => {
    const { list } = await newList();
    const [formAction] = createProviders(list) as [FormActionFactory];
    const fake = fakeContext();
    await formAction.init?.(fake.context);
    await formAction.create().validate({ realm, clientId: null, form: { email: 'secret.person@x.disposable.example' }, config: {}, request: requestInfo });
    const text = JSON.stringify(fake.logs);
    expect(text).toContain('x.disposable.example');
    expect(text).not.toContain('secret.person');
    expect(fake.metrics.get('realmgate_disposable_email_rejections_total')?.values).toEqual([{ labels: undefined, value: 1 }]);
  });

  it('warns about settings put under its own section', async () => {
    const [formAction] = createProviders(defaultBlocklist) as [FormActionFactory];
    const fake = fakeContext({ config: { allowlist: ['a.example'] } });
    await formAction.init?.(fake.context);
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringContaining(`providers.${RESOURCE_ID}`) }));
  });

  it('renders one script tag pointing at the resource, attribute-escaped', async () => {
    const { action } = await setUp();
    expect(await action.renderAssets?.({ realm, assetsBaseUrl: '/realms/demo' })).toBe(
      `<script src="/realms/demo/${RESOURCE_ID}/assets/email-check.js" defer></script>`,
    );
    const hostile = await action.renderAssets?.({ realm, assetsBaseUrl: '/realms/"><script>alert(1)</script>/' });
    expect(hostile).toBe(
      `<script src="/realms/&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;/${RESOURCE_ID}/assets/email-check.js" defer></script>`,
    );
  });
});

describe('GET /check-email', () => {
  it('answers {"disposable":bool}', async () => {
    const { routes } = await setUp();
    expect(await call(routes, 'GET', '/check-email', { query: { email: 'a@sub.disposable.example' } })).toMatchObject({
      status: 200,
      body: { disposable: true },
    });
    expect(await call(routes, 'GET', '/check-email', { query: { email: 'a@example.com' } })).toMatchObject({
      status: 200,
      headers: { 'cache-control': 'no-store' },
      body: { disposable: false },
    });
    expect(await call(routes, 'GET', '/check-email', { query: { email: 'not-an-address' } })).toMatchObject({
      status: 200,
      body: { disposable: false },
    });
  });

  it('answers 400 with a message when the parameter is missing, empty or over 320 characters', async () => {
    const { routes } = await setUp();
    for (const query of [{}, { email: '' }] as Record<string, string>[]) {
      const response = await call(routes, 'GET', '/check-email', { query });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', error_description: 'The email query parameter is required.' });
    }
    const long = `${'a'.repeat(320 - '@disposable.example'.length)}@disposable.example`;
    expect(long).toHaveLength(320);
    expect(await call(routes, 'GET', '/check-email', { query: { email: long } })).toMatchObject({ status: 200, body: { disposable: true } });
    const tooLong = await call(routes, 'GET', '/check-email', { query: { email: `a${long}` } });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({ error: 'invalid_request', error_description: expect.stringContaining('320') });
  });
});

describe('GET /assets/email-check.js', () => {
  it('serves the check script as JavaScript that compiles', async () => {
    const { routes } = await setUp();
    const response = await call(routes, 'GET', '/assets/email-check.js');
    expect(response.status).toBe(200);
    expect(response.headers?.['content-type']).toBe('text/javascript; charset=utf-8');
    expect(() => new Script(response.body as string)).not.toThrow();
    expect(response.body).toContain(JSON.stringify(REJECTION_MESSAGE));
  });
});

describe('POST /refresh-domain-list', () => {
  const refreshCall = (routes: RealmResource, authorization?: string) =>
    call(routes, 'POST', '/refresh-domain-list', { headers: authorization === undefined ? {} : { authorization } });

  it('401 without or with a malformed Authorization header, without asking the verifier', async () => {
    const { routes, fake } = await setUp({ verify: verifier });
    for (const header of [undefined, '', 'Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'Bearer a b', 'Bearer <script>', 'sa-admin', 'NotBearer sa-admin', 'Bearer sa-admin\nx']) {
      const response = await refreshCall(routes, header);
      expect(response.status, String(header)).toBe(401);
      expect(response.body).toMatchObject({ error: 'invalid_request', error_description: expect.any(String) });
      expect(response.headers?.['www-authenticate']).toMatch(/^Bearer realm="demo"/);
    }
    expect(fake.verifyCalls).toEqual([]);
  });

  it('401 for a token the host rejects (invalid, expired, other realm)', async () => {
    const { routes, fake } = await setUp({ verify: verifier });
    const response = await refreshCall(routes, 'Bearer eyJ.forged.token');
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ error: 'invalid_token' });
    expect(response.headers?.['www-authenticate']).toBe('Bearer realm="demo", error="invalid_token"');
    expect(fake.verifyCalls).toEqual([{ realm: 'demo', token: 'eyJ.forged.token' }]);
  });

  it('403 for a user token even with realm-admin, and for service accounts without the realm-management role', async () => {
    const { routes, list } = await setUp({ verify: verifier });
    const spy = vi.spyOn(list, 'refresh');
    for (const token of ['user-admin', 'sa-no-role', 'sa-role-elsewhere', 'sa-realm-role']) {
      const response = await refreshCall(routes, `Bearer ${token}`);
      expect(response.status, token).toBe(403);
      expect(response.body).toMatchObject({ error: 'insufficient_scope', error_description: expect.any(String) });
    }
    expect(spy).not.toHaveBeenCalled();
  });

  it('200 with the new count for a service account with realm-admin; the list is re-read from disk', async () => {
    const { routes, list, dataPath, fake } = await setUp({ verify: verifier });
    await writeDataFile(dataPath, ['disposable.example', 'trash.example', 'fresh.example']);
    expect(list.isDisposable('a@fresh.example')).toBe(false);
    const response = await refreshCall(routes, 'bearer  sa-admin');
    expect(response).toMatchObject({
      status: 200,
      body: { success: true, message: expect.any(String), domains: 3 },
    });
    expect(list.isDisposable('a@fresh.example')).toBe(true);
    expect(fake.metrics.get('realmgate_disposable_email_domains')?.values.at(-1)?.value).toBe(3);
    expect(fake.metrics.get('realmgate_disposable_email_refreshes_total')?.values).toEqual([{ labels: { outcome: 'success' }, value: 1 }]);
  });

  it('500 and the old list kept when the rebuild fails', async () => {
    const { routes, list, dataPath, fake } = await setUp({ verify: verifier });
    await unlink(dataPath);
    const response = await refreshCall(routes, 'Bearer sa-admin');
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ success: false, message: expect.stringContaining('previous list (2 domains) is kept') });
    expect(list.size).toBe(2);
    expect(list.isDisposable('a@disposable.example')).toBe(true);
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'error' }));
  });

  it('reaches the other server processes through the shared store, and the sender skips its own message', async () => {
    const bus = new FakeBus();
    const one = await setUp({ verify: verifier, bus });
    const two = await setUp({ verify: verifier, bus });
    expect(bus.subscriberCount(REFRESH_CHANNEL)).toBe(2);
    const oneRefresh = vi.spyOn(one.list, 'refresh');
    const twoRefresh = vi.spyOn(two.list, 'refresh');
    await writeDataFile(two.dataPath, ['disposable.example', 'trash.example', 'pushed.example']);

    const response = await call(one.routes, 'POST', '/refresh-domain-list', { headers: { authorization: 'Bearer sa-admin' } });
    expect(response.status).toBe(200);
    expect(bus.published).toHaveLength(1);
    expect(bus.published[0].channel).toBe(REFRESH_CHANNEL);
    await until(() => two.list.isDisposable('a@pushed.example'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(oneRefresh).toHaveBeenCalledTimes(1);
    expect(twoRefresh).toHaveBeenCalledTimes(1);
    expect(two.fake.logs).toContainEqual(expect.objectContaining({ level: 'info', fields: expect.objectContaining({ trigger: 'broadcast', domains: 3 }) }));

    await two.resource.close?.();
    expect(bus.subscriberCount(REFRESH_CHANNEL)).toBe(1);
  });

  it('keeps each server apart when one process runs two: own token verifier, store, logs and metrics', async () => {
    // The host loads the package once per process, so a second server initialises the same factories.
    const { list } = await newList();
    const [formAction, resource] = createProviders(list) as [FormActionFactory, RealmResourceFactory];
    const busA = new FakeBus();
    const busB = new FakeBus();
    const a = fakeContext({ verify: verifier, bus: busA });
    const b = fakeContext({ verify: () => ({ valid: false, reason: 'signed by another server' }), bus: busB });
    await formAction.init?.(a.context);
    const actionA = formAction.create();
    await resource.init?.(a.context);
    const routesA = resource.create();
    await formAction.init?.(b.context);
    await resource.init?.(b.context);
    const routesB = resource.create();

    expect((await call(routesA, 'POST', '/refresh-domain-list', { headers: { authorization: 'Bearer sa-admin' } })).status).toBe(200);
    expect(a.verifyCalls).toHaveLength(1);
    expect(b.verifyCalls).toHaveLength(0);
    expect(busA.published).toHaveLength(1);
    expect(busB.published).toHaveLength(0);
    expect(a.metrics.get('realmgate_disposable_email_refreshes_total')?.values).toEqual([{ labels: { outcome: 'success' }, value: 1 }]);
    expect((await call(routesB, 'POST', '/refresh-domain-list', { headers: { authorization: 'Bearer sa-admin' } })).status).toBe(401);
    expect(b.verifyCalls).toHaveLength(1);

    await actionA.validate({ realm, clientId: 'web', form: { email: 'a@disposable.example' }, request: requestInfo, config: {} });
    expect(a.logs).toContainEqual(expect.objectContaining({ message: 'registration rejected: disposable e-mail domain' }));
    expect(b.logs).not.toContainEqual(expect.objectContaining({ message: 'registration rejected: disposable e-mail domain' }));

    await resource.close?.();
    expect(busA.subscriberCount(REFRESH_CHANNEL) + busB.subscriberCount(REFRESH_CHANNEL)).toBe(0);
  });

  it('still answers 200 when the broadcast fails, and says so', async () => {
    const bus = new FakeBus();
    const { routes, fake } = await setUp({ verify: verifier, bus });
    bus.failPublish = true;
    const response = await call(routes, 'POST', '/refresh-domain-list', { headers: { authorization: 'Bearer sa-admin' } });
    expect(response).toMatchObject({ status: 200, body: { success: true, domains: 2, message: expect.stringContaining('other processes failed') } });
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'warn' }));
  });

  it('ignores a malformed broadcast', async () => {
    const bus = new FakeBus();
    const { list, fake } = await setUp({ bus });
    const spy = vi.spyOn(list, 'refresh');
    const store = bus.store();
    for (const raw of ['not json', 'null', '42', '{"from":"x"}']) await store.publish(REFRESH_CHANNEL, raw);
    await until(() => fake.logs.filter((l) => l.level === 'warn').length === 4);
    expect(spy).not.toHaveBeenCalled();
  });
});

describe('resource init', () => {
  it('applies settings from its config section and the environment, and merges extra sources at start', async () => {
    const extra = join(dir.path, 'init-extra.txt');
    await writeFile(extra, 'extra.example\n');
    const { list, fake } = await setUp({
      config: { allowlist: ['ok.disposable.example'], extraSources: [extra] },
      env: { REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST: 'fine.trash.example' },
    });
    expect(list.size).toBe(3);
    expect(list.isDisposable('a@extra.example')).toBe(true);
    // The environment replaced the section's allowlist.
    expect(list.isDisposable('a@ok.disposable.example')).toBe(true);
    expect(list.isDisposable('a@fine.trash.example')).toBe(false);
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'info', message: 'disposable-email domain list ready' }));
  });

  it('throws a clear error naming the key on a bad setting', async () => {
    const { list } = await newList();
    const [, resource] = createProviders(list) as [FormActionFactory, RealmResourceFactory];
    await expect(
      Promise.resolve(resource.init?.(fakeContext({ config: { extraSources: ['gopher://x.example'] } }).context)),
    ).rejects.toThrow(`providers.${RESOURCE_ID}.extraSources[0]`);
    await expect(
      Promise.resolve(resource.init?.(fakeContext({ env: { REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST: 'x y' } }).context)),
    ).rejects.toThrow('REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST[0]: "x y"');
  });

  it('warns about unknown keys', async () => {
    const { fake } = await setUp({ config: { allowList: ['typo.example'] } });
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringContaining('allowList') }));
  });

  it('starts with the bundled list when an extra source is unreachable', async () => {
    const { list, fake } = await setUp({ config: { extraSources: [join(dir.path, 'missing.txt')] } });
    expect(list.size).toBe(2);
    expect(fake.logs).toContainEqual(expect.objectContaining({ level: 'error', fields: expect.objectContaining({ trigger: 'start' }) }));
  });
});
