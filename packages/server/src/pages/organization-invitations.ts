import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ActionClaims } from '../authentication/index.js';
import { baseUrl, requestInfo } from '../http/index.js';
import type { EventError } from '../model/errors.js';
import type { Organization, OrganizationInvitation, Realm, User } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import type { PagesContext } from './context.js';
import { showPage } from './pages.js';
import { formValues } from './protection.js';
import { userLocaleHint } from './user-locale.js';
import { actionTokenUrl } from './verify-email.js';

/** The client of an invitation's registration link and of its redirect, as Keycloak's (the account client). */
const INVITATION_CLIENT = 'account';

const accountUrl = (request: FastifyRequest, ctx: Pick<PagesContext, 'config'>, realm: Realm) => `${baseUrl(request, ctx.config.hostname)}/realms/${encodeURIComponent(realm.name)}/account/`;

/**
 * The link of an organization's invitation e-mail, as Keycloak's: for a user of the realm, an action link
 * (`login-actions/action-token?key=…`) that asks them to confirm; for an address with no user yet, the registration
 * page of the account client with the token (`registrations?…&token=…`), the form pre-filled with the address.
 * The token (`invite-org`) names the organization and the invitation and ends when the invitation does.
 */
export async function invitationLink(ctx: PagesContext, request: FastifyRequest, realm: Realm, org: Organization, invitation: OrganizationInvitation, user: User | null): Promise<string> {
  const lifetime = Math.max(1, invitation.expiresAt - Math.floor(Date.now() / 1000));
  const redirect = org.redirectUrl || accountUrl(request, ctx, realm);
  const token = await ctx.actionTokens.issue(realm, 'invite-org', user?.id ?? '', { email: invitation.email, org: org.id, inv: invitation.id, azp: INVITATION_CLIENT, redirect }, lifetime);
  if (user) return actionTokenUrl(request, ctx, realm, token);
  const query = new URLSearchParams({ response_type: 'code', client_id: INVITATION_CLIENT, token });
  return `${baseUrl(request, ctx.config.hostname)}/realms/${encodeURIComponent(realm.name)}/protocol/openid-connect/registrations?${query}`;
}

export type InvitationCheck =
  | { ok: true; claims: ActionClaims; org: Organization; invitation: OrganizationInvitation }
  | { ok: false; error: EventError; messageKey: string; claims: ActionClaims | null };

/**
 * An invitation token as Keycloak's InviteOrgActionTokenHandler takes it: signed by this realm's key and unexpired,
 * organizations on, its organization there and enabled, and its invitation still there (not accepted, deleted or
 * resent) and unexpired. A token of another realm fails the signature and audience check.
 */
export async function checkInvitation(ctx: PagesContext, realm: Realm, token: string): Promise<InvitationCheck> {
  const claims = await ctx.actionTokens.read(realm, token, 'invite-org');
  if (!claims || !claims.org || !claims.inv || !claims.email) return { ok: false, error: 'invalid_token', messageKey: 'staleInviteOrgLink', claims };
  if (!realm.organizationsEnabled) return { ok: false, error: 'org_disabled', messageKey: 'orgDisabledMessage', claims };
  const org = await ctx.storage.organizations.byId(realm.id, claims.org);
  if (!org) return { ok: false, error: 'org_not_found', messageKey: 'staleInviteOrgLink', claims };
  if (!org.enabled) return { ok: false, error: 'org_disabled', messageKey: 'orgDisabledMessage', claims };
  const invitation = await ctx.storage.organizationInvitations.byId(org.id, claims.inv);
  if (!invitation || invitation.expiresAt < Math.floor(Date.now() / 1000)) return { ok: false, error: 'invalid_token', messageKey: 'staleInviteOrgLink', claims };
  return { ok: true, claims, org, invitation };
}

/** Accepting takes the invitation away first: of two requests with one link, one joins. */
export async function acceptInvitation(ctx: PagesContext, check: Extract<InvitationCheck, { ok: true }>, user: User): Promise<boolean> {
  if (!(await ctx.storage.organizationInvitations.remove(check.org.id, check.invitation.id))) return false;
  await ctx.actionTokens.consume(check.claims);
  if (!(await ctx.storage.organizations.isMember(check.org.id, user.id))) await ctx.storage.organizations.addMember(check.org.id, user.id);
  return true;
}

/**
 * An existing user's invitation link (typ `invite-org` at `login-actions/action-token`): the GET shows what joining
 * means and a button; the POST of that button (the key again, reset.ts's one POST for link buttons) makes the user a member, ends the invitation and
 * records INVITE_ORG; the page then leads to the organization's redirect URL, else the account console. Following
 * the link does not sign anyone in (Keycloak's handler does): the user signs in there with their own credentials.
 * Refusals are INVITE_ORG_ERROR with Keycloak's errors and a page saying the link is no longer valid.
 */
export async function answerInvitation(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, key: string, confirmed: boolean): Promise<FastifyReply> {
  const info = requestInfo(request);
  const check = await checkInvitation(ctx, realm, key);
  const user = check.claims?.sub ? await ctx.storage.users.byId(realm.id, check.claims.sub) : null;
  if (user) userLocaleHint(request, user);
  const t = await ctx.pages.pageTranslator(reply, realm);
  const details = (claims: ActionClaims | null) => ({ ...(claims?.inv ? { token_id: claims.inv } : {}), ...(claims?.email ? { email: claims.email } : {}), ...(claims?.org ? { org_id: claims.org } : {}) });
  const refuse = async (error: EventError, messageKey: string, status: number, ...args: string[]) => {
    await ctx.events.user(realm, { type: 'INVITE_ORG_ERROR', clientId: check.claims?.azp ?? null, userId: user?.id ?? null, error, details: details(check.claims), request: info });
    return showPage.error(ctx, reply, realm, t.msg(messageKey, ...args), status);
  };
  if (!check.ok) return refuse(check.error, check.messageKey, 400);
  // The link of an address with no user yet is a registration link; one that names a user is for that user, at the address it went to.
  if (!user || !user.enabled || (user.email ?? '').toLowerCase() !== check.claims.email!.toLowerCase()) return refuse('invalid_token', 'staleInviteOrgLink', 400);
  if (await ctx.storage.organizations.isMember(check.org.id, user.id)) return refuse('user_org_member_already', 'orgMemberAlready', 400, check.org.name);
  const next = { href: check.claims.redirect ?? `/realms/${encodeURIComponent(realm.name)}/account/`, label: t.msg('doContinue') };
  if (!confirmed) {
    return ctx.pages.send(reply, realm, 'org-invite-confirm', { title: t.msg('organization.confirm-membership.title', check.org.name), text: t.msg('organization.confirm-membership', check.org.name), action: request.url.split('?')[0], key }, 200);
  }
  if (!(await acceptInvitation(ctx, check, user))) return refuse('invalid_token', 'staleInviteOrgLink', 400);
  await ctx.events.user(realm, { type: 'INVITE_ORG', clientId: check.claims.azp ?? null, userId: user.id, details: { username: user.username, org_id: check.org.id }, request: info, user: () => userSnapshot(ctx.storage, user) });
  return showPage.info(ctx, reply, realm, check.org.name, t.msg('orgInviteJoined', check.org.name), next);
}
