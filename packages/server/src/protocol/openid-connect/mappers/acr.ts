import type { MapperImplementation } from './types.js';

/** oidc-acr-mapper: `acr`, "1": Realmgate's logins are of one level (password, with or without a second factor). */
export const acrMapper: MapperImplementation = {
  id: 'oidc-acr-mapper',
  compile: () => ({ apply: (claims) => void (claims.acr = '1') }),
};
