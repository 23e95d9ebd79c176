import type { User } from '../model/types.js';

/** The longest value a profile attribute takes: Keycloak's default length validator (e-mail: what mail allows). */
export const MAX_ATTRIBUTE_LENGTH = { username: 255, email: 254, firstName: 255, lastName: 255 } as const;

export type ProfileAttribute = keyof typeof MAX_ATTRIBUTE_LENGTH;
export const PROFILE_ATTRIBUTES = Object.keys(MAX_ATTRIBUTE_LENGTH) as ProfileAttribute[];

/**
 * The realm's user profile as Keycloak's account console reads it (`userProfileMetadata`): the four attributes
 * this server keeps, with the rules the account API enforces. The username cannot be changed here
 * (`editUsernameAllowed` is off); names may be empty; an e-mail address is required.
 */
export function profileMetadata() {
  const attribute = (name: ProfileAttribute, required: boolean, readOnly: boolean, validators: Record<string, Record<string, unknown>>) => ({
    name,
    displayName: `\${${name}}`,
    required,
    readOnly,
    validators: { ...validators, length: { max: MAX_ATTRIBUTE_LENGTH[name], 'ignore.empty.value': true } },
    multivalued: false,
  });
  return {
    attributes: [
      attribute('username', true, true, { 'username-prohibited-characters': { 'ignore.empty.value': true } }),
      attribute('email', true, false, { email: { 'ignore.empty.value': true } }),
      attribute('firstName', false, false, { 'person-name-prohibited-characters': { 'ignore.empty.value': true } }),
      attribute('lastName', false, false, { 'person-name-prohibited-characters': { 'ignore.empty.value': true } }),
    ],
    groups: [],
  };
}

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
