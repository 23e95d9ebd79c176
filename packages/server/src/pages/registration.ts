import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import { REGISTRATION_FIELDS, runRegistration } from '../authentication/index.js';
import type { Realm } from '../model/types.js';
import type { AuthSession, FormState } from '../authentication/index.js';
import { acceptInvitation, checkInvitation, type InvitationCheck } from './organization-invitations.js';
import { sendVerification } from './verify-email.js';
import { showNewPassword } from './login.js';
import { nextRequiredAction } from './required-actions.js';
import { actionUrl, keepValues, showPage } from './pages.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { formValues } from './protection.js';

const KEPT = ['firstName', 'lastName', 'email', 'username'] as const;

// An organization's invitee registers even where the realm has registration off (Keycloak's Organizations.isRegistrationAllowed).
const registrationAllowed = { on: (realm: Realm, auth: AuthSession) => realm.registrationAllowed || auth.invitation !== undefined, off: 'Registration is not allowed in this realm.' };

export function registrationRoutes(app: FastifyInstance, ctx: PagesContext): void {
  const invitationOf = (realm: Realm, auth: AuthSession) => checkInvitation(ctx, realm, auth.invitation!);
  const invited = (check: Extract<InvitationCheck, { ok: true }>, t: { msg(key: string, ...args: string[]): string }): FormState => ({ title: t.msg('organization.member.register.title', check.org.name) });
  const invitationRefused = async (reply: FastifyReply, realm: Realm, check: Extract<InvitationCheck, { ok: false }>) => {
    const t = await ctx.pages.pageTranslator(reply, realm);
    return showPage.error(ctx, reply, realm, t.msg(check.messageKey), 400);
  };
  loginActionForm(app, ctx, 'registration', {
    needs: registrationAllowed,
    show: async (_ctx, request, reply, realm, auth, state) => {
      if (auth.invitation === undefined) return showPage.registration(ctx, request, reply, realm, auth, state);
      const check = await invitationOf(realm, auth);
      if (!check.ok) return invitationRefused(reply, realm, check);
      const { email, firstName, lastName } = check.invitation;
      return showPage.registration(ctx, request, reply, realm, auth, { ...invited(check, await ctx.pages.pageTranslator(reply, realm)), values: { email, firstName: firstName ?? '', lastName: lastName ?? '', username: '' } });
    },
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, [...REGISTRATION_FIELDS, 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      // An invitee registers with the address the invitation went to (Keycloak's "Email does not match the invitation").
      const invitation = auth.invitation === undefined ? null : await invitationOf(realm, auth);
      if (invitation && !invitation.ok) return invitationRefused(reply, realm, invitation);
      const page = invitation ? invited(invitation, await ctx.pages.pageTranslator(reply, realm)) : {};
      if (invitation?.ok && (form.email ?? '').trim().toLowerCase() !== invitation.invitation.email.toLowerCase()) {
        const t = await ctx.pages.pageTranslator(reply, realm);
        return showPage.registration(ctx, request, reply, realm, auth, { ...page, values: keepValues(form, KEPT), errors: { email: t.msg('orgInviteEmailMismatch') }, status: 400 });
      }
      const info = requestInfo(request);
      const values = keepValues(form, KEPT);
      const details = { email: values.email, first_name: values.firstName, last_name: values.lastName, username: values.username, register_method: 'form', redirect_uri: auth.redirectUri };
      const result = await runRegistration(ctx, realm, { clientId: auth.clientId, request: info, submitted: form, details });
      if (result.status === 'failure') {
        const { failure } = result;
        if (failure.kind === 'protector') {
          if (failure.status === 503) reply.header('retry-after', String(failure.retryAfterSeconds ?? 5));
          return showPage.registration(ctx, request, reply, realm, auth, { ...page, values, message: { type: 'error', text: 'We could not verify this registration. Please try again.' }, status: failure.status ?? 400 });
        }
        // A form action may name a field this page does not have (a theme left it out): say it above the form.
        const unplaced = Object.entries(failure.errors).filter(([field]) => !(REGISTRATION_FIELDS as readonly string[]).includes(field));
        const message = unplaced.length ? { type: 'error' as const, text: unplaced.map(([, text]) => text).join(' ') } : undefined;
        return showPage.registration(ctx, request, reply, realm, auth, { ...page, values, errors: failure.errors, message, status: failure.status });
      }
      if (result.status === 'challenge') return showPage.registration(ctx, request, reply, realm, auth, { ...page, values });
      if (result.status === 'incomplete') return showPage.error(ctx, reply, realm, 'This registration cannot be completed. Please contact the administrator.', 400, { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' });
      const { user } = result;
      // The new user joins, and the invitation ends (another registration with the same link finds it gone).
      if (invitation?.ok) await acceptInvitation(ctx, invitation, user);

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
