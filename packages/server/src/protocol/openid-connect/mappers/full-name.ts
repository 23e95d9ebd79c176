import type { MapperImplementation } from './types.js';

/** oidc-full-name-mapper: `name`, the first and last name joined by a space; neither, no claim. */
export const fullNameMapper: MapperImplementation = {
  id: 'oidc-full-name-mapper',
  compile() {
    return {
      apply(claims, data) {
        const name = [data.user.firstName, data.user.lastName].filter(Boolean).join(' ');
        if (name) claims.name = name;
      },
    };
  },
};
