import type { MapperImplementation } from './types.js';

/** oidc-sub-mapper: `sub`, the user's id, in the access token (the ID token and userinfo always carry it). */
export const subMapper: MapperImplementation = {
  id: 'oidc-sub-mapper',
  compile: () => ({ apply: (claims, data) => void (claims.sub = data.user.id) }),
};
