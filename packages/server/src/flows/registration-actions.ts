import type { FieldError, FormAction, FormValidation } from '@realmgate/spi';
import type { EventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { emailPattern, usernamePattern } from '../model/user-profile.js';

/** The user lookups the registration checks need (the realm's user repository). */
export interface RegisteredUsers {
  byUsername(realmId: string, username: string): Promise<User | null>;
  byEmail(realmId: string, email: string): Promise<User | null>;
}

/** Realm settings that shape registration; `registrationEmailAsUsername` where the realm model has it. */
export type RegistrationRealm = Pick<Realm, 'id' | 'duplicateEmailsAllowed'> & { registrationEmailAsUsername?: boolean };

// The same rules as the admin API's user representation (Keycloak's default user profile).
const controlCharacters = /[\u0000-\u001f\u007f]/;
const MAX_LENGTH = 255;

const failed = (error: EventError, fieldErrors: FieldError[]): FormValidation => ({ ok: false, error, fieldErrors });

/** A trimmed text field's problem, or null: required, at most 255 characters, no control characters. */
function textProblem(value: string, missing: string): string | null {
  if (value === '') return missing;
  if (value.length > MAX_LENGTH) return `Must be at most ${MAX_LENGTH} characters.`;
  if (controlCharacters.test(value)) return 'Contains characters that are not allowed.';
  return null;
}

/**
 * Keycloak's `registration-user-creation` validation: first and last name, e-mail (format, and unique unless
 * the realm allows duplicates) and username (unique; not asked when the e-mail is the username). The event
 * error is Keycloak's: `email_in_use` before `username_in_use` before `invalid_registration`.
 */
export function userCreationAction(users: RegisteredUsers, realm: RegistrationRealm): FormAction {
  return {
    async validate({ form }) {
      const value = (field: string) => (form[field] ?? '').trim();
      const errors: FieldError[] = [];
      const check = (field: string, missing: string) => {
        const problem = textProblem(value(field), missing);
        if (problem) errors.push({ field, message: problem });
        return problem === null;
      };

      check('firstName', 'Please specify first name.');
      check('lastName', 'Please specify last name.');
      const email = value('email').toLowerCase();
      let emailTaken = false;
      if (check('email', 'Please specify email.')) {
        if (!emailPattern.test(email)) {
          errors.push({ field: 'email', message: 'Invalid email address.' });
        } else if (!realm.duplicateEmailsAllowed && (await users.byEmail(realm.id, email))) {
          errors.push({ field: 'email', message: 'Email already exists.' });
          emailTaken = true;
        }
      }
      const emailAsUsername = realm.registrationEmailAsUsername === true;
      let usernameTaken = false;
      if (!emailAsUsername && check('username', 'Please specify username.')) {
        const username = value('username').toLowerCase();
        if (!usernamePattern.test(username)) {
          errors.push({ field: 'username', message: 'Username contains characters that are not allowed.' });
        } else if (await users.byUsername(realm.id, username)) {
          errors.push({ field: 'username', message: 'Username already exists.' });
          usernameTaken = true;
        }
      }
      if (emailAsUsername && !emailTaken && emailPattern.test(email) && (await users.byUsername(realm.id, email))) {
        errors.push({ field: 'email', message: 'Username already exists.' });
        usernameTaken = true;
      }
      if (errors.length === 0) return { ok: true };
      return failed(emailTaken ? 'email_in_use' : usernameTaken ? 'username_in_use' : 'invalid_registration', errors);
    },
  };
}

/** Keycloak's `registration-password-action`: a password, and the same again in `password-confirm`. */
export function passwordAction(): FormAction {
  return {
    validate({ form }) {
      const password = form.password ?? '';
      if (password === '') return failed('invalid_registration', [{ field: 'password', message: 'Please specify password.' }]);
      if (password !== (form['password-confirm'] ?? '')) {
        return failed('invalid_registration', [{ field: 'password-confirm', message: "Password confirmation doesn't match." }]);
      }
      return { ok: true };
    },
  };
}
