import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { organizationRep } from '../representations/organization.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/**
 * GET /account/organizations (manage-account or view-profile): the organizations the caller is a member of, in
 * Keycloak's OrganizationRepresentation, by name; none while the realm has organizations switched off.
 */
export function organizationsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/organizations', async (request: AccountRequest) => {
    const { realm, user } = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    if (!realm.organizationsEnabled) return [];
    return (await ctx.storage.organizations.ofUser(user.id))
      .filter((org) => org.realmId === realm.id)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map(organizationRep);
  });
}
