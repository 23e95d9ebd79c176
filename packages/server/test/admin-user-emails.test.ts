import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linkIn, startSmtp } from './support/smtp.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, eventually, startServer, tokenRequest, type TestServer } from './support/server.js';

/**
 * Issue 16, point 5: the e-mails an administrator sends with the official admin client — execute-actions-email
 * (the invitation: a new user without a password sets one through the link) and send-verify-email — over a real
 * SMTP server, and the links carried out as a person's browser would (GET the link, POST the form on its page).
 */
describe('execute-actions-email and send-verify-email', () => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let kc: KcAdminClient;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer();
    kc = new KcAdminClient({ baseUrl: t.url, realmName: 'master' });
    await kc.auth({ grantType: 'password', clientId: 'admin-cli', username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
    await kc.realms.create({ realm: 'invite', enabled: true, sslRequired: 'none', smtpServer: { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@invite.example' } });
    kc.setConfig({ realmName: 'invite' });
    await kc.clients.create({ clientId: 'portal', publicClient: true, directAccessGrantsEnabled: true, redirectUris: ['https://portal.example/*'] });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  const mailTo = (address: string) => eventually(() => smtp.mails.find((m) => m.to.includes(address)));
  const signIn = (username: string, password: string) => tokenRequest(t.url, 'invite', { grant_type: 'password', client_id: 'portal', username, password });

  it('invites a user without a password: the link sets the password and confirms the address', async () => {
    const { id } = await kc.users.create({ username: 'newbie', email: 'newbie@invite.example', enabled: true, requiredActions: ['UPDATE_PASSWORD'] });
    await kc.users.executeActionsEmail({ id, actions: ['UPDATE_PASSWORD', 'VERIFY_EMAIL'], clientId: 'portal', redirectUri: 'https://portal.example/welcome', lifespan: 3600 });
    const mail = await mailTo('newbie@invite.example');
    expect(mail.raw).toContain('Update password');
    const page = await fetch(linkIn(mail));
    expect(page.status).toBe(200);
    const html = await page.text();
    const code = /name="session_code" value="([^"]+)"/.exec(html)?.[1];
    expect(code).toBeTruthy();
    const form = new URLSearchParams({ 'password-new': 'Newbie-pass-1', 'password-confirm': 'Newbie-pass-1', session_code: code! });
    const posted = await fetch(`${t.url}/realms/invite/login-actions/reset-password`, { method: 'POST', body: form });
    expect(posted.status).toBe(200);
    // The administrator's redirect_uri is where the page leads afterwards.
    expect(await posted.text()).toContain('href="https://portal.example/welcome"');
    expect((await signIn('newbie', 'Newbie-pass-1')).status).toBe(200);
    const user = await kc.users.findOne({ id });
    expect(user?.emailVerified).toBe(true);
    expect(user?.requiredActions).toEqual([]);
    // The link works once.
    expect((await fetch(linkIn(mail))).status).toBe(400);
  });

  it('send-verify-email: the link confirms the address', async () => {
    const { id } = await kc.users.create({ username: 'verify-me', email: 'verify-me@invite.example', enabled: true });
    await kc.users.sendVerifyEmail({ id });
    const page = await fetch(linkIn(await mailTo('verify-me@invite.example')));
    expect(page.status).toBe(200);
    expect((await kc.users.findOne({ id }))?.emailVerified).toBe(true);
  });

  it('refuses what Keycloak refuses, with 400 and no mail', async () => {
    const sent = smtp.mails.length;
    const { id: noMail } = await kc.users.create({ username: 'no-mail', enabled: true });
    const { id: off } = await kc.users.create({ username: 'off', email: 'off@invite.example', enabled: false });
    const { id: ok } = await kc.users.create({ username: 'ok', email: 'ok@invite.example', enabled: true });
    const refused = (call: Promise<unknown>, message: string) => expect(call).rejects.toMatchObject({ response: { status: 400 }, responseData: { errorMessage: expect.stringContaining(message) } });
    await refused(kc.users.executeActionsEmail({ id: noMail, actions: ['UPDATE_PASSWORD'] }), 'User email missing');
    await refused(kc.users.sendVerifyEmail({ id: off }), 'User is disabled');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['TERMS_AND_CONDITIONS'] }), 'TERMS_AND_CONDITIONS');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], clientId: 'portal', redirectUri: 'https://evil.example/' }), 'Invalid redirect uri');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], redirectUri: 'https://portal.example/x' }), 'Client id missing');
    await refused(kc.users.executeActionsEmail({ id: ok, actions: ['UPDATE_PASSWORD'], clientId: 'nobody' }), "Client doesn't exist");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(smtp.mails.length).toBe(sent);
  });
});
