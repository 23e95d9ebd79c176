import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { badRequest, conflict, notFound, notFoundResponse } from '../model/errors.js';
import type { IdentityProvider } from '../model/types.js';
import { saveOrganization, userSnapshot } from '../services/index.js';
import { queryBool, queryInt, queryString } from './query.js';
import { identityProviderRep } from '../representations/federation.js';
import { organizationRep, parseOrganization } from '../representations/organization.js';
import { userRep } from '../representations/user.js';
import { locationOf, pathId, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

/** The realm of the path, which must have organizations on (Keycloak's 400 otherwise). */
export async function organizationsRealm(ctx: ServerContext, request: AdminRequest) {
  const realm = await targetRealm(ctx, request);
  if (!realm.organizationsEnabled) throw badRequest('Organizations not enabled for this realm.');
  return realm;
}

/** The organization of the path, in its realm. */
export async function loadOrganization(ctx: ServerContext, request: AdminRequest<{ realm: string; id: string }>) {
  const realm = await organizationsRealm(ctx, request);
  const org = await ctx.storage.organizations.byId(realm.id, pathId(request.params.id, 'Organization'));
  if (!org) throw notFoundResponse('Organization not found');
  return { realm, org };
}

export function organizationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const enabledRealm = (request: AdminRequest) => organizationsRealm(ctx, request);
  const load = (request: AdminRequest<{ realm: string; id: string }>) => loadOrganization(ctx, request);
  const memberUserId = (body: unknown): string => {
    // The official client sends the user id as the raw body; JSON clients send a JSON string.
    if (typeof body !== 'string' || body.length > 64) throw badRequest('Request body must be the user id');
    return body.trim().replace(/^"|"$/g, '');
  };

  app.get('/realms/:realm/organizations', async (request: AdminRequest) => {
    const realm = await enabledRealm(request);
    const orgs = await ctx.storage.organizations.list(realm.id, {
      search: queryString(request.query, 'search') ?? queryString(request.query, 'q'),
      exact: queryBool(request.query, 'exact'),
      first: queryInt(request.query, 'first', 0),
      max: queryInt(request.query, 'max', 100),
    });
    return orgs.map(organizationRep);
  });

  app.get('/realms/:realm/organizations/count', async (request: AdminRequest) => {
    const realm = await enabledRealm(request);
    return ctx.storage.organizations.count(realm.id);
  });

  app.post('/realms/:realm/organizations', async (request: AdminRequest, reply) => {
    const realm = await enabledRealm(request);
    const org = await ctx.storage.transaction((trx) => saveOrganization(ctx.storage, realm, parseOrganization(request.body), null, trx));
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'ORGANIZATION', `organizations/${org.id}`, organizationRep(org));
    return reply.code(201).header('location', locationOf(ctx, request, org.id)).send();
  });

  app.get('/realms/:realm/organizations/:id', async (request: AdminRequest<{ realm: string; id: string }>) => {
    return organizationRep((await load(request)).org);
  });

  app.put('/realms/:realm/organizations/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, org } = await load(request);
    const updated = await ctx.storage.transaction((trx) => saveOrganization(ctx.storage, realm, parseOrganization(request.body), org, trx));
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'ORGANIZATION', `organizations/${org.id}`, organizationRep(updated));
    return reply.code(204).send();
  });

  app.delete('/realms/:realm/organizations/:id', async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, org } = await load(request);
    await ctx.storage.transaction(async (trx) => {
      // Its identity providers stay, no longer the organization's (as Keycloak unlinks them).
      for (const provider of await organizationProviders(realm.id, org.id, trx)) await ctx.storage.federation.updateProvider(unlinked(provider), trx);
      await ctx.storage.organizations.delete(org.id, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION', `organizations/${org.id}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/organizations/:id/members', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, org } = await load(request);
    const ids = await ctx.storage.organizations.memberIds(org.id, queryInt(request.query, 'first', 0), queryInt(request.query, 'max', 100));
    const users = await Promise.all(ids.map((id) => ctx.storage.users.byId(realm.id, id)));
    return users.filter((u) => u !== null).map((u) => ({ ...userRep(u!), membershipType: 'UNMANAGED' }));
  });

  app.get('/realms/:realm/organizations/:id/members/count', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { org } = await load(request);
    return (await ctx.storage.organizations.memberIds(org.id, 0, 1_000_000)).length;
  });

  app.post('/realms/:realm/organizations/:id/members', { config: { rawJsonString: true } }, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, org } = await load(request);
    const userId = memberUserId(request.body);
    const user = await ctx.storage.users.byId(realm.id, pathId(userId, 'User'));
    if (!user) throw notFound('User does not exist');
    if (await ctx.storage.organizations.isMember(org.id, user.id)) throw conflict('User is already a member of the organization.');
    await ctx.storage.organizations.addMember(org.id, user.id);
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'ORGANIZATION_MEMBERSHIP', `organizations/${org.id}/members/${user.id}`, undefined, await userSnapshot(ctx.storage, user));
    return reply.code(201).header('location', locationOf(ctx, request, user.id)).send();
  });

  app.get('/realms/:realm/organizations/:id/members/:userId', async (request: AdminRequest<{ realm: string; id: string; userId: string }>) => {
    const { realm, org } = await load(request);
    const userId = pathId(request.params.userId, 'User');
    const user = (await ctx.storage.organizations.isMember(org.id, userId)) ? await ctx.storage.users.byId(realm.id, userId) : null;
    if (!user) throw notFound('User is not a member of the organization');
    return { ...userRep(user), membershipType: 'UNMANAGED' };
  });

  app.delete('/realms/:realm/organizations/:id/members/:userId', async (request: AdminRequest<{ realm: string; id: string; userId: string }>, reply) => {
    const { realm, org } = await load(request);
    const userId = pathId(request.params.userId, 'User');
    if (!(await ctx.storage.organizations.isMember(org.id, userId))) throw notFound('User is not a member of the organization');
    // Leaving the organization is leaving its groups too, as Keycloak's removeMember.
    await ctx.storage.transaction(async (trx) => {
      await ctx.storage.groups.leaveOrganization(userId, org.id, trx);
      await ctx.storage.organizations.removeMember(org.id, userId, trx);
    });
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION_MEMBERSHIP', `organizations/${org.id}/members/${userId}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/organizations/members/:userId/organizations', async (request: AdminRequest<{ realm: string; userId: string }>) => {
    const realm = await enabledRealm(request);
    const user = await ctx.storage.users.byId(realm.id, pathId(request.params.userId, 'User'));
    if (!user) throw notFound('User not found');
    return (await ctx.storage.organizations.ofUser(user.id)).map(organizationRep);
  });

  // Keycloak's organization identity providers: an identity provider of the realm associated with one organization
  // (its `organizationId`); the sign-in pages and the account's linked accounts leave such a provider to the
  // organization's members.
  app.post('/realms/:realm/organizations/:id/identity-providers', { config: { rawJsonString: true } }, async (request: AdminRequest<{ realm: string; id: string }>, reply) => {
    const { realm, org } = await load(request);
    if (typeof request.body !== 'string' || request.body.length > 300) throw badRequest('Request body must be the id or alias of an identity provider');
    const idOrAlias = request.body.trim().replace(/^"|"$/g, '');
    const provider = (await ctx.storage.federation.providers(realm.id)).find((p) => p.alias === idOrAlias || p.internalId === idOrAlias);
    if (!provider) throw badRequest('Identity provider not found with the given alias');
    if (provider.rest.organizationId === org.id) throw conflict('Identity provider already associated to the organization');
    if (provider.rest.organizationId) throw badRequest('Identity provider associated with a different organization');
    await ctx.storage.federation.updateProvider({ ...provider, rest: { ...provider.rest, organizationId: org.id } });
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'ORGANIZATION', `organizations/${org.id}/identity-providers/${provider.alias}`);
    return reply.code(204).send();
  });

  app.get('/realms/:realm/organizations/:id/identity-providers', async (request: AdminRequest<{ realm: string; id: string }>) => {
    const { realm, org } = await load(request);
    return (await organizationProviders(realm.id, org.id)).map((p) => identityProviderRep(p));
  });

  const organizationProvider = async (request: AdminRequest<{ realm: string; id: string; alias: string }>, missing: string) => {
    const { realm, org } = await load(request);
    const alias = request.params.alias;
    const provider = alias.length <= 255 && !alias.includes('\u0000') ? await ctx.storage.federation.providerByAlias(realm.id, alias) : null;
    if (!provider || provider.rest.organizationId !== org.id) throw notFound(missing);
    return { realm, org, provider };
  };

  app.get('/realms/:realm/organizations/:id/identity-providers/:alias', async (request: AdminRequest<{ realm: string; id: string; alias: string }>) => {
    return identityProviderRep((await organizationProvider(request, 'Identity provider not associated with the organization')).provider);
  });

  app.delete('/realms/:realm/organizations/:id/identity-providers/:alias', async (request: AdminRequest<{ realm: string; id: string; alias: string }>, reply) => {
    const { realm, org, provider } = await organizationProvider(request, 'Identity provider not found with the given alias');
    await ctx.storage.federation.updateProvider(unlinked(provider));
    await recordAdminEvent(ctx, request, realm, 'DELETE', 'ORGANIZATION', `organizations/${org.id}/identity-providers/${provider.alias}`);
    return reply.code(204).send();
  });

  function organizationProviders(realmId: string, orgId: string, db?: Parameters<typeof ctx.storage.federation.providers>[2]) {
    return ctx.storage.federation.providers(realmId, undefined, db).then((all) => all.filter((p) => p.rest.organizationId === orgId));
  }
}

/** The provider without its organization, and without the organization's settings in its config (as Keycloak removes them). */
function unlinked(provider: IdentityProvider): IdentityProvider {
  const { organizationId: _, ...rest } = provider.rest;
  const { [ORG_DOMAIN]: _domain, [ORG_REDIRECT_EMAIL_MATCHES]: _redirect, ...config } = provider.config;
  return { ...provider, rest, config };
}

/** Keycloak's config keys of an organization's identity provider: its domain, and redirecting members whose e-mail matches it. */
const ORG_DOMAIN = 'kc.org.domain';
const ORG_REDIRECT_EMAIL_MATCHES = 'kc.org.broker.redirect.mode.email-matches';
