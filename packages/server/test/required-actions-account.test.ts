import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, decodeEntities, firstForm, inputValue, pkce, type FormResponse } from './support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { linkIn, startSmtp } from './support/smtp.js';

/**
 * Issue 35, point 2: the last two of Keycloak 26.7.3's registry carried out, as Keycloak's: `delete_account` (the
 * user confirms and the account is gone; only with the account client's delete-account role; as an
 * application-initiated action it always signs the user in again first) and `UPDATE_EMAIL` (set at once, or, where
 * e-mail is verified, confirmed by a link to the new address). Over HTTP, as a browser without JavaScript sees them.
 */

const PASSWORD = 'Account-actions-pass-7';
const callback = 'http://127.0.0.1:9/cb';

describe('delete_account and UPDATE_EMAIL', () => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let token: string;
  let realm: string;
  let accountClient: string;
  const R = () => `/admin/realms/${realm}`;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer();
    token = await adminToken(t.url);
    realm = `acct-${randomUUID().slice(0, 8)}`;
    const made = await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsEnabled: true, smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@acct.example' } });
    expect(made.status).toBe(201);
    expect((await api(t.url, 'POST', `${R()}/clients`, token, { clientId: 'spa', publicClient: true, directAccessGrantsEnabled: true, redirectUris: [`${callback}*`] })).status).toBe(201);
    accountClient = (await api(t.url, 'GET', `${R()}/clients?clientId=account`, token)).body[0].id;
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  async function user(requiredActions: string[], deleteRole = false) {
    const username = `u${randomUUID().slice(0, 8)}`;
    const created = await api(t.url, 'POST', `${R()}/users`, token, { username, email: `${username}@acct.example`, emailVerified: true, enabled: true, requiredActions, credentials: [{ type: 'password', value: PASSWORD }] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.headers.get('location')!.split('/').pop()!;
    if (deleteRole) await setDeleteRole(id, true);
    return { id, username };
  }

  async function setDeleteRole(userId: string, held: boolean) {
    const role = (await api(t.url, 'GET', `${R()}/clients/${accountClient}/roles/delete-account`, token)).body;
    const answer = await api(t.url, held ? 'POST' : 'DELETE', `${R()}/users/${userId}/role-mappings/clients/${accountClient}`, token, [role]);
    expect(answer.status).toBe(204);
  }

  const setAction = async (alias: string, change: Record<string, unknown>) => {
    const current = (await api(t.url, 'GET', `${R()}/authentication/required-actions/${alias}`, token)).body;
    expect((await api(t.url, 'PUT', `${R()}/authentication/required-actions/${alias}`, token, { ...current, ...change })).status).toBe(204);
  };

  const authorize = (client: FormClient, extra: Record<string, string> = {}) =>
    client.get(`/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'spa', redirect_uri: callback, response_type: 'code', scope: 'openid', state: 'st', code_challenge: pkce().challenge, code_challenge_method: 'S256', ...extra })}`);

  const submit = (client: FormClient, page: FormResponse, fields: Record<string, string>) => {
    const form = firstForm(page.text);
    return client.post(form.action, { ...form.hidden, ...fields });
  };

  async function signIn(username: string, client = new FormClient(t.url), extra: Record<string, string> = {}) {
    const login = await authorize(client, extra);
    return { client, page: await submit(client, login, { username, password: PASSWORD }) };
  }

  /** kc_action for a signed-in user: back to the application at once, or through the required-action page. */
  const aiaAnswer = async (client: FormClient, action: string) => {
    const first = await authorize(client, { kc_action: action });
    const answer = first.location!.startsWith(callback) ? first : await client.get(first.location!);
    return new URL(answer.location!).searchParams;
  };

  const formId = (page: FormResponse) => /<form\b[^>]*\bid="([^"]+)"/.exec(page.text)?.[1] ?? null;
  const events = async (type: string, userId: string) => ((await api(t.url, 'GET', `${R()}/events?type=${type}&user=${userId}`, token)).body as { type: string; error?: string; details?: Record<string, string> }[]);
  const userById = async (id: string) => api(t.url, 'GET', `${R()}/users/${id}`, token);

  describe('delete_account', () => {
    it('is off in a new realm: a user holding it is not asked, and kc_action=delete_account answers error', async () => {
      const { username } = await user(['delete_account'], true);
      const { client, page } = await signIn(username);
      expect(page.status).toBe(302);
      expect(page.location).toMatch(/code=/);
      expect((await aiaAnswer(client, 'delete_account')).get('kc_action_status')).toBe('error');
    });

    it('enabled: a user with the delete-account role confirms and the account is gone, sessions with it; DELETE_ACCOUNT recorded', async () => {
      const { id, username } = await user(['delete_account'], true);
      // A session of another application, opened while the action was off (the password grant refuses a pending one).
      const other = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'spa', username, password: PASSWORD });
      expect(other.status).toBe(200);
      await setAction('delete_account', { enabled: true });
      const { client, page } = await signIn(username);
      expect(formId(page)).toBe('kc-delete-account-form');
      // Asked by the user's account, not the application: nothing to cancel.
      expect(page.text).not.toContain('name="cancel-aia"');
      const done = await submit(client, page, { confirm: 'true' });
      expect(done.status).toBe(200);
      expect(done.text).toContain('Your account has been deleted.');
      expect((await userById(id)).status).toBe(404);
      // The refresh token of a session it had is refused.
      const refreshed = await tokenRequest(t.url, realm, { grant_type: 'refresh_token', client_id: 'spa', refresh_token: String(other.body.refresh_token) });
      expect(refreshed.status).toBe(400);
      const [event] = await eventually(async () => {
        const list = await events('DELETE_ACCOUNT', id);
        return list.length ? list : null;
      });
      expect(event.type).toBe('DELETE_ACCOUNT');
    });

    it('without the role: an error page, nothing deleted; the role taken away between page and confirm: refused, DELETE_ACCOUNT_ERROR', async () => {
      await setAction('delete_account', { enabled: true });
      const lacking = await user(['delete_account']);
      const shown = await signIn(lacking.username);
      expect(shown.page.status).toBe(403);
      expect(formId(shown.page)).toBeNull();
      expect((await userById(lacking.id)).status).toBe(200);

      const { id, username } = await user(['delete_account'], true);
      const { client, page } = await signIn(username);
      expect(formId(page)).toBe('kc-delete-account-form');
      await setDeleteRole(id, false);
      const refused = await submit(client, page, { confirm: 'true' });
      expect(refused.status).toBe(403);
      expect(formId(refused)).toBe('kc-delete-account-form');
      expect((await userById(id)).status).toBe(200);
      const [event] = await eventually(async () => {
        const list = await events('DELETE_ACCOUNT_ERROR', id);
        return list.length ? list : null;
      });
      expect(event).toMatchObject({ error: 'user_delete_error' });
    });

    it('kc_action=delete_account from a signed-in application signs the user in again first (max auth age 0), then can be cancelled', async () => {
      await setAction('delete_account', { enabled: true });
      const { id, username } = await user([], true);
      const { client, page } = await signIn(username);
      expect(page.location).toMatch(/code=/);
      const again = await authorize(client, { kc_action: 'delete_account' });
      expect(again.status).toBe(200);
      expect(again.text).toContain('name="password"');
      const confirm = await submit(client, again, { username, password: PASSWORD });
      expect(formId(confirm)).toBe('kc-delete-account-form');
      expect(confirm.text).toContain('name="cancel-aia"');
      const cancelled = await submit(client, confirm, { 'cancel-aia': 'true' });
      expect(cancelled.status).toBe(302);
      expect(Object.fromEntries(new URL(cancelled.location!).searchParams)).toMatchObject({ kc_action: 'delete_account', kc_action_status: 'cancelled' });
      expect((await userById(id)).status).toBe(200);
    });
  });

  describe('UPDATE_EMAIL', () => {
    it('is off in a new realm: kc_action=UPDATE_EMAIL answers error', async () => {
      await setAction('UPDATE_EMAIL', { enabled: false });
      const { username } = await user([]);
      const { client } = await signIn(username);
      expect((await aiaAnswer(client, 'UPDATE_EMAIL')).get('kc_action_status')).toBe('error');
    });

    it('without verification: a bad or taken address is refused naming it; a new one is set at once, unverified; UPDATE_EMAIL recorded', async () => {
      await setAction('UPDATE_EMAIL', { enabled: true });
      const taken = await user([]);
      const { id, username } = await user(['UPDATE_EMAIL']);
      const { client, page } = await signIn(username);
      expect(formId(page)).toBe('kc-update-email-form');
      expect(inputValue(page.text, 'email')).toBe(`${username}@acct.example`);
      for (const [email, error] of [
        ['not-an-address', 'Invalid email address.'],
        [`${taken.username}@acct.example`, 'Email already exists.'],
        [`${'x'.repeat(300)}@acct.example`, 'Invalid email address.'],
      ]) {
        const refused = await submit(client, page, { email });
        expect(refused.status, email).toBe(400);
        expect(decodeEntities(refused.text), email).toContain(error);
      }
      expect((await userById(id)).body.email).toBe(`${username}@acct.example`);
      const done = await submit(client, page, { email: `New.${username}@Acct.Example` });
      expect(done.status).toBe(302);
      expect(done.location).toMatch(/code=/);
      const stored = (await userById(id)).body;
      expect([stored.email, stored.emailVerified, stored.requiredActions]).toEqual([`new.${username}@acct.example`, false, []]);
      const [event] = await eventually(async () => {
        const list = await events('UPDATE_EMAIL', id);
        return list.length ? list : null;
      });
      expect(event.details).toMatchObject({ previous_email: `${username}@acct.example`, updated_email: `new.${username}@acct.example` });
    });

    it('with verification forced: a link goes to the new address; until it is opened the address waits and the action is asked again; the link sets it', async () => {
      await setAction('UPDATE_EMAIL', { enabled: true, config: { verifyEmail: 'true', emailResendCooldownSeconds: '600' } });
      try {
        const { id, username } = await user(['UPDATE_EMAIL']);
        const wanted = `moved.${username}@acct.example`;
        let { client, page } = await signIn(username);
        const sent = await submit(client, page, { email: wanted });
        expect(sent.status).toBe(200);
        expect(decodeEntities(sent.text)).toContain(wanted);
        let stored = (await userById(id)).body;
        expect([stored.email, stored.attributes['kc.email.pending']]).toEqual([`${username}@acct.example`, [wanted]]);
        const mail = await eventually(() => smtp.mails.find((m) => m.to.includes(wanted)));

        // Signing in again: the action is asked again, the waiting address filled in; a second link is not sent yet.
        ({ client, page } = await signIn(username));
        expect(formId(page)).toBe('kc-update-email-form');
        expect(inputValue(page.text, 'email')).toBe(wanted);
        const early = await submit(client, page, { email: wanted });
        expect(early.status).toBe(429);
        expect(smtp.mails.filter((m) => m.to.includes(wanted))).toHaveLength(1);

        const opened = await fetch(linkIn(mail));
        expect(opened.status).toBe(200);
        stored = (await userById(id)).body;
        expect([stored.email, stored.emailVerified, stored.requiredActions, stored.attributes?.['kc.email.pending']]).toEqual([wanted, true, [], undefined]);
        // Used once.
        expect((await fetch(linkIn(mail))).status).toBe(400);
        ({ page } = await signIn(username));
        expect(page.location).toMatch(/code=/);
      } finally {
        await setAction('UPDATE_EMAIL', { enabled: false, config: {} });
      }
    });
  });
});
