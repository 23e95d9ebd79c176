import type { FastifyRequest } from 'fastify';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import { emailPattern, personNamePattern } from '../model/user-profile.js';
import { userSnapshot } from '../services/index.js';
import { keepValues } from './pages.js';
import { profileRefusal } from './profile-rules.js';
import type { FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

export const PROFILE_FORM_FIELDS = ['firstName', 'lastName', 'email'] as const;

export interface ProfileFormContext {
  clientId: string;
  sessionId: string | null;
  /** Extra event details: `context: ACCOUNT` on the account page, `custom_required_action` for the required action. */
  details: Record<string, string>;
}

export type ProfileFormResult =
  | { ok: false; values: Record<string, string>; errors: FieldErrors }
  | { ok: true; user: User; verificationSentTo: string | null };

/**
 * Whether a user may take `email` (already trimmed and lower-cased) as their address: its form, another user's
 * (unless the realm allows duplicates), then the profile rules of the registration flow's form actions (the
 * disposable-e-mail blocker among them; a refusal is recorded as UPDATE_EMAIL_ERROR). The fields' errors, empty
 * when it may. `names`: the form's other values the rules see (the profile page's names).
 */
export async function newEmailErrors(
  ctx: PagesContext,
  request: FastifyRequest,
  realm: Realm,
  user: User,
  email: string,
  at: ProfileFormContext,
  names: { firstName?: string; lastName?: string } = {},
): Promise<FieldErrors> {
  if (!emailPattern.test(email) || email.length > 254) return { email: 'Invalid email address.' };
  if (email === user.email) return {};
  if (!realm.duplicateEmailsAllowed) {
    const other = await ctx.storage.users.byEmail(realm.id, email);
    if (other && other.id !== user.id) return { email: 'Email already exists.' };
  }
  const info = requestInfo(request);
  const refused = await profileRefusal(ctx, realm, at.clientId, { email, firstName: names.firstName ?? user.firstName ?? '', lastName: names.lastName ?? user.lastName ?? '', username: user.username }, info);
  if (!refused) return {};
  await ctx.events.user(realm, { type: 'UPDATE_EMAIL_ERROR', clientId: at.clientId, userId: user.id, sessionId: at.sessionId, request: info, error: refused.error, details: { ...at.details, previous_email: user.email ?? '', updated_email: email } });
  return refused.fieldErrors;
}

/**
 * A user's own change of names and e-mail address from a page (the account page, the UPDATE_PROFILE required
 * action): the realm's rules, then the profile rules of the registration flow's form actions (the disposable-e-mail
 * blocker among them), then the save and its events. In a realm that verifies e-mail, a new address takes effect
 * when its link is opened.
 */
export async function saveProfileForm(
  ctx: PagesContext,
  request: FastifyRequest,
  realm: Realm,
  user: User,
  form: Record<string, string>,
  at: ProfileFormContext,
): Promise<ProfileFormResult> {
  const values = keepValues(form, PROFILE_FORM_FIELDS);
  const errors: FieldErrors = {};
  for (const field of ['firstName', 'lastName'] as const) {
    if (form[field].length > 255) errors[field] = 'Must be at most 255 characters.';
    else if (!personNamePattern.test(values[field])) errors[field] = 'Please use letters, spaces and simple punctuation only.';
  }
  const email = values.email.trim().toLowerCase();
  const info = requestInfo(request);
  const event = { clientId: at.clientId, userId: user.id, sessionId: at.sessionId, request: info };
  Object.assign(errors, { ...(await newEmailErrors(ctx, request, realm, user, email, at, values)), ...errors });
  if (Object.keys(errors).length) return { ok: false, values, errors };

  let updated: User = { ...user, firstName: values.firstName || null, lastName: values.lastName || null };
  let verificationSentTo: string | null = null;
  if (email !== user.email) {
    if (realm.verifyEmail) {
      await sendVerification(ctx, request, realm, user, email, at.clientId);
      verificationSentTo = email;
    } else {
      updated = { ...updated, email, emailVerified: false };
    }
  }
  await ctx.storage.users.update(updated);
  const snapshot = await userSnapshot(ctx.storage, updated);
  const details: Record<string, string> = { ...at.details };
  for (const [name, key] of [['firstName', 'first_name'], ['lastName', 'last_name']] as const) {
    if (updated[name] !== user[name]) Object.assign(details, { [`previous_${key}`]: user[name] ?? '', [`updated_${key}`]: updated[name] ?? '' });
  }
  const namesChanged = updated.firstName !== user.firstName || updated.lastName !== user.lastName;
  // The required action records its completion even when nothing changed (the user confirmed the profile).
  if (namesChanged || at.details.custom_required_action) await ctx.events.user(realm, { type: 'UPDATE_PROFILE', ...event, user: snapshot, details });
  if (updated.email !== user.email) {
    await ctx.events.user(realm, { type: 'UPDATE_EMAIL', ...event, user: snapshot, details: { ...at.details, previous_email: user.email ?? '', updated_email: updated.email ?? '' } });
  }
  return { ok: true, user: updated, verificationSentTo };
}
