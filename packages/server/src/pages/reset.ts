import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import { resetCredentialsUser } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { PasswordPolicyError } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { checkNewPassword, setPassword, userSnapshot } from '../services/index.js';
import { resetPasswordMail, sendInBackground } from './emails.js';
import { executeActionsRoutes, linkState, showLinkStep } from './execute-actions.js';
import { loginActionForm, protectedPost } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import { formValues } from './protection.js';
import { actionTokenUrl } from './verify-email.js';
import { UPDATE_PASSWORD, VERIFY_EMAIL } from '../required-actions/index.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
const resetAllowed = { on: (realm: Realm) => realm.resetPasswordAllowed, off: 'Resetting passwords is not allowed in this realm.' };
const linkExpired = 'This link has expired or has already been used. Please ask for a new one.';

export function resetRoutes(app: FastifyInstance, ctx: ServerContext): void {
  loginActionForm(app, ctx, 'reset-credentials', {
    needs: resetAllowed,
    show: showPage.resetRequest,
    post: async (request, reply, realm, auth) => {
      const posted = await protectedPost(ctx, request, reply, realm, auth, {
        form: 'reset-credentials',
        fields: ['username'],
        errorEvent: 'RESET_PASSWORD_ERROR',
        refusedText: 'We could not verify this request. Please try again.',
        show: (state) => showPage.resetRequest(ctx, request, reply, realm, auth, state),
      });
      if (!posted) return reply;
      const { form, values, info } = posted;
      if (!form.username || form.username.length > 255) {
        const error = form.username ? 'Must be at most 255 characters.' : 'Please enter your username or e-mail address.';
        return showPage.resetRequest(ctx, request, reply, realm, auth, { values, errors: { username: error }, status: 400 });
      }
      const user = await resetCredentialsUser(ctx, realm, form.username);
      if (user) {
        const token = await ctx.actionTokens.issue(realm, 'reset-credentials', user.id, { azp: auth.clientId });
        sendInBackground(ctx, realm, resetPasswordMail(realm, user, actionTokenUrl(request, ctx, realm, token)));
        await ctx.events.user(realm, { type: 'SEND_RESET_PASSWORD', clientId: auth.clientId, userId: user.id, details: { email: user.email!, username: user.username }, request: info });
      } else {
        await ctx.events.user(realm, { type: 'SEND_RESET_PASSWORD_ERROR', clientId: auth.clientId, error: 'user_not_found', details: { username: values.username }, request: info });
      }
      // The same answer whether or not the account exists, so the form cannot be used to find accounts.
      return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'info', text: 'You should receive an e-mail shortly with further instructions.' } });
    },
  });

  /**
   * Opened in the browser that was signing in to an application: back to that sign-in. Otherwise the account
   * page, which starts a sign-in of its own (with "Forgot password?" for a new link).
   */
  const signInLink = async (request: FastifyRequest, realm: Realm, label: string) =>
    (await ctx.authSessions.current(request, realm)) ? { href: actionUrl(realm, 'authenticate'), label } : { href: `/realms/${encodeURIComponent(realm.name)}/account/`, label };

  const expired = async (request: FastifyRequest, reply: FastifyReply, realm: Realm) =>
    showPage.error(ctx, reply, realm, linkExpired, 400, await signInLink(request, realm, 'Back to sign in'));

  const realmOf = async (request: FastifyRequest<{ Params: { realm: string } }>, reply: FastifyReply): Promise<Realm | FastifyReply> => {
    const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
    return realm && realm.enabled ? realm : showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
  };

  app.get('/realms/:realm/login-actions/action-token', async (request: FastifyRequest<{ Params: { realm: string }; Querystring: { key?: string } }>, reply) => {
    const realm = await realmOf(request, reply);
    if (!('id' in realm)) return realm;
    const key = typeof request.query.key === 'string' ? request.query.key : '';
    let typ: unknown;
    try {
      typ = decodeJwt(key).typ;
    } catch {
      return expired(request, reply, realm);
    }
    if (typ === 'reset-credentials') {
      const claims = await ctx.actionTokens.read(realm, key, 'reset-credentials');
      if (!claims) return expired(request, reply, realm);
      return ctx.pages.send(reply, realm, 'update-password', { action: actionUrl(realm, 'reset-password'), csrf: key, errors: {} });
    }
    if (typ === 'verify-email') {
      const claims = await ctx.actionTokens.read(realm, key, 'verify-email');
      const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
      if (!claims || !user || !(await ctx.actionTokens.consume(claims))) return expired(request, reply, realm);
      const email = claims.email ?? user.email;
      const changed = email !== user.email;
      if (changed && email && !realm.duplicateEmailsAllowed) {
        const other = await ctx.storage.users.byEmail(realm.id, email);
        if (other && other.id !== user.id) return showPage.error(ctx, reply, realm, 'This e-mail address is already used by another account.', 409);
      }
      const previous = user.email;
      const updated = { ...user, email, emailVerified: true };
      await ctx.storage.users.update(updated);
      await ctx.storage.credentials.removeRequiredAction(user.id, VERIFY_EMAIL);
      const info = requestInfo(request);
      const snapshot = await userSnapshot(ctx.storage, updated);
      if (changed) {
        await ctx.events.user(realm, { type: 'UPDATE_EMAIL', clientId: claims.azp ?? null, userId: user.id, details: { previous_email: previous ?? '', updated_email: email ?? '' }, request: info, user: snapshot });
      }
      await ctx.events.user(realm, { type: 'VERIFY_EMAIL', clientId: claims.azp ?? null, userId: user.id, details: { email: email ?? '' }, request: info, user: snapshot });
      const next = claims.redirect ? { href: claims.redirect, label: 'Back to application' } : await signInLink(request, realm, 'Continue');
      return showPage.info(ctx, reply, realm, 'E-mail address verified', 'Thank you: your e-mail address is confirmed.', next);
    }
    if (typ === 'execute-actions') {
      const claims = await ctx.actionTokens.read(realm, key, 'execute-actions');
      const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
      if (!claims || !user || !user.enabled || !(await ctx.actionTokens.consume(claims))) return expired(request, reply, realm);
      const actions = claims.act ?? [];
      const info = requestInfo(request);
      if (actions.includes(VERIFY_EMAIL) && user.email) {
        // The link came to this address: following it confirms the address, as Keycloak's action token does.
        const updated = { ...user, emailVerified: true };
        await ctx.storage.users.update(updated);
        await ctx.storage.credentials.removeRequiredAction(user.id, VERIFY_EMAIL);
        await ctx.events.user(realm, { type: 'VERIFY_EMAIL', clientId: claims.azp ?? null, userId: user.id, details: { email: user.email }, request: info, user: () => userSnapshot(ctx.storage, updated) });
      }
      // Set on the user before the pages ask for them, so an action left undone waits for the next sign-in.
      const later = actions.filter((a) => a !== VERIFY_EMAIL && a !== UPDATE_PASSWORD);
      if (later.length) {
        const pending = await ctx.storage.credentials.requiredActions(user.id);
        await ctx.storage.credentials.setRequiredActions(user.id, [...new Set([...pending, ...later])]);
      }
      return showLinkStep(ctx, request, reply, realm, user, linkState(claims), actions, signInLink);
    }
    return expired(request, reply, realm);
  });

  executeActionsRoutes(app, ctx, signInLink, expired);

  app.post('/realms/:realm/login-actions/reset-password', async (request: RealmRequest, reply) => {
    const realm = await realmOf(request, reply);
    if (!('id' in realm)) return realm;
    const form = formValues(request.body, ['password-new', 'password-confirm', 'session_code']);
    const key = form.session_code;
    const claims = await ctx.actionTokens.read(realm, key, 'reset-credentials');
    const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
    if (!claims || !user) return expired(request, reply, realm);
    const errors: Record<string, string> = {};
    if (!form['password-new']) errors['password-new'] = 'Please specify password.';
    else if (form['password-new'].length > 1024) errors['password-new'] = 'Password is too long.';
    else if (form['password-new'] !== form['password-confirm']) errors['password-confirm'] = "Passwords don't match.";
    const refused = (fieldErrors: Record<string, string>) => ctx.pages.send(reply, realm, 'update-password', { action: actionUrl(realm, 'reset-password'), csrf: key, errors: fieldErrors }, 400);
    if (Object.keys(errors).length) return refused(errors);
    try {
      // Before the link is spent, so a refused password can be corrected on the same page.
      await checkNewPassword(ctx.storage, realm, user, form['password-new']);
    } catch (error) {
      if (!(error instanceof PasswordPolicyError)) throw error;
      return refused({ 'password-new': error.message });
    }
    if (!(await ctx.actionTokens.consume(claims))) return expired(request, reply, realm);
    const updated = await setPassword(ctx, realm, user, form['password-new']);
    await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_PASSWORD);
    // The old password may be known to someone else: end every session it opened.
    await ctx.storage.sessions.deleteForUser(user.id);
    await ctx.events.user(realm, { type: 'RESET_PASSWORD', clientId: claims.azp ?? null, userId: user.id, details: { username: user.username }, request: requestInfo(request), user: () => userSnapshot(ctx.storage, updated) });
    return showPage.info(ctx, reply, realm, 'Your password has been updated', 'You can now sign in with your new password.', await signInLink(request, realm, 'Sign in'));
  });
}
