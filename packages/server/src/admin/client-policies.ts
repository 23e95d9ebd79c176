import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { globalClientPolicies, globalClientProfiles } from '../model/client-policies.js';
import { parseClientPolicies, parseClientProfiles } from '../representations/client-policies.js';
import { queryBool } from './query.js';
import { recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';

const flag = (query: unknown, name: string) => queryBool((query ?? {}) as Record<string, unknown>, name) === true;

/**
 * Keycloak's ClientPoliciesResource and ClientProfilesResource (the console's Realm settings → Client policies):
 * the realm's profiles and policies, read with `view-realm` and replaced with `manage-realm`. The global (built-in)
 * profiles are listed with `include-global-profiles=true`; they cannot be changed. A profile or policy naming an
 * executor or condition this server does not run is refused naming it (representations/client-policies.ts).
 */
export function clientPolicyRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/client-policies/profiles', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const profiles = realm.clientProfiles ?? [];
    return flag(request.query, 'include-global-profiles') ? { profiles, globalProfiles: globalClientProfiles() } : { profiles };
  });

  app.put('/realms/:realm/client-policies/profiles', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const profiles = parseClientProfiles(request.body);
    // As Keycloak: a policy may go on naming a profile removed here (it then runs nothing of it).
    await ctx.storage.realms.update({ ...realm, clientProfiles: profiles });
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'REALM', 'client-policies/profiles', { profiles });
    return reply.code(204).send();
  });

  app.get('/realms/:realm/client-policies/policies', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const policies = realm.clientPolicies ?? [];
    return flag(request.query, 'include-global-policies') ? { policies, globalPolicies: globalClientPolicies() } : { policies };
  });

  app.put('/realms/:realm/client-policies/policies', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    const policies = parseClientPolicies(request.body, realm.clientProfiles ?? []);
    await ctx.storage.realms.update({ ...realm, clientPolicies: policies });
    await recordAdminEvent(ctx, request, realm, 'UPDATE', 'REALM', 'client-policies/policies', { policies });
    return reply.code(204).send();
  });
}
