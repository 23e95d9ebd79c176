import { badRequest } from './errors.js';
import type { ProtocolMapper } from './types.js';

/**
 * PLACEHOLDER (contract): the catalogue of protocol mapper types (ids, config properties with their types, help
 * texts for serverinfo) and the validation every entry point calls before a mapper is stored (admin API, realm
 * import). The mapper package replaces this body; callers keep this signature.
 */
export const PROTOCOL_MAPPER_TYPE_IDS: readonly string[] = [
  'oidc-audience-mapper', 'oidc-hardcoded-claim-mapper', 'oidc-usermodel-attribute-mapper', 'oidc-usermodel-property-mapper',
  'oidc-usermodel-realm-role-mapper', 'oidc-usermodel-client-role-mapper', 'oidc-group-membership-mapper', 'oidc-full-name-mapper',
  'oidc-audience-resolve-mapper', 'oidc-allowed-origins-mapper', 'oidc-sub-mapper', 'oidc-acr-mapper', 'oidc-usersessionmodel-note-mapper',
  'oidc-address-mapper', 'oidc-organization-membership-mapper',
];

/** Throws a 400 (ApiError) naming the problem: unknown type, a config value of the wrong type, a reserved claim name. */
export function validateProtocolMapper(mapper: Omit<ProtocolMapper, 'id'>, path = 'protocolMapper'): void {
  if (mapper.protocol === 'openid-connect' && !PROTOCOL_MAPPER_TYPE_IDS.includes(mapper.protocolMapper)) {
    throw badRequest(`${path}.protocolMapper: unknown mapper type "${mapper.protocolMapper}"`, 'protocolMapper');
  }
}
