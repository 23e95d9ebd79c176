import type { User } from '../../../model/types.js';
import { valueWriter } from './claims.js';
import type { MapperImplementation } from './types.js';

/** The user's built-in properties a property mapper reads, as strings (Keycloak's getters). */
const PROPERTIES: Record<string, (user: User) => string | null> = {
  id: (u) => u.id,
  username: (u) => u.username,
  email: (u) => u.email,
  emailVerified: (u) => String(u.emailVerified),
  firstName: (u) => u.firstName,
  lastName: (u) => u.lastName,
  enabled: (u) => String(u.enabled),
  createdTimestamp: (u) => String(u.createdTimestamp),
};

/** oidc-usermodel-property-mapper: a property of the user (`user.attribute` names it) into `claim.name`. */
export const userPropertyMapper: MapperImplementation = {
  id: 'oidc-usermodel-property-mapper',
  compile(config) {
    const write = valueWriter({ ...config, multivalued: 'false' });
    const property = PROPERTIES[config['user.attribute'] ?? ''] ?? PROPERTIES[(config['user.attribute'] ?? '').replace(/^./, (c) => c.toLowerCase())];
    return {
      apply(claims, data) {
        const value = property?.(data.user);
        if (write && value !== null && value !== undefined) write(claims, [value]);
      },
    };
  },
};
