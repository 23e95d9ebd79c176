/**
 * Issue 33, point 7: the outbox's delivery log carries users' personal data (username, e-mail, names, address),
 * which the admin API shows to manage-clients nowhere else. Without view-users a caller sees the deliveries with
 * that data withheld, and cannot resend them (a resend goes to the client's webhook URL as it is now, which
 * manage-clients may have pointed anywhere).
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, tokenOfUserWithRoles } from '../../server/test/support/admin-client.js';
import { api, eventually, startServer, tokenRequest, type TestServer } from '../../server/test/support/server.js';

const PACKAGES = resolve(import.meta.dirname, '../..');
const PASSWORD = 'privacy-Passw0rd!';

describe('webhook deliveries in the admin API', () => {
  let t: TestServer;
  let kc: KcAdminClient;
  let receiver: Server;
  let dir: string;
  let manageClients: string;
  let manageClientsViewUsers: string;
  const base = '/admin/realms/shop/ext-event-webhook';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'realmgate-webhook-privacy-'));
    symlinkSync(join(PACKAGES, 'event-webhook'), join(dir, 'event-webhook'), 'dir');
    receiver = createHttpServer((_req, res) => res.writeHead(204).end());
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    t = await startServer({ providersDir: dir, env: { REALMGATE_WEBHOOK_MODE: 'outbox', REALMGATE_WEBHOOK_POLL_MS: '20', REALMGATE_WEBHOOK_ALLOW: '127.0.0.1' } });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'shop', enabled: true, eventsListeners: ['ext-event-webhook'] });
    kc.setConfig({ realmName: 'shop' });
    await kc.clients.create({ clientId: 'app', publicClient: true, directAccessGrantsEnabled: true, attributes: { 'api.url': hook, 'api.key': 'k-123' } });
    await kc.users.create({ username: 'dana', email: 'dana@example.test', firstName: 'Dana', lastName: 'Private', emailVerified: true, enabled: true, credentials: [{ type: 'password', value: PASSWORD, temporary: false }] });
    manageClients = await tokenOfUserWithRoles(kc, t.url, 'mc', ['manage-clients']);
    manageClientsViewUsers = await tokenOfUserWithRoles(kc, t.url, 'mcvu', ['manage-clients', 'view-users']);
    expect((await tokenRequest(t.url, 'shop', { grant_type: 'password', client_id: 'app', username: 'dana', password: PASSWORD })).status).toBe(200);
    await eventually(async () => ((await api(t.url, 'GET', `${base}/deliveries?state=delivered`, manageClientsViewUsers)).body as unknown[]).length > 0, 10_000);
  });
  afterAll(async () => {
    await t?.close();
    receiver?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('manage-clients without view-users sees the deliveries, without the user data', async () => {
    const list = await api(t.url, 'GET', `${base}/deliveries`, manageClients);
    expect(list.status).toBe(200);
    const [delivery] = list.body as Record<string, unknown>[];
    expect(delivery).toMatchObject({ clientId: 'app', eventType: 'LOGIN', state: 'delivered', payload: null, userName: null, payloadWithheld: true });
    const one = await api(t.url, 'GET', `${base}/deliveries/${String(delivery.id)}`, manageClients);
    expect(one.body).toMatchObject({ payload: null, userName: null, payloadWithheld: true });
    for (const text of [JSON.stringify(list.body), JSON.stringify(one.body)]) {
      expect(text).not.toMatch(/dana|Private|example\.test/i);
    }
  });

  it('manage-clients without view-users cannot resend a delivery', async () => {
    const [delivery] = (await api(t.url, 'GET', `${base}/deliveries`, manageClients)).body as { id: string }[];
    const one = await api(t.url, 'POST', `${base}/deliveries/${delivery.id}/resend`, manageClients);
    expect(one.status).toBe(403);
    expect(JSON.stringify(one.body)).toMatch(/view-users/);
    expect((await api(t.url, 'POST', `${base}/deliveries/resend`, manageClients, { state: 'delivered' })).status).toBe(403);
  });

  it('with view-users the payload and the username are there, and a resend is accepted', async () => {
    const [delivery] = (await api(t.url, 'GET', `${base}/deliveries`, manageClientsViewUsers)).body as Record<string, unknown>[];
    expect(delivery.userName).toBe('dana');
    expect(delivery).not.toHaveProperty('payloadWithheld');
    expect(JSON.stringify(delivery.payload)).toContain('dana@example.test');
    expect((await api(t.url, 'POST', `${base}/deliveries/${String(delivery.id)}/resend`, manageClientsViewUsers)).status).toBe(200);
  });
});
