import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, firstForm, pkce, type FormResponse } from './support/forms.js';
import { adminToken, api, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 35, part 2: required actions as providers. Over HTTP, as a browser without JavaScript and an administrator
 * see them, compared with a Keycloak 26.7.3 given the same calls: the pages come in the realm's priority order (a
 * disabled action is not asked), raise/lower priority changes which page comes first; Terms and Conditions is
 * accepted or declined; the admin API's config, config-description, register and unregister answer Keycloak's
 * statuses and refuse bad input without writing; an application-initiated action (kc_action) runs for a signed-in
 * user and comes back with kc_action_status.
 */

const PASSWORD = 'Actions-user-password-7';
const callback = 'http://127.0.0.1:9/cb';

/** Which required-action page a response is (by its form's id), or where it redirects. */
function pageOf(response: FormResponse): string {
  if (response.status === 302) return `redirect ${response.location}`;
  const id = /<form\b[^>]*\bid="([^"]+)"/.exec(response.text)?.[1];
  return ({ 'kc-terms-form': 'terms', 'kc-update-profile-form': 'profile', 'kc-totp-settings-form': 'totp', 'kc-passwd-update-form': 'password' } as Record<string, string>)[id ?? ''] ?? `${response.status} ${id ?? 'no form'}`;
}

describe('required actions as providers', () => {
  let t: TestServer;
  let token: string;
  let realm: string;
  const R = () => `/admin/realms/${realm}/authentication`;

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    realm = `ra-${randomUUID().slice(0, 8)}`;
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [`${callback}*`] })).status).toBe(201);
  });
  afterAll(() => t?.close());

  async function user(requiredActions: string[]) {
    const username = `u${randomUUID().slice(0, 8)}`;
    const created = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, {
      username,
      email: `${username}@example.com`,
      emailVerified: true,
      firstName: 'Ada',
      lastName: 'Lovelace',
      enabled: true,
      requiredActions,
      credentials: [{ type: 'password', value: PASSWORD }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { id: created.headers.get('location')!.split('/').pop()!, username };
  }

  const authorize = (client: FormClient, extra: Record<string, string> = {}) =>
    client.get(`/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'spa', redirect_uri: callback, response_type: 'code', scope: 'openid', state: 'st', code_challenge: pkce().challenge, code_challenge_method: 'S256', ...extra })}`);

  /** The sign-in up to the first page after the password. */
  async function signIn(username: string, client = new FormClient(t.url), extra: Record<string, string> = {}) {
    const login = await authorize(client, extra);
    const form = firstForm(login.text);
    const page = await client.post(form.action, { ...form.hidden, username, password: PASSWORD });
    return { client, page };
  }

  /** Posts the page's form with its hidden fields and `fields`. */
  const submit = (client: FormClient, page: FormResponse, fields: Record<string, string>) => {
    const form = firstForm(page.text);
    return client.post(form.action, { ...form.hidden, ...fields });
  };

  const setAction = async (alias: string, change: Record<string, unknown>) => {
    const current = (await api(t.url, 'GET', `${R()}/required-actions/${alias}`, token)).body;
    expect((await api(t.url, 'PUT', `${R()}/required-actions/${alias}`, token, { ...current, ...change })).status).toBe(204);
  };

  it('asks the pending actions in Keycloak’s order (terms 20, profile 40, password 57); a disabled one is not asked', async () => {
    const { username, id } = await user(['UPDATE_PASSWORD', 'UPDATE_PROFILE', 'TERMS_AND_CONDITIONS']);
    // Terms and Conditions is off in a new realm, as in Keycloak: the profile comes first.
    let { client, page } = await signIn(username);
    expect(pageOf(page)).toBe('profile');
    await setAction('TERMS_AND_CONDITIONS', { enabled: true });
    ({ client, page } = await signIn(username));
    expect(pageOf(page)).toBe('terms');
    page = await submit(client, page, { accept: 'true' });
    expect(pageOf(page)).toBe('profile');
    page = await submit(client, page, { email: `${username}@example.com`, firstName: 'Ada', lastName: 'Lovelace' });
    expect(pageOf(page)).toBe('password');
    page = await submit(client, page, { 'password-new': PASSWORD + 'x', 'password-confirm': PASSWORD + 'x' });
    expect(pageOf(page)).toMatch(/^redirect http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);
    const stored = (await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}`, token)).body;
    expect(stored.requiredActions).toEqual([]);
    // Keycloak's record of the acceptance: seconds since the epoch.
    expect(Number(stored.attributes.terms_and_conditions[0])).toBeGreaterThan(1_700_000_000);
    expect(Number(stored.attributes.terms_and_conditions[0])).toBeLessThan(Date.now() / 1000 + 1);
  });

  it('raise and lower priority change which page the user sees first', async () => {
    const { username } = await user(['UPDATE_PASSWORD', 'UPDATE_PROFILE']);
    expect(pageOf((await signIn(username)).page)).toBe('profile');
    // Password (57) above TOTP (54), then above Verify Email (50) and the profile (40).
    for (let i = 0; i < 3; i++) expect((await api(t.url, 'POST', `${R()}/required-actions/UPDATE_PASSWORD/raise-priority`, token)).status).toBe(204);
    const order = ((await api(t.url, 'GET', `${R()}/required-actions`, token)).body as { alias: string }[]).map((a) => a.alias);
    expect(order.indexOf('UPDATE_PASSWORD')).toBeLessThan(order.indexOf('UPDATE_PROFILE'));
    expect(pageOf((await signIn(username)).page)).toBe('password');
    expect((await api(t.url, 'POST', `${R()}/required-actions/UPDATE_PROFILE/raise-priority`, token)).status).toBe(204);
    expect(pageOf((await signIn(username)).page)).toBe('profile');
    // Disabled, the profile is not asked (and stays on the user); enabled again, it is.
    await setAction('UPDATE_PROFILE', { enabled: false });
    expect(pageOf((await signIn(username)).page)).toBe('password');
    await setAction('UPDATE_PROFILE', { enabled: true });
    expect(pageOf((await signIn(username)).page)).toBe('profile');
  });

  it('declining the terms ends the sign-in: the application gets access_denied, and no session is made', async () => {
    await setAction('TERMS_AND_CONDITIONS', { enabled: true });
    const { username, id } = await user(['TERMS_AND_CONDITIONS']);
    expect((await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username, password: PASSWORD })).body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });
    const { client, page } = await signIn(username);
    expect(pageOf(page)).toBe('terms');
    const declined = await submit(client, page, { cancel: 'true' });
    expect(declined.status).toBe(302);
    const location = new URL(declined.location!);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'access_denied', error_description: 'termsAndConditionsDeclined', state: 'st' });
    expect(location.searchParams.has('code')).toBe(false);
    expect((await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}/sessions`, token)).body).toEqual([]);
    expect((await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}`, token)).body.requiredActions).toEqual(['TERMS_AND_CONDITIONS']);
  });

  it('a flow step that requires OTP refuses a user without one when CONFIGURE_TOTP is switched off (as Keycloak), never lets them in', async () => {
    const executions = (await api(t.url, 'GET', `${R()}/flows/browser/executions`, token)).body as { id: string; displayName: string; requirement: string }[];
    const otp = executions.find((e) => e.displayName === 'Browser - Conditional OTP')!;
    const { username } = await user([]);
    expect(pageOf((await signIn(username)).page)).toMatch(/^redirect /);
    expect((await api(t.url, 'PUT', `${R()}/flows/browser/executions`, token, { ...otp, requirement: 'REQUIRED' })).status).toBe(204);
    await setAction('CONFIGURE_TOTP', { enabled: false });
    try {
      const refused = (await signIn(username)).page;
      expect(refused.status).toBe(400);
      expect(pageOf(refused)).not.toMatch(/^redirect /);
    } finally {
      await setAction('CONFIGURE_TOTP', { enabled: true });
      expect((await api(t.url, 'PUT', `${R()}/flows/browser/executions`, token, { ...otp, requirement: 'CONDITIONAL' })).status).toBe(204);
    }
  });

  describe('application-initiated actions (kc_action)', () => {
    it('a signed-in SPA asks for UPDATE_PASSWORD: the page, then back with kc_action_status=success and a code', async () => {
      const { username } = await user([]);
      const { client, page } = await signIn(username);
      expect(page.status).toBe(302);
      const aia = await authorize(client, { kc_action: 'UPDATE_PASSWORD' });
      expect(aia.status).toBe(302);
      const shown = await client.get(aia.location!);
      expect(pageOf(shown)).toBe('password');
      expect(shown.text).toContain('name="cancel-aia"');
      const done = await submit(client, shown, { 'password-new': 'Changed-password-8', 'password-confirm': 'Changed-password-8' });
      expect(done.status).toBe(302);
      const params = Object.fromEntries(new URL(done.location!).searchParams);
      expect(params).toMatchObject({ kc_action: 'UPDATE_PASSWORD', kc_action_status: 'success', state: 'st' });
      expect(params.code).toBeTruthy();
      expect((await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username, password: 'Changed-password-8' })).status).toBe(200);
      expect((await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username, password: PASSWORD })).status).toBe(400);
    });

    it('cancelled: back with kc_action_status=cancelled, the password unchanged', async () => {
      const { username } = await user([]);
      const { client } = await signIn(username);
      const shown = await client.get((await authorize(client, { kc_action: 'UPDATE_PASSWORD' })).location!);
      const cancelled = await submit(client, shown, { 'cancel-aia': 'true' });
      expect(cancelled.status).toBe(302);
      expect(Object.fromEntries(new URL(cancelled.location!).searchParams)).toMatchObject({ kc_action: 'UPDATE_PASSWORD', kc_action_status: 'cancelled', state: 'st' });
      expect((await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username, password: PASSWORD })).status).toBe(200);
    });

    it('an unknown or disabled action: back at once with kc_action_status=error (and no kc_action), signed in', async () => {
      const { username } = await user([]);
      const { client } = await signIn(username);
      await setAction('TERMS_AND_CONDITIONS', { enabled: false });
      for (const action of ['NO_SUCH_ACTION', 'TERMS_AND_CONDITIONS', 'delete_account']) {
        const first = await authorize(client, { kc_action: action });
        const answer = first.location!.startsWith(callback) ? first : await client.get(first.location!);
        expect(answer.status, action).toBe(302);
        const params = new URL(answer.location!).searchParams;
        expect([params.get('kc_action_status'), params.has('kc_action'), params.has('code')], action).toEqual(['error', false, true]);
      }
    });

    it('a user not signed in signs in first, then carries out the action', async () => {
      const { username } = await user([]);
      const { client, page } = await signIn(username, new FormClient(t.url), { kc_action: 'UPDATE_PROFILE' });
      expect(pageOf(page)).toBe('profile');
      expect(page.text).toContain('name="cancel-aia"');
      const done = await submit(client, page, { email: `${username}@example.com`, firstName: 'Grace', lastName: 'Hopper' });
      expect(Object.fromEntries(new URL(done.location!).searchParams)).toMatchObject({ kc_action: 'UPDATE_PROFILE', kc_action_status: 'success' });
    });

    it('a sign-in older than the action’s max_auth_age signs in again first', async () => {
      const { username } = await user([]);
      const { client } = await signIn(username);
      expect((await api(t.url, 'PUT', `${R()}/required-actions/UPDATE_PASSWORD/config`, token, { config: { max_auth_age: '0' } })).status).toBe(204);
      try {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const again = await authorize(client, { kc_action: 'UPDATE_PASSWORD' });
        expect(again.status).toBe(200);
        expect(again.text).toContain('name="password"');
      } finally {
        expect((await api(t.url, 'DELETE', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).status).toBe(204);
      }
    });
  });

  describe('admin API', () => {
    it('config-description and config as Keycloak 26.7.3 answers them; an action without settings answers 400/404', async () => {
      const description = (await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD/config-description`, token)).body;
      expect(description.properties.map((p: { name: string; defaultValue: unknown }) => [p.name, p.defaultValue])).toEqual([['max_auth_age', 300]]);
      expect((await api(t.url, 'GET', `${R()}/required-actions/VERIFY_EMAIL/config-description`, token)).body.properties.map((p: { name: string }) => p.name)).toEqual(['max_auth_age', 'emailResendCooldownSeconds']);
      expect((await api(t.url, 'GET', `${R()}/required-actions/delete_account/config-description`, token)).status).toBe(404);
      expect((await api(t.url, 'GET', `${R()}/required-actions/NOPE/config-description`, token)).status).toBe(404);

      expect((await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).body).toEqual({ config: {} });
      expect((await api(t.url, 'PUT', `${R()}/required-actions/UPDATE_PASSWORD/config`, token, { config: { max_auth_age: '120' } })).status).toBe(204);
      expect((await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).body).toEqual({ config: { max_auth_age: '120' } });
      expect((await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD`, token)).body.config).toEqual({ max_auth_age: '120' });

      // Bad input: each refused, naming what is wrong; the stored settings unchanged.
      for (const [body, status, field] of [
        [{ config: { max_auth_age: 'abc' } }, 400, 'max_auth_age'],
        [{ config: { max_auth_age: '-5' } }, 400, 'max_auth_age'],
        [{ config: { foo: '1' } }, 400, 'foo'],
        [{ bogus: 1 }, 400, 'bogus'],
      ] as const) {
        const answer = await api(t.url, 'PUT', `${R()}/required-actions/UPDATE_PASSWORD/config`, token, body);
        expect(answer.status, JSON.stringify(body)).toBe(status);
        expect(JSON.stringify(answer.body), JSON.stringify(body)).toContain(field);
      }
      expect((await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).body).toEqual({ config: { max_auth_age: '120' } });
      for (const alias of ['delete_account', 'NOPE']) {
        for (const method of ['GET', 'PUT', 'DELETE'] as const) {
          const answer = await api(t.url, method, `${R()}/required-actions/${alias}/config`, token, method === 'PUT' ? { config: { max_auth_age: '1' } } : undefined);
          expect([answer.status, answer.body.errorMessage], `${method} ${alias}`).toEqual([400, 'RequiredAction is not configurable']);
        }
      }
      expect((await api(t.url, 'DELETE', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).status).toBe(204);
      expect((await api(t.url, 'GET', `${R()}/required-actions/UPDATE_PASSWORD/config`, token)).body).toEqual({ config: {} });
    });

    it('unregister and register: the provider leaves the list and comes back last, enabled; Keycloak’s 404, 409 and 400', async () => {
      expect((await api(t.url, 'DELETE', `${R()}/required-actions/update_user_locale`, token)).status).toBe(204);
      expect((await api(t.url, 'GET', `${R()}/required-actions/update_user_locale`, token)).status).toBe(404);
      expect((await api(t.url, 'GET', `${R()}/unregistered-required-actions`, token)).body).toEqual([{ providerId: 'update_user_locale', name: 'Update User Locale' }]);
      expect((await api(t.url, 'DELETE', `${R()}/required-actions/update_user_locale`, token)).status).toBe(404);
      expect((await api(t.url, 'DELETE', `${R()}/required-actions/NOPE`, token)).status).toBe(404);

      const before = (await api(t.url, 'GET', `${R()}/required-actions`, token)).body as { alias: string; priority: number }[];
      for (const [body, status] of [
        [{ providerId: 'NOPE', name: 'x' }, 400],
        [{ name: 'x' }, 400],
        [{ providerId: 'UPDATE_PASSWORD' }, 409],
        [{ providerId: 'update_user_locale', extra: true }, 400],
      ] as const) {
        expect((await api(t.url, 'POST', `${R()}/register-required-action`, token, body)).status, JSON.stringify(body)).toBe(status);
      }
      expect((await api(t.url, 'GET', `${R()}/required-actions`, token)).body).toEqual(before);

      expect((await api(t.url, 'POST', `${R()}/register-required-action`, token, { providerId: 'update_user_locale', name: 'Update User Locale' })).status).toBe(204);
      const top = Math.max(...before.map((a) => a.priority));
      expect((await api(t.url, 'GET', `${R()}/required-actions/update_user_locale`, token)).body).toEqual({ alias: 'update_user_locale', name: 'Update User Locale', providerId: 'update_user_locale', enabled: true, defaultAction: false, priority: top + 1, config: {} });
      expect((await api(t.url, 'GET', `${R()}/unregistered-required-actions`, token)).body).toEqual([]);
    });

    it('an unregistered action is not asked of the user who holds it', async () => {
      const { username } = await user(['UPDATE_PROFILE']);
      expect((await api(t.url, 'DELETE', `${R()}/required-actions/UPDATE_PROFILE`, token)).status).toBe(204);
      try {
        expect(pageOf((await signIn(username)).page)).toMatch(/^redirect http:\/\/127\.0\.0\.1:9\/cb\?/);
      } finally {
        expect((await api(t.url, 'POST', `${R()}/register-required-action`, token, { providerId: 'UPDATE_PROFILE' })).status).toBe(204);
      }
      expect(pageOf((await signIn(username)).page)).toBe('profile');
    });
  });
});

describe('migration 0023: Keycloak 26’s default priorities for realms made before', () => {
  let t: TestServer;
  let token: string;
  afterAll(() => t?.close());

  it('moves the old defaults a realm still has, keeps an order an administrator set', async () => {
    t = await startServer({ database: 'sqlite' });
    token = await adminToken(t.url);
    for (const realm of ['untouched', 'switched', 'ordered']) expect((await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true })).status).toBe(201);
    const { openDatabase } = await import('../src/storage/db.js');
    const { migrations } = await import('../src/storage/migrations.js');
    const handle = await openDatabase(t.server.context.config.dbUrl);
    try {
      const db = handle.db;
      const realmId = async (name: string) => (await db.selectFrom('realm').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;
      // As the server before this change stored them: "switched" had CONFIGURE_TOTP turned off (the row carries the
      // old default priority of every field), "ordered" had UPDATE_PASSWORD raised above CONFIGURE_TOTP.
      const rows = (realm: string, priorities: Record<string, number>, off: string[] = []) =>
        Object.entries(priorities).map(([alias, priority]) => ({ realm_id: realm, alias, enabled: off.includes(alias) ? 0 : 1, default_action: 0, priority, name: null, provider_id: null, config: null }));
      await db.schema.alterTable('realm_required_action').dropColumn('registered').execute();
      const switched = await realmId('switched');
      const ordered = await realmId('ordered');
      await db.insertInto('realm_required_action').values(rows(switched, { CONFIGURE_TOTP: 10 }, ['CONFIGURE_TOTP']) as never).execute();
      await db.insertInto('realm_required_action').values(rows(ordered, { UPDATE_PASSWORD: 10, CONFIGURE_TOTP: 30 }) as never).execute();
      await migrations['0023-required-action-registry'].up(db as never);
    } finally {
      await handle.close();
    }
    const priorities = async (realm: string) =>
      Object.fromEntries(((await api(t.url, 'GET', `/admin/realms/${realm}/authentication/required-actions`, token)).body as { alias: string; priority: number; enabled: boolean }[]).map((a) => [a.alias, [a.priority, a.enabled]]));
    expect(await priorities('untouched')).toMatchObject({ CONFIGURE_TOTP: [54, true], UPDATE_PASSWORD: [57, true], UPDATE_PROFILE: [40, true] });
    expect(await priorities('switched')).toMatchObject({ CONFIGURE_TOTP: [54, false], UPDATE_PASSWORD: [57, true] });
    expect(await priorities('ordered')).toMatchObject({ UPDATE_PASSWORD: [10, true], CONFIGURE_TOTP: [30, true], UPDATE_PROFILE: [40, true] });
  });
});
