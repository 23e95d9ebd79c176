import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminEvent, UserEvent } from '@realmgate/spi';
import { recording, type Delivery, type Recording } from './fixtures/providers/test-provider/index.js';
import { adminToken, api, eventually, startServer, tokenRequest, type DatabaseKind, type TestServer } from './support/server.js';

const providersDir = join(resolve(import.meta.dirname, 'fixtures'), 'providers');

// Values that must never show up in an event, an admin-event representation or a log line.
const CLIENT_SECRET = 'client-secret-never-logged-4411';
const API_KEY = 'api-key-never-logged-7788';
const PASSWORD = 'Alice-password-never-logged-1';
const RESET_PASSWORD = 'Reset-password-never-logged-2';
const WRONG_PASSWORD = 'Wrong-password-never-logged-3';
const SMTP_PASSWORD = 'smtp-password-never-logged-5';

interface Fixture {
  t: TestServer;
  admin: string;
  deliveries: Delivery[];
  recording: Recording;
  realm: string;
}

async function setUp(database: DatabaseKind, testId: string): Promise<Fixture> {
  const t = await startServer({ database, providersDir, env: { TEST_RECORDER_ID: testId } });
  const admin = await adminToken(t.url);
  const realm = 'ev';
  expect((await api(t.url, 'POST', '/admin/realms', admin, { realm, enabled: true })).status).toBe(201);
  const config = await api(t.url, 'PUT', `/admin/realms/${realm}/events/config`, admin, {
    eventsEnabled: true,
    adminEventsEnabled: true,
    adminEventsDetailsEnabled: true,
    // The failing and the slow listener come first: neither may keep the later ones from their events.
    eventsListeners: ['test-failing', 'test-slow', 'test-recorder', 'jboss-logging'],
  });
  expect(config.status).toBe(204);
  return { t, admin, deliveries: recording(testId).deliveries, recording: recording(testId), realm };
}

const userEvents = (deliveries: Delivery[], listener: string, type: string) =>
  deliveries.filter((d) => d.listener === listener && d.kind === 'user' && (d.event as UserEvent).type === type).map((d) => d.event as UserEvent);

const adminDeliveries = (deliveries: Delivery[], listener: string, operation: string, path: string) =>
  deliveries.filter((d) => d.listener === listener && d.kind === 'admin' && (d.event as AdminEvent).operationType === operation && (d.event as AdminEvent).resourcePath === path);

/** Waits until `list()` is non-empty (listeners run on a later tick) and returns it. */
const arrived = async <T>(list: () => T[], timeoutMs?: number): Promise<T[]> => (await eventually(() => (list().length ? list() : null), timeoutMs))!;

const idFromLocation = (response: { headers: Headers }) => response.headers.get('location')!.split('/').pop()!;

describe('user and admin events', () => {
  let f: Fixture;
  let t: TestServer;
  let aliceId: string;
  let svcUuid: string;

  beforeAll(async () => {
    f = await setUp('sqlite', 'events-test');
    t = f.t;
    const alice = await api(t.url, 'POST', '/admin/realms/ev/users', f.admin, { username: 'alice', enabled: true, credentials: [{ type: 'password', value: PASSWORD }] });
    expect(alice.status).toBe(201);
    aliceId = idFromLocation(alice);
    const svc = await api(t.url, 'POST', '/admin/realms/ev/clients', f.admin, {
      clientId: 'svc',
      secret: CLIENT_SECRET,
      publicClient: false,
      serviceAccountsEnabled: true,
      attributes: { 'api.url': 'https://hooks.example/in', 'api.key': API_KEY },
    });
    expect(svc.status).toBe(201);
    svcUuid = idFromLocation(svc);
  });
  afterAll(() => t?.close());

  const password = (pass: string) => tokenRequest(t.url, 'ev', { grant_type: 'password', client_id: 'admin-cli', username: 'alice', password: pass });

  it('delivers LOGIN, LOGIN_ERROR, CLIENT_LOGIN, REFRESH_TOKEN and LOGOUT to the named listener, with their fields', async () => {
    const login = await password(PASSWORD);
    expect(login.status).toBe(200);
    expect((await password(WRONG_PASSWORD)).status).toBe(400);
    const cc = await tokenRequest(t.url, 'ev', { grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from(`svc:${CLIENT_SECRET}`).toString('base64')}` });
    expect(cc.status).toBe(200);
    const refreshed = await tokenRequest(t.url, 'ev', { grant_type: 'refresh_token', client_id: 'admin-cli', refresh_token: login.body.refresh_token as string });
    expect(refreshed.status).toBe(200);
    const logout = await fetch(`${t.url}/realms/ev/protocol/openid-connect/logout`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'events-test/1.0' },
      body: new URLSearchParams({ client_id: 'admin-cli', refresh_token: refreshed.body.refresh_token as string }),
    });
    expect(logout.status).toBe(204);

    const sessionId = login.body.session_state as string;
    const [loginEvent] = await arrived(() => userEvents(f.deliveries, 'test-recorder', 'LOGIN'));
    expect(loginEvent).toMatchObject({ realmName: 'ev', clientId: 'admin-cli', userId: aliceId, sessionId, ipAddress: '127.0.0.1', error: null });
    expect(loginEvent.details).toMatchObject({ grant_type: 'password', username: 'alice' });
    expect(loginEvent.realm).toMatchObject({ name: 'ev', enabled: true });

    const [failed] = await arrived(() => userEvents(f.deliveries, 'test-recorder', 'LOGIN_ERROR'));
    expect(failed).toMatchObject({ clientId: 'admin-cli', userId: aliceId, error: 'invalid_user_credentials' });

    const [client] = await arrived(() => userEvents(f.deliveries, 'test-recorder', 'CLIENT_LOGIN'));
    expect(client).toMatchObject({ clientId: 'svc', details: { grant_type: 'client_credentials' } });

    const [refresh] = await arrived(() => userEvents(f.deliveries, 'test-recorder', 'REFRESH_TOKEN'));
    expect(refresh).toMatchObject({ clientId: 'admin-cli', userId: aliceId, sessionId });

    const [out] = await arrived(() => userEvents(f.deliveries, 'test-recorder', 'LOGOUT'));
    expect(out).toMatchObject({ clientId: 'admin-cli', userId: aliceId, sessionId });
    expect(out.request?.userAgent).toBe('events-test/1.0');
    expect(out.user?.username).toBe('alice');
  });

  it('delivers admin events for client, user and role writes after they committed', async () => {
    const created = await api(t.url, 'POST', '/admin/realms/ev/clients', f.admin, { clientId: 'shop', redirectUris: ['https://shop.example/cb'] });
    expect(created.status).toBe(201);
    const shop = idFromLocation(created);
    expect((await api(t.url, 'PUT', `/admin/realms/ev/clients/${shop}`, f.admin, { clientId: 'shop', description: 'the shop' })).status).toBe(204);
    expect((await api(t.url, 'DELETE', `/admin/realms/ev/clients/${shop}`, f.admin)).status).toBe(204);

    const bob = await api(t.url, 'POST', '/admin/realms/ev/users', f.admin, { username: 'bob', email: 'bob@example.com', credentials: [{ type: 'password', value: PASSWORD }] });
    expect(bob.status).toBe(201);
    const bobId = idFromLocation(bob);
    expect((await api(t.url, 'PUT', `/admin/realms/ev/users/${bobId}`, f.admin, { firstName: 'Bob' })).status).toBe(204);
    expect((await api(t.url, 'PUT', `/admin/realms/ev/users/${bobId}/reset-password`, f.admin, { type: 'password', value: RESET_PASSWORD, temporary: false })).status).toBe(204);
    expect((await api(t.url, 'DELETE', `/admin/realms/ev/users/${bobId}`, f.admin)).status).toBe(204);

    expect((await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'auditor' })).status).toBe(201);
    expect((await api(t.url, 'PUT', '/admin/realms/ev/roles/auditor', f.admin, { name: 'auditor', description: 'reads' })).status).toBe(204);
    expect((await api(t.url, 'DELETE', '/admin/realms/ev/roles/auditor', f.admin)).status).toBe(204);

    const expected: [string, string, string][] = [
      ['CREATE', 'CLIENT', `clients/${shop}`],
      ['UPDATE', 'CLIENT', `clients/${shop}`],
      ['DELETE', 'CLIENT', `clients/${shop}`],
      ['CREATE', 'USER', `users/${bobId}`],
      ['UPDATE', 'USER', `users/${bobId}`],
      ['ACTION', 'USER', `users/${bobId}/reset-password`],
      ['DELETE', 'USER', `users/${bobId}`],
      ['CREATE', 'REALM_ROLE', 'roles/auditor'],
      ['UPDATE', 'REALM_ROLE', 'roles/auditor'],
      ['DELETE', 'REALM_ROLE', 'roles/auditor'],
    ];
    for (const [operation, resourceType, path] of expected) {
      const [delivery] = await arrived(() => adminDeliveries(f.deliveries, 'test-recorder', operation, path));
      const event = delivery.event as AdminEvent;
      expect(event, `${operation} ${path}`).toMatchObject({ realmName: 'ev', resourceType, authDetails: { realmId: expect.any(String), userId: expect.any(String), ipAddress: '127.0.0.1' } });
      if (resourceType === 'USER' || resourceType === 'CLIENT') {
        // The listener read the write back through the provider API when it was called: it had committed.
        if (operation !== 'ACTION') expect(await eventually(() => delivery.committed !== null && delivery), `${operation} ${path}`).toMatchObject({ committed: true });
      }
    }
    const [createUser] = adminDeliveries(f.deliveries, 'test-recorder', 'CREATE', `users/${bobId}`);
    expect((createUser.event as AdminEvent).user?.username).toBe('bob');
    const [deleteUser] = adminDeliveries(f.deliveries, 'test-recorder', 'DELETE', `users/${bobId}`);
    expect((deleteUser.event as AdminEvent).user?.email).toBe('bob@example.com');
    expect(JSON.parse((adminDeliveries(f.deliveries, 'test-recorder', 'UPDATE', `clients/${shop}`)[0].event as AdminEvent).representation!)).toMatchObject({ description: 'the shop' });
  });

  it('gives nothing to an installed listener the realm does not name', async () => {
    await eventually(() => userEvents(f.deliveries, 'test-recorder', 'LOGIN').length);
    expect(f.deliveries.filter((d) => d.listener === 'test-bystander')).toEqual([]);
  });

  it('isolates a listener that throws or rejects: logged, counted, and the others still get the event', async () => {
    const before = f.deliveries.filter((d) => d.listener === 'test-recorder').length;
    const response = await password(PASSWORD);
    expect(response.status).toBe(200);
    const role = await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'isolated' });
    expect(role.status).toBe(201);
    await eventually(() => f.deliveries.filter((d) => d.listener === 'test-recorder').length >= before + 2);
    const failures = await arrived(() => {
      const lines = t.logs.filter((l) => l.msg === 'event listener failed' && l.listener === 'test-failing');
      return lines.some((l) => l.event === 'LOGIN') && lines.some((l) => l.event === 'CREATE REALM_ROLE') ? lines : [];
    });
    expect(failures.find((l) => l.event === 'LOGIN')).toMatchObject({ level: 50, realm: 'ev', err: { message: 'listener broke on LOGIN' } });
    expect(failures.find((l) => l.event === 'CREATE REALM_ROLE')).toMatchObject({ err: { message: 'listener rejected an admin event' } });
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    const counted = /realmgate_event_listener_failures_total\{listener="test-failing"\} (\d+)/.exec(metrics);
    expect(Number(counted?.[1])).toBeGreaterThanOrEqual(2);
  });

  it('does not make the request wait for a slow listener', async () => {
    // The slow listener cannot finish until the test releases it, so whatever happens before the release did not wait for it.
    let release!: () => void;
    f.recording.slowListenerHeld = new Promise<void>((resolve) => (release = resolve));
    try {
      const response = await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'slowpoke' });
      expect(response.status).toBe(201);
      const [slow] = await arrived(() => adminDeliveries(f.deliveries, 'test-slow', 'CREATE', 'roles/slowpoke'));
      // The listener after the slow one was called while the slow one is still at work.
      const [recorded] = await arrived(() => adminDeliveries(f.deliveries, 'test-recorder', 'CREATE', 'roles/slowpoke'));
      expect(recorded.event).toMatchObject({ operationType: 'CREATE', resourcePath: 'roles/slowpoke' });
      expect(slow.finishedAt).toBeUndefined();
      release();
      // Released, it finishes: it was really at work, not skipped.
      expect(await eventually(() => slow.finishedAt)).toBeGreaterThanOrEqual(slow.at);
    } finally {
      release();
      f.recording.slowListenerHeld = undefined;
    }
  });

  it('stores user events for GET /events when eventsEnabled, filtered by type, client and user', async () => {
    const all = await api(t.url, 'GET', '/admin/realms/ev/events', f.admin);
    expect(all.status).toBe(200);
    const types = new Set(all.body.map((e: { type: string }) => e.type));
    for (const type of ['LOGIN', 'LOGIN_ERROR', 'CLIENT_LOGIN', 'REFRESH_TOKEN', 'LOGOUT']) expect(types).toContain(type);
    const logins = await api(t.url, 'GET', `/admin/realms/ev/events?type=LOGIN&client=admin-cli&user=${aliceId}`, f.admin);
    expect(logins.body.length).toBeGreaterThanOrEqual(1);
    expect(logins.body.every((e: { type: string; clientId: string; userId: string }) => e.type === 'LOGIN' && e.clientId === 'admin-cli' && e.userId === aliceId)).toBe(true);
    expect(logins.body[0]).toMatchObject({ realmId: expect.any(String), ipAddress: '127.0.0.1', details: { username: 'alice' } });
  });

  it('stores admin events for GET /admin-events when adminEventsEnabled, with the representation', async () => {
    const events = await api(t.url, 'GET', '/admin/realms/ev/admin-events?operationTypes=CREATE&resourceTypes=CLIENT', f.admin);
    expect(events.status).toBe(200);
    const svc = events.body.find((e: { resourcePath: string }) => e.resourcePath === `clients/${svcUuid}`);
    expect(svc).toMatchObject({ operationType: 'CREATE', resourceType: 'CLIENT', authDetails: { ipAddress: '127.0.0.1' } });
    expect(JSON.parse(svc.representation)).toMatchObject({ clientId: 'svc', attributes: { 'api.url': 'https://hooks.example/in' } });
  });

  it('neither stores events nor admin events when switched off, yet still delivers them to listeners', async () => {
    const off = await api(t.url, 'PUT', '/admin/realms/ev/events/config', f.admin, {
      eventsEnabled: false,
      adminEventsEnabled: false,
      eventsListeners: ['test-recorder'],
    });
    expect(off.status).toBe(204);
    const countOf = async (path: string) => (await api(t.url, 'GET', `/admin/realms/ev/${path}?max=1000`, f.admin)).body.length as number;
    const [events, adminEvents] = [await countOf('events'), await countOf('admin-events')];
    expect((await password(PASSWORD)).status).toBe(200);
    expect((await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'unstored' })).status).toBe(201);
    await eventually(() => adminDeliveries(f.deliveries, 'test-recorder', 'CREATE', 'roles/unstored').length);
    expect(await countOf('events')).toBe(events);
    expect(await countOf('admin-events')).toBe(adminEvents);
    // Only the listeners now named get the events.
    expect(adminDeliveries(f.deliveries, 'test-slow', 'CREATE', 'roles/unstored')).toEqual([]);
  });

  it('refuses an events config naming a listener that is not installed', async () => {
    const response = await api(t.url, 'PUT', '/admin/realms/ev/events/config', f.admin, { eventsListeners: ['test-recorder', 'no-such-listener'] });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.body)).toContain('no-such-listener');
  });

  it('keeps a listener that is not installed when the realm PUT names it, as Keycloak 26; the installed ones still get events', async () => {
    const put = await api(t.url, 'PUT', '/admin/realms/ev', f.admin, { eventsListeners: ['metrics-listener', 'test-recorder'] });
    expect(put.status).toBe(204);
    const config = await api(t.url, 'GET', '/admin/realms/ev/events/config', f.admin);
    expect(config.body.eventsListeners).toEqual(['metrics-listener', 'test-recorder']);
    expect((await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'despite-unknown' })).status).toBe(201);
    expect((await api(t.url, 'POST', '/admin/realms/ev/roles', f.admin, { name: 'despite-unknown-2' })).status).toBe(201);
    await eventually(() => adminDeliveries(f.deliveries, 'test-recorder', 'CREATE', 'roles/despite-unknown-2').length);
    // Named once per realm and listener, however many events pass it by.
    const warnings = t.logs.filter((l) => l.msg === 'realm names an event listener that is not installed' && l.listener === 'metrics-listener');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ realm: 'ev' });
    // The events config itself still refuses it, as Keycloak's does.
    expect((await api(t.url, 'PUT', '/admin/realms/ev/events/config', f.admin, { eventsListeners: ['metrics-listener'] })).status).toBe(400);
    expect((await api(t.url, 'PUT', '/admin/realms/ev/events/config', f.admin, { eventsListeners: ['test-recorder'] })).status).toBe(204);
  });

  it('puts no client secret, api.key or password in any event, representation, stored event or log line', async () => {
    // Writes that carry secrets: a realm SMTP password, a client secret rotation, a user update with credentials.
    expect((await api(t.url, 'PUT', '/admin/realms/ev', f.admin, { smtpServer: { host: 'smtp.example', port: '25', from: 'a@example.com', auth: 'true', user: 'u', password: SMTP_PASSWORD } })).status).toBe(204);
    expect((await api(t.url, 'PUT', `/admin/realms/ev/users/${aliceId}`, f.admin, { credentials: [{ type: 'password', value: RESET_PASSWORD }] })).status).toBe(204);
    expect((await api(t.url, 'PUT', `/admin/realms/ev/clients/${svcUuid}`, f.admin, { clientId: 'svc', secret: CLIENT_SECRET, serviceAccountsEnabled: true, attributes: { 'api.key': API_KEY } })).status).toBe(204);
    await eventually(() => adminDeliveries(f.deliveries, 'test-recorder', 'UPDATE', `clients/${svcUuid}`).length >= 1);
    const enable = await api(t.url, 'PUT', '/admin/realms/ev/events/config', f.admin, { eventsEnabled: true, adminEventsEnabled: true, adminEventsDetailsEnabled: true });
    expect(enable.status).toBe(204);

    const stored = [
      (await api(t.url, 'GET', '/admin/realms/ev/events?max=1000', f.admin)).body,
      (await api(t.url, 'GET', '/admin/realms/ev/admin-events?max=1000', f.admin)).body,
    ];
    const texts = {
      deliveries: JSON.stringify(f.deliveries.map((d) => d.event)),
      stored: JSON.stringify(stored),
      logs: JSON.stringify(t.logs),
    };
    expect(texts.deliveries).toContain('hooks.example');
    for (const [where, text] of Object.entries(texts)) {
      for (const secret of [CLIENT_SECRET, API_KEY, PASSWORD, RESET_PASSWORD, WRONG_PASSWORD, SMTP_PASSWORD, '$argon2']) {
        expect(text.includes(secret), `${secret} in ${where}`).toBe(false);
      }
    }
  });
});

describe('admin events on PostgreSQL', () => {
  let f: Fixture;
  beforeAll(async () => {
    f = await setUp('postgres', 'events-test-pg');
  });
  afterAll(() => f?.t.close());

  // PostgreSQL reads on another pooled connection: a listener called inside the transaction would not see the write.
  it('calls listeners only once the write is visible to other connections', async () => {
    const { t, admin, deliveries } = f;
    const user = await api(t.url, 'POST', '/admin/realms/ev/users', admin, { username: 'carol' });
    expect(user.status).toBe(201);
    const client = await api(t.url, 'POST', '/admin/realms/ev/clients', admin, { clientId: 'pg-client' });
    expect(client.status).toBe(201);
    for (const path of [`users/${idFromLocation(user)}`, `clients/${idFromLocation(client)}`]) {
      const [delivery] = await arrived(() => adminDeliveries(deliveries, 'test-recorder', 'CREATE', path));
      expect(await eventually(() => delivery.committed !== null && delivery)).toMatchObject({ committed: true });
    }
  });
});
