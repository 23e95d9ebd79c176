import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableDate } from './support/clock.js';
import { firstForm, textOf } from './support/forms.js';
import { linkIn, startSmtp } from './support/smtp.js';
import { CodeSource, fromBase32, totpCode } from './support/totp.js';
import { httpDatabases, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';
import { masterAdminClient } from './support/admin-client.js';

/**
 * Issue 16, point 5: the e-mails an administrator sends with the official admin client — execute-actions-email
 * (the invitation: a new user without a password sets one through the link) and send-verify-email — over a real
 * SMTP server, and the links carried out as a person's browser would (GET the link, POST the form on its page), on
 * SQLite (issue 36: users, their required actions and credentials are stored alike on PostgreSQL, checked by
 * storage-import-export.test.ts and users-bulk.test.ts).
 */
describe.each(httpDatabases)('execute-actions-email and send-verify-email (%s)', (database) => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let kc: KcAdminClient;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    await kc.realms.create({ realm: 'invite', enabled: true, eventsEnabled: true, sslRequired: 'none', smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@invite.example' } });
    kc.setConfig({ realmName: 'invite' });
    await kc.clients.create({ clientId: 'portal', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['https://portal.example/*'] });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  /** Posts the page's form with `fields` as a browser would (its hidden inputs, to its action). */
  const submit = async (html: string, fields: Record<string, string>) => {
    const { action, hidden } = firstForm(html);
    const response = await fetch(new URL(action, t.url), { method: 'POST', body: new URLSearchParams({ ...hidden, ...fields }) });
    return { status: response.status, html: await response.text() };
  };
  const mailTo = (address: string) => eventually(() => smtp.mails.find((m) => m.to.includes(address)));
  const signIn = (username: string, password: string) => tokenRequest(t.url, 'invite', { grant_type: 'password', client_id: 'portal', username, password });

  it('invites a user without a password: the link sets the password and confirms the address', async () => {
    const { id } = await kc.users.create({ username: 'newbie', email: 'newbie@invite.example', enabled: true, requiredActions: ['UPDATE_PASSWORD'] });
    await kc.users.executeActionsEmail({ id, actions: ['UPDATE_PASSWORD', 'VERIFY_EMAIL'], clientId: 'portal', redirectUri: 'https://portal.example/welcome', lifespan: 3600 });
    const mail = await mailTo('newbie@invite.example');
    expect(mail.raw).toContain('Update password');
    const page = await fetch(linkIn(mail));
    expect(page.status).toBe(200);
    const posted = await submit(await page.text(), { 'password-new': 'Newbie-pass-1', 'password-confirm': 'Newbie-pass-1' });
    expect(posted.status).toBe(200);
    // The administrator's redirect_uri is where the page leads afterwards.
    expect(posted.html).toContain('href="https://portal.example/welcome"');
    expect((await signIn('newbie', 'Newbie-pass-1')).status).toBe(200);
    const user = await kc.users.findOne({ id });
    expect(user?.emailVerified).toBe(true);
    expect(user?.requiredActions).toEqual([]);
    // The link works once.
    expect((await fetch(linkIn(mail))).status).toBe(400);
  });

  it('carries out UPDATE_PROFILE, CONFIGURE_TOTP and UPDATE_PASSWORD from the link, in the realm\'s priority order (Keycloak 26: 40, 54, 57), without signing in', async () => {
    const { id } = await kc.users.create({ username: 'all-three', email: 'all-three@invite.example', enabled: true, credentials: [{ type: 'password', value: 'Old-pass-1', temporary: false }] });
    await kc.users.executeActionsEmail({ id, actions: ['UPDATE_PASSWORD', 'CONFIGURE_TOTP', 'UPDATE_PROFILE'], clientId: 'portal', redirectUri: 'https://portal.example/done' });
    const mail = await mailTo('all-three@invite.example');
    let page = await fetch(linkIn(mail));
    expect(page.status).toBe(200);
    let html = await page.text();
    // Opening the link leaves what is not yet done on the user, for the next sign-in should the person stop here.
    expect((await kc.users.findOne({ id }))?.requiredActions?.sort()).toEqual(['CONFIGURE_TOTP', 'UPDATE_PROFILE']);

    // 1. The profile, under the account page's rules.
    const badName = await submit(html, { email: 'all-three@invite.example', firstName: '<script>', lastName: 'Three' });
    expect(badName.status).toBe(400);
    const profileDone = await submit(badName.html, { email: 'all-three@invite.example', firstName: 'All', lastName: 'Three' });
    expect(profileDone.status, profileDone.html).toBe(200);

    // 2. The authenticator app: a wrong code is refused on a fresh page; the code of the key shown is taken.
    const secret = textOf(profileDone.html, 'kc-totp-secret-key');
    expect(secret).toBeTruthy();
    const codes = new CodeSource(fromBase32(secret!), { window: 1 });
    // A code of an hour ago: outside any look-ahead window.
    const stale = totpCode(fromBase32(secret!), Date.now() - 3_600_000);
    const wrong = await submit(profileDone.html, { totp: stale, userLabel: 'phone' });
    expect(wrong.status).toBe(400);
    expect(textOf(wrong.html, 'kc-totp-secret-key')).toBe(secret);
    // The page that was refused cannot be posted again; the new page can.
    expect((await submit(profileDone.html, { totp: stale, userLabel: 'phone' })).status).toBe(400);
    const totpDone = await submit(wrong.html, { totp: codes.next(), userLabel: 'phone' });
    expect(totpDone.status, totpDone.html).toBe(200);

    // 3. The new password, under the realm's policy.
    const mismatch = await submit(totpDone.html, { 'password-new': 'New-pass-1', 'password-confirm': 'other' });
    expect(mismatch.status).toBe(400);
    const passwordDone = await submit(mismatch.html, { 'password-new': 'New-pass-1', 'password-confirm': 'New-pass-1' });
    expect(passwordDone.status, passwordDone.html).toBe(200);
    // Posting the password page again (a replay) is refused: the page's token is spent.
    expect((await submit(mismatch.html, { 'password-new': 'Evil-pass-1', 'password-confirm': 'Evil-pass-1' })).status).toBe(400);
    expect(passwordDone.html).toContain('href="https://portal.example/done"');
    expect(passwordDone.html).not.toMatch(/<form\b[^>]*action=/);
    // No sign-in happened: the link set no session cookie at any step.
    expect(page.headers.getSetCookie().filter((c) => /KEYCLOAK_SESSION|KEYCLOAK_IDENTITY/.test(c))).toEqual([]);

    const user = await kc.users.findOne({ id });
    expect(user).toMatchObject({ firstName: 'All', lastName: 'Three', requiredActions: [] });
    expect((await kc.users.getCredentials({ id })).map((c) => c.type).sort()).toEqual(['otp', 'password']);
    // The old password no longer works; the new one with a code from the app does.
    expect((await signIn('all-three', 'Old-pass-1')).status).toBe(400);
    const granted = await tokenRequest(t.url, 'invite', { grant_type: 'password', client_id: 'portal', username: 'all-three', password: 'New-pass-1', totp: codes.next() });
    expect(granted.status, JSON.stringify(granted.body)).toBe(200);
    const events = await kc.realms.findEvents({ realm: 'invite', user: id });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['UPDATE_CREDENTIAL', 'UPDATE_PASSWORD', 'UPDATE_PROFILE']));

    // The link itself worked once.
    page = await fetch(linkIn(mail));
    expect(page.status).toBe(400);
    html = await page.text();
    expect(html).not.toContain('kc-totp-secret-key');
  });

  it('a page of another user\'s link, or a forged one, changes nothing', async () => {
    const { id } = await kc.users.create({ username: 'victim', email: 'victim@invite.example', enabled: true, credentials: [{ type: 'password', value: 'Victim-pass-1', temporary: false }] });
    const { id: attacker } = await kc.users.create({ username: 'attacker', email: 'attacker@invite.example', enabled: true });
    await kc.users.executeActionsEmail({ id: attacker, actions: ['UPDATE_PASSWORD'] });
    const html = await (await fetch(linkIn(await mailTo('attacker@invite.example')))).text();
    const { action, hidden } = firstForm(html);
    // A token whose payload names the victim, with the attacker's signature: refused.
    const [header, payload, signature] = hidden.key.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = [header, Buffer.from(JSON.stringify({ ...claims, sub: id })).toString('base64url'), signature].join('.');
    const response = await fetch(new URL(action, t.url), { method: 'POST', body: new URLSearchParams({ key: forged, 'password-new': 'Owned-pass-1', 'password-confirm': 'Owned-pass-1' }) });
    expect(response.status).toBe(400);
    expect((await signIn('victim', 'Victim-pass-1')).status).toBe(200);
    expect((await signIn('victim', 'Owned-pass-1')).status).toBe(400);
  });

  it('send-verify-email: the link confirms the address and leads to the redirect_uri given', async () => {
    const { id } = await kc.users.create({ username: 'verify-me', email: 'verify-me@invite.example', enabled: true, requiredActions: ['VERIFY_EMAIL'] });
    await kc.users.sendVerifyEmail({ id, clientId: 'portal', redirectUri: 'https://portal.example/verified' });
    const page = await fetch(linkIn(await mailTo('verify-me@invite.example')));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('href="https://portal.example/verified"');
    expect(await kc.users.findOne({ id })).toMatchObject({ emailVerified: true, requiredActions: [] });
    const [event] = await kc.realms.findEvents({ realm: 'invite', user: id, type: 'VERIFY_EMAIL' as never });
    expect(event).toMatchObject({ clientId: 'portal' });
  });

  it('VERIFY_EMAIL alone from execute-actions-email: following the link confirms the address, nothing else is asked', async () => {
    const { id } = await kc.users.create({ username: 'only-verify', email: 'only-verify@invite.example', enabled: true, credentials: [{ type: 'password', value: 'Only-pass-1', temporary: false }], requiredActions: ['VERIFY_EMAIL'] });
    expect((await signIn('only-verify', 'Only-pass-1')).status).toBe(400);
    await kc.users.executeActionsEmail({ id, actions: ['VERIFY_EMAIL'], clientId: 'portal', redirectUri: 'https://portal.example/ok' });
    const page = await fetch(linkIn(await mailTo('only-verify@invite.example')));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toMatch(/<form\b[^>]*action=/);
    expect(html).toContain('href="https://portal.example/ok"');
    expect(await kc.users.findOne({ id })).toMatchObject({ emailVerified: true, requiredActions: [] });
    expect((await signIn('only-verify', 'Only-pass-1')).status).toBe(200);
  });

  it('a link past its lifespan is refused and changes nothing', async () => {
    const { id } = await kc.users.create({ username: 'late', email: 'late@invite.example', enabled: true });
    await kc.users.executeActionsEmail({ id, actions: ['UPDATE_PASSWORD'], lifespan: 1 });
    const mail = await mailTo('late@invite.example');
    expect(mail.raw).toMatch(/expires in 1 second\b/);
    // The link's second passes on a moved Date (issue 36: no waiting), put back before the next test.
    const clock = movableDate();
    try {
      clock.pass(2_100);
      const page = await fetch(linkIn(mail));
      expect(page.status).toBe(400);
      expect(await page.text()).not.toContain('password-new');
    } finally {
      clock.restore();
    }
    expect((await kc.users.getCredentials({ id })).filter((c) => c.type === 'password')).toEqual([]);
  });

  it('refuses what Keycloak refuses, with 400 and no mail', async () => {
    const sent = smtp.mails.length;
    const { id: noMail } = await kc.users.create({ username: 'no-mail', enabled: true });
    const { id: off } = await kc.users.create({ username: 'off', email: 'off@invite.example', enabled: false });
    const { id: ok } = await kc.users.create({ username: 'ok', email: 'ok@invite.example', enabled: true });
    const refused = (call: Promise<unknown>, message: string) => expect(call).rejects.toMatchObject({ response: { status: 400 }, responseData: { errorMessage: expect.stringContaining(message) } });
    await refused(kc.users.executeActionsEmail({ id: noMail, actions: ['UPDATE_PASSWORD'] }), 'User email missing');
    await refused(kc.users.sendVerifyEmail({ id: off }), 'User is disabled');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['delete_credential'] }), 'delete_credential');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], clientId: 'portal', redirectUri: 'https://evil.example/' }), 'Invalid redirect uri');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], redirectUri: 'https://portal.example/x' }), 'Client id missing');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], clientId: 'nobody' }), "Client doesn't exist");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(smtp.mails.length).toBe(sent);
  });
});
