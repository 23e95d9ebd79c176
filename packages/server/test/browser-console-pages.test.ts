/**
 * More of Keycloak's admin console in Chromium against a real server (issue 18): the realm settings tabs, realm
 * creation, clients, users, groups, sessions, events and organizations. Each page is opened by its route in the loaded
 * console and must load with no failed request and no console error (ConsoleSession records them); the actions an
 * operator takes on them are done by clicks and fills, and their effect is checked over the admin REST API.
 * Screenshots: test-results/screenshots/admin-console-pages-*.png.
 */
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejects } from './support/admin-client.js';
import { closeConsole, consoleOnRealm, inputWithValue, type ConsoleSession } from './support/admin-console.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, api, tokenRequest, type TestServer } from './support/server.js';

const REALM = 'acme';
let t: TestServer;
let session: ConsoleSession;
let kc: KcAdminClient;
let appId: string;
let bobId: string;

beforeAll(async () => {
  ({ t, kc, session } = await consoleOnRealm(REALM, async (kc) => {
    appId = (await kc.clients.create({ clientId: 'acme-app', publicClient: false, serviceAccountsEnabled: true, redirectUris: ['http://127.0.0.1/cb'] })).id;
    bobId = (await kc.users.create({ username: 'bob', enabled: true, email: 'bob@example.com', firstName: 'Bob', lastName: 'Builder' })).id;
    await kc.roles.create({ name: 'auditor' });
    await kc.groups.create({ name: 'staff' });
    // Realm settings → Email reads the signed-in administrator in the realm shown (acme): answered as Keycloak 26
    // answers it, with the master administrator (a 404 here would fail the tab's check below).
  }));
}, 300_000);
afterAll(() => closeConsole({ t, session }));

const wait = { timeout: 30_000 };
const open = (route: string, name: string, ready: (p: Page) => Promise<unknown>) => session.open(route, `pages-${name}`, ready);
const selectedTab = (p: Page) => p.locator('[role="tab"][aria-selected="true"]').first().waitFor(wait);
const clickFor = (selector: string, method: string, path: RegExp) => session.clickFor(selector, method, path);

describe('realm settings', () => {
  it('every tab in scope opens with no failed request and no console error (User registration included)', async () => {
    const tabs = ['general', 'login', 'email', 'themes', 'events', 'sessions', 'tokens', 'security-defenses', 'user-profile', 'user-registration'];
    const problems: Record<string, string[]> = {};
    for (const tab of tabs) {
      const found = await open(`${REALM}/realm-settings/${tab}`, `realm-settings-${tab}`, selectedTab);
      if (found.length) problems[tab] = found;
    }
    // In the administrator's own realm, the Email tab finds the administrator.
    const email = await open('master/realm-settings/email', 'realm-settings-email-master', selectedTab);
    if (email.length) problems['master email'] = email;
    expect(problems).toEqual({});
    // The User registration tab lists the realm's default role's composites: the realm names it.
    expect((await kc.realms.findOne({ realm: REALM }))?.defaultRole).toMatchObject({ name: `default-roles-${REALM}`, composite: true, clientRole: false });
  });

  it('Login: the User registration switch saves registrationAllowed', async () => {
    expect(await open(`${REALM}/realm-settings/login`, 'login-tab', (p) => p.locator('#kc-user-reg-switch').waitFor({ state: 'attached', ...wait }))).toEqual([]);
    await clickFor('label[for="kc-user-reg-switch"]', 'PUT', new RegExp(`^/admin/realms/${REALM}$`));
    await session.ready('pages-login-registration-on', (p) => p.locator('#kc-user-reg-switch:checked').waitFor({ state: 'attached', ...wait }));
    expect(session.problems).toEqual([]);
    expect((await kc.realms.findOne({ realm: REALM }))?.registrationAllowed).toBe(true);
  });

  it('Events: user events and admin events settings save', async () => {
    const { page } = session;
    expect(await open(`${REALM}/realm-settings/events`, 'events-settings', (p) => p.getByTestId('rs-events-tab').waitFor(wait))).toEqual([]);
    await page.getByTestId('rs-events-tab').click();
    await page.locator('label[for="eventsEnabled-switch"]').click();
    await clickFor('[data-testid="save-user"]', 'PUT', new RegExp(`^/admin/realms/${REALM}/events/config$`));
    await page.getByTestId('rs-admin-events-tab').click();
    await page.locator('label[for="adminEventsEnabled-switch"]').click();
    await clickFor('[data-testid="save-admin"]', 'PUT', new RegExp(`^/admin/realms/${REALM}/events/config$`));
    await session.ready('pages-events-settings-saved', async () => {});
    expect(session.problems).toEqual([]);
    expect(await kc.realms.getConfigEvents({ realm: REALM })).toMatchObject({ eventsEnabled: true, adminEventsEnabled: true });
  });

  it('renaming a realm points its security-admin-console client at the new console page', async () => {
    await kc.realms.create({ realm: 'before', enabled: true });
    await kc.realms.update({ realm: 'before' }, { realm: 'after' });
    kc.setConfig({ realmName: 'after' });
    const [consoleClient] = await kc.clients.find({ clientId: 'security-admin-console' });
    kc.setConfig({ realmName: REALM });
    expect(consoleClient.baseUrl).toBe('/admin/after/console/');
    expect(consoleClient.redirectUris).toEqual(['/admin/after/console/*']);
    // The console of the renamed realm signs in: its page sends keycloak-js to an authorization the client allows.
    const authorize = await fetch(`${t.url}/realms/after/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'security-admin-console', redirect_uri: `${t.url}/admin/after/console/`, response_type: 'code', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`, { redirect: 'manual' });
    expect(authorize.status).toBe(200);
    expect(await authorize.text()).toContain('id="kc-form-login"');
  });
});

describe('realm creation', () => {
  it('the Create realm dialog creates a realm', async () => {
    const { page } = session;
    expect(await open('master/realms', 'realms', (p) => p.getByTestId('add-realm').waitFor(wait))).toEqual([]);
    await page.getByTestId('add-realm').click();
    await page.locator('#realm').fill('made-in-console');
    await clickFor('[data-testid="create"]', 'POST', /^\/admin\/realms\/?$/);
    await session.ready('pages-realm-created', (p) => p.waitForURL(/#\/made-in-console/, wait));
    expect(session.problems).toEqual([]);
    expect((await kc.realms.findOne({ realm: 'made-in-console' }))?.enabled).toBe(true);
  });
});

describe('clients', () => {
  it('the wizard creates a public client with a redirect URI', async () => {
    const { page } = session;
    expect(await open(`${REALM}/clients/add-client`, 'client-new', (p) => p.locator('#clientId').waitFor(wait))).toEqual([]);
    await page.locator('#clientId').fill('acme-spa');
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.locator('#kc-redirect-uris input, [data-testid="redirectUris0"], #redirectUris0').first().fill('http://127.0.0.1:3000/*');
    await clickFor('button:has-text("Save")', 'POST', new RegExp(`^/admin/realms/${REALM}/clients/?$`));
    await session.ready('pages-client-created', (p) => p.waitForURL(/\/clients\/[0-9a-f-]{36}\/settings$/, wait));
    expect(session.problems).toEqual([]);
    const [spa] = await kc.clients.find({ clientId: 'acme-spa' });
    expect(spa).toMatchObject({ publicClient: true, redirectUris: ['http://127.0.0.1:3000/*'] });
  });

  it('settings, credentials, roles, service account roles and sessions tabs open', async () => {
    const problems: Record<string, string[]> = {};
    const tabs: [string, (p: Page) => Promise<unknown>][] = [
      ['settings', inputWithValue('acme-app')],
      ['credentials', (p) => p.locator('#kc-client-secret').waitFor(wait)],
      ['roles', (p) => p.getByTestId('create-role').or(p.getByRole('button', { name: 'Create role' })).first().waitFor(wait)],
      ['serviceAccount', (p) => p.getByTestId('add-role-mapping-button').waitFor(wait)],
      ['sessions', (p) => p.waitForResponse((r) => r.url().includes('/ui-ext/sessions/client'), wait)],
    ];
    for (const [tab, ready] of tabs) {
      const found = await open(`${REALM}/clients/${appId}/${tab}`, `client-${tab}`, ready);
      if (found.length) problems[tab] = found;
    }
    expect(problems).toEqual({});
  });

  it('Credentials: Regenerate replaces the secret', async () => {
    const { page } = session;
    const before = (await kc.clients.getClientSecret({ id: appId })).value;
    expect(await open(`${REALM}/clients/${appId}/credentials`, 'client-credentials-regenerate', (p) => p.locator('#kc-client-secret').waitFor(wait))).toEqual([]);
    // The first Regenerate is the client secret's (the second, the registration access token's).
    await page.getByRole('button', { name: 'Regenerate' }).first().click();
    await clickFor('[data-testid="confirm"]', 'POST', new RegExp(`/clients/${appId}/client-secret$`));
    await session.ready('pages-client-secret-regenerated', async (p) => p.waitForFunction((old) => (document.querySelector('#kc-client-secret') as HTMLInputElement | null)?.value !== old, before, wait));
    expect(session.problems).toEqual([]);
    const after = (await kc.clients.getClientSecret({ id: appId })).value;
    expect(after).not.toBe(before);
    expect(await page.inputValue('#kc-client-secret')).toBe(after);
  });

  it('Roles: Create role adds a client role', async () => {
    const { page } = session;
    expect(await open(`${REALM}/clients/${appId}/roles`, 'client-roles-create', (p) => p.getByRole('button', { name: 'Create role' }).first().waitFor(wait))).toEqual([]);
    await page.getByRole('button', { name: 'Create role' }).first().click();
    await page.locator('#name').fill('reader');
    await clickFor('button:has-text("Save")', 'POST', new RegExp(`/clients/${appId}/roles$`));
    await session.ready('pages-client-role-created', (p) => p.waitForURL(/\/roles\/[0-9a-f-]{36}\/details$/, wait));
    expect(session.problems).toEqual([]);
    expect((await kc.clients.listRoles({ id: appId })).map((r) => r.name)).toContain('reader');
  });
});

describe('users', () => {
  it('Create user makes a user with the required action chosen', async () => {
    const { page } = session;
    expect(await open(`${REALM}/users/add-user`, 'user-new', (p) => p.locator('#username').waitFor(wait))).toEqual([]);
    await page.locator('#username').fill('carol');
    await page.locator('#email').fill('carol@example.com');
    const toggle = page.locator('#requiredActions button[aria-label="Menu toggle"]');
    await toggle.click();
    await page.getByRole('option', { name: 'Update Password' }).click();
    await toggle.click();
    await clickFor('button:has-text("Create")', 'POST', new RegExp(`^/admin/realms/${REALM}/users/?$`));
    await session.ready('pages-user-created', (p) => p.waitForURL(/\/users\/[0-9a-f-]{36}\/settings$/, wait));
    expect(session.problems).toEqual([]);
    const [carol] = await kc.users.find({ username: 'carol', exact: true });
    expect(carol).toMatchObject({ email: 'carol@example.com', requiredActions: ['UPDATE_PASSWORD'] });
  });

  it('settings, attributes, credentials, role mapping and groups tabs open', async () => {
    const problems: Record<string, string[]> = {};
    const tabs: [string, (p: Page) => Promise<unknown>][] = [
      ['settings', inputWithValue('bob')],
      ['attributes', selectedTab],
      ['credentials', (p) => p.getByRole('button', { name: 'Set password' }).first().waitFor(wait)],
      ['role-mapping', (p) => p.getByTestId('add-role-mapping-button').waitFor(wait)],
      ['groups', (p) => p.getByTestId('join-groups-button').or(p.getByRole('button', { name: 'Join Group' })).first().waitFor(wait)],
    ];
    for (const [tab, ready] of tabs) {
      const found = await open(`${REALM}/users/${bobId}/${tab}`, `user-${tab}`, ready);
      if (found.length) problems[tab] = found;
    }
    expect(problems).toEqual({});
  });

  it('Credentials: Set password sets the password and labels it, and the user signs in with it', async () => {
    const { page } = session;
    const setPassword = (p: Page) => p.getByRole('button', { name: 'Set password' }).first();
    expect(await open(`${REALM}/users/${bobId}/credentials`, 'user-set-password', (p) => setPassword(p).waitFor(wait))).toEqual([]);
    await setPassword(page).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('#password').fill('Bob-console-1');
    await dialog.locator('#passwordConfirmation').fill('Bob-console-1');
    // The console offers a temporary password by default; this one is not.
    const temporary = dialog.locator('#temporaryPassword, input[name="temporaryPassword"]').first();
    if (await temporary.isChecked()) await temporary.click({ force: true });
    await dialog.getByTestId('confirm').click();
    await clickFor('[role="dialog"] [data-testid="confirm"]', 'PUT', new RegExp(`/users/${bobId}/credentials/[0-9a-f-]{36}/userLabel$`));
    await session.ready('pages-user-password-set', (p) => p.getByText('My password').first().waitFor(wait));
    // The console itself throws this after the dialog closes: the same flow against Keycloak 26.7.3 gives the same
    // page error (checked with Chromium against Keycloak 26.7.3 start-dev, 2026-11-25); no request fails.
    expect(session.problems.filter((p) => p !== "page error: Cannot read properties of null (reading 'value')")).toEqual([]);
    const [password] = (await kc.users.getCredentials({ id: bobId })).filter((c) => c.type === 'password');
    expect(password.userLabel).toBe('My password');
    expect((await tokenRequest(t.url, REALM, { grant_type: 'password', client_id: 'admin-cli', username: 'bob', password: 'Bob-console-1' })).status).toBe(200);
  });

  it('Role mapping: Assign role maps a realm role to the user', async () => {
    const { page } = session;
    expect(await open(`${REALM}/users/${bobId}/role-mapping`, 'user-assign-role', (p) => p.getByTestId('add-role-mapping-button').waitFor(wait))).toEqual([]);
    await page.getByTestId('add-role-mapping-button').click();
    await page.getByTestId('roles-role').click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('row', { name: /auditor/ }).getByRole('checkbox').check();
    await clickFor('[role="dialog"] [data-testid="assign"]', 'POST', new RegExp(`/users/${bobId}/role-mappings/realm$`));
    await session.ready('pages-user-role-assigned', (p) => p.getByTestId('assigned-roles').getByText('auditor').first().waitFor(wait));
    expect(session.problems).toEqual([]);
    expect((await kc.users.listRealmRoleMappings({ id: bobId })).map((r) => r.name)).toContain('auditor');
  });

  it('Groups: Join Group adds the user to a group', async () => {
    const { page } = session;
    const joinGroup = (p: Page) => p.getByRole('button', { name: 'Join Group' }).first();
    expect(await open(`${REALM}/users/${bobId}/groups`, 'user-join-group', (p) => joinGroup(p).waitFor(wait))).toEqual([]);
    await joinGroup(page).click();
    await page.getByRole('dialog').getByTestId('staff-check').check();
    await clickFor('[role="dialog"] [data-testid="join-button"]', 'PUT', new RegExp(`/users/${bobId}/groups/[0-9a-f-]{36}$`));
    await session.ready('pages-user-joined', (p) => p.getByRole('link', { name: 'staff' }).or(p.getByText('staff')).first().waitFor(wait));
    expect(session.problems).toEqual([]);
    expect((await kc.users.listGroups({ id: bobId })).map((g) => g.name)).toEqual(['staff']);
  });
});

describe('groups, sessions, events, organizations', () => {
  it('Groups: Create group, then Add member', async () => {
    const { page } = session;
    expect(await open(`${REALM}/groups`, 'groups', (p) => p.getByTestId('openCreateGroupModal').first().waitFor(wait))).toEqual([]);
    await page.getByTestId('openCreateGroupModal').first().click();
    await page.getByRole('dialog').locator('#name').fill('builders');
    await clickFor('[data-testid="createGroup"]', 'POST', new RegExp(`^/admin/realms/${REALM}/groups/?$`));
    await session.ready('pages-group-created', (p) => p.getByRole('link', { name: 'builders' }).or(p.getByText('builders')).first().waitFor(wait));
    const [builders] = await kc.groups.find({ search: 'builders' });
    expect(builders?.name).toBe('builders');
    // The group pages' path is the group path (ids), its tabs are not in the URL.
    expect(await open(`${REALM}/groups/${builders.id}`, 'group', (p) => p.getByRole('tab', { name: 'Members' }).waitFor(wait))).toEqual([]);
    await page.getByRole('tab', { name: 'Members' }).click();
    await page.getByTestId('addMember').or(page.getByRole('button', { name: 'Add member' })).first().click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('row', { name: /bob/ }).getByRole('checkbox').check();
    await clickFor('[role="dialog"] [data-testid="add"]', 'PUT', new RegExp(`/users/${bobId}/groups/${builders.id}$`));
    await session.ready('pages-group-member-added', (p) => p.getByText('bob').first().waitFor(wait));
    expect(session.problems).toEqual([]);
    expect((await kc.groups.listMembers({ id: builders.id! })).map((u) => u.username)).toEqual(['bob']);
  });

  it('sessions, user events, admin events and organizations (once enabled for the realm) open', async () => {
    // The console lists Organizations only for a realm with organizations enabled (Realm settings → General).
    await kc.realms.update({ realm: REALM }, { organizationsEnabled: true });
    const problems: Record<string, string[]> = {};
    const pages: [string, string, (p: Page) => Promise<unknown>][] = [
      ['sessions', `${REALM}/sessions`, (p) => p.waitForResponse((r) => r.url().includes(`/admin/realms/${REALM}/ui-ext/sessions`), wait)],
      ['events', `${REALM}/events`, (p) => p.waitForResponse((r) => new URL(r.url()).pathname === `/admin/realms/${REALM}/events`, wait)],
      ['admin-events', `${REALM}/events/admin-events`, (p) => p.waitForResponse((r) => new URL(r.url()).pathname === `/admin/realms/${REALM}/admin-events`, wait)],
      ['organizations', `${REALM}/organizations`, (p) => p.getByRole('heading', { name: 'Organizations' }).first().waitFor(wait)],
    ];
    for (const [name, route, ready] of pages) {
      const found = await open(route, name, ready);
      if (found.length) problems[name] = found;
    }
    expect(problems).toEqual({});
  });
});

describe('the console’s client-role list for role assignment (ui-ext/available-roles)', () => {
  it('answers Keycloak’s shape; a query-users administrator is refused, a view-users one cannot grant itself more', async () => {
    const token = (await tokenRequest(t.url, 'master', { grant_type: 'password', client_id: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD })).body.access_token as string;
    const rows = (await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/available-roles/users/${bobId}?first=0&max=100&search=manage-clients`, token)).body as Record<string, string>[];
    const [management] = await kc.clients.find({ clientId: 'realm-management' });
    expect(rows).toEqual([{ id: expect.any(String), role: 'manage-clients', description: '${role_manage-clients}', client: 'realm-management', clientId: management.id }]);

    const roles = new Map((await kc.clients.listRoles({ id: management.id! })).map((r) => [r.name!, r]));
    const holder = async (username: string, role: string) => {
      const { id } = await kc.users.create({ username, enabled: true, credentials: [{ type: 'password', value: `${username}-pass-1`, temporary: false }] });
      await kc.users.addClientRoleMappings({ id, clientUniqueId: management.id!, roles: [{ id: roles.get(role)!.id!, name: role }] });
      const client = new KcAdminClient({ baseUrl: t.url, realmName: REALM });
      await client.auth({ grantType: 'password', clientId: 'admin-cli', username, password: `${username}-pass-1` });
      return { id, client, token: client.accessToken! };
    };
    const querier = await holder('querier', 'query-users');
    expect((await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/available-roles/users/${bobId}`, querier.token)).status).toBe(403);
    const viewer = await holder('viewer', 'view-users');
    const visible = (await api(t.url, 'GET', `/admin/realms/${REALM}/ui-ext/available-roles/users/${viewer.id}?search=manage-users`, viewer.token)).body as { id: string; role: string }[];
    expect(visible.map((r) => r.role)).toEqual(['manage-users']);
    await rejects(viewer.client.users.addClientRoleMappings({ id: viewer.id, clientUniqueId: management.id!, roles: [{ id: visible[0].id, name: 'manage-users' }] }), 403);
    expect((await kc.users.listClientRoleMappings({ id: viewer.id, clientUniqueId: management.id! })).map((r) => r.name)).toEqual(['view-users']);
  });
});
