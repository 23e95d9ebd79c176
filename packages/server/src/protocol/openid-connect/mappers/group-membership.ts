import { compileClaimName, writeClaim } from './claims.js';
import type { MapperImplementation } from './types.js';

/** oidc-group-membership-mapper: the user's groups (full paths `/a/b` unless `full.path` is "false") as a list. */
export const groupMembershipMapper: MapperImplementation = {
  id: 'oidc-group-membership-mapper',
  compile(config) {
    const path = compileClaimName(config['claim.name']);
    const fullPath = config['full.path'] !== 'false';
    return {
      needs: { groups: true },
      apply(claims, data) {
        if (!path || data.groups.length === 0) return;
        writeClaim(claims, path, data.groups.map((g) => (fullPath ? `/${g.join('/')}` : g[g.length - 1])), true);
      },
    };
  },
};
