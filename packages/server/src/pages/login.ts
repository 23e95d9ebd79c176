import type { FastifyInstance } from 'fastify';
import { answeredAsBadCredentials, authenticatePassword, completeLogin } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { loginActionForm, protectedPost } from './login-context.js';
import { actionUrl, showPage } from './pages.js';
import type { FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

const MAX_USERNAME = 255;
const MAX_PASSWORD = 1024;

export function loginRoutes(app: FastifyInstance, ctx: ServerContext): void {
  loginActionForm(app, ctx, 'authenticate', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await protectedPost(ctx, request, reply, realm, auth, {
        form: 'login',
        fields: ['username', 'password'],
        errorEvent: 'LOGIN_ERROR',
        refusedText: 'We could not verify this sign-in. Please try again.',
        show: (state) => showPage.login(ctx, request, reply, realm, auth, state),
      });
      if (!('form' in posted)) return posted;
      const { form, values, info } = posted;
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
      if (!result.ok && answeredAsBadCredentials(result)) {
        return showPage.login(ctx, request, reply, realm, auth, { values, errors: { username: 'Invalid username or password.' }, status: 401 });
      }
      if (!result.ok && result.error === 'ip_temporarily_blocked') {
        reply.header('retry-after', String(ctx.config.bruteForceIpWindowSeconds));
        return showPage.login(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'Too many failed sign-ins from your network. Please try again later.' }, status: 429 });
      }
      if (!result.ok && result.error === 'user_disabled') {
        return showPage.login(ctx, request, reply, realm, auth, { values, message: { type: 'error', text: 'Account is disabled, contact your administrator.' }, status: 403 });
      }
      if (!result.ok && result.error !== 'resolve_required_actions') throw new Error(`login refusal ${result.error} not mapped`);
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
    },
  });

  app.get('/realms/:realm/login-actions/resources/style.css', async (_request, reply) => {
    return reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(ctx.pages.stylesheet());
  });
}
