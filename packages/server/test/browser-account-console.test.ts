import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { masterAdminClient } from './support/admin-client.js';
import { AccountConsoleSession } from './support/account-console.js';
import { startServer, type TestServer } from './support/server.js';

/**
 * Keycloak's account console (issue 42) in headless Chromium, signed in as a user of realm `acme` through the
 * realm's account-console client: every page it shows works against the account REST API with no failed request,
 * no 4xx/5xx and no page or console error (AccountConsoleSession records them all); screenshots of each page.
 */
let t: TestServer;
let kc: KcAdminClient;
let s: AccountConsoleSession;

beforeAll(async () => {
  t = await startServer();
  kc = await masterAdminClient(t.url);
  await kc.realms.create({ realm: 'acme', enabled: true, eventsEnabled: true, organizationsEnabled: true });
  kc.setConfig({ realmName: 'acme' });
  await kc.users.create({ username: 'dana', email: 'dana@example.com', emailVerified: true, firstName: 'Dana', lastName: 'Scully', enabled: true, credentials: [{ type: 'password', value: 'dana-pass-1' }] });
  s = await AccountConsoleSession.start(t, 'acme');
});
afterAll(async () => {
  await s?.close();
  await t?.close();
});

describe('account console', () => {
  it('signs in through account-console and shows personal info', async () => {
    await s.signIn('dana', 'dana-pass-1');
    expect(s.page.url()).toMatch(/\/realms\/acme\/account\/$/);
    await s.page.waitForSelector('#email', { timeout: 30_000 });
    expect(await s.page.inputValue('#email')).toBe('dana@example.com');
    expect(await s.page.inputValue('#lastName')).toBe('Scully');
    expect(s.requests).toContain('POST /realms/acme/protocol/openid-connect/token 200');
    expect(s.problems).toEqual([]);
  });

  it('saves personal info through the account API', async () => {
    s.reset();
    await s.page.fill('#lastName', 'Mulder');
    await s.page.click('[data-testid="save"]');
    await s.page.waitForSelector('.pf-v5-c-alert.pf-m-success', { timeout: 30_000 });
    await s.settled();
    expect(s.requests).toContain('POST /realms/acme/account/ 204');
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    expect(dana.lastName).toBe('Mulder');
    expect(s.problems).toEqual([]);
  });

  it('lists the password on the signing-in page', async () => {
    const problems = await s.open('account-security/signing-in', 'signing-in', (p) => p.waitForSelector('[data-testid="password/credential-list"], [id*="password"]', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/credentials 200');
    expect(await s.page.textContent('body')).toContain('My password');
    expect(problems).toEqual([]);
  });

  it('lists the session on the device-activity page', async () => {
    const problems = await s.open('account-security/device-activity', 'device-activity', (p) => p.waitForSelector('text=Current session', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/sessions/devices 200');
    expect(await s.page.textContent('body')).toContain('account-console');
    expect(problems).toEqual([]);
  });

  it('lists the applications and the groups', async () => {
    let problems = await s.open('applications', 'applications', (p) => p.waitForSelector('text=account-console', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/applications 200');
    expect(problems).toEqual([]);
    const group = await kc.groups.create({ name: 'agents' });
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    await kc.users.addToGroup({ id: dana.id!, groupId: group.id });
    problems = await s.open('groups', 'groups', (p) => p.waitForSelector('text=/agents', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/groups 200');
    expect(problems).toEqual([]);
  });

  it('lists the organizations the user belongs to', async () => {
    const created = await kc.organizations.create({ name: 'Bureau', alias: 'bureau', domains: [{ name: 'bureau.example' }] });
    const orgId = (created as { id: string }).id;
    const [dana] = await kc.users.find({ username: 'dana', exact: true });
    await kc.organizations.addMember({ orgId, userId: dana.id! });
    const problems = await s.open('organizations', 'organizations', (p) => p.waitForSelector('text=Bureau', { timeout: 30_000 }));
    expect(s.requests).toContain('GET /realms/acme/account/organizations 200');
    expect(problems).toEqual([]);
  });
});
