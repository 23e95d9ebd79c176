import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runBrowserSignIn, type AuthSession } from '../authentication/index.js';
import { saveRecoveryCodes } from '../authentication/recovery-codes.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { CONFIGURE_RECOVERY_AUTHN_CODES } from '../required-actions/index.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { answerSignIn } from './otp.js';
import { showPage } from './pages.js';
import { formValues } from './protection.js';
import { openRecoveryKey, RECOVERY_LOGIN, RECOVERY_SETUP, recoveryCodePage, recoveryCodesSetupPage } from './recovery-code-pages.js';
import { endAction } from './required-actions.js';
import { openStepPost, stepExpired, type ShowNewPassword } from './step-pages.js';

/** The recovery-code pages' posts (recovery-code-pages.ts renders them). */
export function recoveryCodeRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): void {
  const expired = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) => stepExpired(ctx, request, reply, realm, auth);

  loginActionForm(app, ctx, RECOVERY_LOGIN, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['recoveryCodeInput', 'key', 'session_code']);
      const opened = await openStepPost(ctx, request, reply, realm, auth, form, (key) => openRecoveryKey(ctx, realm, RECOVERY_LOGIN, auth, key));
      if ('answered' in opened) return opened.answered;
      const { step, left } = opened;
      const { claims, user } = step;
      const progress = { user, done: claims.done ?? {}, requiredActions: claims.setup ?? [], login: claims.login, passwordChecked: claims.checked, alternatives: claims.ways };
      const signIn = await runBrowserSignIn(ctx, realm, auth.clientId, requestInfo(request), progress, { recoveryCodeInput: form.recoveryCodeInput.slice(0, 64) });
      return answerSignIn(ctx, request, reply, realm, auth, signIn, newPasswordPage, {
        recoveryRefused: async (error) => {
          if (error === 'ip_temporarily_blocked') {
            reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
            return recoveryCodePage(ctx, reply, realm, auth, { ...progress, env: progress }, { key: form.key, status: 429, message: { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' } });
          }
          if (left === 0) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many wrong codes. Please sign in again.' }, status: 401 });
          return recoveryCodePage(ctx, reply, realm, auth, { ...progress, env: progress }, { key: form.key, status: 401, errors: { recoveryCodeInput: 'Invalid recovery authentication code.' } });
        },
      });
    },
  });

  loginActionForm(app, ctx, RECOVERY_SETUP, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['kcRecoveryCodesConfirmationCheck', 'key', 'session_code', 'cancel-aia']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await openRecoveryKey(ctx, realm, RECOVERY_SETUP, auth, form.key);
      if (!step || !Array.isArray(step.claims.hashes) || step.claims.hashes.length !== 12) return expired(request, reply, realm, auth);
      const { user, claims } = step;
      const aia = auth.kcAction === CONFIGURE_RECOVERY_AUTHN_CODES && !auth.kcActionStatus;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, CONFIGURE_RECOVERY_AUTHN_CODES, 'cancelled', user, newPasswordPage);
      // Not confirmed: new codes (the ones shown were never stored), and the confirmation asked again.
      if (form.kcRecoveryCodesConfirmationCheck !== 'on') return recoveryCodesSetupPage(ctx, reply, realm, auth, user, aia, 400, { type: 'error', text: 'Please confirm that you have saved the codes.' });
      await saveRecoveryCodes(ctx, realm, user, claims.hashes!, { clientId: auth.clientId, details: { auth_method: 'openid-connect' }, request: requestInfo(request) });
      return endAction(ctx, request, reply, realm, auth, CONFIGURE_RECOVERY_AUTHN_CODES, 'success', user, newPasswordPage);
    },
  });
}
