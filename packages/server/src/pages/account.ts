import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PagesContext } from './context.js';
import { secretsEqual } from '../credentials/index.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { PasswordPolicyError } from '../model/errors.js';
import { ACCOUNT_CONSOLE } from '../model/defaults.js';
import type { Realm, User, UserSession } from '../model/types.js';
import { setPassword, userSnapshot } from '../services/index.js';
import { showPage } from './pages.js';
import { PROFILE_FORM_FIELDS, saveProfileForm } from './profile-form.js';
import { formValues } from './protection.js';
import { clearSsoCookie, currentSsoSession, verifyCurrentPassword } from '../authentication/index.js';

type RealmRequest = FastifyRequest<{ Params: { realm: string } }>;
type Tab = 'profile' | 'password' | 'delete';

/** Delete-account is Keycloak's `delete_account` action; here a realm attribute switches it on. */
export const deleteAccountAllowed = (realm: Realm) => realm.deleteAccountAllowed || realm.attributes.deleteAccountAllowed === 'true';

/**
 * The server-rendered account pages (/account/profile, /account/password, /account/delete; /account/ itself is
 * Keycloak's account console, account-api/console.ts) use the realm's SSO session directly (no tokens): a visitor
 * without one signs in through the account-console client and comes back to the page.
 */
export function accountRoutes(app: FastifyInstance, ctx: PagesContext): void {
  const base = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}/account`;

  /** The signed-in user, or null when a page (the sign-in form, an error) has been sent instead. */
  const signedIn = async (request: RealmRequest, reply: FastifyReply, path = '/profile'): Promise<{ realm: Realm; user: User; session: UserSession } | null> => {
    const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) {
      await showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
      return null;
    }
    const sso = await currentSsoSession(ctx, request, realm);
    if (sso) return { realm, ...sso };
    const auth = await ctx.authSessions.start(reply, request, realm, {
      clientId: ACCOUNT_CONSOLE,
      redirectUri: `${baseUrl(request, ctx.config.hostname)}${base(realm)}${path}`,
      responseMode: 'query',
      scope: 'openid profile email',
      state: null,
      nonce: null,
      // The page never redeems the code (the SSO cookie is what it needs), but the client requires PKCE.
      codeChallenge: randomBytes(32).toString('base64url'),
    });
    if (!auth) await showPage.error(ctx, reply, realm, 'The address of this page is too long.', 400);
    else await showPage.login(ctx, request, reply, realm, auth, {});
    return null;
  };

  const csrfFor = async (session: UserSession) => {
    const key = `account-csrf:${session.id}`;
    const existing = await ctx.hostStore.get(key);
    if (existing) return existing;
    const token = randomBytes(24).toString('base64url');
    await ctx.hostStore.set(key, token, 8 * 3600 * 1000);
    return token;
  };

  const render = async (reply: FastifyReply, realm: Realm, user: User, session: UserSession, tab: Tab, state: { values?: Record<string, string>; errors?: Record<string, string>; message?: { type: 'error' | 'info' | 'success'; text: string }; status?: number } = {}) =>
    ctx.pages.send(
      reply,
      realm,
      'account',
      {
        tab,
        base: base(realm),
        csrf: await csrfFor(session),
        username: user.username,
        deleteAllowed: deleteAccountAllowed(realm),
        logoutUrl: `/realms/${encodeURIComponent(realm.name)}/protocol/openid-connect/logout`,
        values: state.values ?? { firstName: user.firstName ?? '', lastName: user.lastName ?? '', email: user.email ?? '' },
        errors: state.errors ?? {},
        message: state.message,
      },
      state.status ?? 200,
    );

  const posted = async (request: RealmRequest, reply: FastifyReply, names: string[]) => {
    const c = await signedIn(request, reply);
    if (!c) return { done: reply } as const;
    const form = formValues(request.body, [...names, 'session_code']);
    const expected = await ctx.hostStore.get(`account-csrf:${c.session.id}`);
    if (!expected || !secretsEqual(form.session_code, expected)) {
      return { done: await showPage.error(ctx, reply, c.realm, 'This form has expired or was not sent from this page. Please go back and try again.', 400) } as const;
    }
    return { ...c, form } as const;
  };

  for (const [path, tab] of [['/profile', 'profile'], ['/password', 'password'], ['/delete', 'delete']] as const) {
    app.get(`/realms/:realm/account${path}`, async (request: RealmRequest, reply) => {
      const c = await signedIn(request, reply, path);
      if (!c) return reply;
      if (tab === 'delete' && !deleteAccountAllowed(c.realm)) return showPage.error(ctx, reply, c.realm, 'Deleting accounts is not allowed in this realm.', 403);
      return render(reply, c.realm, c.user, c.session, tab);
    });
  }

  app.post('/realms/:realm/account', async (request: RealmRequest, reply) => {
    const p = await posted(request, reply, [...PROFILE_FORM_FIELDS]);
    if ('done' in p) return p.done;
    const { realm, user, session, form } = p;
    const saved = await saveProfileForm(ctx, request, realm, user, form, { clientId: ACCOUNT_CONSOLE, sessionId: session.id, details: { context: 'ACCOUNT' } });
    if (!saved.ok) return render(reply, realm, user, session, 'profile', { values: saved.values, errors: saved.errors, status: 400 });
    const text = saved.verificationSentTo ? `We sent a link to ${saved.verificationSentTo}. Your e-mail address changes when you open it.` : 'Your account has been updated.';
    return render(reply, realm, saved.user, session, 'profile', { message: { type: 'success', text } });
  });

  app.post('/realms/:realm/account/password', async (request: RealmRequest, reply) => {
    const p = await posted(request, reply, ['password', 'password-new', 'password-confirm']);
    if ('done' in p) return p.done;
    const { realm, user, session, form } = p;
    const errors: Record<string, string> = {};
    // The current password is limited as a sign-in's is (the address, the realm's lockout, the per-user cap).
    const current = await verifyCurrentPassword(ctx, realm, user, form.password, { clientId: ACCOUNT_CONSOLE, sessionId: session.id, details: { context: 'ACCOUNT' }, request: requestInfo(request), errorEvent: 'UPDATE_PASSWORD_ERROR' });
    if (!current.ok && current.error !== 'invalid_user_credentials') {
      const text = current.error === 'ip_temporarily_blocked' ? 'Too many failed sign-ins from your network. Please try again later.' : 'Too many failed attempts. Please try again later.';
      return render(reply, realm, user, session, 'password', { message: { type: 'error', text }, status: 429 });
    }
    if (!current.ok) errors.password = 'Invalid existing password.';
    if (!form['password-new']) errors['password-new'] = 'Please specify password.';
    else if (form['password-new'].length > 1024) errors['password-new'] = 'Password is too long.';
    else if (form['password-new'] !== form['password-confirm']) errors['password-confirm'] = "Passwords don't match.";
    if (Object.keys(errors).length) return render(reply, realm, user, session, 'password', { errors, status: 400 });
    let updated: User;
    try {
      updated = await setPassword(ctx, realm, user, form['password-new']);
    } catch (error) {
      if (!(error instanceof PasswordPolicyError)) throw error;
      return render(reply, realm, user, session, 'password', { errors: { 'password-new': error.message }, status: 400 });
    }
    await ctx.events.user(realm, { type: 'UPDATE_PASSWORD', clientId: ACCOUNT_CONSOLE, userId: user.id, sessionId: session.id, request: requestInfo(request), user: () => userSnapshot(ctx.storage, updated) });
    return render(reply, realm, updated, session, 'password', { message: { type: 'success', text: 'Your password has been updated.' } });
  });

  app.post('/realms/:realm/account/delete', async (request: RealmRequest, reply) => {
    const p = await posted(request, reply, ['confirm']);
    if ('done' in p) return p.done;
    const { realm, user, session } = p;
    if (!deleteAccountAllowed(realm)) return showPage.error(ctx, reply, realm, 'Deleting accounts is not allowed in this realm.', 403);
    const snapshot = await userSnapshot(ctx.storage, user);
    await ctx.storage.users.delete(user.id);
    clearSsoCookie(ctx, request, reply, realm);
    await ctx.events.user(realm, { type: 'DELETE_ACCOUNT', clientId: ACCOUNT_CONSOLE, userId: user.id, sessionId: session.id, request: requestInfo(request), user: snapshot });
    return showPage.info(ctx, reply, realm, 'Your account has been deleted', 'Your profile is gone and you have been signed out.');
  });
}
