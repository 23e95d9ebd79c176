import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 16, point 5: Keycloak's UPDATE_PROFILE required action. An administrator sets it (or a realm import
 * carries it); at the next browser sign-in the user confirms or corrects e-mail and names on a page under the account
 * page's rules, then reaches the application; the password grant refuses the user until then.
 */

const PASSWORD = 'Profile-user-password-7';
const callback = 'http://127.0.0.1:9/cb';

describe('UPDATE_PROFILE required action', () => {
  let t: TestServer;
  let token: string;
  let realm: string;

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    realm = `profile-${randomUUID().slice(0, 8)}`;
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsEnabled: true })).status).toBe(201);
    expect((await api(t.url, 'POST', `/admin/realms/${realm}/clients`, token, { clientId: 'web', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [callback] })).status).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function userWithAction(extra: Record<string, unknown> = {}) {
    const username = `u${randomUUID().slice(0, 8)}`;
    const created = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, {
      username,
      email: `${username}@old.example`,
      enabled: true,
      requiredActions: ['UPDATE_PROFILE'],
      credentials: [{ type: 'password', value: PASSWORD }],
      ...extra,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { id: created.headers.get('location')!.split('/').pop()!, username };
  }

  async function passwordStep(username: string) {
    const client = new FormClient(t.url);
    const query = new URLSearchParams({ client_id: 'web', redirect_uri: callback, response_type: 'code', scope: 'openid', code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    const login = await client.get(`/realms/${realm}/protocol/openid-connect/auth?${query}`);
    const csrf = inputValue(login.text, 'session_code')!;
    const page = await client.post(`/realms/${realm}/login-actions/authenticate`, { username, password: PASSWORD, session_code: csrf });
    const submit = (form: Record<string, string>, from = page) =>
      client.post(`/realms/${realm}/login-actions/update-profile`, { key: inputValue(from.text, 'key') ?? '', session_code: csrf, ...form });
    return { page, submit };
  }

  it('asks for the profile after the password, saves it, then returns to the application', async () => {
    const user = await userWithAction();
    // Until the action is done the password grant refuses the user, as Keycloak's "Account is not fully set up".
    const refused = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'web', username: user.username, password: PASSWORD });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_grant', error_description: 'Account is not fully set up' });

    const { page, submit } = await passwordStep(user.username);
    expect(page.status, page.text.slice(0, 300)).toBe(200);
    expect(page.text).toContain('kc-update-profile-form');
    expect(inputValue(page.text, 'email')).toBe(`${user.username}@old.example`);

    // A bad address and a name with markup are refused on the page; nothing is saved.
    const bad = await submit({ email: 'not-an-address', firstName: '<script>', lastName: 'Doe' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Invalid email address.');
    expect(bad.text).not.toContain('<script>');
    expect(((await api(t.url, 'GET', `/admin/realms/${realm}/users/${user.id}`, token)).body as { email: string }).email).toBe(`${user.username}@old.example`);

    const done = await submit({ email: `${user.username}@new.example`, firstName: 'Ada', lastName: 'Lovelace' }, bad);
    expect(done.status, done.text.slice(0, 300)).toBe(302);
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);
    const stored = (await api(t.url, 'GET', `/admin/realms/${realm}/users/${user.id}`, token)).body as Record<string, unknown>;
    expect(stored).toMatchObject({ email: `${user.username}@new.example`, firstName: 'Ada', lastName: 'Lovelace', requiredActions: [] });
    expect((await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'web', username: user.username, password: PASSWORD })).status).toBe(200);

    const events = await eventually(async () => {
      const list = (await api(t.url, 'GET', `/admin/realms/${realm}/events?user=${user.id}&type=UPDATE_PROFILE`, token)).body as { details: Record<string, string> }[];
      return list.length ? list : null;
    });
    expect(events[0].details).toMatchObject({ custom_required_action: 'UPDATE_PROFILE', previous_first_name: '', updated_first_name: 'Ada' });
  });

  it('a key from another login or a forged one does not save anything', async () => {
    const victim = await userWithAction();
    const attacker = await userWithAction();
    const theirs = await passwordStep(victim.username);
    const mine = await passwordStep(attacker.username);
    // The victim's step key in the attacker's login: bound to the auth session, so refused.
    const swapped = await mine.submit({ email: 'taken@evil.example', firstName: 'X', lastName: 'Y' }, theirs.page);
    expect(swapped.status).toBe(400);
    expect(swapped.text).toContain('This page has expired');
    const forged = await mine.submit({ email: 'taken@evil.example', firstName: 'X', lastName: 'Y' }, { ...mine.page, text: '<input name="key" value="forged">' });
    expect(forged.status).toBe(400);
    for (const id of [victim.id, attacker.id]) {
      const user = (await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}`, token)).body as { email: string; requiredActions: string[] };
      expect(user.email).not.toBe('taken@evil.example');
      expect(user.requiredActions).toEqual(['UPDATE_PROFILE']);
    }
  });

  it('another user\'s address is refused when the realm forbids duplicates', async () => {
    const first = await userWithAction();
    const second = await userWithAction();
    const { submit } = await passwordStep(second.username);
    const taken = await submit({ email: `${first.username}@old.example`, firstName: 'A', lastName: 'B' });
    expect(taken.status).toBe(400);
    expect(taken.text).toContain('Email already exists.');
  });
});
