import type { User } from '../model/types.js';
import { profileMetadata } from '../model/user-profile.js';

export { MAX_ATTRIBUTE_LENGTH, PROFILE_ATTRIBUTES, type ProfileAttribute } from '../model/user-profile.js';

/** Keycloak's account UserRepresentation: fields without a value are left out, as Keycloak's JSON leaves nulls out. */
export function profileRepresentation(user: User, withMetadata: boolean) {
  return {
    id: user.id,
    username: user.username,
    ...(user.firstName !== null ? { firstName: user.firstName } : {}),
    ...(user.lastName !== null ? { lastName: user.lastName } : {}),
    ...(user.email !== null ? { email: user.email } : {}),
    emailVerified: user.emailVerified,
    ...(withMetadata ? { userProfileMetadata: profileMetadata() } : {}),
    attributes: {},
  };
}
