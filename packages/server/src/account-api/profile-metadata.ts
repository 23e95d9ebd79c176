import type { User } from '../model/types.js';
import { profileMetadata } from '../model/user-profile.js';

export { MAX_ATTRIBUTE_LENGTH, PROFILE_ATTRIBUTES, type ProfileAttribute } from '../model/user-profile.js';

/**
 * The profile as the account context sees it. With the realm's UPDATE_EMAIL action enabled the address is read-only
 * there (Keycloak's write condition for the ACCOUNT context) and, for a user who has one, annotated
 * `kc.required.action.supported`, which makes the account console offer "Update email" beside it.
 */
export function accountProfileMetadata(user: User, updateEmail: boolean) {
  const metadata = profileMetadata();
  if (!updateEmail) return metadata;
  return {
    ...metadata,
    attributes: metadata.attributes.map((a) =>
      a.name === 'email' ? { ...a, readOnly: true, ...(user.email ? { annotations: { 'kc.required.action.supported': true } } : {}) } : a,
    ),
  };
}

/**
 * Keycloak's account UserRepresentation: fields without a value are left out, as Keycloak's JSON leaves nulls out;
 * no `attributes` (the profile has no custom attributes, which Keycloak 26.7.3 leaves out when there are none).
 */
export function profileRepresentation(user: User, withMetadata: boolean, updateEmail = false) {
  return {
    id: user.id,
    username: user.username,
    ...(user.firstName !== null ? { firstName: user.firstName } : {}),
    ...(user.lastName !== null ? { lastName: user.lastName } : {}),
    ...(user.email !== null ? { email: user.email } : {}),
    emailVerified: user.emailVerified,
    ...(withMetadata ? { userProfileMetadata: accountProfileMetadata(user, updateEmail) } : {}),
  };
}
