import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { runBrowserSignIn, takeStepAttempt, type AuthSession } from '../authentication/index.js';
import { WEBAUTHN_FIELDS } from '../authentication/sign-in.js';
import { completeRegistration, registerActionOf } from '../authentication/webauthn.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { csrfRejected, loginActionForm } from './login-context.js';
import { answerSignIn } from './otp.js';
import { showPage } from './pages.js';
import { formValues } from './protection.js';
import type { FieldErrors } from './render.js';
import { endAction } from './required-actions.js';
import { MAX_LABEL, STEP_LIFETIME_MS, stepExpired, type ShowNewPassword } from './step-pages.js';
import { ceremonyOf, LOGIN_PURPOSE, MAX_RESPONSE, openKey, REGISTER_PURPOSE, webauthnChallengePage, webauthnRegisterPage } from './webauthn-pages.js';

/** The WebAuthn pages' routes (webauthn-pages.ts renders them): the assertion's post, the registration's post, the scripts. */

const scriptFile = (path: string) => readFileSync(path, 'utf8');

export function webauthnRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): void {
  const expired = (request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) => stepExpired(ctx, request, reply, realm, auth);

  // The assertion: the step's result goes back through the flow (runBrowserSignIn), as the OTP code does.
  loginActionForm(app, ctx, LOGIN_PURPOSE, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['response', 'error', 'key', 'session_code']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await openKey(ctx, realm, LOGIN_PURPOSE, auth, form.key);
      if (!step) return expired(request, reply, realm, auth);
      const { claims, user } = step;
      const progress = { user, done: claims.done ?? {}, requiredActions: claims.setup ?? [], login: claims.login, passwordChecked: claims.checked };
      const again = (text: string, status: number) =>
        webauthnChallengePage(ctx, request, reply, realm, auth, { challenge: claims.kind === 'passwordless' ? 'webauthn-passwordless' : 'webauthn', ...progress, alternatives: claims.ways, env: progress }, { type: 'error', text }, status, form.key);
      // The key takes a few answers (STEP_ATTEMPTS, the browser's refusals included: each makes a new challenge), then the sign-in starts again.
      const left = await takeStepAttempt(ctx, form.key, STEP_LIFETIME_MS);
      if (left === null) return expired(request, reply, realm, auth);
      // The browser's own refusal (no authenticator, cancelled, timed out): nothing was checked; the user may try again.
      if (!form.response || form.error) return again('Failed to authenticate by the passkey or security key. Please try again.', 400);
      if (form.response.length > MAX_RESPONSE) return again('Failed to authenticate by the passkey or security key.', 400);
      const ceremony = ceremonyOf(ctx, request, auth);
      const submitted: Record<string, string> = { [WEBAUTHN_FIELDS[0]]: form.response, [WEBAUTHN_FIELDS[1]]: ceremony.origin, [WEBAUTHN_FIELDS[2]]: ceremony.session };
      const signIn = await runBrowserSignIn(ctx, realm, auth.clientId, requestInfo(request), progress, submitted);
      return answerSignIn(ctx, request, reply, realm, auth, signIn, newPasswordPage, {
        webauthnRefused: async (error) => {
          if (error === 'ip_temporarily_blocked') {
            reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
            return again('Too many failed sign-ins from your network. Please try again later.', 429);
          }
          if (left === 0) return showPage.login(ctx, request, reply, realm, auth, { message: { type: 'error', text: 'Too many failed attempts. Please sign in again.' }, status: 401 });
          return again('Failed to authenticate by the passkey or security key.', 401);
        },
      });
    },
  });

  // webauthn-register / webauthn-register-passwordless: the new credential is verified, then stored.
  loginActionForm(app, ctx, REGISTER_PURPOSE, {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const form = formValues(request.body, ['response', 'error', 'authenticatorLabel', 'key', 'session_code', 'cancel-aia']);
      const rejected = csrfRejected(ctx, reply, realm, auth, form);
      if (rejected) return rejected;
      const step = await openKey(ctx, realm, REGISTER_PURPOSE, auth, form.key);
      if (!step || !step.user) return expired(request, reply, realm, auth);
      const { user, claims } = step;
      const alias = registerActionOf(claims.kind);
      const aia = auth.kcAction === alias && !auth.kcActionStatus;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, alias, 'cancelled', user, newPasswordPage);
      const label = form.authenticatorLabel.trim();
      const again = (message: string, errors: FieldErrors = {}) =>
        webauthnRegisterPage(ctx, request, reply, realm, auth, user, claims.kind, aia, { values: { authenticatorLabel: label.slice(0, MAX_LABEL) }, errors, message: { type: 'error', text: message }, status: 400 });
      if (label.length > MAX_LABEL) return again('Please check the name.', { authenticatorLabel: `Must be at most ${MAX_LABEL} characters.` });
      if (!form.response || form.error || form.response.length > MAX_RESPONSE) return again('Failed to register your passkey or security key. Please try again.');
      const saved = await completeRegistration(ctx, realm, user, claims.kind, ceremonyOf(ctx, request, auth), form.response, label || null, {
        clientId: auth.clientId,
        details: { auth_method: 'openid-connect' },
        request: requestInfo(request),
      });
      if (!saved.ok) return again('Failed to register your passkey or security key.');
      return endAction(ctx, request, reply, realm, auth, alias, 'success', user, newPasswordPage);
    },
  });

  // The browser side: our script, and @simplewebauthn/browser's bundle (the exact version the server depends on).
  const here = dirname(fileURLToPath(import.meta.url));
  const library = join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js');
  const scripts: Record<string, string> = { 'webauthn.js': join(here, 'static', 'webauthn.js'), 'simplewebauthn-browser.js': library };
  for (const [name, path] of Object.entries(scripts)) {
    const body = scriptFile(path);
    app.get(`/realms/:realm/login-actions/resources/${name}`, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(body),
    );
  }
}
