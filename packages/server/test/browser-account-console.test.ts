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
  await kc.realms.create({ realm: 'acme', enabled: true, eventsEnabled: true });
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
    console.log(s.requests.join('\n'));
    expect(s.problems).toEqual([]);
  });
});
