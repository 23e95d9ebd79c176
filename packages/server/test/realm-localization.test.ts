import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type KcAdminClient from '@keycloak/keycloak-admin-client';
import { masterAdminClient, tokenOfUserWithRoles } from './support/admin-client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, httpDatabases, startServer, type TestServer } from './support/server.js';

/**
 * Issue 16: a realm's `localizationTexts` are kept and served at Keycloak's `/admin/realms/{realm}/localization` (the
 * console's Realm settings → Localization → Realm overrides): locales, a locale's texts, one text (text/plain), adding
 * one (PUT, text/plain) or several (POST, JSON), deleting one or a locale. Reading needs any administrative role,
 * changing manage-realm. The export writes them back.
 */

describe.each(httpDatabases)('realm localization texts (%s)', (database) => {
  let t: TestServer;
  let kc: KcAdminClient;
  let token: string;
  const base = '/admin/realms/loc/localization';

  beforeAll(async () => {
    t = await startServer({ database });
    token = await adminToken(t.url);
    const created = await api(t.url, 'POST', '/admin/realms', token, {
      realm: 'loc',
      enabled: true,
      localizationTexts: { de: { 'profile.attributes.bpn': 'BPN', loginTitle: 'Anmelden bei ${name}' }, en: { loginTitle: 'Sign in to ${name}' } },
    });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body ?? {})).not.toContain('localizationTexts');
    kc = await masterAdminClient(t.url);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('serves what a realm file brought, changes it as Keycloak does, and exports it back', async () => {
    expect(await kc.realms.getRealmSpecificLocales({ realm: 'loc' })).toEqual(['de', 'en']);
    expect(await kc.realms.getRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'de' })).toEqual({ 'profile.attributes.bpn': 'BPN', loginTitle: 'Anmelden bei ${name}' });
    // One text, as text/plain.
    const one = await fetch(`${t.url}${base}/de/loginTitle`, { headers: { authorization: `Bearer ${token}` } });
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await one.text()).toBe('Anmelden bei ${name}');
    expect((await api(t.url, 'GET', `${base}/de/missing`, token)).status).toBe(404);
    // Adding and replacing one text (text/plain), as the console's "Add translation" does.
    await kc.realms.addLocalization({ realm: 'loc', selectedLocale: 'fr', key: 'loginTitle' }, 'Connexion à ${name}');
    await kc.realms.addLocalization({ realm: 'loc', selectedLocale: 'de', key: 'loginTitle' }, 'Einloggen');
    expect(await kc.realms.getRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'fr' })).toEqual({ loginTitle: 'Connexion à ${name}' });
    expect((await kc.realms.getRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'de' })).loginTitle).toBe('Einloggen');
    const json = await api(t.url, 'PUT', `${base}/fr/other`, token, JSON.stringify('x'));
    expect(json.status).toBe(415);
    // Several at once (JSON), merged with the locale's others.
    expect((await api(t.url, 'POST', `${base}/fr`, token, { doLogIn: 'Se connecter', loginTitle: 'Connexion' })).status).toBe(204);
    expect(await kc.realms.getRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'fr' })).toEqual({ doLogIn: 'Se connecter', loginTitle: 'Connexion' });
    // Deleting one text, then a whole locale; what is not there is 404.
    await kc.realms.deleteRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'fr', key: 'doLogIn' });
    expect((await api(t.url, 'DELETE', `${base}/fr/doLogIn`, token)).status).toBe(404);
    expect((await api(t.url, 'DELETE', `${base}/fr`, token)).status).toBe(204);
    expect((await api(t.url, 'DELETE', `${base}/fr`, token)).status).toBe(404);
    expect(await kc.realms.getRealmSpecificLocales({ realm: 'loc' })).toEqual(['de', 'en']);
    // Bad locales and bodies are 400 naming them.
    expect((await api(t.url, 'GET', `${base}/${encodeURIComponent('../x')}`, token)).status).toBe(400);
    expect((await api(t.url, 'POST', `${base}/de`, token, { loginTitle: 5 })).status).toBe(400);
    // The export writes them back; imported again, the same texts.
    const exported = (await kc.realms.export({ realm: 'loc' })) as Record<string, unknown>;
    expect(exported.localizationTexts).toEqual({ de: { 'profile.attributes.bpn': 'BPN', loginTitle: 'Einloggen' }, en: { loginTitle: 'Sign in to ${name}' } });
    expect((await api(t.url, 'POST', '/admin/realms', token, { ...exported, realm: 'loc-copy' })).status).toBe(201);
    expect(((await kc.realms.export({ realm: 'loc-copy' })) as Record<string, unknown>).localizationTexts).toEqual(exported.localizationTexts);
  });

  it('takes the texts of a real export (Catena-X central, Keycloak 25) as they are', async () => {
    const file = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/keycloak-exports/tractusx-cx-central-kc25.json'), 'utf8')) as { localizationTexts: Record<string, Record<string, string>> };
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm: 'loc-cx', localizationTexts: file.localizationTexts })).status).toBe(201);
    for (const [locale, texts] of Object.entries(file.localizationTexts)) expect(await kc.realms.getRealmLocalizationTexts({ realm: 'loc-cx', selectedLocale: locale })).toEqual(texts);
  });

  it('refuses a realm file whose texts are not texts by locale, by JSON path', async () => {
    const bad = await api(t.url, 'POST', '/admin/realms', token, { realm: 'loc-bad', localizationTexts: { de: { loginTitle: ['x'] } } });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'unknown_error', error_description: expect.stringContaining('realm.localizationTexts.de.loginTitle') });
    const locale = await api(t.url, 'POST', '/admin/realms', token, { realm: 'loc-bad', localizationTexts: { '../etc': {} } });
    expect(locale.status).toBe(400);
  });

  it('reading needs any administrative role on the realm, changing manage-realm', async () => {
    kc.setConfig({ realmName: 'loc' });
    const viewerToken = await tokenOfUserWithRoles(kc, t.url, 'viewer', ['view-realm']);
    const nobody = await tokenOfUserWithRoles(kc, t.url, 'nobody', []);
    kc.setConfig({ realmName: 'master' });
    expect((await api(t.url, 'GET', base, viewerToken)).status).toBe(200);
    expect((await api(t.url, 'GET', `${base}/de`, viewerToken)).status).toBe(200);
    expect((await api(t.url, 'GET', base, nobody)).status).toBe(403);
    expect((await api(t.url, 'GET', `${base}/de/loginTitle`, nobody)).status).toBe(403);
    expect((await api(t.url, 'POST', `${base}/de`, viewerToken, { loginTitle: 'x' })).status).toBe(403);
    expect((await api(t.url, 'PUT', `${base}/de/loginTitle`, viewerToken, 'x', { 'content-type': 'text/plain' })).status).toBe(403);
    expect((await api(t.url, 'DELETE', `${base}/de/loginTitle`, viewerToken)).status).toBe(403);
    expect((await api(t.url, 'DELETE', `${base}/de`, viewerToken)).status).toBe(403);
    expect(await kc.realms.getRealmLocalizationTexts({ realm: 'loc', selectedLocale: 'de' })).toEqual({ 'profile.attributes.bpn': 'BPN', loginTitle: 'Einloggen' });
  });
});
