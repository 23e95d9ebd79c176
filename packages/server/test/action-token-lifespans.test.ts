import KcAdminClient from '@keycloak/keycloak-admin-client';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FormClient, inputValue, pkce } from './support/forms.js';
import { decodeMail, linkIn, startSmtp } from './support/smtp.js';
import { httpDatabases, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 41, point 3: the realm's `actionTokenGeneratedByUserLifespan` and `actionTokenGeneratedByAdminLifespan`, once
 * stored and not enforced, now set how long e-mailed links live: those a user asks for (reset password, verify
 * e-mail) and those an administrator sends without a `lifespan` (execute actions, verify e-mail, invitations); and
 * `accessCodeLifespan`, how long an authorization code is kept for the client's token request.
 */
describe.each(httpDatabases)('action token lifespans (%s)', (database) => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let kc: KcAdminClient;
  const lifetimeOf = (link: string) => {
    const claims = decodeJwt(new URL(link).searchParams.get('key')!);
    return claims.exp! - claims.iat!;
  };
  const mailTo = (address: string) => eventually(() => smtp.mails.find((m) => m.to.includes(address)));

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'links', enabled: true, organizationsEnabled: true, smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@links.example' } });
    kc.setConfig({ realmName: 'links' });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('Keycloak\'s defaults (300 s, 12 hours) until set; then GET, the partial export and the links follow the realm', async () => {
    expect(await kc.realms.findOne({ realm: 'links' })).toMatchObject({ actionTokenGeneratedByUserLifespan: 300, actionTokenGeneratedByAdminLifespan: 43200 });
    const { id } = await kc.users.create({ username: 'ann', email: 'ann@links.example', enabled: true });
    await kc.users.executeActionsEmail({ id, actions: ['UPDATE_PASSWORD'] });
    expect(lifetimeOf(linkIn(await mailTo('ann@links.example')))).toBe(43200);

    await kc.realms.update({ realm: 'links' }, { actionTokenGeneratedByUserLifespan: 900, actionTokenGeneratedByAdminLifespan: 7200 });
    expect(await kc.realms.findOne({ realm: 'links' })).toMatchObject({ actionTokenGeneratedByUserLifespan: 900, actionTokenGeneratedByAdminLifespan: 7200 });
    expect(await kc.realms.export({ realm: 'links' })).toMatchObject({ actionTokenGeneratedByUserLifespan: 900, actionTokenGeneratedByAdminLifespan: 7200 });

    // An administrator's links: execute actions and verify e-mail without a lifespan take the realm's; a given one wins.
    const { id: bob } = await kc.users.create({ username: 'bob', email: 'bob@links.example', enabled: true });
    await kc.users.executeActionsEmail({ id: bob, actions: ['UPDATE_PASSWORD'] });
    const mail = await mailTo('bob@links.example');
    expect(lifetimeOf(linkIn(mail))).toBe(7200);
    expect(decodeMail(mail).body).toContain('2 hours');
    const { id: cid } = await kc.users.create({ username: 'cid', email: 'cid@links.example', enabled: true });
    await kc.users.sendVerifyEmail({ id: cid });
    expect(lifetimeOf(linkIn(await mailTo('cid@links.example')))).toBe(7200);
    const { id: dan } = await kc.users.create({ username: 'dan', email: 'dan@links.example', enabled: true });
    await kc.users.executeActionsEmail({ id: dan, actions: ['UPDATE_PASSWORD'], lifespan: 60 });
    expect(lifetimeOf(linkIn(await mailTo('dan@links.example')))).toBe(60);

    // An organization invitation expires with the realm's admin lifespan.
    const org = await kc.organizations.create({ name: 'Acme', alias: 'acme', domains: [{ name: 'acme.example' }] });
    const before = Math.floor(Date.now() / 1000);
    const invite = await fetch(`${t.url}/admin/realms/links/organizations/${org.id}/members/invite-existing-user`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id: bob }),
    });
    expect(invite.status).toBe(204);
    const [invitation] = (await (await fetch(`${t.url}/admin/realms/links/organizations/${org.id}/invitations`, { headers: { authorization: `Bearer ${await kc.getAccessToken()}` } })).json()) as { expiresAt: number }[];
    expect(invitation.expiresAt - before).toBeGreaterThanOrEqual(7200);
    expect(invitation.expiresAt - before).toBeLessThan(7200 + 60);

    // A link the user asks for (the reset-password mail's token is issued the same way): the realm's user lifespan.
    const realm = (await t.server.context.storage.realms.byName('links'))!;
    const token = await t.server.context.actionTokens.issue(realm, 'reset-credentials', id);
    const claims = decodeJwt(token);
    expect(claims.exp! - claims.iat!).toBe(900);
  });

  it('hostile values are refused naming the field, and nothing changes', async () => {
    for (const [field, value] of [['actionTokenGeneratedByUserLifespan', 0], ['actionTokenGeneratedByAdminLifespan', -5], ['actionTokenGeneratedByUserLifespan', 'forever'], ['actionTokenGeneratedByAdminLifespan', 2 ** 40], ['accessCodeLifespan', 0], ['accessCodeLifespan', 1.5]] as const) {
      const answer = await fetch(`${t.url}/admin/realms/links`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${await kc.getAccessToken()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ [field]: value }),
      });
      expect(answer.status).toBe(400);
      expect(JSON.stringify(await answer.json())).toContain(field);
    }
    expect(await kc.realms.findOne({ realm: 'links' })).toMatchObject({ actionTokenGeneratedByUserLifespan: 900, actionTokenGeneratedByAdminLifespan: 7200 });
  });

  it('accessCodeLifespan: an authorization code is kept as long as the realm says (Keycloak\'s 60 s by default), and redeemed', async () => {
    await kc.clients.create({ clientId: 'web', publicClient: true, redirectUris: ['http://127.0.0.1:9/cb'] });
    await kc.users.create({ username: 'eve', enabled: true, credentials: [{ type: 'password', value: 'eve-Pass-1', temporary: false }] });
    const store = t.server.context.hostStore;
    const original = store.set.bind(store);
    const ttls: number[] = [];
    store.set = (async (key: string, value: string, ttlMs?: number) => {
      if (key.startsWith('code:')) ttls.push(ttlMs ?? -1);
      return original(key, value, ttlMs);
    }) as typeof store.set;
    const login = async () => {
      const client = new FormClient(t.url);
      const { verifier, challenge } = pkce();
      const query = new URLSearchParams({ client_id: 'web', redirect_uri: 'http://127.0.0.1:9/cb', response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 'st' });
      const page = await client.get(`/realms/links/protocol/openid-connect/auth?${query}`);
      const done = await client.post('/realms/links/login-actions/authenticate', { username: 'eve', password: 'eve-Pass-1', session_code: inputValue(page.text, 'session_code')! });
      expect(done.status).toBe(302);
      const code = new URL(done.location!).searchParams.get('code')!;
      return tokenRequest(t.url, 'links', { grant_type: 'authorization_code', client_id: 'web', code, redirect_uri: 'http://127.0.0.1:9/cb', code_verifier: verifier });
    };
    try {
      expect((await login()).status).toBe(200);
      await kc.realms.update({ realm: 'links' }, { accessCodeLifespan: 180 });
      expect(await kc.realms.findOne({ realm: 'links' })).toMatchObject({ accessCodeLifespan: 180 });
      expect((await login()).status).toBe(200);
      expect(ttls).toEqual([60_000, 180_000]);
    } finally {
      store.set = original;
    }
  });
});
