/**
 * Issue 18 in Chromium: the admin console's Realm settings → Keys (the keys list and its Providers tab), Identity
 * providers and User federation pages load without a failed request or a console error (support/admin-console.ts
 * records them). The keys list names each key's provider (the key-provider component GET /keys points at), an
 * imported identity provider is listed, an LDAP provider kept as data shows as a card, and a realm without any shows
 * the empty page, offering no provider Realmgate cannot run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleSession } from './support/admin-console.js';
import { screenshot } from './support/browser.js';
import { startServer, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

let t: TestServer;
let session: ConsoleSession;
let activeKid: string;
/** The key-provider component of the active key (its id is not the kid: keys carry Keycloak's kid). */
let activeProvider: string;

beforeAll(async () => {
  t = await startServer();
  const kc = await masterAdminClient(t.url);
  // A real Keycloak export with a GitHub identity provider (and its mapper), kept as data.
  await kc.realms.create(JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/cqen-example.json'), 'utf8')));
  kc.setConfig({ realmName: 'example' });
  await kc.components.create({ name: 'corp-ldap', providerId: 'ldap', providerType: 'org.keycloak.storage.UserStorageProvider', config: { enabled: ['true'], bindCredential: ['ldap-secret'] } });
  const master = (await t.server.context.storage.realms.byName('master'))!;
  const active = (await t.server.context.keys.list(master.id)).find((k) => k.active)!;
  activeKid = active.kid;
  activeProvider = active.componentId;
  session = await ConsoleSession.start(t);
  await session.signIn();
}, 300_000);
afterAll(async () => {
  await session?.close();
  await t?.close();
});

const open = (...args: Parameters<ConsoleSession['open']>) => session.open(...args);

describe('the admin console pages of keys, identity providers and user federation', () => {
  it('Realm settings → Keys lists the active key with its provider, from the key-provider components', async () => {
    expect(await open('master/realm-settings/keys', 'keys-list', (p) => p.getByText(activeKid).first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests).toContain('GET /admin/realms/master/keys 200');
    expect(session.requests.some((r) => /^GET \/admin\/realms\/master\/components\/? 200/.test(r)), session.requests.join('\n')).toBe(true);
    // The provider column is filled from the component whose id the key names: they agree.
    const row = session.page.locator('tr', { hasText: activeKid });
    await expect(row.getByText('rsa-generated').count()).resolves.toBeGreaterThan(0);
  });

  it('Realm settings → Keys → Providers lists the rsa-generated key provider', async () => {
    expect(await open('master/realm-settings/keys/providers', 'keys-providers', (p) => p.getByTestId('provider-name-link').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    await expect(session.page.getByTestId('provider-name-link').first().textContent()).resolves.toBe('rsa-generated');
  });

  it("a key provider's page opens", async () => {
    expect(await open(`master/realm-settings/keys/providers/${activeProvider}/rsa-generated/settings`, 'key-provider', (p) => p.waitForResponse((r) => r.url().includes(`/components/${activeProvider}`), { timeout: 30_000 }))).toEqual([]);
  });

  it('Identity providers lists the imported GitHub provider', async () => {
    expect(await open('example/identity-providers', 'identity-providers', (p) => p.getByRole('link', { name: 'github', exact: true }).waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => r.startsWith('GET /admin/realms/example/identity-provider/instances 200'))).toBe(true);
  });

  it("an identity provider's settings and mappers tabs show what is kept", async () => {
    expect(await open('example/identity-providers/github/github/settings', 'identity-provider-settings', (p) => p.waitForFunction(() => [...document.querySelectorAll('input')].some((i) => i.value === '?GITHUBID?'), undefined, { timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => r.startsWith('GET /admin/realms/example/identity-provider/instances/github 200'))).toBe(true);
    expect(await open('example/identity-providers/github/github/mappers', 'identity-provider-mappers', (p) => p.getByText('idp-alias').first().waitFor({ timeout: 30_000 }))).toEqual([]);
  });

  it('Identity providers in a realm without any shows the empty page, offering the kinds this server signs in through, grouped as Keycloak groups them', async () => {
    expect(await open('master/identity-providers', 'identity-providers-empty', (p) => p.locator('[data-testid$="-card"]').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    const cards = await session.page.locator('[data-testid$="-card"]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-testid')));
    expect(cards.sort()).toEqual(['apple-card', 'bitbucket-card', 'facebook-card', 'github-card', 'gitlab-card', 'google-card', 'keycloak-oidc-card', 'linkedin-openid-connect-card', 'microsoft-card', 'oidc-card']);
    await expect(session.page.getByText('User-defined:').count()).resolves.toBe(1);
    await expect(session.page.getByText('Social:').count()).resolves.toBe(1);
  });

  it('Keys → Providers → Add provider: the ecdsa-generated form serverinfo describes makes a P-384 key, listed with ES384', async () => {
    expect(await open('master/realm-settings/keys/providers', 'keys-providers-add', (p) => p.getByTestId('provider-name-link').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    const page = session.page;
    await page.getByTestId('addProviderDropdown').click();
    await page.getByTestId('option-ecdsa-generated').click();
    await page.getByTestId('add-provider-button').waitFor({ timeout: 30_000 });
    await screenshot(page, 'keys-provider-add-form');
    // The curve list is the serverinfo description's options; P-384 chosen.
    await page.getByRole('dialog').locator('button', { hasText: 'P-256' }).click();
    await page.getByRole('option', { name: 'P-384' }).click();
    const [created] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && /^\/admin\/realms\/master\/components\/?$/.test(new URL(r.url()).pathname), { timeout: 30_000 }),
      page.getByTestId('add-provider-button').click(),
    ]);
    expect(created.status()).toBe(201);
    const id = created.headers().location!.split('/').pop()!;
    await session.settled();
    const master = (await t.server.context.storage.realms.byName('master'))!;
    const key = (await t.server.context.keys.list(master.id)).find((k) => k.componentId === id);
    expect(key).toMatchObject({ algorithm: 'ES384', active: true });
    expect(session.problems).toEqual([]);
  });

  it('Identity providers → GitHub: its add page saves a provider this server signs in through', async () => {
    expect(await open('example/identity-providers/github/add', 'identity-provider-add-github', (p) => p.locator('input[name="config.clientId"]').waitFor({ timeout: 30_000 }))).toEqual([]);
    const page = session.page;
    await screenshot(page, 'identity-provider-add-github');
    await page.locator('input[name="alias"]').fill('github-two');
    await page.locator('input[name="config.clientId"]').fill('gh-console');
    await page.locator('input[name="config.clientSecret"]').fill('gh-console-secret');
    const [created] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && /\/identity-provider\/instances\/?$/.test(new URL(r.url()).pathname), { timeout: 30_000 }),
      page.getByRole('button', { name: 'Add', exact: true }).click(),
    ]);
    expect(created.status()).toBe(201);
    await session.settled();
    expect(session.problems).toEqual([]);
    const example = (await t.server.context.storage.realms.byName('example'))!;
    const stored = await t.server.context.storage.federation.providerByAlias(example.id, 'github-two');
    expect(stored).toMatchObject({ providerId: 'github', enabled: true, config: { clientId: 'gh-console' } });
  });

  it('User federation shows the LDAP provider kept as data', async () => {
    expect(await open('example/user-federation', 'user-federation', (p) => p.getByText('corp-ldap').first().waitFor({ timeout: 30_000 }))).toEqual([]);
    expect(session.requests.some((r) => /^GET \/admin\/realms\/example\/components\/? 200/.test(r)), session.requests.join('\n')).toBe(true);
  });

  it("an LDAP provider's page opens", async () => {
    const example = (await t.server.context.storage.realms.byName('example'))!;
    const [ldap] = await t.server.context.storage.federation.components(example.id, { providerType: 'org.keycloak.storage.UserStorageProvider' });
    expect(await open(`example/user-federation/ldap/${ldap.id}`, 'user-federation-ldap', (p) => p.waitForFunction(() => [...document.querySelectorAll('input')].some((i) => i.value === 'corp-ldap'), undefined, { timeout: 30_000 }))).toEqual([]);
    // The bind credential reached the page masked.
    expect(await session.page.evaluate(() => [...document.querySelectorAll('input')].some((i) => i.value.includes('ldap-secret')) || document.body.innerHTML.includes('ldap-secret'))).toBe(false);
  });

  it('User federation in a realm without any provider loads empty, offering none', async () => {
    expect(await open('master/user-federation', 'user-federation-empty', (p) => p.waitForResponse((r) => r.url().includes('/admin/realms/master/components'), { timeout: 30_000 }))).toEqual([]);
    await expect(session.page.locator('[data-testid$="-card"]').count()).resolves.toBe(0);
  });
});
