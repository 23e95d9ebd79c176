import { compileClaimName, writeClaim } from './claims.js';
import type { MapperImplementation } from './types.js';

/**
 * oidc-organization-membership-mapper: the organizations the user is a member of, when the realm has organizations
 * enabled: their aliases as a list, or (`addOrganizationId`, `addOrganizationAttributes`) an object keyed by alias.
 */
export const organizationMembershipMapper: MapperImplementation = {
  id: 'oidc-organization-membership-mapper',
  compile(config) {
    const path = compileClaimName(config['claim.name'] || 'organization');
    const withId = config.addOrganizationId === 'true';
    const withAttributes = config.addOrganizationAttributes === 'true';
    const multivalued = config.multivalued !== 'false';
    return {
      needs: { organizations: true },
      apply(claims, data) {
        const orgs = data.organizations.filter((o) => o.enabled);
        if (!path || !data.realm.organizationsEnabled || orgs.length === 0) return;
        if (withId || withAttributes) {
          const value: Record<string, Record<string, unknown>> = {};
          for (const org of orgs) value[org.alias] = { ...(withId ? { id: org.id } : {}), ...(withAttributes ? org.attributes : {}) };
          writeClaim(claims, path, value);
        } else if (multivalued) writeClaim(claims, path, orgs.map((o) => o.alias), true);
        else writeClaim(claims, path, orgs[0].alias);
      },
    };
  },
};
