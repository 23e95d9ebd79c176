import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthSession, LoginProtocol } from '../../authentication/index.js';
import type { ServerConfig } from '../../config/index.js';
import { baseUrl } from '../../http/index.js';
import { issuerOf } from './tokens.js';
import type { ProtocolContext } from '../context.js';
import { deviceSignedIn, deviceSignInRefused } from './device.js';

/** Sends the browser back to the client with the authorization response (query, fragment or form_post). */
export function redirectToClient(reply: FastifyReply, redirectUri: string, responseMode: AuthSession['responseMode'], params: Record<string, string>): FastifyReply {
  if (responseMode === 'form_post') {
    const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    const inputs = Object.entries(params).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('');
    // The only inline script on these pages; a hash would pin it, but the form also works with a click.
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(`<!doctype html><html><body><form method="post" action="${escape(redirectUri)}">${inputs}<noscript><button type="submit">Continue</button></noscript></form><script>document.forms[0].submit()</script></body></html>`);
  }
  const url = new URL(redirectUri);
  const encoded = new URLSearchParams(params).toString();
  // A fragment the redirect URI already has (an app's route) comes first, as Keycloak joins them.
  if (responseMode === 'fragment') url.hash = url.hash ? `${url.hash.slice(1)}&${encoded}` : encoded;
  else for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return reply.code(302).header('location', url.href).header('cache-control', 'no-store').send();
}

/** OpenID Connect's answer to a finished browser login: the code, session_state, iss and state, back to the client. */
export function openIdConnectLoginProtocol(config: Pick<ServerConfig, 'hostname'>, context: () => ProtocolContext): LoginProtocol {
  return {
    authenticated(request: FastifyRequest, reply, realm, auth, session, code) {
      // A sign-in the device page started ends on its consent page, with the consent token as its "code".
      if (auth.device) return deviceSignedIn(context(), reply, realm, auth, code);
      const params: Record<string, string> = { code, session_state: session.id, iss: issuerOf(baseUrl(request, config.hostname), realm.name) };
      if (auth.state !== null) params.state = auth.state;
      // Keycloak's answer to an application-initiated action: the action and its outcome; an action that could not
      // run (unknown, disabled) only the outcome.
      if (auth.kcAction && auth.kcActionStatus) {
        if (auth.kcActionStatus !== 'error') params.kc_action = auth.kcAction;
        params.kc_action_status = auth.kcActionStatus;
      }
      return redirectToClient(reply, auth.redirectUri, auth.responseMode, params);
    },
    refused(request: FastifyRequest, reply, realm, auth, error, description) {
      if (auth.device) return deviceSignInRefused(context(), reply, realm, auth);
      // A declined consent carries no description (as Keycloak's answer to CONSENT_DENIED).
      const params: Record<string, string> = { error, ...(description ? { error_description: description } : {}) };
      if (auth.state !== null) params.state = auth.state;
      params.iss = issuerOf(baseUrl(request, config.hostname), realm.name);
      return redirectToClient(reply, auth.redirectUri, auth.responseMode, params);
    },
  };
}
