/**
 * Issue 41: the admin console's Realm settings → Client policies tab, in Chromium against a real server. Its Profiles
 * and Policies sub-tabs load (the global profiles listed) with no failed request and no console error, and a profile
 * and a policy made in its forms are saved (checked over the admin REST API).
 * Screenshots: test-results/screenshots/admin-console-client-policies-*.png.
 */
import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConsole, consoleOnRealm, type ConsoleSession } from './support/admin-console.js';
import type { TestServer } from './support/server.js';

const REALM = 'console-policies';
let t: TestServer;
let session: ConsoleSession;
let kc: KcAdminClient;

beforeAll(async () => {
  ({ t, kc, session } = await consoleOnRealm(REALM));
}, 300_000);
afterAll(() => closeConsole({ t, session }));

const wait = { timeout: 30_000 };

describe('Realm settings → Client policies', () => {
  it('lists the global profiles, and a profile made in the form is saved', async () => {
    const { page } = session;
    expect(await session.open(`${REALM}/realm-settings/client-policies/profiles`, 'client-policies-profiles', (p) => p.getByText('fapi-1-baseline').first().waitFor(wait))).toEqual([]);
    expect(await session.open(`${REALM}/realm-settings/client-policies/profiles/add-profile`, 'client-policies-add-profile', (p) => p.locator('#name').waitFor(wait))).toEqual([]);
    await page.locator('#name').fill('console-profile');
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === `/admin/realms/${REALM}/client-policies/profiles` && r.status() === 204, wait),
      page.getByTestId('saveCreateProfile').click(),
    ]);
    await session.settled();
    expect(session.problems).toEqual([]);
    expect((await kc.clientPolicies.listProfiles({})).profiles).toEqual([expect.objectContaining({ name: 'console-profile', executors: [] })]);
  });

  // Failed once in CI (Node 24) with two page errors of the console's own script after the save: "Missing
  // ':policyName' param" and "Cannot read properties of undefined (reading 'replace')". Not our server's answer:
  // Keycloak 26.7.3's own console against Keycloak itself shows the same two errors on every save of a new policy
  // (3 of 3, checked in Chromium; the PUT and the GET that follows have the same shapes here and there). The add
  // form, once submitted, renders its Conditions section, whose links need the route's `policyName`, which the add
  // route does not have; it breaks only when that render runs before the navigation to the edit route commits (a
  // timing of React's and the router's updates in the page). The errors stay problems here: a failure of this
  // step with exactly these two is that upstream race, not a regression of ours.
  it('lists the policies, and a policy made in the form is saved', async () => {
    const { page } = session;
    expect(await session.open(`${REALM}/realm-settings/client-policies/policies`, 'client-policies-policies', (p) => p.getByTestId('formView-policiesView').waitFor(wait))).toEqual([]);
    expect(await session.open(`${REALM}/realm-settings/client-policies/policies/add-client-policy`, 'client-policies-add-policy', (p) => p.locator('#name').waitFor(wait))).toEqual([]);
    await page.locator('#name').fill('console-policy');
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === `/admin/realms/${REALM}/client-policies/policies` && r.status() === 204, wait),
      page.getByTestId('saveCreatePolicy').click(),
    ]);
    await session.settled();
    expect(session.problems).toEqual([]);
    expect((await kc.clientPolicies.listPolicies({})).policies).toEqual([expect.objectContaining({ name: 'console-policy', conditions: [], profiles: [] })]);
  });
});
