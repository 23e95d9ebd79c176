import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { isUniqueViolation } from '../storage/index.js';
import { createUser, setPassword, userSnapshot } from '../services/index.js';
import { PasswordPolicyError, providerEventError, type RecordedEventError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { sendVerification } from './verify-email.js';
import { showNewPassword } from './login.js';
import { nextRequiredAction } from './required-actions.js';
import { actionUrl, keepValues, showPage } from './pages.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { formValues, runProtectors } from './protection.js';
import { realmInfo } from '../events/index.js';

const FIELDS = ['firstName', 'lastName', 'email', 'username', 'password', 'password-confirm'] as const;
const KEPT = ['firstName', 'lastName', 'email', 'username'] as const;
const MAX_PASSWORD = 1024;

const registrationAllowed = { on: (realm: Realm) => realm.registrationAllowed, off: 'Registration is not allowed in this realm.' };

export function registrationRoutes(app: FastifyInstance, ctx: ServerContext): void {
  loginActionForm(app, ctx, 'registration', {
    needs: registrationAllowed,
    show: showPage.registration,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, [...FIELDS, 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const info = requestInfo(request);
      const values = keepValues(form, KEPT);
      const details = { email: values.email, first_name: values.firstName, last_name: values.lastName, username: values.username, register_method: 'form', redirect_uri: auth.redirectUri };
      const registerError = (error: RecordedEventError, extra: Record<string, string> = {}) =>
        ctx.events.user(realm, { type: 'REGISTER_ERROR', clientId: auth.clientId, error, details: { ...details, ...extra }, request: info });

      const steps = await ctx.flows.registrationSteps(realm);
      const refusal = await runProtectors(realm, 'registration', steps.protectors, info, form);
      if (refusal) {
        await registerError(refusal.error, { reason: refusal.reason, protector: refusal.protector });
        if (refusal.status === 503) reply.header('retry-after', String(refusal.retryAfterSeconds ?? 5));
        return showPage.registration(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'We could not verify this registration. Please try again.' }, status: refusal.status ?? 400 });
      }

      const errors: Record<string, string> = {};
      let firstError: RecordedEventError | null = null;
      const actionContext = { realm: realmInfo(realm), clientId: auth.clientId, form, request: info };
      for (const action of steps.formActions) {
        const result = await action.instance.validate({ ...actionContext, config: action.config });
        if (result.ok) continue;
        firstError ??= providerEventError(result.error);
        for (const fieldError of result.fieldErrors) errors[fieldError.field] ??= fieldError.message;
      }
      if (!values.username && !errors.username) {
        errors.username = 'Please specify username.';
        firstError ??= 'invalid_registration';
      }
      // Login refuses longer passwords, so an account created with one could never be used.
      if (form.password.length > MAX_PASSWORD && !errors.password) {
        errors.password = 'Password is too long.';
        firstError ??= 'invalid_registration';
      }
      if (firstError) {
        await registerError(firstError);
        // A form action may name a field this page does not have (a theme left it out): say it above the form.
        const unplaced = Object.entries(errors).filter(([field]) => !(FIELDS as readonly string[]).includes(field));
        const message = unplaced.length ? { type: 'error' as const, text: unplaced.map(([, text]) => text).join(' ') } : undefined;
        return showPage.registration(ctx, request, reply, realm, auth, { values, errors, message, status: 400 });
      }

      let user: User;
      try {
        user = await ctx.storage.transaction(async (trx) => {
          const created = await createUser(ctx.storage, realm, { username: values.username, email: values.email || null, firstName: values.firstName || null, lastName: values.lastName || null }, trx);
          return setPassword(ctx, realm, created, form.password, trx);
        });
      } catch (error) {
        if (error instanceof PasswordPolicyError) {
          await registerError('invalid_registration');
          return showPage.registration(ctx, request, reply, realm, auth, { values, errors: { password: error.message }, status: 400 });
        }
        if (!isUniqueViolation(error)) throw error;
        await registerError('username_in_use');
        return showPage.registration(ctx, request, reply, realm, auth, { values, errors: { username: 'Username already exists.' }, status: 409 });
      }
      for (const action of steps.formActions) await action.instance.success?.({ ...actionContext, config: action.config, userId: user.id });
      await ctx.events.user(realm, { type: 'REGISTER', clientId: auth.clientId, userId: user.id, details, request: info, user: () => userSnapshot(ctx.storage, user) });

      if (realm.verifyEmail && user.email) {
        await sendVerification(ctx, request, realm, user, user.email, auth.clientId);
        return showPage.info(ctx, reply, realm, 'Verify your e-mail address', `We sent a link to ${user.email}. Open it to activate your account, then sign in.`, { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' });
      }
      const client = await ctx.storage.clients.byClientId(realm.id, auth.clientId);
      if (client?.attributes['disable.autologin'] === 'true') {
        return showPage.info(ctx, reply, realm, 'Your account has been created', 'You can now sign in with your new account.', { href: actionUrl(realm, 'authenticate'), label: 'Sign in' });
      }
      // The realm's default required actions are carried out now, as after a sign-in (Keycloak does the same).
      return nextRequiredAction(ctx, request, reply, realm, auth, user, showNewPassword(ctx));
    },
  });
}
