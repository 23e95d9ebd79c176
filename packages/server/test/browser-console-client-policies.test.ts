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

  // Keycloak 26.7.3's console throws two errors of its own on every save of a new policy, against Keycloak itself as
  // against this server (checked in Chromium with the same steps, 4 of 4 on each, the PUT bodies and answers alike):
  // once the add form is submitted it renders its Conditions section, whose "Add condition" link needs the route's
  // `policyName`, on the add route, which has none, before the navigation to the policy's edit route commits. This
  // test used to read the problems as soon as the PUT was answered (the page's network was already idle, so
  // settled() returned at once): it passed when it read them before that render and failed when after (once in CI).
  // It now waits for the edit page and expects exactly those two: any other problem fails it, and so does a console
  // that no longer throws them (then this list goes).
  const UPSTREAM_NEW_POLICY_ERRORS = ["page error: Cannot read properties of undefined (reading 'replace')", 'page error: Missing ":policyName" param'];

  it('lists the policies, and a policy made in the form is saved', async () => {
    const { page } = session;
    expect(await session.open(`${REALM}/realm-settings/client-policies/policies`, 'client-policies-policies', (p) => p.getByTestId('formView-policiesView').waitFor(wait))).toEqual([]);
    expect(await session.open(`${REALM}/realm-settings/client-policies/policies/add-client-policy`, 'client-policies-add-policy', (p) => p.locator('#name').waitFor(wait))).toEqual([]);
    await page.locator('#name').fill('console-policy');
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PUT' && new URL(r.url()).pathname === `/admin/realms/${REALM}/client-policies/policies` && r.status() === 204, wait),
      page.getByTestId('saveCreatePolicy').click(),
    ]);
    await page.waitForURL(/\/client-policies\/console-policy\/edit-policy$/, wait);
    await page.getByTestId('addCondition').waitFor(wait);
    await session.settled();
    expect([...session.problems].sort()).toEqual([...UPSTREAM_NEW_POLICY_ERRORS].sort());
    expect((await kc.clientPolicies.listPolicies({})).policies).toEqual([expect.objectContaining({ name: 'console-policy', conditions: [], profiles: [] })]);
  });
});
