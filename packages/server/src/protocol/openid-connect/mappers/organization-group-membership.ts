import { compileClaimName, writeClaim } from './claims.js';
import type { Claims, MapperImplementation } from './types.js';

const isObject = (v: unknown): v is Claims => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * oidc-organization-group-membership-mapper (Keycloak 26.7): under the organization claim (the claim name of the
 * request's `oidc-organization-membership-mapper`, which scopePlan hands over as `claim.name`; without one it
 * writes nothing), each organization the user is a member of, by alias, gets `groups`: the paths of the
 * organization's groups the user is directly in; with `addGroupRoleMappings` also `realm_access.roles` and
 * `resource_access.{clientId}.roles`: the roles mapped to those groups, composites expanded. A list of aliases
 * already written there becomes an object keyed by alias, as Keycloak's.
 */
export const organizationGroupMembershipMapper: MapperImplementation = {
  id: 'oidc-organization-group-membership-mapper',
  compile(config) {
    const path = compileClaimName(config['claim.name']);
    const withRoles = config.addGroupRoleMappings === 'true';
    return {
      needs: { organizations: true, organizationGroups: withRoles ? 'roles' : 'paths' },
      apply(claims, data) {
        const orgs = data.organizations.filter((o) => o.enabled);
        if (!path || !data.realm.organizationsEnabled || orgs.length === 0) return;
        let existing: unknown = claims;
        for (const part of path) existing = isObject(existing) ? existing[part] : undefined;
        const byAlias: Claims = isObject(existing)
          ? { ...existing }
          : Object.fromEntries((Array.isArray(existing) ? existing : typeof existing === 'string' ? [existing] : []).filter((a): a is string => typeof a === 'string').map((a) => [a, {}]));
        for (const org of orgs) {
          const groups = data.organizationGroups?.[org.id];
          const entry: Claims = isObject(byAlias[org.alias]) ? { ...(byAlias[org.alias] as Claims) } : {};
          entry.groups = groups?.paths ?? [];
          if (withRoles && groups) {
            if (groups.realmRoles.length) entry.realm_access = { roles: groups.realmRoles };
            const clients = Object.entries(groups.clientRoles);
            if (clients.length) entry.resource_access = Object.fromEntries(clients.map(([clientId, roles]) => [clientId, { roles }]));
          }
          byAlias[org.alias] = entry;
        }
        writeClaim(claims, path, byAlias);
      },
    };
  },
};
