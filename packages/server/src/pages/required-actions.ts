import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentSsoSession, newOtpSetup, type AuthSession, type KcActionStatus } from '../authentication/index.js';
import type { PagesContext } from './context.js';
import { userLocaleAtSignIn } from './user-locale.js';
import { passwordExpired, realmPasswordPolicy } from '../credentials/password-policy.js';
import { requestInfo } from '../http/index.js';
import type { Realm, User, UserSession } from '../model/types.js';
import { completeWithConsent } from './consent.js';
import {
  CONFIGURE_TOTP,
  DELETE_ACCOUNT,
  DELETE_ACCOUNT_ROLE,
  EMAIL_PENDING_ATTRIBUTE,
  IDP_LINK,
  TERMS_ACCEPTED_ATTRIBUTE,
  TERMS_AND_CONDITIONS,
  UPDATE_EMAIL,
  UPDATE_PASSWORD,
  UPDATE_PROFILE,
  UPDATE_USER_LOCALE,
  VERIFY_EMAIL,
  WEBAUTHN_REGISTER,
  WEBAUTHN_REGISTER_PASSWORDLESS,
  CONFIGURE_RECOVERY_AUTHN_CODES,
  deleteCredentialTarget,
} from '../required-actions/index.js';
import { idpLinkRefusal, startIdpLink } from './broker-account-link.js';
import { providerName } from './broker-links.js';
import { recoveryCodesSetupPage } from './recovery-code-pages.js';
import { webauthnRegisterPage } from './webauthn-pages.js';
import { dueRequiredActions, effectiveRoles, inPriorityOrder, realmRequiredActions, userSnapshot } from '../services/index.js';
import { loginActionForm } from './login-context.js';
import { authBinding, configPage, profileValues, signInStep, stepExpired, stepState, updateProfilePage, type ShowNewPassword, type StepForm } from './step-pages.js';
import { actionUrl, showPage } from './pages.js';
import { newEmailErrors } from './profile-form.js';
import { setPageClient, type FieldErrors } from './render.js';
import { sendVerification } from './verify-email.js';

/**
 * The required actions of a browser sign-in, after the flow's steps (and again after each action's page): the one
 * function that says what the user is
 * asked next. The user's pending actions and those their account triggers (an unverified address, an expired
 * password) come first, in the realm's priority order, each only while enabled and registered; then the action the
 * application asked for (`kc_action`, Keycloak's application-initiated action), once; then the login completes and
 * the application learns what became of its action (`kc_action_status`). Nothing is kept on the server between
 * pages: each page's key names the user and this sign-in, and the auth session's cookie carries the AIA's outcome.
 */
export async function nextRequiredAction(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  newPasswordPage: ShowNewPassword,
  /** The SSO session of a signed-in user sent here (an AIA, or a consent to ask): the sign-in completes in it. */
  signedIn?: UserSession,
): Promise<FastifyReply> {
  user = await userLocaleAtSignIn(ctx, request, realm, user);
  const done = new Set<string>();
  let session = auth;
  for (;;) {
    const due = (await dueRequiredActions(ctx.storage, realm, user)).filter((alias) => !done.has(alias));
    let alias: string | undefined = due[0];
    let aia = false;
    if (alias === undefined && session.kcAction && !session.kcActionStatus) {
      // Keycloak: an action the realm does not have enabled (or that nobody could carry out, or an address to verify
      // the user lacks) is not run, and the application is told so (kc_action_status=error); the sign-in completes.
      const target = deleteCredentialTarget(session.kcAction, session.kcActionParameter);
      const runnable = target
        ? (await removableCredential(ctx, user, target)) !== null
        : (await inPriorityOrder(ctx.storage, realm.id, [session.kcAction])).length > 0 && (session.kcAction !== VERIFY_EMAIL || user.email);
      if (!runnable) {
        session = await aiaOutcome(ctx, request, reply, realm, session, session.kcAction, 'error');
        break;
      }
      alias = session.kcAction;
      aia = true;
    }
    if (alias === undefined) break;
    if (alias === IDP_LINK) {
      // Keycloak's IdpLinkAction: only asked by an application, with the provider named (idp_link:{alias}); as a
      // user's pending action it is passed over. A provider that cannot be linked, or a user or client without the
      // account client's manage-account(-links), ends the action with kc_action_status=error.
      done.add(alias);
      if (!aia) continue;
      const refusal = await idpLinkRefusal(ctx, realm, session, user);
      if (!refusal) return showRequiredAction(ctx, request, reply, realm, session, user, alias, aia, newPasswordPage);
      await ctx.events.user(realm, {
        type: 'FEDERATED_IDENTITY_LINK_ERROR',
        clientId: session.clientId,
        userId: user.id,
        error: refusal.error,
        details: { identity_provider: (session.kcActionParameter ?? '').slice(0, 255) },
        request: requestInfo(request),
      });
      session = await aiaOutcome(ctx, request, reply, realm, session, alias, 'error');
      continue;
    }
    if (alias === UPDATE_USER_LOCALE) {
      // No page: these pages have one language, so there is no choice of locale to store on the user.
      await ctx.storage.credentials.removeRequiredAction(user.id, alias);
      done.add(alias);
      if (aia) session = await aiaOutcome(ctx, request, reply, realm, session, alias, 'success');
      continue;
    }
    return showRequiredAction(ctx, request, reply, realm, session, user, alias, aia, newPasswordPage);
  }
  // An application-initiated action of a signed-in user completes in the session it was started from.
  const sso = session.kcAction && !signedIn ? await currentSsoSession(ctx, request, realm) : null;
  const existing = signedIn && signedIn.userId === user.id ? signedIn : sso && sso.user.id === user.id ? sso.session : undefined;
  // A consentRequired client's sign-in asks for the consent it lacks before the code (pages/consent.ts).
  return completeWithConsent(ctx, request, reply, realm, session, user, existing);
}

/** The page of one required action (`aia`: asked by the application, so it can be cancelled). */
async function showRequiredAction(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  user: User,
  alias: string,
  aia: boolean,
  newPasswordPage: ShowNewPassword,
): Promise<FastifyReply> {
  const state = stepState(ctx);
  const claims = { sub: user.id, azp: auth.clientId, auth: authBinding(auth), pending: null };
  const target = deleteCredentialTarget(alias, auth.kcActionParameter);
  if (target) {
    const credential = await removableCredential(ctx, user, target);
    const key = await state.seal(realm, 'delete-credential', claims);
    return ctx.pages.send(reply, realm, 'delete-credential-confirm', { ...signInStep(realm, auth, 'delete-credential', aia), key, label: credential?.userLabel || credentialTypeName(credential?.type ?? '') }, 200);
  }
  switch (alias) {
    case UPDATE_PASSWORD: {
      const key = await ctx.actionTokens.issue(realm, 'update-password', user.id, { azp: auth.clientId });
      const expired = passwordExpired(realmPasswordPolicy(realm.passwordPolicy), user.passwordCreated, Date.now());
      const text = aia ? 'Choose a new password.' : expired ? 'Your password has expired. Choose a new one to continue.' : 'You need to choose a new password to continue.';
      return newPasswordPage(reply, realm, auth, key, {}, 200, { type: 'info', text }, aia);
    }
    // Keycloak's VERIFY_EMAIL required action: no session and no code until the address is confirmed. The auth
    // session stays, so signing in again after opening the link goes back to the application.
    case VERIFY_EMAIL:
      await sendVerification(ctx, request, realm, user, user.email!, auth.clientId);
      return showPage.info(
        ctx,
        reply,
        realm,
        'Verify your e-mail address',
        `You need to verify your e-mail address to activate your account. We sent a link to ${user.email}: open it, then sign in again.`,
        { href: actionUrl(realm, 'authenticate'), label: 'Back to sign in' },
      );
    case CONFIGURE_TOTP: {
      const { secret } = newOtpSetup(realm);
      const key = await state.seal(realm, 'config-totp', { ...claims, secret });
      return configPage(ctx, reply, realm, signInStep(realm, auth, 'config-totp', aia), user, key, secret, {}, {}, 200);
    }
    case UPDATE_PROFILE: {
      const key = await state.seal(realm, 'update-profile', claims);
      return updateProfilePage(ctx, reply, realm, signInStep(realm, auth, 'update-profile', aia), user, key, profileValues(user), {}, 200);
    }
    case TERMS_AND_CONDITIONS: {
      const key = await state.seal(realm, 'terms', claims);
      return ctx.pages.send(reply, realm, 'terms', { ...signInStep(realm, auth, 'terms'), key }, 200);
    }
    case UPDATE_EMAIL: {
      const key = await state.seal(realm, 'update-email', claims);
      const pending = user.attributes[EMAIL_PENDING_ATTRIBUTE]?.[0];
      return updateEmailPage(ctx, reply, realm, signInStep(realm, auth, 'update-email', aia), key, { email: pending ?? user.email ?? '' }, {}, 200, pending);
    }
    case DELETE_ACCOUNT: {
      if (!(await mayDeleteOwnAccount(ctx, realm, user))) return showPage.error(ctx, reply, realm, NO_DELETE_ROLE, 403);
      const key = await state.seal(realm, 'delete-account', claims);
      return ctx.pages.send(reply, realm, 'delete-account-confirm', { ...signInStep(realm, auth, 'delete-account', aia), key }, 200);
    }
    case WEBAUTHN_REGISTER:
    case WEBAUTHN_REGISTER_PASSWORDLESS:
      return webauthnRegisterPage(ctx, request, reply, realm, auth, user, alias === WEBAUTHN_REGISTER ? 'two-factor' : 'passwordless', aia);
    case CONFIGURE_RECOVERY_AUTHN_CODES:
      return recoveryCodesSetupPage(ctx, reply, realm, auth, user, aia);
    case IDP_LINK: {
      const provider = auth.kcActionParameter ? await ctx.storage.federation.providerByAlias(realm.id, auth.kcActionParameter) : null;
      const key = await state.seal(realm, 'idp-link', claims);
      return ctx.pages.send(reply, realm, 'link-idp-action', { ...signInStep(realm, auth, 'idp-link', true), key, providerName: provider ? providerName(provider) : '' }, 200);
    }
    default:
      // Every action dueRequiredActions answers is carried out here (required-actions/ says which): a new one needs a page.
      throw new Error(`required action ${alias} has no page`);
  }
}

const updateEmailPage = (ctx: PagesContext, reply: FastifyReply, realm: Realm, form: StepForm, key: string, values: { email: string }, errors: FieldErrors, status: number, pending?: string) =>
  ctx.pages.send(reply, realm, 'update-email', { ...form, key, values, errors, ...(pending ? { message: { type: 'info', text: `A link to confirm ${pending} was sent: open it, or enter the address again for a new link.` } } : {}) }, status);

/** UPDATE_EMAIL's settings in this realm: whether the new address is confirmed by a link, and the wait between links. */
async function updateEmailSettings(ctx: PagesContext, realm: Realm): Promise<{ verify: boolean; cooldownSeconds: number }> {
  const config = (await realmRequiredActions(ctx.storage, realm.id)).find((a) => a.alias === UPDATE_EMAIL)?.config ?? {};
  const cooldown = Number(config.emailResendCooldownSeconds ?? '30');
  return { verify: realm.verifyEmail || config.verifyEmail === 'true', cooldownSeconds: Number.isSafeInteger(cooldown) && cooldown >= 0 ? cooldown : 30 };
}

const NO_DELETE_ROLE = 'You do not have permission to delete your own account. Ask an administrator of this realm.';

/** Keycloak's rule for delete_account: the user holds the `account` client's delete-account role (directly or not). */
async function mayDeleteOwnAccount(ctx: PagesContext, realm: Realm, user: User): Promise<boolean> {
  const roles = await effectiveRoles(ctx.storage, realm.id, user.id);
  return roles.clientRoles.account?.includes(DELETE_ACCOUNT_ROLE) === true;
}

/** The user's credential `id` that delete_credential may remove (any but the password, as Keycloak's account console offers), or null. */
async function removableCredential(ctx: PagesContext, user: User, id: string) {
  return (await ctx.storage.credentials.ofUser(user.id)).find((c) => c.id === id && c.type !== 'password') ?? null;
}

const credentialTypeName = (type: string) => ({ otp: 'authenticator app', webauthn: 'security key', 'webauthn-passwordless': 'passkey', 'recovery-authn-codes': 'recovery codes' })[type] ?? 'sign-in method';

/**
 * Records what became of the application-initiated action `alias` (when it is this sign-in's kc_action and had no
 * outcome yet) in the auth session's cookie, and answers the session as it now is.
 */
export async function aiaOutcome(ctx: PagesContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, alias: string, status: KcActionStatus): Promise<AuthSession> {
  if (auth.kcAction !== alias || auth.kcActionStatus) return auth;
  return ctx.authSessions.save(reply, request, realm, { ...auth, kcActionStatus: status });
}

/**
 * The end of an action's page: the application learns the action's outcome (when it asked for that action), and the
 * user is asked for what comes next.
 */
export async function endAction(
  ctx: PagesContext,
  request: FastifyRequest,
  reply: FastifyReply,
  realm: Realm,
  auth: AuthSession,
  alias: string,
  outcome: KcActionStatus,
  user: User,
  newPasswordPage: ShowNewPassword,
): Promise<FastifyReply> {
  return nextRequiredAction(ctx, request, reply, realm, await aiaOutcome(ctx, request, reply, realm, auth, alias, outcome), user, newPasswordPage);
}

export function requiredActionRoutes(app: FastifyInstance, ctx: PagesContext, newPasswordPage: ShowNewPassword): void {
  const state = stepState(ctx);

  // An application-initiated action of a signed-in user (the authorization endpoint sends the browser here with
  // the action in its auth session): the SSO session's user is asked for it.
  app.get('/realms/:realm/login-actions/required-action', async (request: FastifyRequest<{ Params: { realm: string } }>, reply) => {
    const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
    if (!realm || !realm.enabled) return showPage.error(ctx, reply, null, 'Realm does not exist.', 404);
    const auth = await ctx.authSessions.current(request, realm);
    if (!auth) return showPage.error(ctx, reply, realm, 'Your login attempt timed out or this page is no longer valid. Please start again from the application.', 400);
    setPageClient(request, auth.clientId);
    const sso = await currentSsoSession(ctx, request, realm);
    if (!sso) return showPage.login(ctx, request, reply, realm, auth, {});
    return nextRequiredAction(ctx, request, reply, realm, auth, sso.user, newPasswordPage, sso.session);
  });

  // TERMS_AND_CONDITIONS: accepting records when, on the user (Keycloak's terms_and_conditions attribute, seconds);
  // declining ends the sign-in, and the application gets access_denied, as Keycloak answers.
  loginActionForm(app, ctx, 'terms', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'terms', ['accept', 'cancel']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      const { user } = step;
      const info = requestInfo(request);
      if (form.cancel || !form.accept) {
        ctx.authSessions.end(reply, request, realm);
        await ctx.events.user(realm, { type: 'CUSTOM_REQUIRED_ACTION_ERROR', clientId: auth.clientId, userId: user.id, error: 'rejected_by_user', details: { custom_required_action: TERMS_AND_CONDITIONS }, request: info });
        return ctx.loginProtocol.refused(request, reply, realm, auth, 'access_denied', 'termsAndConditionsDeclined');
      }
      const accepted = { ...user, attributes: { ...user.attributes, [TERMS_ACCEPTED_ATTRIBUTE]: [String(Math.floor(Date.now() / 1000))] } };
      await ctx.storage.users.update(accepted);
      await ctx.storage.credentials.removeRequiredAction(user.id, TERMS_AND_CONDITIONS);
      await ctx.events.user(realm, { type: 'CUSTOM_REQUIRED_ACTION', clientId: auth.clientId, userId: user.id, details: { custom_required_action: TERMS_AND_CONDITIONS }, request: info, user: () => userSnapshot(ctx.storage, accepted) });
      return endAction(ctx, request, reply, realm, auth, TERMS_AND_CONDITIONS, 'success', accepted, newPasswordPage);
    },
  });
  // idp_link (Keycloak 26, kc_action=idp_link:{alias}): "Yes" sends the browser to the provider, the state bound to
  // this auth session and user (the callback, pages/broker.ts, links the account and goes on); "No" cancels. The
  // provider and the roles are checked again: they may have changed since the page was shown.
  loginActionForm(app, ctx, 'idp-link', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'idp-link', ['link', 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      if (auth.kcAction !== IDP_LINK || auth.kcActionStatus) return stepExpired(ctx, request, reply, realm, auth);
      const { user } = step;
      if (form['cancel-aia'] || !form.link) return endAction(ctx, request, reply, realm, auth, IDP_LINK, 'cancelled', user, newPasswordPage);
      const refusal = await idpLinkRefusal(ctx, realm, auth, user);
      if (refusal || !auth.kcActionParameter) {
        await ctx.events.user(realm, { type: 'FEDERATED_IDENTITY_LINK_ERROR', clientId: auth.clientId, userId: user.id, error: refusal?.error ?? 'identity_provider_not_found', details: { identity_provider: (auth.kcActionParameter ?? '').slice(0, 255) }, request: requestInfo(request) });
        return endAction(ctx, request, reply, realm, auth, IDP_LINK, 'error', user, newPasswordPage);
      }
      const provider = (await ctx.storage.federation.providerByAlias(realm.id, auth.kcActionParameter))!;
      return startIdpLink(ctx, request, reply, realm, auth, user, provider);
    },
  });
  // delete_account: the user confirms and the account is deleted (its sessions and credentials with it); the
  // sign-in ends there, as in Keycloak (no code goes back to the application). The role is checked again here:
  // it may have been taken away since the page was shown.
  loginActionForm(app, ctx, 'delete-account', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'delete-account', ['confirm', 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      const { user } = step;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, DELETE_ACCOUNT, 'cancelled', user, newPasswordPage);
      const info = requestInfo(request);
      if (!(await mayDeleteOwnAccount(ctx, realm, user))) {
        await ctx.events.user(realm, { type: 'DELETE_ACCOUNT_ERROR', clientId: auth.clientId, userId: user.id, error: 'user_delete_error', details: { reason: 'does not have the required roles for user deletion' }, request: info });
        return ctx.pages.send(reply, realm, 'delete-account-confirm', { ...signInStep(realm, auth, 'delete-account', auth.kcAction === DELETE_ACCOUNT && !auth.kcActionStatus), key: form.key, error: NO_DELETE_ROLE }, 403);
      }
      const snapshot = await userSnapshot(ctx.storage, user);
      await ctx.storage.users.delete(user.id);
      ctx.authSessions.end(reply, request, realm);
      await ctx.events.user(realm, { type: 'DELETE_ACCOUNT', clientId: auth.clientId, userId: user.id, request: info, user: snapshot });
      return showPage.info(ctx, reply, realm, 'Account deleted', 'Your account has been deleted.');
    },
  });
  // delete_credential:{id} (asked for by the account console): the user confirms and that credential is removed
  // (REMOVE_CREDENTIAL, as the account API's removal records), then back to the application.
  loginActionForm(app, ctx, 'delete-credential', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'delete-credential', ['confirm', 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      const target = deleteCredentialTarget(auth.kcAction, auth.kcActionParameter);
      if (!target) return stepExpired(ctx, request, reply, realm, auth);
      const { user } = step;
      if (form['cancel-aia'] || !form.confirm) return endAction(ctx, request, reply, realm, auth, auth.kcAction!, 'cancelled', user, newPasswordPage);
      const credential = await removableCredential(ctx, user, target);
      const removed = credential !== null && (await ctx.storage.credentials.delete(user.id, credential.id));
      if (removed) {
        await ctx.events.user(realm, {
          type: 'REMOVE_CREDENTIAL',
          clientId: auth.clientId,
          userId: user.id,
          details: { credential_type: credential.type, credential_id: credential.id, ...(credential.userLabel ? { credential_user_label: credential.userLabel } : {}), username: user.username },
          request: requestInfo(request),
        });
      }
      return endAction(ctx, request, reply, realm, auth, auth.kcAction!, removed ? 'success' : 'error', user, newPasswordPage);
    },
  });
  // UPDATE_EMAIL: the new address passes the profile's rules (as the profile page's does); it is set at once, or,
  // when the realm verifies e-mail or the action forces it, confirmed by a link to the new address (the sign-in
  // stops at the page saying so, as Keycloak's; opening the link sets the address and ends the action).
  loginActionForm(app, ctx, 'update-email', {
    show: showPage.login,
    post: async (request, reply, realm, auth) => {
      const posted = await state.post(request, reply, realm, auth, 'update-email', ['email', 'cancel-aia']);
      if ('answered' in posted) return posted.answered;
      const { form, step } = posted;
      const { user } = step;
      if (form['cancel-aia']) return endAction(ctx, request, reply, realm, auth, UPDATE_EMAIL, 'cancelled', user, newPasswordPage);
      const email = form.email.trim().toLowerCase();
      const at = { clientId: auth.clientId, sessionId: null, details: {} };
      const again = (errors: FieldErrors, status = 400) =>
        updateEmailPage(ctx, reply, realm, signInStep(realm, auth, 'update-email', auth.kcAction === UPDATE_EMAIL && !auth.kcActionStatus), form.key, { email: form.email.slice(0, 254) }, errors, status);
      const errors = await newEmailErrors(ctx, request, realm, user, email, at);
      if (Object.keys(errors).length) return again(errors);
      const settings = await updateEmailSettings(ctx, realm);
      const info = requestInfo(request);
      if (!settings.verify || (email === user.email && user.emailVerified)) {
        const { [EMAIL_PENDING_ATTRIBUTE]: _, ...attributes } = user.attributes;
        const updated = { ...user, attributes, email, emailVerified: email === user.email ? user.emailVerified : false };
        await ctx.storage.users.update(updated);
        await ctx.storage.credentials.removeRequiredAction(user.id, UPDATE_EMAIL);
        await ctx.events.user(realm, { type: 'UPDATE_EMAIL', clientId: auth.clientId, userId: user.id, details: { previous_email: user.email ?? '', updated_email: email }, request: info, user: () => userSnapshot(ctx.storage, updated) });
        return endAction(ctx, request, reply, realm, auth, UPDATE_EMAIL, 'success', updated, newPasswordPage);
      }
      // One link per cooldown, whichever node is asked: the shared store holds when the last one went.
      const cooldownKey = `update-email-cooldown:${realm.id}:${user.id}`;
      if (settings.cooldownSeconds > 0 && !(await ctx.hostStore.setIfAbsent(cooldownKey, String(Date.now()), settings.cooldownSeconds * 1000))) {
        const sentAt = Number(await ctx.hostStore.get(cooldownKey));
        const wait = Number.isFinite(sentAt) ? Math.max(1, Math.ceil((sentAt + settings.cooldownSeconds * 1000 - Date.now()) / 1000)) : settings.cooldownSeconds;
        return again({ email: `You must wait ${wait} seconds before another link can be sent.` }, 429);
      }
      const pending = { ...user, attributes: { ...user.attributes, [EMAIL_PENDING_ATTRIBUTE]: [email] } };
      await ctx.storage.users.update(pending);
      await sendVerification(ctx, request, realm, pending, email, auth.clientId);
      return showPage.info(ctx, reply, realm, 'Confirm your new e-mail address', `We sent a link to ${email}. Your e-mail address changes when you open it.`);
    },
  });
}
