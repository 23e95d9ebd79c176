import type { User } from '../../../model/types.js';
import { valueWriter } from './claims.js';
import type { MapperImplementation } from './types.js';

/** A user's attribute values; username, email, firstName and lastName are attributes too (Keycloak's user profile). */
export function userAttributeValues(user: User, name: string): string[] | undefined {
  switch (name) {
    case 'username':
      return [user.username];
    case 'email':
      return user.email ? [user.email] : undefined;
    case 'firstName':
      return user.firstName ? [user.firstName] : undefined;
    case 'lastName':
      return user.lastName ? [user.lastName] : undefined;
    default:
      return Object.hasOwn(user.attributes, name) ? user.attributes[name] : undefined;
  }
}

/** oidc-usermodel-attribute-mapper: the attribute `user.attribute` into `claim.name`; absent, no claim. */
export const userAttributeMapper: MapperImplementation = {
  id: 'oidc-usermodel-attribute-mapper',
  compile(config) {
    const write = valueWriter(config);
    const attribute = config['user.attribute'];
    return { apply: (claims, data) => (write && attribute ? write(claims, userAttributeValues(data.user, attribute)) : undefined) };
  },
};
