import type { RequestInfo } from '@realmgate/spi';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthSession, FormState } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { keepValues, showPage } from './pages.js';
import { formValues, runProtectors } from './protection.js';
import { addLocaleHints, setPageClient } from './render.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;

/** A realm setting a page needs (registrationAllowed …), and what the page says when it is off. */
export interface PageSwitch {
  on: (realm: Realm, auth: AuthSession) => boolean;
  off: string;
}

/**
 * The realm and auth session behind a login-actions request, or the page that explains why there is none
 * (or, with `needs`, why this realm does not offer the page).
 */
export async function loginContext(ctx: PagesContext, request: RealmRequest, reply: FastifyReply, needs?: PageSwitch): Promise<{ realm: Realm; auth: AuthSession } | FastifyReply> {
  const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
  if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
  const auth = await ctx.authSessions.current(request, realm);
  if (!auth) {
    return showPage.error(ctx, reply, realm, 'Your login attempt timed out or this page is no longer valid. Please start again from the application.', 400);
  }
  if (auth.uiLocales) addLocaleHints(request, { uiLocales: auth.uiLocales });
  setPageClient(request, auth.clientId);
  if (needs && !needs.on(realm, auth)) return showPage.error(ctx, reply, realm, needs.off, 403);
  return { realm, auth };
}

/** A form post must carry the auth session's CSRF token; anything else changes nothing. */
export function csrfRejected(ctx: PagesContext, reply: FastifyReply, realm: Realm, auth: AuthSession, form: Record<string, string>): Promise<FastifyReply> | null {
  if (ctx.authSessions.csrfValid(auth, form.session_code)) return null;
  return showPage.error(ctx, reply, realm, 'This form has expired or was not sent from this page. Please go back and try again.', 400);
}

export interface ProtectedPost {
  form: 'login' | 'reset-credentials';
  /** The form's fields besides session_code. */
  fields: readonly string[];
  /** Recorded when a protector refuses, with what was typed as details.username. */
  errorEvent: 'LOGIN_ERROR' | 'RESET_PASSWORD_ERROR';
  refusedText: string;
  /** The form's own page, shown again on a refusal. */
  show: (state: FormState) => Promise<FastifyReply>;
}

/**
 * The start of the sign-in and reset form posts: the fields, the CSRF token, then the flow's protectors before
 * anything looks at an account. A refusal is recorded and answered on the form's page (503 with Retry-After), and
 * null tells the caller the answer is sent. Not the reply itself: a Fastify reply is a thenable, so an async
 * function returning it resolves to undefined once it is sent, which the caller took for a form (a TypeError
 * logged as an error after every refused post).
 */
export async function protectedPost(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  post: ProtectedPost,
): Promise<{ form: Record<string, string>; values: Record<string, string>; info: RequestInfo } | null> {
  const form = formValues(request.body, [...post.fields, 'session_code']);
  const rejected = csrfRejected(ctx, reply, realm, auth, form);
  if (rejected) {
    await rejected;
    return null;
  }
  const info = requestInfo(request);
  const values = keepValues(form, ['username']);
  const steps = post.form === 'login' ? await ctx.flows.loginSteps(realm, auth.clientId) : await ctx.flows.resetSteps(realm);
  const refusal = await runProtectors(realm, post.form, steps.protectors, info, form);
  if (!refusal) return { form, values, info };
  await ctx.events.user(realm, { type: post.errorEvent, clientId: auth.clientId, error: refusal.error, details: { reason: refusal.reason, protector: refusal.protector, username: values.username }, request: info });
  if (refusal.status === 503) reply.header('retry-after', String(refusal.retryAfterSeconds ?? 5));
  await post.show({ values, message: { type: 'error', text: post.refusedText }, status: refusal.status ?? 400 });
  return null;
}

type ShowForm = (ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState) => Promise<FastifyReply>;

/**
 * A form of the login pages at `/realms/:realm/login-actions/<action>`: GET shows it, POST hands it to `post`;
 * both only within a live auth session (and where the realm offers the page).
 */
export function loginActionForm(
  app: FastifyInstance,
  ctx: PagesContext,
  action: string,
  form: { needs?: PageSwitch; show: ShowForm; post: (request: RealmRequest, reply: FastifyReply, realm: Realm, auth: AuthSession) => Promise<FastifyReply> },
): void {
  const path = `/realms/:realm/login-actions/${action}`;
  app.get(path, async (request: RealmRequest, reply) => {
    const c = await loginContext(ctx, request, reply, form.needs);
    if (!('realm' in c)) return c;
    return form.show(ctx, request, reply, c.realm, c.auth, {});
  });
  app.post(path, async (request: RealmRequest, reply) => {
    const c = await loginContext(ctx, request, reply, form.needs);
    if (!('realm' in c)) return c;
    return form.post(request, reply, c.realm, c.auth);
  });
}
