import { compileClaimName, convertValue, writeClaim } from './claims.js';
import type { Claims, MapperImplementation } from './types.js';

/**
 * Role names as a role mapper writes them: `prefix` before each; multivalued, a list (merged with a list already
 * there); otherwise the list as one string, `[a, b]`, as Keycloak's.
 */
export function writeRoles(claims: Claims, path: readonly string[], roles: readonly string[], config: Record<string, string>, prefix: string): void {
  if (roles.length === 0) return;
  const names = prefix ? roles.map((r) => prefix + r) : roles;
  const jsonType = config['jsonType.label'];
  if (config.multivalued === 'true') {
    const values = names.map((n) => convertValue(n, jsonType)).filter((v) => v !== undefined);
    if (values.length) writeClaim(claims, path, values, true);
  } else {
    const value = convertValue(`[${names.join(', ')}]`, jsonType);
    if (value !== undefined) writeClaim(claims, path, value);
  }
}

/** oidc-usermodel-realm-role-mapper: the user's realm roles in the token's scope into `claim.name`. */
export const realmRoleMapper: MapperImplementation = {
  id: 'oidc-usermodel-realm-role-mapper',
  compile(config) {
    const path = compileClaimName(config['claim.name']);
    const prefix = config['usermodel.realmRoleMapping.rolePrefix'] ?? '';
    return {
      needs: { roles: true },
      apply: (claims, data) => (path ? writeRoles(claims, path, data.roles.realmRoles, config, prefix) : undefined),
    };
  },
};
