import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { verifyPassword } from '../credentials/index.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { findLoginUser } from '../protocol/openid-connect/token/password.js';
import type { AuthSession } from './auth-session.js';
import { completeLogin } from './complete.js';
import { actionUrl, showPage, keepValues } from './pages.js';
import { formValues, runProtectors } from './protection.js';
import type { FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
const MAX_USERNAME = 255;
const MAX_PASSWORD = 1024;

/** The realm and auth session behind a login-actions request, or the page that explains why there is none. */
export async function loginContext(ctx: ServerContext, request: RealmRequest, reply: FastifyReply): Promise<{ realm: Realm; auth: AuthSession } | FastifyReply> {
  const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
  if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
  const auth = await ctx.authSessions.current(request, realm);
  if (!auth) {
    return showPage.error(ctx, reply, realm, 'Your login attempt timed out or this page is no longer valid. Please start again from the application.', 400);
  }
  return { realm, auth };
}

/** A form post must carry the auth session's CSRF token; anything else changes nothing. */
export function csrfRejected(ctx: ServerContext, reply: FastifyReply, realm: Realm, auth: AuthSession, form: Record<string, string>): Promise<FastifyReply> | null {
  if (ctx.authSessions.csrfValid(auth, form.session_code)) return null;
  return showPage.error(ctx, reply, realm, 'This form has expired or was not sent from this page. Please go back and try again.', 400);
}

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
    const user = await findLoginUser(ctx, realm, form.username);
    const valid = await verifyPassword(form.password, user?.passwordHash ?? null);
    if (!user || !valid || user.serviceAccountClientId) {
      await ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: auth.clientId, userId: user?.id ?? null, error: user ? 'invalid_user_credentials' : 'user_not_found', details: { auth_method: 'openid-connect', username: values.username }, request: info });
      return showPage.login(ctx, request, reply, realm, auth, { values, errors: { username: 'Invalid username or password.' }, status: 401 });
    }
    if (!user.enabled) {
      await ctx.events.user(realm, { type: 'LOGIN_ERROR', clientId: auth.clientId, userId: user.id, error: 'user_disabled', details: { auth_method: 'openid-connect', username: values.username }, request: info });
      return showPage.login(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
    }
    // Keycloak's VERIFY_EMAIL required action: no session and no code until the address is confirmed. The auth
    // session stays, so signing in again after opening the link goes back to the application.
    if (realm.verifyEmail && user.email && !user.emailVerified) {
      await sendVerification(ctx, request, realm, user, user.email, auth.clientId);
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
