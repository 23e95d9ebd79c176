import { valueWriter } from './claims.js';
import type { MapperImplementation } from './types.js';

/** oidc-hardcoded-claim-mapper: `claim.value`, converted by `jsonType.label`, into `claim.name`. */
export const hardcodedClaimMapper: MapperImplementation = {
  id: 'oidc-hardcoded-claim-mapper',
  compile(config) {
    const write = valueWriter({ ...config, multivalued: 'false' });
    const value = config['claim.value'];
    return { apply: (claims) => (write && value !== undefined ? write(claims, [value]) : undefined) };
  },
};
