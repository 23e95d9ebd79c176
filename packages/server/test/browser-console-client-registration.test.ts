/**
 * The admin console's Clients → Client registration and Initial access token tabs (issue 40, item 7) in Chromium:
 * the realm's default policies are listed for anonymous and authenticated callers, a policy's page shows its
 * settings from the providers endpoint, and the initial access tokens list shows one made over the API; each page
 * opened by its deep link must load with no failed request and no console error.
 * Screenshots: test-results/screenshots/admin-console-registration-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleSession } from './support/admin-console.js';
import { adminToken, api, startServer, type TestServer } from './support/server.js';

const REALM = 'registration-tab';
const wait = { timeout: 30_000 };
let t: TestServer;
let session: ConsoleSession;
let admin: string;

beforeAll(async () => {
  t = await startServer();
  admin = await adminToken(t.url);
  expect((await api(t.url, 'POST', '/admin/realms', admin, { realm: REALM, enabled: true })).status).toBe(201);
  session = await ConsoleSession.start(t);
  await session.signIn();
}, 300_000);
afterAll(async () => {
  await session?.close();
  await t?.close();
});

describe('client registration in the console', () => {
  it("lists the realm's anonymous and authenticated policies", async () => {
    expect(await session.open(`${REALM}/clients/client-registration/anonymous`, 'registration-anonymous', (p) => p.getByText('Trusted Hosts').first().waitFor(wait))).toEqual([]);
    for (const name of ['Consent Required', 'Full Scope Disabled', 'Max Clients Limit', 'Allowed Client Scopes']) {
      expect(await session.page.getByText(name).count(), name).toBeGreaterThan(0);
    }
    expect(await session.open(`${REALM}/clients/client-registration/authenticated`, 'registration-authenticated', (p) => p.getByText('Allowed Protocol Mapper Types').first().waitFor(wait))).toEqual([]);
    expect(await session.page.getByText('Trusted Hosts').count()).toBe(0);
  });

  it("opens a policy's settings page", async () => {
    const policies = (await api(t.url, 'GET', `/admin/realms/${REALM}/components?type=org.keycloak.services.clientregistration.policy.ClientRegistrationPolicy`, admin)).body as { id: string; name: string }[];
    const max = policies.find((p) => p.name === 'Max Clients Limit')!;
    const problems = await session.open(`${REALM}/clients/client-registration/anonymous/max-clients/${max.id}`, 'registration-max-clients', (p) => p.locator('input[value="200"]').first().waitFor(wait));
    expect(problems).toEqual([]);
    expect(session.requests.some((line) => line.startsWith(`GET /admin/realms/${REALM}/client-registration-policy/providers 200`))).toBe(true);
  });

  it('lists initial access tokens, never their token', async () => {
    const created = await api(t.url, 'POST', `/admin/realms/${REALM}/clients-initial-access`, admin, { count: 3, expiration: 86400 });
    expect(created.status).toBe(201);
    const problems = await session.open(`${REALM}/clients/initial-access-token`, 'registration-initial-access', (p) => p.getByText(created.body.id).first().waitFor(wait));
    expect(problems).toEqual([]);
    expect(await session.page.content()).not.toContain(created.body.token);
  });

  it("creates an initial access token with the console's form: the token is shown once, the list gets it", async () => {
    const before = ((await api(t.url, 'GET', `/admin/realms/${REALM}/clients-initial-access`, admin)).body as { id: string }[]).map((m) => m.id);
    expect(await session.open(`${REALM}/clients/initialAccessToken/create`, 'registration-create-token', (p) => p.getByTestId('save').waitFor(wait))).toEqual([]);
    const { page } = session;
    await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/admin/realms/${REALM}/clients-initial-access` && r.status() === 201, wait), page.getByTestId('save').click()]);
    await session.ready('registration-token-shown', (p) => p.getByTestId('initialAccessToken').waitFor(wait));
    const field = page.locator('[data-testid="initialAccessToken"] input, input[data-testid="initialAccessToken"]').first();
    const shown = (await field.inputValue()).trim();
    expect(shown.split('.')).toHaveLength(3);
    expect(session.problems).toEqual([]);
    const after = (await api(t.url, 'GET', `/admin/realms/${REALM}/clients-initial-access`, admin)).body as { id: string; count: number; expiration: number }[];
    const added = after.filter((m) => !before.includes(m.id));
    expect(added).toHaveLength(1);
    expect(added[0]).toMatchObject({ count: 1, expiration: 86400 });
    // The token the console showed registers a client.
    const registered = await api(t.url, 'POST', `/realms/${REALM}/clients-registrations/openid-connect`, shown, { redirect_uris: ['http://127.0.0.1:9/cb'] });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  });
});
