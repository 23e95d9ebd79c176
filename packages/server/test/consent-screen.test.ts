import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, firstForm, pkce, type FormResponse } from './support/forms.js';
import { adminToken, api, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Keycloak's consent screen (`login-oauth-grant`) for a consentRequired client, over HTTP as a browser without
 * JavaScript: the admin API stores `consentRequired`; a sign-in asks "Grant Access to <client>" with the scopes not
 * yet granted; Yes stores them and the code follows (LOGIN `consent: consent_granted`), a later sign-in asks nothing
 * (`persistent_consent`), a revoked consent asks again; No sends the application access_denied (LOGIN_ERROR
 * `rejected_by_user`); prompt=none answers consent_required; the password grant is refused.
 */

const PASSWORD = 'Consent-user-password-7';
const callback = 'http://127.0.0.1:9/cb';

function pageOf(response: FormResponse): string {
  if (response.status === 302) return `redirect ${response.location}`;
  const id = /<form\b[^>]*\bid="([^"]+)"/.exec(response.text)?.[1];
  return id === 'kc-oauth-form' ? 'consent' : `${response.status} ${id ?? 'no form'}`;
}

describe('the consent screen of a consentRequired client', () => {
  let t: TestServer;
  let token: string;
  let realm: string;
  let clientUuid: string;

  beforeAll(async () => {
    t = await startServer();
    token = await adminToken(t.url);
    realm = `consent-${randomUUID().slice(0, 8)}`;
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm, enabled: true, eventsEnabled: true })).status).toBe(201);
    const created = await api(t.url, 'POST', `/admin/realms/${realm}/clients`, token, {
      clientId: 'third-party',
      name: 'Third Party App',
      publicClient: true,
      directAccessGrantsEnabled: true,
      consentRequired: true,
      redirectUris: [`${callback}*`],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    clientUuid = created.headers.get('location')!.split('/').pop()!;
  });
  afterAll(() => t?.close());

  async function user() {
    const username = `u${randomUUID().slice(0, 8)}`;
    const created = await api(t.url, 'POST', `/admin/realms/${realm}/users`, token, {
      username, email: `${username}@example.com`, emailVerified: true, firstName: 'Ada', lastName: 'Lovelace', enabled: true,
      credentials: [{ type: 'password', value: PASSWORD }],
    });
    expect(created.status).toBe(201);
    return { id: created.headers.get('location')!.split('/').pop()!, username };
  }

  const authorize = (client: FormClient, extra: Record<string, string> = {}) =>
    client.get(`/realms/${realm}/protocol/openid-connect/auth?${new URLSearchParams({ client_id: 'third-party', redirect_uri: callback, response_type: 'code', scope: 'openid email', state: 'st', code_challenge: pkce().challenge, code_challenge_method: 'S256', ...extra })}`);

  async function signIn(username: string, client = new FormClient(t.url)) {
    const login = await authorize(client);
    const form = firstForm(login.text);
    return { client, page: await client.post(form.action, { ...form.hidden, username, password: PASSWORD }) };
  }

  const submit = (client: FormClient, page: FormResponse, fields: Record<string, string>) => {
    const form = firstForm(page.text);
    return client.post(form.action, { ...form.hidden, ...fields });
  };

  const consents = async (id: string) => (await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}/consents`, token)).body as { clientId: string; grantedClientScopes: string[] }[];

  it('the admin API stores and answers consentRequired', async () => {
    const rep = (await api(t.url, 'GET', `/admin/realms/${realm}/clients/${clientUuid}`, token)).body;
    expect(rep.consentRequired).toBe(true);
    expect((await api(t.url, 'PUT', `/admin/realms/${realm}/clients/${clientUuid}`, token, { ...rep, consentRequired: false })).status).toBe(204);
    expect((await api(t.url, 'GET', `/admin/realms/${realm}/clients/${clientUuid}`, token)).body.consentRequired).toBe(false);
    expect((await api(t.url, 'PUT', `/admin/realms/${realm}/clients/${clientUuid}`, token, { ...rep, consentRequired: true })).status).toBe(204);
    expect((await api(t.url, 'GET', `/admin/realms/${realm}/clients/${clientUuid}`, token)).body.consentRequired).toBe(true);
  });

  it('a realm file carries consentRequired in and out (import, partial export)', async () => {
    const name = `${realm}-file`;
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm: name, enabled: true, clients: [{ clientId: 'imported', consentRequired: true, publicClient: true, redirectUris: [`${callback}*`] }, { clientId: 'plain', publicClient: true }] })).status).toBe(201);
    const exported = (await api(t.url, 'POST', `/admin/realms/${name}/partial-export?exportClients=true`, token)).body as { clients: { clientId: string; consentRequired: boolean }[] };
    expect(exported.clients.find((c) => c.clientId === 'imported')?.consentRequired).toBe(true);
    expect(exported.clients.find((c) => c.clientId === 'plain')?.consentRequired).toBe(false);
  });

  it('asks once: Yes stores the scopes and the code follows; the next sign-in asks nothing; revoked, it asks again', async () => {
    const { id, username } = await user();
    const { client, page } = await signIn(username);
    expect(pageOf(page)).toBe('consent');
    expect(page.text).toContain('Grant Access to Third Party App');
    const listed = [...page.text.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
    // The client's default scopes shown on the consent screen, and the optional one asked for (email is a default one).
    expect(listed).toEqual(expect.arrayContaining(['profile', 'email']));
    expect(listed).not.toContain('acr');
    expect(await consents(id)).toEqual([]);
    const granted = await submit(client, page, { accept: 'yes' });
    expect(pageOf(granted)).toMatch(/^redirect http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);
    const stored = await consents(id);
    expect(stored).toHaveLength(1);
    expect(stored[0].clientId).toBe('third-party');
    expect([...stored[0].grantedClientScopes].sort()).toEqual([...listed].sort());

    // Signed in (SSO): no page, straight back with a code.
    const again = await authorize(client);
    expect(pageOf(again)).toMatch(/^redirect http:\/\/127\.0\.0\.1:9\/cb\?.*code=/);
    // A new browser, the password again: no page either.
    expect(pageOf((await signIn(username)).page)).toMatch(/code=/);

    const events = await eventually(async () => {
      const list = (await api(t.url, 'GET', `/admin/realms/${realm}/events?user=${id}&type=LOGIN`, token)).body as { details: Record<string, string> }[];
      return list.length >= 3 ? list : null;
    });
    expect(events.map((e) => e.details.consent).sort()).toEqual(['consent_granted', 'persistent_consent', 'persistent_consent']);

    // Revoked, the signed-in user is asked again (through the sign-in's pages), and prompt=none says so.
    expect((await api(t.url, 'DELETE', `/admin/realms/${realm}/users/${id}/consents/third-party`, token)).status).toBe(204);
    const none = await authorize(client, { prompt: 'none' });
    expect(Object.fromEntries(new URL(none.location!).searchParams)).toMatchObject({ error: 'consent_required', state: 'st' });
    const asked = await authorize(client);
    expect(asked.status).toBe(302);
    const shown = await client.get(asked.location!);
    expect(pageOf(shown)).toBe('consent');
    expect(pageOf(await submit(client, shown, { accept: 'yes' }))).toMatch(/code=/);
    expect(await consents(id)).toHaveLength(1);
  });

  it('revoked in the account API (the user\'s own applications page), the next sign-in asks again', async () => {
    const { id, username } = await user();
    const { client, page } = await signIn(username);
    expect(pageOf(await submit(client, page, { accept: 'yes' }))).toMatch(/code=/);
    expect(pageOf(await authorize(client))).toMatch(/code=/);
    const own = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'admin-cli', username, password: PASSWORD });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    const apps = await api(t.url, 'GET', `/realms/${realm}/account/applications`, own.body.access_token as string, undefined, { accept: 'application/json' });
    const listed = (apps.body as { clientId: string; consent?: { grantedScopes: { name: string }[] } }[]).find((a) => a.clientId === 'third-party');
    // Listed as Keycloak's account API lists a consent (a scope by its consent text), one per granted scope.
    expect(listed?.consent?.grantedScopes).toHaveLength((await consents(id))[0].grantedClientScopes.length);
    const revoked = await api(t.url, 'DELETE', `/realms/${realm}/account/applications/third-party/consent`, own.body.access_token as string, undefined, { accept: 'application/json' });
    expect(revoked.status).toBe(204);
    expect(await consents(id)).toEqual([]);
    const asked = await authorize(client);
    expect(asked.status).toBe(302);
    expect(pageOf(await client.get(asked.location!))).toBe('consent');
  });

  it('No sends the application access_denied, stores nothing, starts no session', async () => {
    const { id, username } = await user();
    const { client, page } = await signIn(username);
    expect(pageOf(page)).toBe('consent');
    const declined = await submit(client, page, { cancel: 'no' });
    expect(declined.status).toBe(302);
    const location = new URL(declined.location!);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'access_denied', state: 'st' });
    expect(location.searchParams.has('code')).toBe(false);
    expect(await consents(id)).toEqual([]);
    expect((await api(t.url, 'GET', `/admin/realms/${realm}/users/${id}/sessions`, token)).body).toEqual([]);
    const errors = await eventually(async () => {
      const list = (await api(t.url, 'GET', `/admin/realms/${realm}/events?user=${id}&type=LOGIN_ERROR`, token)).body as { error: string }[];
      return list.length ? list : null;
    });
    expect(errors[0].error).toBe('rejected_by_user');
  });

  it('the password grant is refused for the client (400 invalid_client, LOGIN_ERROR consent_denied), even with a stored consent', async () => {
    const { id, username } = await user();
    const { client, page } = await signIn(username);
    expect(pageOf(await submit(client, page, { accept: 'yes' }))).toMatch(/code=/);
    const refused = await tokenRequest(t.url, realm, { grant_type: 'password', client_id: 'third-party', username, password: PASSWORD });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: 'invalid_client', error_description: 'Client requires user consent' });
    const errors = await eventually(async () => {
      const list = (await api(t.url, 'GET', `/admin/realms/${realm}/events?user=${id}&type=LOGIN_ERROR`, token)).body as { error: string }[];
      return list.length ? list : null;
    });
    expect(errors[0].error).toBe('consent_denied');
  });

  it('client policies run consent-required: auto-configure turns it on, otherwise a client without it is refused', async () => {
    const name = `${realm}-pol`;
    expect((await api(t.url, 'POST', '/admin/realms', token, { realm: name, enabled: true })).status).toBe(201);
    const put = (path: string, body: unknown) => api(t.url, 'PUT', `/admin/realms/${name}/client-policies/${path}`, token, body);
    const any = [{ condition: 'any-client', configuration: {} }];
    expect((await put('profiles', { profiles: [{ name: 'ask', executors: [{ executor: 'consent-required', configuration: { 'auto-configure': true } }] }] })).status).toBe(204);
    expect((await put('policies', { policies: [{ name: 'all', enabled: true, conditions: any, profiles: ['ask'] }] })).status).toBe(204);
    const auto = await api(t.url, 'POST', `/admin/realms/${name}/clients`, token, { clientId: 'auto', publicClient: true, consentRequired: false });
    expect(auto.status, JSON.stringify(auto.body)).toBe(201);
    expect((await api(t.url, 'GET', `/admin/realms/${name}/clients/${auto.headers.get('location')!.split('/').pop()}`, token)).body.consentRequired).toBe(true);
    expect((await put('profiles', { profiles: [{ name: 'ask', executors: [{ executor: 'consent-required', configuration: { 'auto-configure': false } }] }] })).status).toBe(204);
    const refused = await api(t.url, 'POST', `/admin/realms/${name}/clients`, token, { clientId: 'plain', publicClient: true });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('Client is required to enable consentRequired');
    expect((await api(t.url, 'POST', `/admin/realms/${name}/clients`, token, { clientId: 'asking', publicClient: true, consentRequired: true })).status).toBe(201);
  });

  it('a forged or missing page key is not a consent', async () => {
    const { id, username } = await user();
    const { client, page } = await signIn(username);
    const form = firstForm(page.text);
    const forged = await client.post(form.action, { ...form.hidden, key: 'x' + form.hidden.key, accept: 'yes' });
    expect(pageOf(forged)).not.toMatch(/code=/);
    const noCsrf = await client.post(form.action, { key: form.hidden.key, accept: 'yes' });
    expect(pageOf(noCsrf)).not.toMatch(/code=/);
    expect(await consents(id)).toEqual([]);
  });
});
