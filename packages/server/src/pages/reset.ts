import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { userLocaleHint } from './user-locale.js';
import { decodeJwt } from 'jose';
import { runResetCredentials, type AuthSession } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User } from '../model/types.js';
import { userSnapshot } from '../services/index.js';
import { mailTranslator, resetPasswordMail, sendInBackground } from './emails.js';
import { redeemImpersonation } from './impersonation.js';
import { answerInvitation } from './organization-invitations.js';
import type { FollowLinkMail } from './broker.js';
import { executeActionsRoutes, linkState, showLinkStep } from './execute-actions.js';
import { loginActionForm, protectedPost } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import { formValues } from './protection.js';
import { actionTokenUrl } from './verify-email.js';
import { EMAIL_PENDING_ATTRIBUTE, UPDATE_EMAIL, UPDATE_PASSWORD, VERIFY_EMAIL } from '../required-actions/index.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
const resetAllowed = { on: (realm: Realm) => realm.resetPasswordAllowed, off: 'Resetting passwords is not allowed in this realm.' };
const linkExpired = 'This link has expired or has already been used. Please ask for a new one.';
const mailedText = 'You should receive an e-mail shortly with further instructions.';

export function resetRoutes(app: FastifyInstance, ctx: PagesContext, followLinkMail: FollowLinkMail): void {
  loginActionForm(app, ctx, 'reset-credentials', {
    needs: resetAllowed,
    // The page the realm's reset flow asks for first (its choose-user step's form in the built-in flow).
    show: async (_ctx, request, reply, realm, auth) => {
      const result = await runResetCredentials(ctx, realm, { clientId: auth.clientId, request: requestInfo(request), submitted: null, link: null, mailLink: mailer(request, realm) }, null);
      return answerReset(request, reply, realm, result, { auth, values: {} });
    },
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
      const result = await runResetCredentials(ctx, realm, { clientId: auth.clientId, request: info, submitted: { username: form.username }, link: null, mailLink: mailer(request, realm) }, null);
      return answerReset(request, reply, realm, result, { auth, values });
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
    if (typ === 'reset-credentials') return resumeReset(request, reply, realm, key, null);
    if (typ === 'impersonate') return redeemImpersonation(ctx, request, reply, realm, key);
    if (typ === 'invite-org') return answerInvitation(ctx, request, reply, realm, key, false);
    if (typ === 'idp-verify-account-via-email') return followLinkMail(request, reply, realm, key, false);
    if (typ === 'verify-email') {
      const claims = await ctx.actionTokens.read(realm, key, 'verify-email');
      const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
      if (user) userLocaleHint(request, user);
      if (!claims || !user || !(await ctx.actionTokens.consume(claims))) return expired(request, reply, realm);
      const email = claims.email ?? user.email;
      const changed = email !== user.email;
      if (changed && email && !realm.duplicateEmailsAllowed) {
        const other = await ctx.storage.users.byEmail(realm.id, email);
        if (other && other.id !== user.id) return showPage.error(ctx, reply, realm, 'This e-mail address is already used by another account.', 409);
      }
      const previous = user.email;
      // A link sent by UPDATE_EMAIL ends that action too: the address it waited for is now the user's.
      const { [EMAIL_PENDING_ATTRIBUTE]: _, ...attributes } = user.attributes;
      const updated = { ...user, attributes, email, emailVerified: true };
      await ctx.storage.users.update(updated);
      await ctx.storage.credentials.removeRequiredAction(user.id, VERIFY_EMAIL);
      if (changed) await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_EMAIL);
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
      if (user) userLocaleHint(request, user);
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

  // The button of a link's confirmation page (the key again; the link is the proof): an organization's invitation
  // joined, or the first broker login's link opened in another browser ("link the accounts").
  app.post('/realms/:realm/login-actions/action-token', async (request: RealmRequest, reply) => {
    const realm = await realmOf(request, reply);
    if (!('id' in realm)) return realm;
    const key = formValues(request.body, ['key']).key ?? '';
    let typ: unknown;
    try {
      typ = decodeJwt(key).typ;
    } catch {
      return expired(request, reply, realm);
    }
    if (typ === 'invite-org') return answerInvitation(ctx, request, reply, realm, key, true);
    if (typ === 'idp-verify-account-via-email') return followLinkMail(request, reply, realm, key, true);
    return expired(request, reply, realm);
  });

  executeActionsRoutes(app, ctx, signInLink, expired);

  app.post('/realms/:realm/login-actions/reset-password', async (request: RealmRequest, reply) => {
    const realm = await realmOf(request, reply);
    if (!('id' in realm)) return realm;
    const form = formValues(request.body, ['password-new', 'password-confirm', 'session_code']);
    return resumeReset(request, reply, realm, form.session_code, { 'password-new': form['password-new'], 'password-confirm': form['password-confirm'] });
  });

  const mailer = (request: FastifyRequest, realm: Realm) => (user: User, token: string) => sendInBackground(ctx, realm, mailTranslator(ctx, realm, user, request).then((t) => resetPasswordMail(t, realm, user, actionTokenUrl(request, ctx, realm, token))));

  /** The reset flow carried on by its link (or the key of a later page): the flow resumes after what the link settled. */
  async function resumeReset(request: FastifyRequest, reply: FastifyReply, realm: Realm, key: string, submitted: Record<string, string> | null): Promise<FastifyReply> {
    const claims = await ctx.actionTokens.read(realm, key, 'reset-credentials');
    const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
    if (user) userLocaleHint(request, user);
    if (!claims || !user) return expired(request, reply, realm);
    const result = await runResetCredentials(ctx, realm, { clientId: claims.azp ?? '', request: requestInfo(request), submitted, link: { token: key, claims }, mailLink: mailer(request, realm) }, user);
    return answerReset(request, reply, realm, result, { auth: null, values: {} });
  }

  /**
   * The page for where the reset flow stands: the page a step asks for, a step's refusal, the flow's end. Nothing
   * here decides what comes next; the flow does. `auth` is the sign-in the request page was opened from (absent
   * on the link's pages, which stand on the link alone).
   */
  async function answerReset(
    request: FastifyRequest,
    reply: FastifyReply,
    realm: Realm,
    result: Awaited<ReturnType<typeof runResetCredentials>>,
    page: { auth: AuthSession | null; values: Record<string, string> },
  ): Promise<FastifyReply> {
    const { env } = result;
    const { auth, values } = page;
    const passwordPage = (key: string, errors: Record<string, string>, status: number) =>
      ctx.pages.send(reply, realm, 'update-password', { action: actionUrl(realm, 'reset-password'), csrf: key, errors }, status);
    // The same answer whether or not the account exists, so the form cannot be used to find accounts.
    const mailed = async () => {
      if (auth) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'info', text: mailedText } });
      return showPage.info(ctx, reply, realm, 'Check your e-mail', mailedText, await signInLink(request, realm, 'Back to sign in'));
    };
    const spendLink = async () => !env.link || env.linkSpent || (await ctx.actionTokens.consume(env.link.claims));
    switch (result.status) {
      case 'challenge':
        if (result.challenge === 'email-sent') return (await spendLink()) ? mailed() : expired(request, reply, realm);
        if (result.challenge === 'choose-user') {
          if (auth) return showPage.resetRequest(ctx, request, reply, realm, auth, { values });
          return expired(request, reply, realm);
        }
        // The new password's page carries the flow in a link of its own when none came with this request (an
        // operator's flow without the e-mail step).
        return passwordPage(env.link && !env.linkSpent ? env.link.token : await ctx.actionTokens.issue(realm, 'reset-credentials', result.user!.id, { azp: env.clientId, done: result.done }), {}, 200);
      case 'failure':
        if (result.failure.kind === 'link-used') return expired(request, reply, realm);
        if (result.failure.page === 'new-password' && env.link) return passwordPage(env.link.token, result.failure.errors, 400);
        if (auth) return showPage.resetRequest(ctx, request, reply, realm, auth, { values: { ...values, username: (env.login ?? '').slice(0, 255) }, errors: result.failure.errors, status: 400 });
        return expired(request, reply, realm);
      case 'incomplete':
        if (result.reason === 'unknown_user') return (await spendLink()) ? mailed() : expired(request, reply, realm);
        return showPage.error(ctx, reply, realm, 'This password reset cannot be completed. Please contact the administrator.', 400, await signInLink(request, realm, 'Back to sign in'));
      case 'success': {
        if (!(await spendLink())) return expired(request, reply, realm);
        const next = auth ? { href: actionUrl(realm, 'authenticate'), label: 'Sign in' } : await signInLink(request, realm, 'Sign in');
        if (env.passwordReset) return showPage.info(ctx, reply, realm, 'Your password has been updated', 'You can now sign in with your new password.', next);
        return showPage.info(ctx, reply, realm, 'Your account is confirmed', 'You can now sign in.', next);
      }
    }
  }
}
