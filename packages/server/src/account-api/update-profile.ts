import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { badRequest, unsupportedMediaType } from '../model/errors.js';
import type { User } from '../model/types.js';
import { emailPattern, personNamePattern } from '../model/user-profile.js';
import { profileRefusal } from '../pages/profile-rules.js';
import { sendVerification } from '../pages/verify-email.js';
import { updateEmailActionEnabled, userSnapshot } from '../services/index.js';
import { accountCallerWith, type AccountCaller, type AccountRequest } from './caller.js';
import { JSON_REPRESENTATION } from './negotiation.js';
import { MAX_ATTRIBUTE_LENGTH, PROFILE_ATTRIBUTES, type ProfileAttribute } from './profile-metadata.js';

/** The fields of Keycloak's account UserRepresentation; any other is refused, naming it. */
const FIELDS = new Set(['id', 'username', 'firstName', 'lastName', 'email', 'emailVerified', 'attributes', 'userProfileMetadata']);

/** One validation error, as Keycloak's account API reports it (a message key, the field, its parameters). */
export interface FieldError {
  field: string;
  errorMessage: string;
  params: string[];
}

type Changes = Partial<Record<ProfileAttribute, string | null>>;

/**
 * Reads the body: an object of Keycloak's fields with the right types; `attributes` may repeat the profile's
 * own attributes (what the account console sends), as a string or a one-element list, and nothing else.
 */
export function parseProfileBody(body: unknown): Changes {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('The body must be a JSON object (a user representation)');
  const input = body as Record<string, unknown>;
  for (const key of Object.keys(input)) if (!FIELDS.has(key)) throw badRequest(`Unknown field: ${key}`, key);
  const changes: Changes = {};
  if (input.attributes !== undefined && input.attributes !== null) {
    if (typeof input.attributes !== 'object' || Array.isArray(input.attributes)) throw badRequest('attributes must be an object of lists of strings', 'attributes');
    for (const [name, value] of Object.entries(input.attributes as Record<string, unknown>)) {
      if (!(PROFILE_ATTRIBUTES as string[]).includes(name)) throw badRequest(`Unknown attribute: ${name}`, name);
      const values = Array.isArray(value) ? value : [value];
      if (values.length > 1) throw badRequest(`${name} takes one value`, name);
      if (values.some((v) => v !== null && typeof v !== 'string')) throw badRequest(`${name} must be a string`, name);
      changes[name as ProfileAttribute] = (values[0] as string | null | undefined) ?? null;
    }
  }
  for (const name of PROFILE_ATTRIBUTES) {
    const value = input[name];
    if (value === undefined) continue;
    if (value !== null && typeof value !== 'string') throw badRequest(`${name} must be a string`, name);
    changes[name] = value;
  }
  if (input.id !== undefined && input.id !== null && typeof input.id !== 'string') throw badRequest('id must be a string', 'id');
  if (input.emailVerified !== undefined && input.emailVerified !== null && typeof input.emailVerified !== 'boolean') throw badRequest('emailVerified must be a boolean', 'emailVerified');
  if (input.userProfileMetadata !== undefined && input.userProfileMetadata !== null && (typeof input.userProfileMetadata !== 'object' || Array.isArray(input.userProfileMetadata))) {
    throw badRequest('userProfileMetadata must be an object', 'userProfileMetadata');
  }
  return changes;
}

/** The realm's profile rules for a change the user makes to themselves; the profile rules of its flows come after. */
async function ruleErrors(ctx: ServerContext, caller: AccountCaller, next: { firstName: string | null; lastName: string | null; email: string | null }, changes: Changes): Promise<FieldError[]> {
  const { realm, user } = caller;
  const errors: FieldError[] = [];
  for (const name of PROFILE_ATTRIBUTES) {
    const value = changes[name];
    if (typeof value === 'string' && value.length > MAX_ATTRIBUTE_LENGTH[name]) errors.push({ field: name, errorMessage: 'error-invalid-length', params: [name, '', String(MAX_ATTRIBUTE_LENGTH[name])] });
  }
  if (changes.username !== undefined && (changes.username ?? '').toLowerCase() !== user.username && !errors.some((e) => e.field === 'username')) {
    errors.push({ field: 'username', errorMessage: 'updateReadOnlyAttributesRejectedMessage', params: ['username'] });
  }
  for (const name of ['firstName', 'lastName'] as const) {
    if (!errors.some((e) => e.field === name) && !personNamePattern.test(next[name] ?? '')) errors.push({ field: name, errorMessage: 'error-person-name-invalid-character', params: [name] });
  }
  // With UPDATE_EMAIL enabled the address is read-only here (Keycloak's ACCOUNT context): a change goes through that action.
  if (next.email !== user.email && !errors.some((e) => e.field === 'email') && (await updateEmailActionEnabled(ctx.storage, realm.id))) {
    errors.push({ field: 'email', errorMessage: 'updateReadOnlyAttributesRejectedMessage', params: ['email'] });
  }
  if (!errors.some((e) => e.field === 'email')) {
    if (!next.email) errors.push({ field: 'email', errorMessage: 'error-user-attribute-required', params: ['email'] });
    else if (!emailPattern.test(next.email)) errors.push({ field: 'email', errorMessage: 'error-invalid-email', params: ['email', next.email] });
    else if (next.email !== user.email && !realm.duplicateEmailsAllowed) {
      const other = await ctx.storage.users.byEmail(realm.id, next.email);
      if (other && other.id !== user.id) errors.push({ field: 'email', errorMessage: 'emailExistsMessage', params: ['email'] });
    }
  }
  return errors;
}

/**
 * Keycloak's account API answer for validation errors (its ErrorResponse): always the list under `errors`, which the
 * account console reads; a single error is also given at the top level (`field`, `errorMessage`, `params`).
 */
const validationAnswer = (errors: FieldError[]) => (errors.length === 1 ? { ...errors[0], errors } : { errors });

/**
 * POST /realms/{realm}/account: the caller changes their names and e-mail address (manage-account). The realm's
 * rules first, then the profile rules of its registration flow's form actions (the disposable-e-mail blocker
 * among them), asked through the one function the account page asks. 204 when saved.
 */
export function updateProfileRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/realms/:realm/account', { constraints: JSON_REPRESENTATION }, async (request: AccountRequest, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account');
    if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) throw unsupportedMediaType('The account API accepts application/json bodies only');
    const { realm, user } = caller;
    const changes = parseProfileBody(request.body);
    const next = {
      firstName: changes.firstName !== undefined ? changes.firstName || null : user.firstName,
      lastName: changes.lastName !== undefined ? changes.lastName || null : user.lastName,
      email: changes.email !== undefined ? (changes.email ?? '').trim().toLowerCase() || null : user.email,
    };
    const info = requestInfo(request);
    const errors = await ruleErrors(ctx, caller, next, changes);
    if (!errors.some((e) => e.field === 'email') && next.email && next.email !== user.email) {
      const refused = await profileRefusal(ctx, realm, caller.clientId, { email: next.email, firstName: next.firstName ?? '', lastName: next.lastName ?? '', username: user.username }, info);
      if (refused) {
        for (const [field, message] of Object.entries(refused.fieldErrors)) if (!errors.some((e) => e.field === field)) errors.push({ field, errorMessage: message, params: [field] });
        await ctx.events.user(realm, { type: 'UPDATE_EMAIL_ERROR', clientId: caller.clientId, userId: user.id, sessionId: caller.sessionId, request: info, error: refused.error, details: { previous_email: user.email ?? '', updated_email: next.email, context: 'ACCOUNT' } });
      }
    }
    if (errors.length) return reply.code(400).send(validationAnswer(errors));

    let updated: User = { ...user, firstName: next.firstName, lastName: next.lastName };
    const emailChanged = next.email !== user.email;
    // As the account page: in a realm that verifies e-mail, the new address takes effect when its link is opened.
    if (emailChanged && realm.verifyEmail) await sendVerification(ctx, request, realm, user, next.email!, caller.clientId);
    else if (emailChanged) updated = { ...updated, email: next.email, emailVerified: false };
    await ctx.storage.users.update(updated);
    const snapshot = await userSnapshot(ctx.storage, updated);
    const details: Record<string, string> = { context: 'ACCOUNT' };
    for (const [name, key] of [['firstName', 'first_name'], ['lastName', 'last_name']] as const) {
      if (updated[name] !== user[name]) Object.assign(details, { [`previous_${key}`]: user[name] ?? '', [`updated_${key}`]: updated[name] ?? '' });
    }
    await ctx.events.user(realm, { type: 'UPDATE_PROFILE', clientId: caller.clientId, userId: user.id, sessionId: caller.sessionId, request: info, user: snapshot, details });
    if (updated.email !== user.email) {
      await ctx.events.user(realm, { type: 'UPDATE_EMAIL', clientId: caller.clientId, userId: user.id, sessionId: caller.sessionId, request: info, user: snapshot, details: { previous_email: user.email ?? '', updated_email: updated.email ?? '', context: 'ACCOUNT' } });
    }
    return reply.code(204).send();
  });
}
