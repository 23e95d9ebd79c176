import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { ADMIN_LINK_LIFETIME_S } from '../authentication/index.js';
import { newId } from '../credentials/index.js';
import { badRequest, conflict, notFound, serverFailure } from '../model/errors.js';
import { emailPattern } from '../model/user-profile.js';
import type { Organization, OrganizationInvitation, Realm, User } from '../model/types.js';
import { mailTranslator, orgInviteMail } from '../pages/emails.js';
import { invitationLink } from '../pages/organization-invitations.js';
import { acceptMultipart, readMultipart } from './multipart.js';
import { loadOrganization } from './organizations.js';
import { queryInt, queryString } from './query.js';
import { recordAdminEvent, type AdminRequest } from './routing.js';

type OrgParams = { realm: string; id: string };
type InvitationParams = OrgParams & { invitationId: string };

/** Keycloak's OrganizationInvitationRepresentation as its admin API answers it (the minimal one: no link). */
function invitationRep(invitation: OrganizationInvitation, now: number) {
  return {
    id: invitation.id,
    organizationId: invitation.organizationId,
    email: invitation.email,
    ...(invitation.firstName !== null ? { firstName: invitation.firstName } : {}),
    ...(invitation.lastName !== null ? { lastName: invitation.lastName } : {}),
    sentDate: invitation.createdAt,
    expiresAt: invitation.expiresAt,
    status: invitation.expiresAt < now ? 'EXPIRED' : 'PENDING',
  };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Keycloak 26.7's organization invitations: `members/invite-user` (an address, with or without a user yet) and
 * `members/invite-existing-user` (a user by id) send the invitation e-mail and answer 204; `invitations` lists them
 * (filters `status`, `email`, `firstName`, `lastName`, `search`, `first`, `max`), one is read, deleted or resent
 * (resending replaces it: a new id, a new link, the old link dead). Both forms take Keycloak's form fields
 * (urlencoded or multipart, as the official client sends a FormData). The mail is sent before the answer, as
 * Keycloak: a failure is 500 `Failed to send invite email` and no invitation is kept.
 */
export function organizationInvitationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const formFields = async (request: AdminRequest): Promise<Record<string, string>> => {
    if (request.isMultipart()) return (await readMultipart(request)).fields;
    // Keycloak reads form parameters only: a JSON body gives none.
    const body = request.body;
    if (!/^application\/x-www-form-urlencoded/i.test(request.headers['content-type'] ?? '') || typeof body !== 'object' || body === null) return {};
    return Object.fromEntries(Object.entries(body as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string').map(([k, v]) => [k, v.slice(0, 1024)]));
  };

  const enabledOrganization = async (request: AdminRequest<OrgParams>) => {
    const loaded = await loadOrganization(ctx, request);
    if (!loaded.org.enabled) throw badRequest('Organization is disabled');
    return loaded;
  };

  /** Creates the invitation, mails its link, records the admin event; on a failed mail the invitation goes again. */
  const send = async (request: AdminRequest<OrgParams>, realm: Realm, org: Organization, to: { email: string; firstName: string | null; lastName: string | null }, user: User | null) => {
    const now = nowSeconds();
    const invitation: OrganizationInvitation = { id: newId(), organizationId: org.id, ...to, createdAt: now, expiresAt: now + (realm.actionTokenGeneratedByAdminLifespan ?? ADMIN_LINK_LIFETIME_S), inviteLink: null };
    await ctx.storage.organizationInvitations.create(invitation);
    const link = await invitationLink(ctx, request, realm, org, invitation, user);
    await ctx.storage.organizationInvitations.setLink(invitation.id, link);
    try {
      const t = await mailTranslator(ctx, realm, user ?? { attributes: {} });
      await ctx.mailer.send(realm, orgInviteMail(t, realm, to.email, to, org.name, link, realm.actionTokenGeneratedByAdminLifespan ?? ADMIN_LINK_LIFETIME_S));
    } catch (error) {
      await ctx.storage.organizationInvitations.remove(org.id, invitation.id);
      ctx.mailFailures.inc({ realm: realm.name });
      ctx.logger.error({ err: error, realm: realm.name }, 'sending the organization invitation failed');
      throw serverFailure('Failed to send invite email');
    }
    await recordAdminEvent(ctx, request, realm, 'ACTION', 'ORGANIZATION_MEMBERSHIP', request.url.split('?')[0].replace(/^\/admin\/realms\/[^/]+\//, ''));
  };

  /** Keycloak's inviteUser: a pending invitation to the address is a conflict, an expired one is replaced. */
  const inviteAddress = async (request: AdminRequest<OrgParams>, realm: Realm, org: Organization, fields: { email?: string; firstName?: string | null; lastName?: string | null }) => {
    if (!fields.email?.trim()) throw badRequest('Email is required to invite a member');
    const email = fields.email.trim().toLowerCase();
    if (email.length > 254 || !emailPattern.test(email)) throw badRequest('Invalid email format');
    const existing = await ctx.storage.organizationInvitations.byEmail(org.id, email);
    if (existing && existing.expiresAt >= nowSeconds()) throw conflict('User already has a pending invitation');
    if (existing) await ctx.storage.organizationInvitations.remove(org.id, existing.id);
    const user = await ctx.storage.users.byEmail(realm.id, email);
    if (user && (await ctx.storage.organizations.isMember(org.id, user.id))) throw conflict('User already a member of the organization');
    // Names are kept only both together, as Keycloak's (the personalized e-mail greets by both).
    const named = fields.firstName && fields.lastName ? { firstName: fields.firstName.slice(0, 255), lastName: fields.lastName.slice(0, 255) } : { firstName: null, lastName: null };
    const to = user ? { email, firstName: user.firstName, lastName: user.lastName } : { email, ...named };
    await send(request, realm, org, to, user);
  };

  app.register(async (scoped) => {
    await acceptMultipart(scoped);

    scoped.post('/realms/:realm/organizations/:id/members/invite-user', { config: { formBody: true } }, async (request: AdminRequest<OrgParams>, reply) => {
      const { realm, org } = await enabledOrganization(request);
      const form = await formFields(request);
      await inviteAddress(request, realm, org, form);
      return reply.code(204).send();
    });

    scoped.post('/realms/:realm/organizations/:id/members/invite-existing-user', { config: { formBody: true } }, async (request: AdminRequest<OrgParams>, reply) => {
      const { realm, org } = await enabledOrganization(request);
      const id = (await formFields(request)).id?.trim();
      if (!id) throw badRequest('To invite a member you need to provide the user id');
      const user = id.length <= 64 && !id.includes('\u0000') ? await ctx.storage.users.byId(realm.id, id) : null;
      if (!user) throw badRequest('User does not exist');
      if (!user.email) throw badRequest('User does not have an email address');
      // A member is invited all the same, as Keycloak does (the link then says so); a pending invitation is a conflict
      // (Keycloak's is its database's duplicate: 409 `Duplicate resource error`).
      const existing = await ctx.storage.organizationInvitations.byEmail(org.id, user.email);
      if (existing && existing.expiresAt >= nowSeconds()) throw conflict('User already has a pending invitation');
      if (existing) await ctx.storage.organizationInvitations.remove(org.id, existing.id);
      await send(request, realm, org, { email: user.email.toLowerCase(), firstName: user.firstName, lastName: user.lastName }, user);
      return reply.code(204).send();
    });
  });

  app.get('/realms/:realm/organizations/:id/invitations', async (request: AdminRequest<OrgParams>) => {
    const { org } = await loadOrganization(ctx, request);
    const q = (name: string) => queryString(request.query, name, 255);
    const status = q('status');
    const now = nowSeconds();
    const list = await ctx.storage.organizationInvitations.list(org.id, {
      // An unknown status filters nothing out, as Keycloak's.
      status: status === 'PENDING' || status === 'EXPIRED' ? status : undefined,
      email: q('email'),
      firstName: q('firstName'),
      lastName: q('lastName'),
      search: q('search'),
      now,
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', 100),
    });
    return list.map((i) => invitationRep(i, now));
  });

  const invitationOf = async (request: AdminRequest<InvitationParams>) => {
    const loaded = await loadOrganization(ctx, request);
    const id = request.params.invitationId;
    const invitation = id.length <= 64 && !id.includes('\u0000') ? await ctx.storage.organizationInvitations.byId(loaded.org.id, id) : null;
    if (!invitation) throw notFound('Invitation not found');
    return { ...loaded, invitation };
  };

  app.get('/realms/:realm/organizations/:id/invitations/:invitationId', async (request: AdminRequest<InvitationParams>) => {
    return invitationRep((await invitationOf(request)).invitation, nowSeconds());
  });

  app.delete('/realms/:realm/organizations/:id/invitations/:invitationId', async (request: AdminRequest<InvitationParams>, reply) => {
    const { realm, org, invitation } = await invitationOf(request);
    if (!(await ctx.storage.organizationInvitations.remove(org.id, invitation.id))) throw notFound('Invitation not found');
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION_MEMBERSHIP', `organizations/${org.id}/invitations/${invitation.id}`);
    return reply.code(204).send();
  });

  // Keycloak's resend: the invitation goes and a new one is sent to the same address and names.
  app.post('/realms/:realm/organizations/:id/invitations/:invitationId/resend', async (request: AdminRequest<InvitationParams>, reply) => {
    const { realm, org, invitation } = await invitationOf(request);
    if (!org.enabled) throw badRequest('Organization is disabled');
    await ctx.storage.organizationInvitations.remove(org.id, invitation.id);
    await inviteAddress(request, realm, org, invitation);
    return reply.code(204).send();
  });
}
