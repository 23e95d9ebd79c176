/**
 * Scenario B through Keycloak's admin console in Chromium, as an operator sets up the client webhook
 * (packages/event-webhook): Realm settings → Events adds `ext-event-webhook` to the event listeners; the client
 * wizard creates a confidential client with "Service account roles"; its Service account roles tab assigns
 * `manage-clients` of `realm-management`. That service account then sets the webhook attributes (`api.url`,
 * `api.key`) on the client users sign up through — over the admin REST API, because the console has no field for
 * client attributes — and a user who registers on the registration page makes the server POST the REGISTER event
 * to a receiver on 127.0.0.1. Every console step has no failed request and no console error, and is screenshot
 * (`scenario-b-…`).
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient, realmManagement } from './support/admin-client.js';
import { ConsoleSession } from './support/admin-console.js';
import { screenshot } from './support/browser.js';
import { pkce } from './support/forms.js';
import { REPO_ROOT, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

const REALM = 'shop';
let t: TestServer;
let session: ConsoleSession;
let kc: KcAdminClient;
let providers: string;
let receiver: Server;
let receiverUrl: string;
const received: { authorization?: string; body: Record<string, unknown> }[] = [];

beforeAll(async () => {
  providers = mkdtempSync(join(tmpdir(), 'realmgate-console-webhook-'));
  symlinkSync(join(REPO_ROOT, 'packages', 'event-webhook'), join(providers, 'event-webhook'), 'dir');
  t = await startServer({ providersDir: providers });
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: REALM, enabled: true, registrationAllowed: true });
  kc.setConfig({ realmName: REALM });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ authorization: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/realmgate`;
  session = await ConsoleSession.start(t);
  await session.signIn();
}, 300_000);
afterAll(async () => {
  await session?.close();
  await t?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  if (providers) rmSync(providers, { recursive: true, force: true });
});

describe('scenario B in the admin console: webhook listener, service account with manage-clients, registration delivered', () => {
  let clientUuid: string;

  it('Realm settings → Events: adds ext-event-webhook to the event listeners and saves', async () => {
    const { page } = session;
    await session.open('shop/realm-settings/events', 'scenario-b-1-events', (p) => p.locator('[data-testid="saveEventListenerBtn"]').waitFor({ timeout: 30_000 }));
    const toggle = page.locator('#eventsListeners button[aria-label="Menu toggle"]');
    await toggle.click();
    await page.getByRole('option', { name: 'ext-event-webhook' }).click();
    await toggle.click();
    await Promise.all([page.waitForResponse((r) => r.url().endsWith(`/admin/realms/${REALM}/events/config`) && r.request().method() === 'PUT'), page.click('[data-testid="saveEventListenerBtn"]')]);
    await session.ready('scenario-b-2-listener-saved', (p) => p.getByText('Event listener has been updated.').waitFor({ timeout: 30_000 }));
    expect(session.problems).toEqual([]);
    expect((await kc.realms.getConfigEvents({ realm: REALM })).eventsListeners).toEqual(expect.arrayContaining(['jboss-logging', 'ext-event-webhook']));
  });

  it('the client wizard creates a confidential client with service account roles', async () => {
    const { page } = session;
    await session.open('shop/clients/add-client', 'scenario-b-3-new-client', (p) => p.locator('#clientId').waitFor({ timeout: 30_000 }));
    await page.locator('#clientId').fill('webhook-admin');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.locator('#kc-authentication').check({ force: true });
    await page.locator('#kc-flow-service-account').check();
    await screenshot(page, 'admin-console-scenario-b-4-capabilities');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Save' }).click();
    await session.ready('scenario-b-5-client-created', (p) => p.waitForURL(/\/clients\/[0-9a-f-]{36}\/settings$/, { timeout: 30_000 }));
    expect(session.problems).toEqual([]);
    const [client] = await kc.clients.find({ clientId: 'webhook-admin' });
    expect(client).toMatchObject({ publicClient: false, serviceAccountsEnabled: true });
    clientUuid = client.id!;
  });

  it('its Service account roles tab assigns manage-clients of realm-management', async () => {
    const { page } = session;
    await session.open(`shop/clients/${clientUuid}/serviceAccount`, 'scenario-b-6-service-account', (p) => p.getByTestId('add-role-mapping-button').waitFor({ timeout: 30_000 }));
    await page.getByTestId('add-role-mapping-button').click();
    await page.getByTestId('client-role').click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox').first().fill('manage-clients');
    await dialog.getByRole('textbox').first().press('Enter');
    await dialog.getByRole('row', { name: /manage-clients.*realm-management/ }).getByRole('checkbox').check();
    await screenshot(page, 'admin-console-scenario-b-7-assign-manage-clients');
    await dialog.getByTestId('assign').click();
    await session.ready('scenario-b-8-assigned', (p) => p.getByTestId('assigned-roles').getByText('manage-clients').first().waitFor({ timeout: 30_000 }));
    expect(session.problems).toEqual([]);
    const serviceAccount = await kc.clients.getServiceAccountUser({ id: clientUuid });
    const { management } = await realmManagement(kc);
    expect((await kc.users.listClientRoleMappings({ id: serviceAccount.id!, clientUniqueId: management })).map((r) => r.name)).toEqual(['manage-clients']);
  });

  it('the service account sets the webhook on account-console (REST), and a registration on the registration page is delivered', async () => {
    const { page } = session;
    await session.open(`shop/clients/${clientUuid}/credentials`, 'scenario-b-9-credentials', (p) => p.locator('#kc-client-secret').waitFor({ timeout: 30_000 }));
    expect(session.problems).toEqual([]);
    const secret = await page.inputValue('#kc-client-secret');
    expect(secret).toBe((await kc.clients.getClientSecret({ id: clientUuid })).value);

    // The console has no field for client attributes: the service account sets them over the admin API.
    const grant = await tokenRequest(t.url, REALM, { grant_type: 'client_credentials', client_id: 'webhook-admin', client_secret: secret });
    expect(grant.status).toBe(200);
    const token = grant.body.access_token as string;
    const [accountConsole] = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients?clientId=account-console`, token)).body as { id: string; attributes: Record<string, string> }[];
    const full = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients/${accountConsole.id}`, token)).body as { attributes: Record<string, string> };
    const put = await api(t.url, 'PUT', `/admin/realms/${REALM}/clients/${accountConsole.id}`, token, { ...full, attributes: { ...full.attributes, 'api.url': receiverUrl, 'api.key': 'shop-bearer-key' } });
    expect(put.status).toBe(204);

    const registration = await session.browser.newPage();
    const { challenge } = pkce();
    const url = new URL(`${t.url}/realms/${REALM}/protocol/openid-connect/registrations`);
    url.search = new URLSearchParams({ client_id: 'account-console', redirect_uri: `${t.url}/realms/${REALM}/account/`, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }).toString();
    await registration.goto(url.href);
    await registration.fill('#firstName', 'Ada');
    await registration.fill('#lastName', 'Lovelace');
    await registration.fill('#email', 'ada@example.com');
    await registration.fill('#username', 'ada');
    await registration.fill('#password', 'analytical-engine-1');
    await registration.fill('#password-confirm', 'analytical-engine-1');
    await screenshot(registration, 'admin-console-scenario-b-10-registration');
    await Promise.all([registration.waitForURL((u) => u.href.startsWith(`${t.url}/realms/${REALM}/account/`), { timeout: 30_000 }), registration.click('button[type=submit]')]);
    await registration.close();

    const delivery = await eventually(() => received.find((r) => r.body.type === 'REGISTER'), 15_000);
    expect(delivery.authorization).toBe('Bearer shop-bearer-key');
    expect(delivery.body).toMatchObject({ type: 'REGISTER', user_name: 'ada', email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', realm: { name: REALM } });
    const [ada] = await kc.users.find({ username: 'ada', exact: true });
    expect(delivery.body.user_id).toBe(ada.id);
  });
});
