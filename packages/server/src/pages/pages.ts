import { setPageClient } from './render.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PagesContext } from './context.js';
import { requestInfo } from '../http/index.js';
import type { Realm } from '../model/types.js';
import { defaultBrowserSecurityHeaders } from '../model/browser-security-headers.js';
import type { AuthSession, FormState, LoginForms } from '../authentication/index.js';
import type { ProtectedForm } from '@realmgate/spi';
import { protectorMarkup, type ProtectorStep } from './protection.js';
import { loginButtons } from './broker-links.js';
import { authenticationOptions } from '../authentication/webauthn.js';
import { ceremonyOf } from './binding.js';

export type { FormState };

/** What rendering a page needs: the renderer and the realm's flows (for protectors and form-action assets). */
type PageContext = Pick<PagesContext, 'pages' | 'flows' | 'storage' | 'hostStore' | 'config' | 'events'>;

export const actionUrl = (realm: Realm, action: string) => `/realms/${encodeURIComponent(realm.name)}/login-actions/${action}`;

/** Keeps what the user typed, never a password. */
export function keepValues(form: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, (form[n] ?? '').slice(0, 255)]));
}

/** The realm of a page shown where there is none (an unknown realm's error page): the default headers, no overrides. */
const placeholderRealm = { name: 'realmgate', displayName: 'Realmgate', browserSecurityHeaders: defaultBrowserSecurityHeaders() } as unknown as Realm;

const templateOf = { login: 'login', registration: 'register', 'reset-credentials': 'reset' } as const;
/** The login-actions path whose GET shows a form's page again (in the browser's auth session). */
const actionOf = { login: 'authenticate', registration: 'registration', 'reset-credentials': 'reset-credentials' } as const;

/** A form of the login pages: its own fields, the CSRF token, the protectors' markup, what was typed, errors. */
async function formPage(ctx: PageContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, form: ProtectedForm, protectors: ProtectorStep[], fields: object, state: FormState) {
  setPageClient(request, auth.clientId);
  const page = {
    ...fields,
    csrf: auth.csrf,
    protectorHtml: await protectorMarkup(realm, form, protectors, requestInfo(request), await ctx.pages.pageTranslator(reply, realm)),
    values: state.values ?? {},
    errors: state.errors ?? {},
    message: state.message,
    title: state.title,
  };
  // The language menu links to the form's login-actions page with the client, as Keycloak's do, wherever the page
  // was answered (the authorization request, a post): the auth session is the cookie, not the request's query.
  const menuTarget = `${actionUrl(realm, actionOf[form])}?client_id=${encodeURIComponent(auth.clientId)}`;
  return ctx.pages.send(reply, realm, templateOf[form], page, state.status ?? 200, { menuTarget });
}

export const showPage = {
  async error(ctx: PageContext, reply: FastifyReply, realm: Realm | null, text: string, status = 400, link?: { href: string; label: string }) {
    return ctx.pages.send(reply, realm ?? placeholderRealm, 'error', { text, link }, status);
  },

  /** A request the application got wrong: the detail is for its developers, the rest of the page for the user. */
  async requestError(ctx: PageContext, reply: FastifyReply, realm: Realm, detail: string, status = 400) {
    return ctx.pages.send(reply, realm, 'error', { text: detail, fromApplication: true }, status);
  },

  async info(ctx: PageContext, reply: FastifyReply, realm: Realm, title: string, text: string, link?: { href: string; label: string }, status = 200) {
    return ctx.pages.send(reply, realm, 'info', { title, text, link }, status);
  },

  async login(ctx: PageContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState) {
    const steps = await ctx.flows.loginSteps(realm, auth.clientId);
    const fields = {
      action: actionUrl(realm, 'authenticate'),
      loginWithEmail: realm.loginWithEmailAllowed,
      registerUrl: realm.registrationAllowed ? actionUrl(realm, 'registration') : null,
      resetUrl: realm.resetPasswordAllowed ? actionUrl(realm, 'reset-credentials') : null,
      identityProviders: await loginButtons(ctx, realm, auth),
      // Keycloak 26's passkeys on the username form: the options of a passkey assertion for no user yet (the passkey names them), for the autofill.
      passkeys: realm.webAuthnPolicies.passwordless.passkeysEnabled ? JSON.stringify(await authenticationOptions(ctx, realm, null, 'passwordless', ceremonyOf(ctx, request, auth))) : null,
    };
    return formPage(ctx, request, reply, realm, auth, 'login', steps.protectors, fields, state);
  },

  async registration(ctx: PageContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState) {
    const steps = await ctx.flows.registrationSteps(realm);
    const assets: string[] = [];
    for (const action of steps.formActions) {
      const html = await action.instance.renderAssets?.({ realm: { id: realm.id, name: realm.name, displayName: realm.displayName, enabled: realm.enabled }, assetsBaseUrl: `/realms/${encodeURIComponent(realm.name)}` });
      if (html) assets.push(html);
    }
    const fields = { action: actionUrl(realm, 'registration'), loginUrl: actionUrl(realm, 'authenticate'), assetsHtml: assets.join('\n') };
    return formPage(ctx, request, reply, realm, auth, 'registration', steps.protectors, fields, state);
  },

  async resetRequest(ctx: PageContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, auth: AuthSession, state: FormState) {
    const steps = await ctx.flows.resetSteps(realm);
    const fields = { action: actionUrl(realm, 'reset-credentials'), loginWithEmail: realm.loginWithEmailAllowed, loginUrl: actionUrl(realm, 'authenticate') };
    return formPage(ctx, request, reply, realm, auth, 'reset-credentials', steps.protectors, fields, state);
  },
};

/** The pages `protocol/` shows, as the LoginForms port the server context hands it (`firstPage`: pages/broker.ts). */
export function pageForms(ctx: PageContext, firstPage: LoginForms['firstPage']): LoginForms {
  return {
    firstPage,
    error: (reply, realm, text, status, link) => showPage.error(ctx, reply, realm, text, status, link),
    requestError: (reply, realm, detail, status) => showPage.requestError(ctx, reply, realm, detail, status),
    info: (reply, realm, title, text, link, status) => showPage.info(ctx, reply, realm, title, text, link, status),
    login: (request, reply, realm, auth, state) => showPage.login(ctx, request, reply, realm, auth, state),
    registration: (request, reply, realm, auth, state) => showPage.registration(ctx, request, reply, realm, auth, state),
  };
}
