import type { ClientInfo, Counter, EventListener, Gauge, Histogram, Metrics, ProviderContext } from '@realmgate/spi';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, vi } from 'vitest';
import { outboundGuards } from '../../server/src/http/target-guard.js';
import { providers } from '../src/index.js';
import { createEventWebhookProvider, webhookTarget } from '../src/provider.js';
import type { EventWebhookProviderOptions } from '../src/provider.js';
import type { WebhookPayload } from '../src/payload.js';
import { adminEvent, alice, userEvent } from './fixtures.js';
import { recordingLogger, scriptedTransport } from './helpers.js';

function client(clientId: string, attributes: Record<string, string>, enabled = true): ClientInfo {
  return { id: `uuid-${clientId}`, clientId, enabled, attributes };
}

const SHOP = client('shop', { 'api.url': 'https://shop.example.test/hook', 'api.key': 'shop-key' });
const BLOG = client('blog', { 'api.url': 'https://blog.example.test/events', 'api.key': 'blog-key' });

function fakeMetrics() {
  const values = new Map<string, number>();
  const registered: string[] = [];
  const key = (name: string, labels?: Record<string, string>) => (labels ? `${name}${JSON.stringify(labels)}` : name);
  const add = (name: string, labels: Record<string, string> | undefined, value: number) =>
    values.set(key(name, labels), (values.get(key(name, labels)) ?? 0) + value);
  const metrics: Metrics = {
    counter(name): Counter {
      registered.push(name);
      return { inc: (labels, value = 1) => add(name, labels, value) };
    },
    gauge(name): Gauge {
      registered.push(name);
      return {
        set: (labels, value) => values.set(key(name, labels), value),
        inc: (labels, value = 1) => add(name, labels, value),
        dec: (labels, value = 1) => add(name, labels, -value),
      };
    },
    histogram(name): Histogram {
      registered.push(name);
      return { observe: (labels) => add(`${name}_count`, labels, 1) };
    },
  };
  return { metrics, registered, value: (name: string, labels?: Record<string, string>) => values.get(key(name, labels)) };
}

function setUp(
  clients: ClientInfo[],
  options: {
    env?: Record<string, string>;
    config?: Record<string, unknown>;
    mode?: 'development' | 'production';
    /** Instead of the scripted transport: the real one with these (resolver, connector). */
    provider?: EventWebhookProviderOptions;
  } = {},
) {
  const transport = scriptedTransport([204]);
  const logger = recordingLogger();
  const metrics = fakeMetrics();
  const clientsApi = {
    getByClientId: vi.fn(async (realmName: string, clientId: string) =>
      realmName === 'demo' ? (clients.find((c) => c.clientId === clientId) ?? null) : null,
    ),
    list: vi.fn(async (realmName: string) => (realmName === 'demo' ? clients : [])),
  };
  const usersApi = {
    get: vi.fn(async (realmName: string, userId: string) => (realmName === 'demo' && userId === alice.id ? alice : null)),
  };
  const context = {
    logger,
    metrics: metrics.metrics,
    config: options.config ?? {},
    env: options.env ?? {},
    ...(options.mode ? { mode: options.mode } : {}),
    // The host's guard, as the server hands it (an absent mode is production, the stricter side).
    outbound: outboundGuards(options.mode ?? 'production'),
    clients: clientsApi,
    users: usersApi,
  } as unknown as ProviderContext;
  const factory = createEventWebhookProvider(options.provider ?? { transport });
  return {
    factory,
    context,
    transport,
    logger,
    metrics,
    clientsApi,
    usersApi,
    async start(): Promise<EventListener> {
      await factory.init?.(context);
      return factory.create();
    },
    /** close() drains everything, so deliveries can be inspected afterwards. */
    async sent() {
      await factory.close?.();
      return transport.calls.map(({ request }) => ({
        url: request.url,
        headers: request.headers,
        body: request.body,
        payload: JSON.parse(request.body) as WebhookPayload,
      }));
    },
  };
}

describe('ext-event-webhook provider', () => {
  it('is exported as an event listener with its id and display name', () => {
    expect(providers).toHaveLength(1);
    expect(providers[0]).toMatchObject({ kind: 'event-listener', id: 'ext-event-webhook', displayName: 'Event webhook' });
  });

  it('POSTs the payload with the exact Authorization and Content-Type headers', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    listener.onEvent?.(userEvent({ type: 'REGISTER' }));
    const [sent, ...rest] = await t.sent();
    expect(rest).toEqual([]);
    expect(sent.url).toBe('https://shop.example.test/hook');
    expect(sent.headers.Authorization).toBe('Bearer shop-key');
    expect(sent.headers['Content-Type']).toBe('application/json');
    expect(Object.keys(sent.headers).filter((name) => name.startsWith('webhook-'))).toEqual([]);
    expect(sent.payload).toMatchObject({ type: 'REGISTER', user_id: alice.id, user_name: 'alice', delete_by_admin: false });
  });

  it('returns from onEvent before the client is even looked up', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    expect(listener.onEvent?.(userEvent())).toBeUndefined();
    expect(t.clientsApi.getByClientId).not.toHaveBeenCalled();
    expect(t.transport.calls).toHaveLength(0);
    expect(await t.sent()).toHaveLength(1);
  });

  it.each<[string, ClientInfo | null]>([
    ['the client has no api.url', client('shop', { 'api.key': 'k' })],
    ['the client has no api.key', client('shop', { 'api.url': 'https://x.test/' })],
    ['api.url is blank', client('shop', { 'api.url': '  ', 'api.key': 'k' })],
    ['the client is disabled', { ...SHOP, enabled: false }],
    ['the client does not exist', null],
  ])('sends nothing when %s', async (_, shop) => {
    const t = setUp(shop ? [shop] : []);
    const listener = await t.start();
    listener.onEvent?.(userEvent());
    expect(await t.sent()).toEqual([]);
    expect(t.logger.warnings()).toEqual([]);
  });

  it('sends nothing for other event types or events without a client', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    for (const type of ['LOGIN_ERROR', 'CODE_TO_TOKEN', 'REFRESH_TOKEN', 'UPDATE_PROFILE', 'UPDATE_PASSWORD', 'SEND_RESET_PASSWORD']) {
      listener.onEvent?.(userEvent({ type }));
    }
    listener.onEvent?.(userEvent({ type: 'LOGIN', clientId: null }));
    expect(await t.sent()).toEqual([]);
    expect(t.clientsApi.getByClientId).not.toHaveBeenCalled();
  });

  it('sends every SPEC 5 type', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    const types = ['REGISTER', 'REGISTER_ERROR', 'LOGIN', 'LOGOUT', 'RESET_PASSWORD', 'VERIFY_EMAIL', 'UPDATE_EMAIL', 'DELETE_ACCOUNT'];
    for (const type of types) listener.onEvent?.(userEvent({ type, ...(type === 'REGISTER_ERROR' ? { user: null } : {}) }));
    expect((await t.sent()).map((s) => s.payload.type).sort()).toEqual([...types].sort());
  });

  it('sends each client its own URL and key', async () => {
    const t = setUp([SHOP, BLOG]);
    const listener = await t.start();
    listener.onEvent?.(userEvent({ clientId: 'shop' }));
    listener.onEvent?.(userEvent({ clientId: 'blog', type: 'LOGIN' }));
    const sent = await t.sent();
    expect(sent.map((s) => [s.url, s.headers.Authorization, s.payload.type]).sort()).toEqual([
      ['https://blog.example.test/events', 'Bearer blog-key', 'LOGIN'],
      ['https://shop.example.test/hook', 'Bearer shop-key', 'REGISTER'],
    ]);
  });

  it('honours api.events (case and spaces forgiven)', async () => {
    const t = setUp([client('shop', { ...SHOP.attributes, 'api.events': 'login, Register ,' })]);
    const listener = await t.start();
    for (const type of ['REGISTER', 'LOGIN', 'LOGOUT', 'UPDATE_EMAIL']) listener.onEvent?.(userEvent({ type }));
    expect((await t.sent()).map((s) => s.payload.type)).toEqual(['REGISTER', 'LOGIN']);
  });

  it('signs with api.secret so that the standardwebhooks package verifies the delivery', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const t = setUp([client('shop', { ...SHOP.attributes, 'api.secret': secret })]);
    const listener = await t.start();
    listener.onEvent?.(userEvent());
    const [sent] = await t.sent();
    expect(sent.headers['webhook-id']).toBe('msg_e0a8b7c6-1111-2222-3333-444455556666');
    expect(new Webhook(secret).verify(sent.body, sent.headers)).toEqual(sent.payload);
  });

  it('skips a client with an unusable api.secret or api.url and warns once per client', async () => {
    const t = setUp([
      client('shop', { ...SHOP.attributes, 'api.secret': 'not-a-secret' }),
      client('blog', { ...BLOG.attributes, 'api.url': 'ftp://blog.example.test/' }),
    ]);
    const listener = await t.start();
    for (let i = 0; i < 3; i++) {
      listener.onEvent?.(userEvent({ clientId: 'shop' }));
      listener.onEvent?.(userEvent({ clientId: 'blog' }));
    }
    expect(await t.sent()).toEqual([]);
    const warnings = t.logger.warnings().filter((w) => w.startsWith('webhook not sent'));
    expect(warnings).toEqual([
      'webhook not sent: client shop api.secret is invalid: a webhook secret must start with whsec_',
      'webhook not sent: client blog api.url is not an absolute http(s) URL',
    ]);
    expect(JSON.stringify(t.logger.lines)).not.toContain('not-a-secret');
    // the three events of blog were refused (api.url), those of shop were not (a bad secret is not a refusal)
    expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'refused' })).toBe(3);
  });

  describe('webhook targets (the guard)', () => {
    const META = client('meta', { 'api.url': 'http://2852039166/latest/meta-data/', 'api.key': 'k' });
    const NAMED = client('named', { 'api.url': 'https://hooks.internal.test/in', 'api.key': 'k' });
    const LOCAL = client('local', { 'api.url': 'http://127.0.0.1:1/hook', 'api.key': 'k' });

    /** The real transport behind the guard, with a resolver and a connector that never open a socket. */
    function guarded(clients: ClientInfo[], mode?: 'development' | 'production', env: Record<string, string> = {}) {
      const connections: string[] = [];
      const provider: EventWebhookProviderOptions = {
        resolver: async (hostname) => (hostname === 'hooks.internal.test' ? [{ address: '169.254.169.254', family: 4 }] : []),
        connector: (options, callback) => {
          connections.push(options.hostname);
          callback(new Error('test connector: no connection is opened'), null);
        },
      };
      return { ...setUp(clients, { mode, env, provider, config: { backoffMs: [0] } }), connections };
    }

    it('refuses link-local targets, literal or resolved, without retrying or connecting, and counts them', async () => {
      const t = guarded([META, NAMED]);
      const listener = await t.start();
      listener.onEvent?.(userEvent({ clientId: 'meta' }));
      listener.onEvent?.(userEvent({ clientId: 'named', type: 'LOGIN' }));
      await t.factory.close?.();
      expect(t.connections).toEqual([]);
      expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'refused' })).toBe(2);
      expect(t.metrics.value('realmgate_webhook_attempts_total')).toBe(2);
      expect(t.logger.warnings().sort()).toEqual([
        'webhook delivery refused, not retried (169.254.169.254 is a link-local address (cloud metadata lives there)): event REGISTER for user alice',
        'webhook delivery refused, not retried (hooks.internal.test: 169.254.169.254 is a link-local address (cloud metadata lives there)): event LOGIN for user alice',
      ]);
    });

    it('refuses loopback in production mode, and without a mode from the host', async () => {
      for (const mode of ['production', undefined] as const) {
        const t = guarded([LOCAL], mode);
        const listener = await t.start();
        listener.onEvent?.(userEvent({ clientId: 'local' }));
        await t.factory.close?.();
        expect(t.connections).toEqual([]);
        expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'refused' })).toBe(1);
      }
    });

    it('connects to loopback in development mode', async () => {
      const t = guarded([LOCAL], 'development');
      const listener = await t.start();
      listener.onEvent?.(userEvent({ clientId: 'local' }));
      await t.factory.close?.();
      expect(t.connections).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1']); // a network error is retried
      expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'refused' })).toBe(0);
      expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'failed' })).toBe(1);
    });

    it('takes the allow and deny lists from the settings', async () => {
      const t = guarded([LOCAL], 'production', { REALMGATE_WEBHOOK_ALLOW: '127.0.0.1/32' });
      const listener = await t.start();
      listener.onEvent?.(userEvent({ clientId: 'local' }));
      await t.factory.close?.();
      expect(t.connections).toHaveLength(3);
      const denied = guarded([SHOP], 'development', { REALMGATE_WEBHOOK_DENY: '*.example.test' });
      await denied.start();
      expect(await denied.factory.validateClientAttributes?.(SHOP.attributes)).toEqual([]); // development mode
    });

    it('validates api.url for the admin API in production mode, naming the attribute', async () => {
      const t = guarded([], 'production', { REALMGATE_WEBHOOK_DENY: '*.corp.test' });
      await t.start();
      const check = (url: string) => t.factory.validateClientAttributes!({ 'api.url': url, 'api.key': 'k' });
      expect(await check('http://2852039166/')).toEqual(['api.url: 169.254.169.254 is a link-local address (cloud metadata lives there)']);
      expect(await check('http://localhost:8080/hook')).toEqual(['api.url: localhost is a loopback address (allowed in development mode only)']);
      expect(await check('http://[::1]/')).toEqual(['api.url: ::1 is a loopback address (allowed in development mode only)']);
      expect(await check('ftp://hooks.example/')).toEqual(['api.url: is not an absolute http(s) URL']);
      expect(await check('https://x.corp.test/')).toEqual(['api.url: host x.corp.test is denied by the webhook target rules']);
      expect(await check('https://hooks.example/in')).toEqual([]);
      expect(await check('http://10.0.0.9:8080/in')).toEqual([]);
      expect(await t.factory.validateClientAttributes!({ 'api.key': 'k' })).toEqual([]);
      expect(t.connections).toEqual([]);
    });

    it('accepts any api.url for the admin API in development mode (the delivery still refuses)', async () => {
      const t = guarded([], 'development');
      await t.start();
      expect(await t.factory.validateClientAttributes!({ 'api.url': 'http://127.0.0.1:8080/dev/webhooks/inbox' })).toEqual([]);
      expect(await t.factory.validateClientAttributes!({ 'api.url': 'http://169.254.169.254/' })).toEqual([]);
    });
  });

  it('computes user_ip with the client trusted.proxy.count', async () => {
    const t = setUp([
      client('shop', { ...SHOP.attributes, 'trusted.proxy.count': '2' }),
      client('blog', { ...BLOG.attributes, 'trusted.proxy.count': '0' }),
    ]);
    const listener = await t.start();
    const request = {
      ipAddress: '10.0.0.2',
      remoteAddress: '10.0.0.2',
      forwardedFor: '203.0.113.50, 198.51.100.7, 10.0.0.3',
      realIp: '192.0.2.44',
      userAgent: 'UA/1',
    };
    listener.onEvent?.(userEvent({ clientId: 'shop', request }));
    listener.onEvent?.(userEvent({ clientId: 'blog', request }));
    listener.onEvent?.(userEvent({ clientId: 'shop', request: null, ipAddress: '10.9.9.9' }));
    // Across clients the order is not kept (each has its own lookup), hence the sort.
    expect((await t.sent()).map((s) => [s.url, s.payload.user_ip, s.payload.user_agent]).sort()).toEqual([
      ['https://blog.example.test/events', '192.0.2.44', 'UA/1'],
      ['https://shop.example.test/hook', '10.9.9.9', null],
      ['https://shop.example.test/hook', '198.51.100.7', 'UA/1'],
    ]);
  });

  it('sends DELETE_ACCOUNT with delete_by_admin to every enabled client with a webhook on an admin user deletion', async () => {
    const t = setUp([
      SHOP,
      BLOG,
      client('portal', { 'api.url': 'https://portal.example.test/' }),
      client('old', { 'api.url': 'https://old.example.test/', 'api.key': 'old-key' }, false),
      client('mail', { 'api.url': 'https://mail.example.test/', 'api.key': 'mail-key', 'api.events': 'LOGIN' }),
    ]);
    const listener = await t.start();
    listener.onAdminEvent?.(adminEvent());
    const sent = await t.sent();
    expect(sent.map((s) => [s.url, s.headers.Authorization])).toEqual([
      ['https://shop.example.test/hook', 'Bearer shop-key'],
      ['https://blog.example.test/events', 'Bearer blog-key'],
    ]);
    for (const { payload } of sent) {
      expect(payload).toMatchObject({
        type: 'DELETE_ACCOUNT',
        delete_by_admin: true,
        user_id: alice.id,
        user_name: 'alice',
        email: 'alice@example.com',
        user_ip: '192.0.2.1',
        user_agent: 'admin-client/26',
      });
    }
  });

  it.each([
    ['a user update', { operationType: 'UPDATE' as const }],
    ['a client deletion', { resourceType: 'CLIENT', resourcePath: 'clients/x' }],
    ['a failed deletion', { error: 'forbidden' }],
  ])('ignores %s', async (_, overrides) => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    listener.onAdminEvent?.(adminEvent(overrides));
    expect(await t.sent()).toEqual([]);
    expect(t.clientsApi.list).not.toHaveBeenCalled();
  });

  it('shares one client lookup among concurrent events of the same client', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    for (let i = 0; i < 5; i++) listener.onEvent?.(userEvent({ type: 'LOGIN' }));
    expect(await t.sent()).toHaveLength(5);
    expect(t.clientsApi.getByClientId).toHaveBeenCalledTimes(1);
  });

  it('logs and counts a failed lookup without throwing', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    t.clientsApi.getByClientId.mockRejectedValueOnce(new Error('database is gone'));
    listener.onEvent?.(userEvent());
    expect(await t.sent()).toEqual([]);
    expect(t.logger.warnings()).toContain('webhook event REGISTER dropped: client lookup failed');
    expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'dropped_error' })).toBe(1);
  });

  it('registers its metrics and counts outcomes and attempts', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    expect(t.metrics.registered).toEqual([
      'realmgate_webhook_deliveries_total',
      'realmgate_webhook_attempts_total',
      'realmgate_webhook_queue_depth',
      'realmgate_webhook_delivery_seconds',
    ]);
    for (const outcome of ['success', 'failed', 'refused', 'dropped_queue_full', 'dropped_shutdown', 'dropped_error']) {
      expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome }), outcome).toBe(0);
    }
    listener.onEvent?.(userEvent());
    listener.onEvent?.(userEvent({ type: 'LOGIN' }));
    await t.sent();
    expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'success' })).toBe(2);
    expect(t.metrics.value('realmgate_webhook_deliveries_total', { outcome: 'failed' })).toBe(0);
    expect(t.metrics.value('realmgate_webhook_attempts_total')).toBe(2);
    expect(t.metrics.value('realmgate_webhook_delivery_seconds_count', { outcome: 'success' })).toBe(2);
    expect(t.metrics.value('realmgate_webhook_queue_depth')).toBe(0);
  });

  it('reads the user when the host sent an event without a snapshot (e.g. a password-grant LOGIN)', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    listener.onEvent?.(userEvent({ type: 'LOGIN', user: null, details: { username: 'alice' } }));
    const [sent] = await t.sent();
    expect(t.usersApi.get).toHaveBeenCalledWith('demo', alice.id);
    expect(sent.payload).toMatchObject({
      type: 'LOGIN',
      user_id: alice.id,
      email: 'alice@example.com',
      first_name: 'Alice',
      email_verified: true,
      created_timestamp: alice.createdTimestamp,
      user_roles: alice.realmRoles,
      organizations: alice.organizations,
      attributes: alice.attributes,
    });
  });

  it('never reads the user for REGISTER_ERROR or DELETE_ACCOUNT, and falls back to the event when the read fails', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    t.usersApi.get.mockRejectedValueOnce(new Error('database is gone'));
    listener.onEvent?.(userEvent({ type: 'LOGOUT', user: null, details: { username: 'alice' } }));
    listener.onEvent?.(userEvent({ type: 'DELETE_ACCOUNT', user: null, details: { username: 'alice' } }));
    listener.onEvent?.(userEvent({ type: 'REGISTER_ERROR', user: null, userId: null, error: 'x', details: {} }));
    const sent = await t.sent();
    expect(t.usersApi.get).toHaveBeenCalledTimes(1);
    expect(sent.map((s) => [s.payload.type, s.payload.user_id, s.payload.user_name, s.payload.email]).sort()).toEqual([
      ['DELETE_ACCOUNT', alice.id, 'alice', null],
      ['LOGOUT', alice.id, 'alice', null],
      ['REGISTER_ERROR', null, null, null],
    ]);
  });

  it('keeps each listener on the context of its own init when the factory is initialised twice (two servers in one process)', async () => {
    const first = setUp([SHOP]);
    const listener = await first.start();
    const second = setUp([BLOG]);
    // The same factory, initialised again for another server with other clients.
    await first.factory.init?.(second.context);
    listener.onEvent?.(userEvent({ clientId: 'shop' }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(first.clientsApi.getByClientId).toHaveBeenCalledTimes(1);
    expect(second.clientsApi.getByClientId).not.toHaveBeenCalled();
    expect(first.transport.calls.map((call) => call.request.url)).toEqual(['https://shop.example.test/hook']);
    await first.factory.close?.();
  });

  it('refuses to start with a bad setting, naming it', async () => {
    const t = setUp([], { env: { REALMGATE_WEBHOOK_QUEUE_SIZE: 'lots' } });
    await expect(t.start()).rejects.toThrow(/REALMGATE_WEBHOOK_QUEUE_SIZE="lots"/);
  });

  it('ignores events once closing', async () => {
    const t = setUp([SHOP]);
    const listener = await t.start();
    await t.factory.close?.();
    listener.onEvent?.(userEvent());
    listener.onAdminEvent?.(adminEvent());
    await Promise.resolve();
    expect(t.clientsApi.getByClientId).not.toHaveBeenCalled();
    expect(t.clientsApi.list).not.toHaveBeenCalled();
  });
});

describe('webhookTarget', () => {
  it('reads the attributes', () => {
    const target = webhookTarget(
      client('c', {
        'api.url': ' https://x.test/h ',
        'api.key': ' key ',
        'api.secret': 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'api.events': 'LOGIN',
        'trusted.proxy.count': 'junk',
      }),
    );
    expect(target).toMatchObject({ url: 'https://x.test/h', key: 'key', events: new Set(['LOGIN']), trustedProxyCount: 1 });
    expect(target && 'signingKey' in target && target.signingKey?.length).toBe(24);
  });

  it('refuses a key with control characters', () => {
    expect(webhookTarget(client('c', { 'api.url': 'https://x.test/', 'api.key': 'a\r\nX-Evil: 1' }))).toEqual({
      problem: 'api.key contains control characters',
    });
  });
});
