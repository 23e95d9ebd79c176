import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { userLocaleHint } from './user-locale.js';
import { configureOtp, newOtpSetup, type ActionClaims } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import { PasswordPolicyError } from '../model/errors.js';
import type { Realm, User } from '../model/types.js';
import { CONFIGURE_TOTP, UPDATE_PASSWORD, UPDATE_PROFILE } from '../required-actions/index.js';
import { checkNewPassword, inPriorityOrder, setPassword, userSnapshot } from '../services/index.js';
import { configPage, INVALID_CODE, MAX_LABEL, profileValues, updateProfilePage, type StepForm } from './step-pages.js';
import { actionUrl, showPage } from './pages.js';
import { PROFILE_FORM_FIELDS, saveProfileForm } from './profile-form.js';
import { formValues } from './protection.js';
import type { FieldErrors } from './render.js';

/**
 * The pages of an administrator's `execute-actions-email` link, carried out from the link as Keycloak does, in the
 * realm's priority order of required actions (as a sign-in asks them): the authenticator app (CONFIGURE_TOTP), a new
 * password (UPDATE_PASSWORD), the profile (UPDATE_PROFILE); VERIFY_EMAIL is done by opening the link, and the others
 * (TERMS_AND_CONDITIONS, …) are set on the user for the next sign-in. No sign-in happens:
 * the last page says the account is up to date and leads to the link's `redirect_uri` or to the sign-in.
 *
 * Between pages each form carries a fresh single-use execute-actions token naming what is left (and, for the
 * app, the secret the page shows), so a page posted twice, or a token of another user, is refused as expired.
 * An action left undone stays on the user as a required action for the next sign-in (set when the link opened).
 */
export const LINK_ACTIONS: readonly string[] = [CONFIGURE_TOTP, UPDATE_PASSWORD, UPDATE_PROFILE];

/** The client an event names when the link names none (Keycloak's execute-actions default: the account client). */
const DEFAULT_CLIENT = 'account';

/** How long a page of the link may stay open before it is posted. */
const STEP_LIFETIME_S = 600;

export type SignInLink = (request: FastifyRequest, realm: Realm, label: string) => Promise<{ href: string; label: string }>;

interface LinkState {
  azp?: string;
  redirect?: string;
}

/** The page of the first of `actions` a link carries out (in the realm's priority order), or the end when none is left. */
export async function showLinkStep(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  user: User,
  link: LinkState,
  actions: readonly string[],
  signInLink: SignInLink,
): Promise<FastifyReply> {
  const left = (await inPriorityOrder(ctx.storage, realm.id, actions)).filter((action) => LINK_ACTIONS.includes(action));
  if (left.length === 0) {
    const back = link.redirect ? { href: link.redirect, label: 'Back to application' } : await signInLink(request, realm, 'Continue');
    return showPage.info(ctx, reply, realm, 'Your account has been updated', 'Thank you: your account is up to date.', back);
  }
  const issue = (extra: { totpSecret?: string } = {}) => ctx.actionTokens.issue(realm, 'execute-actions', user.id, { ...link, act: left, ...extra }, STEP_LIFETIME_S);
  const form: StepForm = { action: actionUrl(realm, 'execute-actions'), csrf: '' };
  if (left[0] === CONFIGURE_TOTP) {
    const { secret } = newOtpSetup(realm);
    return configPage(ctx, reply, realm, form, user, await issue({ totpSecret: secret }), secret, {}, {}, 200);
  }
  if (left[0] === UPDATE_PASSWORD) return ctx.pages.send(reply, realm, 'update-password', { ...form, key: await issue(), errors: {} });
  return updateProfilePage(ctx, reply, realm, form, user, await issue(), profileValues(user), {}, 200);
}

export function executeActionsRoutes(app: FastifyInstance, ctx: PagesContext, signInLink: SignInLink, expired: (request: FastifyRequest, reply: FastifyReply, realm: Realm) => Promise<FastifyReply>): void {
  app.post('/realms/:realm/login-actions/execute-actions', async (request: FastifyRequest<{ Params: { realm: string } }>, reply) => {
    const realm = await ctx.storage.realms.byName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
    const form = formValues(request.body, ['key', 'totp', 'userLabel', 'password-new', 'password-confirm', ...PROFILE_FORM_FIELDS]);
    const claims = await ctx.actionTokens.read(realm, form.key, 'execute-actions');
    const user = claims ? await ctx.storage.users.byId(realm.id, claims.sub) : null;
    if (user) userLocaleHint(request, user);
    const action = claims?.act?.find((a) => LINK_ACTIONS.includes(a));
    if (!claims || !user || !user.enabled || !action) return expired(request, reply, realm);
    const link = linkState(claims);
    const left = claims.act!;
    const info = requestInfo(request);
    const formAt: StepForm = { action: actionUrl(realm, 'execute-actions'), csrf: '' };
    // One request wins the page's token; a refused answer gets a new token for the same page.
    if (!(await ctx.actionTokens.consume(claims))) return expired(request, reply, realm);
    const again = (extra: { totpSecret?: string } = {}) => ctx.actionTokens.issue(realm, 'execute-actions', user.id, { ...link, act: left, ...extra }, STEP_LIFETIME_S);
    const next = (done: User) => showLinkStep(ctx, request, reply, realm, done, link, left.filter((a) => a !== action), signInLink);

    if (action === CONFIGURE_TOTP) {
      const secret = typeof claims.totpSecret === 'string' ? claims.totpSecret : null;
      if (!secret) return expired(request, reply, realm);
      const label = form.userLabel.trim();
      const refused = async (errors: FieldErrors) => configPage(ctx, reply, realm, formAt, user, await again({ totpSecret: secret }), secret, { userLabel: label.slice(0, MAX_LABEL) }, errors, 400);
      if (label.length > MAX_LABEL) return refused({ userLabel: `Must be at most ${MAX_LABEL} characters.` });
      const code = form.totp.trim();
      if (!code) return refused({ totp: 'Please enter the code from your app.' });
      const saved = await configureOtp(ctx, realm, user, { secret, code, userLabel: label || null }, { clientId: claims.azp ?? DEFAULT_CLIENT, details: { custom_required_action: CONFIGURE_TOTP }, request: info });
      return saved ? next(user) : refused({ totp: INVALID_CODE });
    }

    if (action === UPDATE_PASSWORD) {
      const password = form['password-new'];
      const refused = async (errors: FieldErrors) => ctx.pages.send(reply, realm, 'update-password', { ...formAt, key: await again(), errors }, 400);
      if (!password) return refused({ 'password-new': 'Please specify password.' });
      if (password.length > 1024) return refused({ 'password-new': 'Password is too long.' });
      if (password !== form['password-confirm']) return refused({ 'password-confirm': "Passwords don't match." });
      try {
        await checkNewPassword(ctx.storage, realm, user, password);
      } catch (error) {
        if (!(error instanceof PasswordPolicyError)) throw error;
        return refused({ 'password-new': error.message });
      }
      const updated = await setPassword(ctx, realm, user, password);
      await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_PASSWORD);
      // The old password may be known to someone else: end every session it opened.
      await ctx.storage.sessions.deleteForUser(user.id);
      await ctx.events.user(realm, { type: 'UPDATE_PASSWORD', clientId: claims.azp ?? DEFAULT_CLIENT, userId: user.id, details: { username: user.username, custom_required_action: UPDATE_PASSWORD }, request: info, user: () => userSnapshot(ctx.storage, updated) });
      return next(updated);
    }

    const saved = await saveProfileForm(ctx, request, realm, user, form, { clientId: claims.azp ?? DEFAULT_CLIENT, sessionId: null, details: { custom_required_action: UPDATE_PROFILE } });
    if (!saved.ok) return updateProfilePage(ctx, reply, realm, formAt, user, await again(), saved.values, saved.errors, 400);
    await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_PROFILE);
    return next(saved.user);
  });
}

/** The link's claims as the first page needs them. */
export const linkState = (claims: ActionClaims): LinkState => ({ ...(claims.azp ? { azp: claims.azp } : {}), ...(claims.redirect ? { redirect: claims.redirect } : {}) });
