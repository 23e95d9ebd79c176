/**
 * Keycloak's admin console (the npm package, built by packages/admin-console) in headless Chromium against a real
 * server: the bootstrap administrator opens /admin/, signs in through keycloak-js (security-admin-console, PKCE),
 * lands on the welcome page, then opens each page below by its deep link and a reload (keycloak-js signs in again
 * with the fragment route in its redirect URI, as in Keycloak). Every request is recorded: any 4xx/5xx that is not
 * an intended answer, any failed request and any console error fails the test, listed by page. Screenshots go to
 * test-results/screenshots (git-ignored).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleSession, inputWithValue } from './support/admin-console.js';
import { screenshot } from './support/browser.js';
import { ADMIN_USERNAME, startServer, type TestServer } from './support/server.js';

let t: TestServer;
let session: ConsoleSession;

beforeAll(async () => {
  t = await startServer();
  session = await ConsoleSession.start(t);
}, 300_000);
afterAll(async () => {
  await session?.close();
  await t?.close();
});

// Each page in a fresh document: this file is the one whose deep links sign in again through keycloak-js.
const open = (route: string, name: string, ready: Parameters<ConsoleSession['open']>[2], realm?: string) => session.open(route, name, ready, realm, { fresh: true });

describe('the admin console in Chromium', () => {
  it('/admin/ signs the bootstrap administrator in through security-admin-console with PKCE and shows the welcome page', async () => {
    session.reset();
    const { page } = session;
    const authorizations: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/protocol/openid-connect/auth?')) authorizations.push(request.url());
    });
    await session.signIn();
    await screenshot(page, 'admin-console-welcome');
    expect(authorizations[0]).toContain('client_id=security-admin-console');
    expect(authorizations[0]).toContain('code_challenge_method=S256');
    expect(page.url()).toMatch(new RegExp(`^${t.url}/admin/master/console/`));
    expect(session.requests.some((r) => r.startsWith('GET /admin/master/console/whoami 200'))).toBe(true);
    expect(session.problems).toEqual([]);
  });

  it('realm settings (general) shows the realm', async () => {
    expect(await open('master/realm-settings', 'realm-settings', inputWithValue('master'))).toEqual([]);
    expect(session.requests).toContain('GET /admin/realms/master 200');
  });

  it('the clients list shows the realm’s clients', async () => {
    expect(await open('master/clients', 'clients', (p) => p.getByText('security-admin-console').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => /^GET \/admin\/realms\/master\/clients\/? 200/.test(r))).toBe(true);
  });

  it('the users list shows the administrator', async () => {
    expect(await open('master/users', 'users', (p) => p.getByRole('link', { name: ADMIN_USERNAME, exact: true }).waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests).toContain('GET /admin/realms/master/ui-ext/brute-force-user 200');
  });

  it('the realm list names master', async () => {
    expect(await open('master/realms', 'realms', (p) => p.locator('table td').filter({ hasText: /^master/ }).first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => r.startsWith('GET /admin/realms/master/ui-ext/realms/names 200'))).toBe(true);
  });

  it('sessions lists the administrator’s own session', async () => {
    expect(await open('master/sessions', 'sessions', (p) => p.getByText(ADMIN_USERNAME, { exact: true }).first().waitFor({ timeout: 30_000 }))).toEqual([]);
  });

  it('authentication lists the flows and what uses them', async () => {
    expect(await open('master/authentication', 'authentication', (p) => p.getByText('Browser flow').first().or(p.getByText('flow.browser').first()).waitFor({ timeout: 30_000 }))).toEqual([]);
  });

  it('realm settings → events shows the event listeners', async () => {
    expect(await open('master/realm-settings/events', 'realm-settings-events', (p) => p.waitForResponse((r) => r.url().includes('/ui-ext/available-event-listeners'), { timeout: 30_000 }))).toEqual([]);
  });

  it('a user’s details (settings, attributes, sessions) and a client’s settings and sessions', async () => {
    const storage = t.server.context.storage;
    const master = (await storage.realms.byName('master'))!;
    const admin = (await storage.users.byUsername(master.id, ADMIN_USERNAME))!;
    const consoleClient = (await storage.clients.byClientId(master.id, 'security-admin-console'))!;
    expect(await open(`master/users/${admin.id}/settings`, 'user-settings', inputWithValue(ADMIN_USERNAME))).toEqual([]);
    expect(await open(`master/users/${admin.id}/sessions`, 'user-sessions', (p) => p.waitForResponse((r) => r.url().includes(`/users/${admin.id}/sessions`), { timeout: 30_000 }))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/settings`, 'client-settings', inputWithValue('security-admin-console'))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/sessions`, 'client-sessions', (p) => p.waitForResponse((r) => r.url().includes('/ui-ext/sessions/client'), { timeout: 30_000 }))).toEqual([]);
  });

  it('client scopes: the list, a scope’s mappers, and a client’s client scopes tab', async () => {
    const storage = t.server.context.storage;
    const master = (await storage.realms.byName('master'))!;
    const profile = (await storage.clientScopes.byName(master.id, 'profile'))!;
    const consoleClient = (await storage.clients.byClientId(master.id, 'security-admin-console'))!;
    expect(await open('master/client-scopes', 'client-scopes', (p) => p.getByText('microprofile-jwt').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => r.startsWith('GET /admin/realms/master/default-default-client-scopes 200'))).toBe(true);
    expect(await open(`master/client-scopes/${profile.id}/mappers`, 'client-scope-mappers', (p) => p.getByText('given name').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(await open(`master/clients/${consoleClient.id}/clientScopes/setup`, 'client-client-scopes', (p) => p.getByText('security-admin-console-dedicated').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => new RegExp(`^GET /admin/realms/master/clients/${consoleClient.id}/default-client-scopes 200`).test(r))).toBe(true);
  });

  it('the realm roles list shows the default roles', async () => {
    expect(await open('master/roles', 'realm-roles', (p) => p.getByText('default-roles-master').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => r.startsWith('GET /admin/realms/master/roles 200'))).toBe(true);
  });
});
