import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import KcAdminClient from '@keycloak/keycloak-admin-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { launchBrowser, screenshot } from '../support/browser.js';
import { pkce } from '../support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from '../support/server.js';
import { startSmtp } from '../support/smtp.js';

/**
 * Issue 37's "Tests that must exist" against a running Keycloak 26.7.3 (the suite's, global-setup.ts): not a
 * comparison of two answers but Keycloak as the upstream of a Realmgate realm, in Chromium. Keycloak's realm holds
 * a confidential client `realmgate` and a user `kcuser` (an e-mail, the attribute `department`, the realm role
 * `kc-staff`); Realmgate's realm `down` has the provider `keycloak-oidc` made from Keycloak's discovery document
 * (`identity-provider/import-config`) with three mappers: the claim `department` to the attribute `department`,
 * the access token's `realm_access.roles` holding kc-staff to the local role `staff`, and the username
 * `kc.${CLAIM.preferred_username}`. Then the other direction: Keycloak's `oidc` provider pointed at Realmgate's
 * discovery, a Realmgate user's first login at Keycloak (a Keycloak user moving in stages).
 */

const KC_PASSWORD = 'Kc-user-password-9';
const RG_PASSWORD = 'Rg-user-password-9';

let kc: { url: string; adminUsername: string; adminPassword: string };
let kcRealm: string;
let t: TestServer;
let token: string;
let browser: Browser;
let app: Server;
let callback: string;

async function keycloakAdmin(): Promise<KcAdminClient> {
  const client = new KcAdminClient({ baseUrl: kc.url, realmName: 'master' });
  await client.auth({ username: kc.adminUsername, password: kc.adminPassword, grantType: 'password', clientId: 'admin-cli' });
  client.setConfig({ realmName: kcRealm });
  return client;
}

const rg = (method: string, path: string, body?: unknown) => api(t.url, method, `/admin/realms/down${path}`, token, body);

/** Realmgate's authorization request for `web` (PKCE), with extra parameters; the verifier to redeem the code. */
function authUrl(extra: Record<string, string> = {}): { url: string; verifier: string } {
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', state: 'app-state', code_challenge: challenge, code_challenge_method: 'S256', ...extra });
  return { url: `${t.url}/realms/down/protocol/openid-connect/auth?${query}`, verifier };
}

const atKeycloak = (page: Page) => page.url().startsWith(`${kc.url}/realms/${kcRealm}/`);
const atCallback = (page: Page) => page.url().startsWith(callback);

/** Keycloak's login page, filled in as a user does; waits until the browser has left Keycloak. */
async function keycloakLogin(page: Page, username = 'kcuser', password = KC_PASSWORD): Promise<void> {
  await page.waitForSelector('#kc-login');
  expect(atKeycloak(page), page.url()).toBe(true);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL((url) => !url.href.startsWith(`${kc.url}/realms/${kcRealm}/login-actions/authenticate`)), page.click('#kc-login')]);
}

/** The code the application got, redeemed; its tokens. */
async function redeem(page: Page, verifier: string): Promise<Record<string, string>> {
  await page.waitForURL((url) => url.href.startsWith(callback));
  const code = new URL(page.url()).searchParams.get('code');
  expect(code, page.url()).toBeTruthy();
  const tokens = await tokenRequest(t.url, 'down', { grant_type: 'authorization_code', client_id: 'web', code: code!, redirect_uri: callback, code_verifier: verifier });
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body as Record<string, string>;
}

async function localUsers(): Promise<{ id: string; username: string; email?: string; attributes?: Record<string, string[]> }[]> {
  const answer = await rg('GET', '/users?briefRepresentation=false');
  expect(answer.status).toBe(200);
  return answer.body as { id: string; username: string; email?: string; attributes?: Record<string, string[]> }[];
}

beforeAll(async () => {
  kc = inject('keycloak');
  kcRealm = `kcup-${randomUUID().slice(0, 8)}`;
  t = await startServer();
  token = await adminToken(t.url);
  app = createServer((request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end(`the application got ${request.url}`));
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/cb`;
  const endpoint = `${t.url}/realms/down/broker/keycloak-oidc/endpoint`;

  // Keycloak: the realm, its role, a user with attributes (user profile: unmanaged attributes allowed), the client.
  const admin = new KcAdminClient({ baseUrl: kc.url, realmName: 'master' });
  await admin.auth({ username: kc.adminUsername, password: kc.adminPassword, grantType: 'password', clientId: 'admin-cli' });
  await admin.realms.create({ realm: kcRealm, enabled: true });
  admin.setConfig({ realmName: kcRealm });
  const profile = await admin.users.getProfile();
  await admin.users.updateProfile({ ...profile, unmanagedAttributePolicy: 'ENABLED' } as typeof profile);
  await admin.roles.create({ name: 'kc-staff' });
  const { id: kcUserId } = await admin.users.create({
    username: 'kcuser',
    enabled: true,
    email: 'kcuser@example.test',
    emailVerified: true,
    firstName: 'Kay',
    lastName: 'Cloak',
    attributes: { department: ['engineering'] },
    credentials: [{ type: 'password', value: KC_PASSWORD, temporary: false }],
  });
  const role = await admin.roles.findOneByName({ name: 'kc-staff' });
  await admin.users.addRealmRoleMappings({ id: kcUserId, roles: [{ id: role!.id!, name: role!.name! }] });
  const { id: clientId } = await admin.clients.create({
    clientId: 'realmgate',
    enabled: true,
    publicClient: false,
    secret: 'realmgate-secret',
    standardFlowEnabled: true,
    redirectUris: [endpoint],
    attributes: { 'post.logout.redirect.uris': `${endpoint}/logout_response` },
  });
  // The attribute as an ID token claim (Keycloak puts user attributes in tokens only through a mapper).
  await admin.clients.addProtocolMapper(
    { id: clientId },
    { name: 'department', protocol: 'openid-connect', protocolMapper: 'oidc-usermodel-attribute-mapper', config: { 'user.attribute': 'department', 'claim.name': 'department', 'jsonType.label': 'String', 'id.token.claim': 'true', 'access.token.claim': 'true', 'userinfo.token.claim': 'true' } },
  );

  // Realmgate: the realm, the role the mapper grants, the application.
  const created = await api(t.url, 'POST', '/admin/realms', token, {
    realm: 'down',
    enabled: true,
    eventsEnabled: true,
    roles: { realm: [{ name: 'staff' }] },
    clients: [{ clientId: 'web', enabled: true, publicClient: true, redirectUris: [callback], standardFlowEnabled: true, attributes: { 'post.logout.redirect.uris': callback } }],
  });
  expect(created.status).toBe(201);
  // The provider as the console's "Use discovery endpoint" makes it: the imported fields, then the client's own.
  const imported = await rg('POST', '/identity-provider/import-config', { providerId: 'keycloak-oidc', fromUrl: `${kc.url}/realms/${kcRealm}/.well-known/openid-configuration` });
  expect(imported.status, JSON.stringify(imported.body)).toBe(200);
  const config = imported.body as Record<string, string>;
  expect(config.issuer).toBe(`${kc.url}/realms/${kcRealm}`);
  expect(config.logoutUrl).toBe(`${kc.url}/realms/${kcRealm}/protocol/openid-connect/logout`);
  const provider = await rg('POST', '/identity-provider/instances', {
    alias: 'keycloak-oidc',
    providerId: 'keycloak-oidc',
    displayName: 'Company Keycloak',
    enabled: true,
    config: { ...config, clientId: 'realmgate', clientSecret: 'realmgate-secret', clientAuthMethod: 'client_secret_post', pkceEnabled: 'true', pkceMethod: 'S256', defaultScope: 'openid email profile', backchannelSupported: 'false', syncMode: 'IMPORT' },
  });
  expect(provider.status, JSON.stringify(provider.body)).toBe(201);
  for (const mapper of [
    { name: 'department', identityProviderMapper: 'oidc-user-attribute-idp-mapper', config: { claim: 'department', 'user.attribute': 'department', syncMode: 'FORCE' } },
    { name: 'staff', identityProviderMapper: 'oidc-role-idp-mapper', config: { claim: 'realm_access.roles', 'claim.value': 'kc-staff', role: 'staff', syncMode: 'INHERIT' } },
    { name: 'username', identityProviderMapper: 'oidc-username-idp-mapper', config: { template: 'kc.${CLAIM.preferred_username}', syncMode: 'INHERIT' } },
  ]) {
    const added = await rg('POST', '/identity-provider/instances/keycloak-oidc/mappers', { ...mapper, identityProviderAlias: 'keycloak-oidc' });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
  }
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  if (kcRealm && !process.env.REALMGATE_KEYCLOAK_KEEP_REALMS) await (await keycloakAdmin().catch(() => null))?.realms.del({ realm: kcRealm }).catch(() => {});
  await t?.close();
  app?.close();
});

describe('Keycloak 26.7.3 as the upstream of a Realmgate realm (keycloak-oidc, discovery import)', () => {
  let userId: string;

  it('the first login through Keycloak creates the user with the mapped attribute, role and username', async () => {
    const page = await browser.newPage();
    const { url, verifier } = authUrl();
    await page.goto(url);
    const button = page.locator('#social-keycloak-oidc');
    expect((await button.textContent())?.trim()).toContain('Company Keycloak');
    await Promise.all([page.waitForURL((u) => u.href.startsWith(kc.url)), button.click()]);
    await screenshot(page, 'keycloak-upstream-login');
    await keycloakLogin(page);
    await redeem(page, verifier);
    await page.close();

    const users = await localUsers();
    expect(users.map((u) => u.username)).toEqual(['kc.kcuser']);
    const [user] = users;
    userId = user.id;
    expect(user.email).toBe('kcuser@example.test');
    expect(user.attributes?.department).toEqual(['engineering']);
    const roles = await rg('GET', `/users/${userId}/role-mappings/realm`);
    expect((roles.body as { name: string }[]).map((r) => r.name)).toContain('staff');
    // Linked to Keycloak's account by its subject (Keycloak's user id), named by its own username (not the mapped one).
    const [kcUser] = await (await keycloakAdmin()).users.find({ username: 'kcuser', exact: true });
    const links = await rg('GET', `/users/${userId}/federated-identity`);
    expect(links.body).toEqual([expect.objectContaining({ identityProvider: 'keycloak-oidc', userId: kcUser.id, userName: 'kcuser' })]);
    const events = await rg('GET', '/events?type=IDENTITY_PROVIDER_FIRST_LOGIN');
    expect((events.body as { details?: Record<string, string> }[]).some((e) => e.details?.identity_provider === 'keycloak-oidc')).toBe(true);
  });

  it('a second login (kc_idp_hint: straight to Keycloak, no Realmgate page) signs the same user in, the attribute synced (FORCE)', async () => {
    const admin = await keycloakAdmin();
    const [kcUser] = await admin.users.find({ username: 'kcuser', exact: true });
    await admin.users.update({ id: kcUser.id! }, { ...kcUser, attributes: { department: ['research'] } });

    const page = await browser.newPage();
    const visited: string[] = [];
    page.on('request', (request) => {
      if (request.isNavigationRequest()) visited.push(request.url());
    });
    const { url, verifier } = authUrl({ kc_idp_hint: 'keycloak-oidc' });
    await page.goto(url);
    // Straight from the authorization request to Keycloak: Realmgate showed nothing in between.
    expect(atKeycloak(page), page.url()).toBe(true);
    expect(visited.filter((v) => v.startsWith(t.url)).every((v) => /\/protocol\/openid-connect\/auth\?|\/broker\/keycloak-oidc\/login\?/.test(v))).toBe(true);
    await keycloakLogin(page);
    const tokens = await redeem(page, verifier);
    await page.close();

    const users = await localUsers();
    expect(users.map((u) => u.id)).toEqual([userId]);
    expect(users[0].attributes?.department).toEqual(['research']);
    const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString()) as { sub: string };
    expect(claims.sub).toBe(userId);
  });

  it('a disabled provider is not offered, and kc_idp_hint naming it shows the login page', async () => {
    const current = await rg('GET', '/identity-provider/instances/keycloak-oidc');
    expect((await rg('PUT', '/identity-provider/instances/keycloak-oidc', { ...(current.body as object), enabled: false })).status).toBe(204);
    try {
      const page = await browser.newPage();
      await page.goto(authUrl().url);
      await page.waitForSelector('#kc-login');
      expect(await page.locator('#social-keycloak-oidc').count()).toBe(0);
      await page.goto(authUrl({ kc_idp_hint: 'keycloak-oidc' }).url);
      expect(page.url().startsWith(t.url), page.url()).toBe(true);
      await page.waitForSelector('#kc-login');
      expect(await page.locator('#social-keycloak-oidc').count()).toBe(0);
      await page.close();
    } finally {
      expect((await rg('PUT', '/identity-provider/instances/keycloak-oidc', { ...(current.body as object), enabled: true })).status).toBe(204);
    }
  });

  it('cancelling at Keycloak (its consent page, "No") comes back as a clear page, never a 5xx', async () => {
    const admin = await keycloakAdmin();
    const [client] = await admin.clients.find({ clientId: 'realmgate' });
    await admin.clients.update({ id: client.id! }, { ...client, consentRequired: true });
    try {
      const page = await browser.newPage();
      const statuses: number[] = [];
      page.on('response', (response) => {
        if (response.url().startsWith(t.url)) statuses.push(response.status());
      });
      await page.goto(authUrl({ kc_idp_hint: 'keycloak-oidc' }).url);
      await keycloakLogin(page);
      await page.waitForSelector('#kc-cancel');
      await screenshot(page, 'keycloak-upstream-consent');
      await Promise.all([page.waitForURL((u) => u.href.startsWith(t.url)), page.click('#kc-cancel')]);
      await page.waitForSelector('#kc-login');
      expect(await page.locator('.message.error, [class*="error"]').first().textContent()).toMatch(/cancelled/i);
      expect(statuses.some((s) => s >= 500)).toBe(false);
      expect(statuses).toContain(400);
      await page.close();
    } finally {
      await admin.clients.update({ id: client.id! }, { ...client, consentRequired: false });
    }
    const events = await rg('GET', '/events?type=IDENTITY_PROVIDER_LOGIN_ERROR');
    expect((events.body as { error?: string }[]).map((e) => e.error)).toContain('rejected_by_user');
  });

  it('an upstream error (Keycloak refuses the code exchange: a wrong client secret) is the login page with a message, never a 5xx', async () => {
    const current = (await rg('GET', '/identity-provider/instances/keycloak-oidc')).body as { config: Record<string, string> };
    expect((await rg('PUT', '/identity-provider/instances/keycloak-oidc', { ...current, config: { ...current.config, clientSecret: 'not-the-secret' } })).status).toBe(204);
    try {
      const page = await browser.newPage();
      const statuses: number[] = [];
      page.on('response', (response) => {
        if (response.url().startsWith(t.url)) statuses.push(response.status());
      });
      await page.goto(authUrl({ kc_idp_hint: 'keycloak-oidc' }).url);
      await keycloakLogin(page);
      expect(page.url().startsWith(t.url), page.url()).toBe(true);
      await page.waitForSelector('#kc-login');
      expect(await page.content()).toMatch(/Company Keycloak failed/);
      expect(statuses.some((s) => s >= 500)).toBe(false);
      await page.close();
    } finally {
      // The secret as it was (the admin API masks it: the real one is given again).
      expect((await rg('PUT', '/identity-provider/instances/keycloak-oidc', { ...current, config: { ...current.config, clientSecret: 'realmgate-secret' } })).status).toBe(204);
    }
    const events = await rg('GET', '/events?type=IDENTITY_PROVIDER_LOGIN_ERROR');
    expect((events.body as { error?: string }[]).length).toBeGreaterThanOrEqual(2);
  });

  it("Realmgate's logout (backchannel off) sends the browser through Keycloak's logout: the Keycloak session ends too", async () => {
    const admin = await keycloakAdmin();
    const [kcUser] = await admin.users.find({ username: 'kcuser', exact: true });
    for (const session of await admin.users.listSessions({ id: kcUser.id! })) await admin.realms.deleteSession({ realm: kcRealm, session: session.id!, isOffline: false });
    const page = await browser.newPage();
    const { url, verifier } = authUrl({ kc_idp_hint: 'keycloak-oidc' });
    await page.goto(url);
    await keycloakLogin(page);
    const tokens = await redeem(page, verifier);
    expect(await admin.users.listSessions({ id: kcUser.id! })).toHaveLength(1);
    const sid = (JSON.parse(Buffer.from(tokens.id_token.split('.')[1], 'base64url').toString()) as { sid: string }).sid;
    const sessionIds = async () => ((await rg('GET', `/users/${userId}/sessions`)).body as { id: string }[]).map((session) => session.id);
    expect(await sessionIds()).toContain(sid);

    const through: string[] = [];
    page.on('request', (request) => {
      if (request.isNavigationRequest()) through.push(request.url());
    });
    await page.goto(`${t.url}/realms/down/protocol/openid-connect/logout?${new URLSearchParams({ id_token_hint: tokens.id_token, post_logout_redirect_uri: callback, state: 'bye' })}`);
    await page.waitForURL((u) => u.href.startsWith(callback));
    expect(new URL(page.url()).searchParams.get('state')).toBe('bye');
    expect(through.some((u) => u.startsWith(`${kc.url}/realms/${kcRealm}/protocol/openid-connect/logout`))).toBe(true);
    expect(await admin.users.listSessions({ id: kcUser.id! })).toHaveLength(0);
    // This sign-in's session ended here (the earlier tests' sessions, other browsers, are not this logout's).
    expect(await sessionIds()).not.toContain(sid);
    // Signing in again asks Keycloak for the password again: no session left there.
    await page.goto(authUrl({ kc_idp_hint: 'keycloak-oidc' }).url);
    await page.waitForSelector('#kc-login');
    expect(atKeycloak(page)).toBe(true);
    await page.close();
  });
});

describe('the other direction: Keycloak brokering to a Realmgate realm (a Keycloak user moving in stages)', () => {
  it("Keycloak's oidc provider pointed at Realmgate's discovery: a Realmgate user's first login at Keycloak works", async () => {
    // Realmgate's realm `source` with a confidential client for Keycloak and a user.
    const kcEndpoint = `${kc.url}/realms/${kcRealm}/broker/realmgate/endpoint`;
    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'source',
      enabled: true,
      clients: [{ clientId: 'keycloak', enabled: true, publicClient: false, secret: 'keycloak-secret', redirectUris: [kcEndpoint], standardFlowEnabled: true }],
      users: [{ username: 'rguser', enabled: true, email: 'rguser@example.test', emailVerified: true, firstName: 'Ray', lastName: 'Gate', credentials: [{ type: 'password', value: RG_PASSWORD }] }],
    });
    expect(created.status).toBe(201);

    // Keycloak: the provider from Realmgate's discovery document (Keycloak's own import-config), an application.
    const admin = await keycloakAdmin();
    const config = (await admin.identityProviders.importFromUrl({ providerId: 'oidc', fromUrl: `${t.url}/realms/source/.well-known/openid-configuration` })) as Record<string, string>;
    expect(config.issuer).toBe(`${t.url}/realms/source`);
    await admin.identityProviders.create({
      alias: 'realmgate',
      providerId: 'oidc',
      displayName: 'Realmgate',
      enabled: true,
      config: { ...config, clientId: 'keycloak', clientSecret: 'keycloak-secret', clientAuthMethod: 'client_secret_basic', defaultScope: 'openid email profile', syncMode: 'IMPORT', pkceEnabled: 'true', pkceMethod: 'S256' },
    });
    await admin.clients.create({ clientId: 'kc-app', enabled: true, publicClient: true, standardFlowEnabled: true, redirectUris: [callback] });

    const page = await browser.newPage();
    const { challenge } = pkce();
    await page.goto(`${kc.url}/realms/${kcRealm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'kc-app', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', kc_idp_hint: 'realmgate' })}`);
    // Realmgate's login page for realm `source`.
    await page.waitForSelector('#kc-login');
    expect(page.url().startsWith(`${t.url}/realms/source/`), page.url()).toBe(true);
    await page.fill('#username', 'rguser');
    await page.fill('#password', RG_PASSWORD);
    await Promise.all([page.waitForURL((u) => !u.href.startsWith(t.url)), page.click('#kc-login')]);
    await screenshot(page, 'keycloak-downstream-after-realmgate');
    // Keycloak's first broker login: the profile is complete, so it creates the user and sends the browser on.
    await page.waitForURL((u) => u.href.startsWith(callback));
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.close();

    const [kcUser] = await admin.users.find({ username: 'rguser', exact: true });
    expect(kcUser?.email).toBe('rguser@example.test');
    const links = await admin.users.listFederatedIdentities({ id: kcUser.id! });
    expect(links.map((l) => l.identityProvider)).toEqual(['realmgate']);
  });

  it("the username mapper names Keycloak's user; the federated link keeps the upstream's own username", async () => {
    const admin = await keycloakAdmin();
    await admin.identityProviders.createMapper({
      alias: 'realmgate',
      identityProviderMapper: { name: 'username', identityProviderAlias: 'realmgate', identityProviderMapper: 'oidc-username-idp-mapper', config: { template: 'rg.${CLAIM.preferred_username}', syncMode: 'INHERIT' } },
    });
    const added = await api(t.url, 'POST', '/admin/realms/source/users', token, { username: 'rgthird', enabled: true, email: 'rgthird@example.test', emailVerified: true, firstName: 'Third', lastName: 'User', credentials: [{ type: 'password', value: RG_PASSWORD, temporary: false }] });
    expect(added.status).toBe(201);
    const page = await browser.newPage();
    await page.goto(`${kc.url}/realms/${kcRealm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'kc-app', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', kc_idp_hint: 'realmgate' })}`);
    await page.waitForSelector('#kc-login');
    await page.fill('#username', 'rgthird');
    await page.fill('#password', RG_PASSWORD);
    await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#kc-login')]);
    await page.close();
    const [kcUser] = await admin.users.find({ username: 'rg.rgthird', exact: true });
    expect(kcUser).toBeTruthy();
    const links = await admin.users.listFederatedIdentities({ id: kcUser.id! });
    console.log(`keycloak: the username mapper's user ${kcUser.username} is linked as ${JSON.stringify(links.map((l) => l.userName))}`);
    expect(links.map((l) => l.userName)).toEqual(['rgthird']);
  });

  it('the reference for "try another way" in the first broker login: Keycloak\'s e-mail page offers re-authentication beside it', async () => {
    // Keycloak's realm sends mail (a loopback SMTP server); a Keycloak user with the e-mail of a Realmgate user.
    const smtp = await startSmtp();
    try {
      const admin = await keycloakAdmin();
      await admin.realms.update({ realm: kcRealm }, { smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'keycloak@example.test' } });
      await admin.users.create({ username: 'kcdup', enabled: true, email: 'dup@example.test', emailVerified: true, firstName: 'Dup', lastName: 'Local', credentials: [{ type: 'password', value: KC_PASSWORD, temporary: false }] });
      const added = await api(t.url, 'POST', '/admin/realms/source/users', token, { username: 'rgdup', enabled: true, email: 'dup@example.test', emailVerified: true, firstName: 'Dup', lastName: 'Remote', credentials: [{ type: 'password', value: RG_PASSWORD, temporary: false }] });
      expect(added.status).toBe(201);

      const page = await browser.newPage();
      await page.goto(`${kc.url}/realms/${kcRealm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'kc-app', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256', kc_idp_hint: 'realmgate' })}`);
      await page.waitForSelector('#kc-login');
      await page.fill('#username', 'rgdup');
      await page.fill('#password', RG_PASSWORD);
      await Promise.all([page.waitForURL((u) => u.href.startsWith(kc.url)), page.click('#kc-login')]);
      // "Account already exists": add to the existing account, then the e-mail page.
      await page.waitForSelector('#linkAccount');
      await Promise.all([page.waitForNavigation(), page.click('#linkAccount')]);
      await eventually(() => smtp.mails.some((m) => m.to.includes('dup@example.test')), 20_000);
      await screenshot(page, 'keycloak-idp-link-email');
      const tryAnotherWay = page.locator('#try-another-way');
      expect(await tryAnotherWay.count()).toBe(1);
      await Promise.all([page.waitForNavigation(), tryAnotherWay.click()]);
      await screenshot(page, 'keycloak-idp-select-authenticator');
      const ways = (await page.locator('.select-auth-box-headline').allTextContents()).map((w) => w.trim());
      console.log(`keycloak: the first broker login's "try another way" lists ${JSON.stringify(ways)}`);
      // Two ways, the e-mail (asking, first) and the re-authentication sub-flow: what Realmgate's page offers too.
      expect(ways).toHaveLength(2);
      expect(ways[0]).toMatch(/mail/i);
      await Promise.all([page.waitForNavigation(), page.locator('.select-auth-box-parent').nth(1).click()]);
      await page.waitForSelector('#password');
      await page.fill('#password', KC_PASSWORD);
      await Promise.all([page.waitForURL((u) => u.href.startsWith(callback)), page.click('#kc-login')]);
      expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
      await page.close();
      const [kcdup] = await admin.users.find({ username: 'kcdup', exact: true });
      expect((await admin.users.listFederatedIdentities({ id: kcdup.id! })).map((l) => l.identityProvider)).toEqual(['realmgate']);
    } finally {
      await smtp.close();
    }
  });
});
