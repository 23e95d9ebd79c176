/**
 * Keycloak's default user-profile rules, shared by the admin API, registration and the account pages.
 * Usernames and person names refuse the characters Keycloak's prohibited-characters validators refuse.
 */
export const usernamePattern = /^[^\s<>&"'$%!#?§;*~/\\|^=[\]{}()\u0000-\u001f]+$/u;
export const personNamePattern = /^[^<>&"$%!#?§;*~/\\|^=[\]{}()\u0000-\u001f]*$/u;
/**
 * Keycloak's e-mail rule (org.keycloak.utils.EmailValidationUtil, the user profile's `email` validator), for the
 * unquoted form:
 * - local part: atoms of `a-z 0-9 ! # $ % & ' * + / = ? ^ _ \` { | } ~ -` and non-ASCII, joined by single dots
 *   (no leading, trailing or double dot), at most 64 characters (Keycloak's default `max-email-local-part-length`);
 * - domain: labels of the same characters without `_`, a `-` only inside a label, at most 63 characters each,
 *   joined by single dots, at most 255 characters; one label is enough (`admin@localhost`); no trailing dot.
 * Refused as Keycloak refuses them: spaces, a second `@`, `<>()[]\,;:"`, an empty label, over-long parts.
 * Refused here though Keycloak takes them: any whitespace or control character (C0, DEL, C1, Unicode spaces),
 * quoted local parts (`"a b"@x`) and address literals (`a@[127.0.0.1]`), which would need quoting in mail headers.
 * Lengths count UTF-16 code units, as Java's; a non-ASCII label's 63 is counted before Punycode (Keycloak counts
 * after). No flags: the admin API builds another pattern from `source`.
 */
const LOCAL_CHAR = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\u0080-\\uffff-]";
const DOMAIN_CHAR = "[a-zA-Z0-9!#$%&'*+/=?^`{|}~\\u0080-\\uffff]";
const DOMAIN_LABEL = `(?=[^.]{1,63}(?:\\.|$))${DOMAIN_CHAR}(?:-*${DOMAIN_CHAR})*`;
export const emailPattern = new RegExp(
  `^(?![\\s\\S]*[\\s\\u0000-\\u001f\\u007f-\\u009f])(?=[^@]{1,64}@)${LOCAL_CHAR}+(?:\\.${LOCAL_CHAR}+)*@(?=[^@]{1,255}$)${DOMAIN_LABEL}(?:\\.${DOMAIN_LABEL})*$`,
);

/** The longest value a profile attribute takes: Keycloak's default length validator (e-mail: what mail allows). */
export const MAX_ATTRIBUTE_LENGTH = { username: 255, email: 254, firstName: 255, lastName: 255 } as const;

export type ProfileAttribute = keyof typeof MAX_ATTRIBUTE_LENGTH;
export const PROFILE_ATTRIBUTES = Object.keys(MAX_ATTRIBUTE_LENGTH) as ProfileAttribute[];

/**
 * The realm's user profile as Keycloak's account console reads it (`userProfileMetadata`): the four attributes
 * this server keeps, with the rules the account API enforces. The username cannot be changed here
 * (`editUsernameAllowed` is off); names may be empty; an e-mail address is required.
 */
export function profileMetadata(options: { newUser?: boolean } = {}) {
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
      // A new user's username is given by whoever creates it (the admin console's Create user form is built from this).
      attribute('username', true, !options.newUser, { 'username-prohibited-characters': { 'ignore.empty.value': true } }),
      attribute('email', true, false, { email: { 'ignore.empty.value': true } }),
      attribute('firstName', false, false, { 'person-name-prohibited-characters': { 'ignore.empty.value': true } }),
      attribute('lastName', false, false, { 'person-name-prohibited-characters': { 'ignore.empty.value': true } }),
    ],
    groups: [],
  };
}

/**
 * The same profile as Keycloak's admin API gives it (`GET /admin/realms/{realm}/users/profile`, UPConfig): the
 * four attributes with their validations and who may view and edit them. Fixed in Realmgate: not configurable.
 */
export function userProfileConfig() {
  const everyone = { view: ['admin', 'user'], edit: ['admin', 'user'] };
  const attribute = (name: ProfileAttribute, validations: Record<string, Record<string, unknown>>, required: boolean, permissions = everyone) => ({
    name,
    displayName: `\${${name}}`,
    validations: { length: { max: MAX_ATTRIBUTE_LENGTH[name] }, ...validations },
    ...(required ? { required: { roles: ['admin', 'user'] } } : {}),
    permissions,
    multivalued: false,
  });
  return {
    attributes: [
      // A username is not changed once given (editUsernameAllowed is off).
      attribute('username', { 'username-prohibited-characters': {} }, false, { view: ['admin', 'user'], edit: [] }),
      attribute('email', { email: {} }, true),
      attribute('firstName', { 'person-name-prohibited-characters': {} }, false),
      attribute('lastName', { 'person-name-prohibited-characters': {} }, false),
    ],
    groups: [],
    // Other attributes are kept as given by the admin API (and shown to users read-only).
    unmanagedAttributePolicy: 'ADMIN_EDIT',
  };
}
