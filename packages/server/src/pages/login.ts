import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticatePassword, completeLogin } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { csrfRejected, loginContext } from './login-context.js';
import { actionUrl, showPage, keepValues } from './pages.js';
import { formValues, runProtectors } from './protection.js';
import type { FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
const MAX_USERNAME = 255;
const MAX_PASSWORD = 1024;

export function loginRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/login-actions/authenticate', async (request: RealmRequest, reply) => {
    const c = await loginContext(ctx, request, reply);
    if (!('realm' in c)) return c;
    return showPage.login(ctx, request, reply, c.realm, c.auth, {});
  });

  app.post('/realms/:realm/login-actions/authenticate', async (request: RealmRequest, reply) => {
    const c = await loginContext(ctx, request, reply);
    if (!('realm' in c)) return c;
    const { realm, auth } = c;
    const form = formValues(request.body, ['username', 'password', 'session_code']);
    const rejected = csrfRejected(ctx, reply, realm, auth, form);
    if (rejected) return rejected;
    const info = requestInfo(request);
    const values = keepValues(form, ['username']);
    const steps = await ctx.flows.loginSteps(realm);
    const refusal = await runProtectors(realm, 'login', steps.protectors, info, form);
    if (refusal) {
      await ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: auth.clientId, error: refusal.error, details: { reason: refusal.reason, protector: refusal.protector, username: values.username }, request: info });
      if (refusal.status === 503) reply.header('retry-after', String(refusal.retryAfterSeconds ?? 5));
      return showPage.login(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'We could not verify this sign-in. Please try again.' }, status: refusal.status ?? 400 });
    }
    if (!form.username || !form.password || form.username.length > MAX_USERNAME || form.password.length > MAX_PASSWORD) {
      const errors: FieldErrors = {};
      if (!form.username) errors.username = 'Please enter your username.';
      else if (form.username.length > MAX_USERNAME) errors.username = `Must be at most ${MAX_USERNAME} characters.`;
      if (!form.password) errors.password = 'Please enter your password.';
      else if (form.password.length > MAX_PASSWORD) errors.password = 'Password is too long.';
      return showPage.login(ctx, request, reply, realm, auth, { values, errors, status: 400 });
    }
    const result = await authenticatePassword(ctx, realm, {
      username: values.username,
      password: form.password,
      clientId: auth.clientId,
      details: { auth_method: 'openid-connect' },
      request: info,
      requiredActions: 'perform',
    });
    if (!result.ok && (result.error === 'user_not_found' || result.error === 'invalid_user_credentials')) {
      return showPage.login(ctx, request, reply, realm, auth, { values, errors: { username: 'Invalid username or password.' }, status: 401 });
    }
    if (!result.ok && result.error === 'user_disabled') {
      return showPage.login(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
    }
    const user = result.user;
    // Keycloak's VERIFY_EMAIL required action: no session and no code until the address is confirmed. The auth
    // session stays, so signing in again after opening the link goes back to the application.
    if (!result.ok) {
      await sendVerification(ctx, request, realm, user, user.email!, auth.clientId);
      return showPage.info(
        ctx,
        reply,
        realm,
        'Verify your e-mail address',
        `You need to verify your e-mail address to activate your account. We sent a link to ${user.email}: open it, then sign in again.`,
        { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' },
      );
    }
    return completeLogin(ctx, request, reply, realm, auth, user);
  });

  app.get('/realms/:realm/login-actions/resources/style.css', async (_request, reply) => {
    return reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(ctx.pages.stylesheet());
  });
}
