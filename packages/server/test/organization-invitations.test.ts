import KcAdminClient from '@keycloak/keycloak-admin-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { movableDate } from './support/clock.js';
import { FormClient, firstForm, inputValue } from './support/forms.js';
import { decodeMail, startSmtp, type ReceivedMail } from './support/smtp.js';
import { eventually, httpDatabases, startServer, type TestServer } from './support/server.js';
import { masterAdminClient, rejects, tokenOfUserWithRoles } from './support/admin-client.js';

/**
 * Issue 41, point 2: Keycloak 26.7's organization invitations with the official admin client (invite,
 * inviteExistingUser, listInvitations, findInvitation, resendInvitation, deleteInvitation), the e-mail received over
 * SMTP and its link followed over HTTP with cookies as a browser without JavaScript would: a new address registers
 * and joins, a user of the realm confirms and joins. Attacks: an administrator without manage-users cannot invite or
 * read invitations; a link works once, only in its realm, not after it expired, was deleted or resent.
 */
describe.each(httpDatabases)('organization invitations (%s)', (database) => {
  let t: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let kc: KcAdminClient;
  let acme: string;
  let other: string;

  const form = (fields: Record<string, string>) => {
    const data = new FormData();
    for (const [name, value] of Object.entries(fields)) data.append(name, value);
    return data;
  };
  const mailsTo = (address: string) => smtp.mails.filter((m) => m.to.includes(address));
  const mailTo = (address: string, count = 1) => eventually(() => (mailsTo(address).length >= count ? mailsTo(address)[count - 1] : undefined));
  /** The link of an invitation mail (quoted-printable undone; the text part's link). */
  const linkOf = (mail: ReceivedMail) => {
    const text = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    const match = /https?:\/\/[^\s"<>]+(?:login-actions\/action-token\?key=|openid-connect\/registrations\?)[^\s"<>]+/.exec(text);
    if (!match) throw new Error('no invitation link in mail');
    return match[0].replace(/&amp;/g, '&');
  };
  const members = async (orgId: string) => (await kc.organizations.listMembers({ orgId })).map((m) => m.username);
  const events = async (type: string) => (await kc.realms.findEvents({ realm: 'orgs', type: type as never })) as { type: string; error?: string; userId?: string; details?: Record<string, string> }[];

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await startServer({ database });
    kc = await masterAdminClient(t.url);
    const smtpServer = { host: '127.0.0.1', port: String(smtp.port), from: 'noreply@orgs.example' };
    await kc.realms.create({ realm: 'orgs', enabled: true, organizationsEnabled: true, eventsEnabled: true, adminEventsEnabled: true, registrationAllowed: false, sslRequired: 'none', smtpServer });
    await kc.realms.create({ realm: 'elsewhere', enabled: true, organizationsEnabled: true, sslRequired: 'none', smtpServer });
    kc.setConfig({ realmName: 'orgs' });
    acme = (await kc.organizations.create({ name: 'acme', alias: 'acme', domains: [{ name: 'acme.example' }] })).id;
    other = (await kc.organizations.create({ name: 'other', alias: 'other', domains: [{ name: 'other.example' }] })).id;
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('a new address: the e-mail links to the registration page (open though registration is off), pre-filled; registering makes the user a member, once', async () => {
    await kc.organizations.invite({ orgId: acme }, form({ email: 'Ann@Acme.example', firstName: 'Ann', lastName: 'Lee' }));
    const [invitation] = await kc.organizations.listInvitations({ orgId: acme, email: 'ann@acme.example' });
    expect(invitation).toMatchObject({ organizationId: acme, email: 'ann@acme.example', firstName: 'Ann', lastName: 'Lee', status: 'PENDING' });
    expect(invitation.expiresAt! - invitation.sentDate!).toBe(12 * 60 * 60);
    // The listing leaves the link out, as Keycloak's: it is a credential to join.
    expect(Object.keys(invitation)).not.toContain('inviteLink');
    expect(await kc.organizations.findInvitation({ orgId: acme, invitationId: invitation.id! })).toEqual(invitation);

    const mail = await mailTo('ann@acme.example');
    const { subject, body } = decodeMail(mail);
    expect(subject).toBe('Invitation to join acme · orgs');
    expect(body).toContain('Hello Ann Lee, you have been invited to become a member of the organization acme.');
    expect(body).toContain('This link expires in 12 hours');
    const link = linkOf(mail);
    expect(link).toMatch(/\/realms\/orgs\/protocol\/openid-connect\/registrations\?response_type=code&client_id=account&token=/);

    const browser = new FormClient(t.url);
    const entry = await browser.get(link);
    expect(entry.status).toBe(302);
    const page = await browser.get(entry.location!);
    expect(page.status, page.text).toBe(200);
    expect(page.text).toContain('Create an account to join acme');
    expect(inputValue(page.text, 'email')).toBe('ann@acme.example');
    expect(inputValue(page.text, 'firstName')).toBe('Ann');

    // Another address is refused: the invitation is for the one it went to.
    const { action, hidden } = firstForm(page.text);
    const fields = { firstName: 'Ann', lastName: 'Lee', username: 'ann', password: 'Ann-pass-12', 'password-confirm': 'Ann-pass-12' };
    const wrong = await browser.post(action, { ...hidden, ...fields, email: 'mallory@evil.example' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('This is not the address the invitation was sent to.');
    expect(await kc.users.find({ username: 'ann', exact: true })).toEqual([]);

    const done = await browser.post(action, { ...hidden, ...fields, email: 'ann@acme.example' });
    expect(done.status, done.text).toBe(302);
    // The registration ends at the account client's base URL with a code, as a registration of the account client.
    expect(done.location).toMatch(new RegExp(`^${t.url}/realms/orgs/account/\\?.*code=`));
    expect(await members(acme)).toContain('ann');
    expect(await members(other)).not.toContain('ann');
    expect(await kc.organizations.listInvitations({ orgId: acme, email: 'ann@acme.example' })).toEqual([]);

    // The link again, in another browser: the invitation is gone.
    const again = new FormClient(t.url);
    const second = await again.get(link);
    const refused = second.status === 302 ? await again.get(second.location!) : second;
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('This invitation is no longer valid');
  });

  it('a user of the realm: the action link asks to confirm, the confirmation joins; the link works once', async () => {
    const { id } = await kc.users.create({ username: 'bob', email: 'bob@acme.example', firstName: 'Bob', lastName: 'Stone', enabled: true, credentials: [{ type: 'password', value: 'Bob-pass-123', temporary: false }] });
    await kc.organizations.inviteExistingUser({ orgId: acme }, form({ id }));
    // A second invitation while this one is pending is refused.
    await rejects(kc.organizations.inviteExistingUser({ orgId: acme }, form({ id })), 409, /pending invitation/);
    await rejects(kc.organizations.invite({ orgId: acme }, form({ email: 'BOB@acme.example' })), 409, /pending invitation/);

    const link = linkOf(await mailTo('bob@acme.example'));
    expect(link).toMatch(/\/realms\/orgs\/login-actions\/action-token\?key=/);
    const browser = new FormClient(t.url);
    const confirm = await browser.get(link);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Confirm to become a member of the organization acme.');
    // Opening the link alone (a mail scanner's GET) joins nobody.
    expect(await members(acme)).not.toContain('bob');

    const { action, hidden } = firstForm(confirm.text);
    const joined = await browser.post(action, hidden);
    expect(joined.status).toBe(200);
    expect(joined.text).toContain('You are now a member of the organization acme.');
    // It leads to the account console (the organization has no redirect URL); nobody is signed in by the link.
    expect(joined.text).toContain(`href="${t.url}/realms/orgs/account/"`);
    expect(joined.setCookies).not.toContain('KEYCLOAK_IDENTITY');
    expect(await members(acme)).toContain('bob');
    const [event] = await eventually(async () => ((await events('INVITE_ORG')).length ? events('INVITE_ORG') : undefined));
    expect(event).toMatchObject({ userId: id, details: { username: 'bob', org_id: acme } });

    // The link again (GET or the confirmation replayed): refused, and recorded.
    expect((await browser.get(link)).status).toBe(400);
    expect((await browser.post(action, hidden)).status).toBe(400);
    const errors = await events('INVITE_ORG_ERROR');
    expect(errors.map((e) => e.error)).toContain('invalid_token');

    // The administrator's invitations are admin events on the membership.
    const adminEvents = await kc.realms.findAdminEvents({ realm: 'orgs', resourceTypes: ['ORGANIZATION_MEMBERSHIP'] as never });
    expect(adminEvents.map((e) => `${e.operationType} ${e.resourcePath}`)).toContain(`ACTION organizations/${acme}/members/invite-existing-user`);

    // A member is invited all the same, as Keycloak does; the link then says so and changes nothing.
    await kc.organizations.inviteExistingUser({ orgId: acme }, form({ id }));
    const memberLink = linkOf(await mailTo('bob@acme.example', 2));
    const already = await new FormClient(t.url).get(memberLink);
    expect(already.status).toBe(400);
    expect(already.text).toContain('You are a member of the organization acme already.');
    expect((await events('INVITE_ORG_ERROR')).map((e) => e.error)).toContain('user_org_member_already');
    // By address, a pending invitation is a conflict first; without one, a member is refused (Keycloak's inviteUser).
    await rejects(kc.organizations.invite({ orgId: acme }, form({ email: 'bob@acme.example' })), 409, /^User already has a pending invitation$/);
    const [pending] = await kc.organizations.listInvitations({ orgId: acme, email: 'bob@acme.example' });
    await kc.organizations.deleteInvitation({ orgId: acme, invitationId: pending.id! });
    await rejects(kc.organizations.invite({ orgId: acme }, form({ email: 'bob@acme.example' })), 409, /^User already a member of the organization$/);
  });

  it("answers Keycloak's statuses and messages for bad invitations; a user's storage credential types are []", async () => {
    await rejects(kc.organizations.invite({ orgId: acme }, form({ email: '' })), 400, /^Email is required to invite a member$/);
    await rejects(kc.organizations.invite({ orgId: acme }, form({})), 400, /^Email is required to invite a member$/);
    await rejects(kc.organizations.invite({ orgId: acme }, form({ email: 'not-an-address' })), 400, /^Invalid email format$/);
    await rejects(kc.organizations.inviteExistingUser({ orgId: acme }, form({ id: '' })), 400);
    await rejects(kc.organizations.inviteExistingUser({ orgId: acme }, form({ id: 'no-such-user' })), 400, /^User does not exist$/);
    const { id: noMail } = await kc.users.create({ username: 'no-mail', enabled: true });
    await rejects(kc.organizations.inviteExistingUser({ orgId: acme }, form({ id: noMail })), 400, /^User does not have an email address$/);
    await rejects(kc.organizations.findInvitation({ orgId: acme, invitationId: 'no-such-invitation' }), 404, /^Invitation not found$/);
    await rejects(kc.organizations.deleteInvitation({ orgId: acme, invitationId: 'no-such-invitation' }), 404, /^Invitation not found$/);
    await rejects(kc.organizations.resendInvitation({ orgId: acme, invitationId: 'no-such-invitation' }), 404, /^Invitation not found$/);
    await kc.organizations.updateById({ id: other }, { name: 'other', alias: 'other', enabled: false, domains: [{ name: 'other.example', verified: false }] });
    await rejects(kc.organizations.invite({ orgId: other }, form({ email: 'zed@other.example' })), 400, /^Organization is disabled$/);
    await kc.organizations.updateById({ id: other }, { name: 'other', alias: 'other', enabled: true, domains: [{ name: 'other.example', verified: false }] });
    // A form sent urlencoded is read as well.
    const token = await kc.getAccessToken();
    const posted = await fetch(`${t.url}/admin/realms/orgs/organizations/${acme}/members/invite-user`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: new URLSearchParams({ email: 'dora@acme.example' }) });
    expect(posted.status).toBe(204);
    expect(await kc.organizations.listInvitations({ orgId: acme, search: 'dora' })).toHaveLength(1);

    // The mail cannot be sent (nothing listens at the realm's SMTP port): 500, as Keycloak, and no invitation is kept.
    const closed = await startSmtp();
    await closed.close();
    await kc.realms.create({ realm: 'no-mail', enabled: true, organizationsEnabled: true, smtpServer: { host: '127.0.0.1', port: String(closed.port), from: 'noreply@orgs.example' } });
    const { id: lonely } = await kc.organizations.create({ realm: 'no-mail', name: 'lonely', alias: 'lonely', domains: [{ name: 'lonely.example' }] });
    await rejects(kc.organizations.invite({ realm: 'no-mail', orgId: lonely }, form({ email: 'gus@lonely.example' })), 500, /^Failed to send invite email$/);
    expect(await kc.organizations.listInvitations({ realm: 'no-mail', orgId: lonely })).toEqual([]);

    expect(await kc.users.getUserStorageCredentialTypes({ id: noMail })).toEqual([]);
    await rejects(kc.users.getUserStorageCredentialTypes({ id: '00000000-0000-4000-8000-000000000000' }), 404);
  });

  it('deleting or resending an invitation ends its link; the resent one works', async () => {
    await kc.organizations.invite({ orgId: acme }, form({ email: 'cara@acme.example' }));
    const [first] = await kc.organizations.listInvitations({ orgId: acme, email: 'cara@acme.example' });
    const oldLink = linkOf(await mailTo('cara@acme.example'));
    await kc.organizations.resendInvitation({ orgId: acme, invitationId: first.id! });
    const [second] = await kc.organizations.listInvitations({ orgId: acme, email: 'cara@acme.example' });
    expect(second.id).not.toBe(first.id);
    const newLink = linkOf(await mailTo('cara@acme.example', 2));
    expect(newLink).not.toBe(oldLink);

    const stale = new FormClient(t.url);
    const entry = await stale.get(oldLink);
    const stalePage = await stale.get(entry.location!);
    expect(stalePage.status, stalePage.text).toBe(400);
    const fresh = new FormClient(t.url);
    const freshEntry = await fresh.get(newLink);
    expect((await fresh.get(freshEntry.location!)).status).toBe(200);

    await kc.organizations.deleteInvitation({ orgId: acme, invitationId: second.id! });
    expect(await kc.organizations.listInvitations({ orgId: acme, email: 'cara@acme.example' })).toEqual([]);
    const afterDelete = new FormClient(t.url);
    const deletedEntry = await afterDelete.get(newLink);
    expect((await afterDelete.get(deletedEntry.location!)).status).toBe(400);
  });

  it('attacker: without manage-users no invitation is sent or read; a link does nothing in another realm', async () => {
    const realmOnly = await tokenOfUserWithRoles(kc, t.url, 'org-admin', ['manage-realm', 'view-realm']);
    const usersOnly = await tokenOfUserWithRoles(kc, t.url, 'user-admin', ['manage-users', 'view-users']);
    for (const token of [realmOnly, usersOnly]) {
      const headers = { authorization: `Bearer ${token}` };
      const invite = await fetch(`${t.url}/admin/realms/orgs/organizations/${acme}/members/invite-user`, { method: 'POST', headers, body: new URLSearchParams({ email: 'eve@acme.example' }) });
      expect(invite.status).toBe(403);
      expect((await fetch(`${t.url}/admin/realms/orgs/organizations/${acme}/invitations`, { headers })).status).toBe(403);
    }
    expect(mailsTo('eve@acme.example')).toEqual([]);

    const { id } = await kc.users.create({ username: 'erin', email: 'erin@acme.example', enabled: true });
    await kc.organizations.inviteExistingUser({ orgId: other }, form({ id }));
    const link = linkOf(await mailTo('erin@acme.example'));
    // The same key under another realm's path: signed by another realm's key, for another audience.
    const moved = link.replace('/realms/orgs/', '/realms/elsewhere/');
    const browser = new FormClient(t.url);
    const elsewhere = await browser.get(moved);
    expect(elsewhere.status).toBe(400);
    const { hidden } = firstForm((await browser.get(link)).text);
    expect((await browser.post(`${t.url}/realms/elsewhere/login-actions/action-token`, hidden)).status).toBe(400);
    // A tampered key (its signature cut) is refused too.
    expect((await browser.post(`${t.url}/realms/orgs/login-actions/action-token`, { key: hidden.key.slice(0, -4) })).status).toBe(400);
    expect(await members(other)).not.toContain('erin');
    // The link joins its own organization only.
    expect((await browser.post(`${t.url}/realms/orgs/login-actions/action-token`, hidden)).status).toBe(200);
    expect(await members(other)).toContain('erin');
    expect(await members(acme)).not.toContain('erin');
  });

  // Last: the clock moves on and never back.
  it('an expired invitation: its link is refused, it is listed EXPIRED, and the address can be invited again', async () => {
    await kc.organizations.invite({ orgId: acme }, form({ email: 'finn@acme.example' }));
    const link = linkOf(await mailTo('finn@acme.example'));
    const clock = movableDate();
    try {
      clock.pass(12 * 60 * 60 * 1000 + 5_000);
      const browser = new FormClient(t.url);
      const entry = await browser.get(link);
      const page = entry.status === 302 ? await browser.get(entry.location!) : entry;
      expect(page.status).toBe(400);
      kc = await masterAdminClient(t.url, 'orgs');
      const [expired] = await kc.organizations.listInvitations({ orgId: acme, email: 'finn@acme.example', status: 'EXPIRED' });
      expect(expired).toMatchObject({ email: 'finn@acme.example', status: 'EXPIRED' });
      expect(await kc.organizations.listInvitations({ orgId: acme, email: 'finn@acme.example', status: 'PENDING' })).toEqual([]);
      await kc.organizations.invite({ orgId: acme }, form({ email: 'finn@acme.example' }));
      const [renewed] = await kc.organizations.listInvitations({ orgId: acme, email: 'finn@acme.example' });
      expect(renewed.status).toBe('PENDING');
      expect(renewed.id).not.toBe(expired.id);
    } finally {
      clock.restore();
    }
  });
});
