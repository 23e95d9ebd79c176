import { addAudience } from './claims.js';
import type { MapperImplementation } from './types.js';

/**
 * oidc-audience-resolve-mapper: every client the user holds a role of within the token's scope, except the client
 * asking, goes into `aud` (from the resolved roles, whatever claim the role mappers write them to).
 */
export const audienceResolveMapper: MapperImplementation = {
  id: 'oidc-audience-resolve-mapper',
  compile() {
    return {
      needs: { roles: true },
      apply(claims, data) {
        // Sorted, so a token's aud does not change with the order roles come back from the database.
        for (const [clientId, roles] of Object.entries(data.roles.clientRoles).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
          if (clientId !== data.client.clientId && roles.length > 0) addAudience(claims, clientId);
        }
      },
    };
  },
};
