import { claimPath } from '../../../model/protocol-mapper-types.js';
import { compileClaimName } from './claims.js';
import { writeRoles } from './realm-role.js';
import type { MapperImplementation } from './types.js';

const CLIENT_ID = '${client_id}';

/**
 * oidc-usermodel-client-role-mapper: the user's client roles in the token's scope into `claim.name`, one client
 * (`usermodel.clientRoleMapping.clientId`) or all; `${client_id}` in the name becomes each client's id, its dots
 * kept (not nesting), as Keycloak's.
 */
export const clientRoleMapper: MapperImplementation = {
  id: 'oidc-usermodel-client-role-mapper',
  compile(config) {
    const name = config['claim.name'] ?? '';
    const only = config['usermodel.clientRoleMapping.clientId'] || null;
    const prefix = config['usermodel.clientRoleMapping.rolePrefix'] ?? '';
    const perClient = name.includes(CLIENT_ID);
    // The path is split once; the ${client_id} part is replaced per client, so no name is parsed per token.
    const fixed = perClient ? null : compileClaimName(name);
    const template = perClient ? claimPath(name) : null;
    const valid = perClient ? compileClaimName(name.replaceAll(CLIENT_ID, 'x')) !== null : fixed !== null;
    return {
      needs: { roles: true },
      apply(claims, data) {
        if (!valid) return;
        for (const [clientId, roles] of Object.entries(data.roles.clientRoles)) {
          if (only !== null && clientId !== only) continue;
          const path = template ? template.map((part) => part.replaceAll(CLIENT_ID, clientId)) : fixed!;
          writeRoles(claims, path, roles, config, prefix);
        }
      },
    };
  },
};
