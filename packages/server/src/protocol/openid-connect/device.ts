import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import {
  answerDeviceConsent,
  completeLogin,
  currentSsoSession,
  denyDeviceGrant,
  deviceGrantByUserCode,
  normalizeUserCode,
  runBrowserSignIn,
  startDeviceGrant,
  type AuthSession,
} from '../../authentication/index.js';
import { allowCorsForAnyOrigin, baseUrl, corsPending, requestInfo } from '../../http/index.js';
import { oauthError } from '../../model/errors.js';
import type { Client, Realm } from '../../model/types.js';
import { clientScopeSet } from '../../services/index.js';
import { authenticateClient, formField, formFields, isFormRequest } from './client-auth.js';
import { checkAllowedOrigin } from './cors.js';
import { normalizeScope, unknownScopes } from './mappers/index.js';
import { pkceChallengeProblem, pkceEnforced } from './pkce.js';
import { realmOrError } from './realm-lookup.js';
import { readRequestObject, requestObjectRequiredProblem } from './request-object.js';

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Keycloak's per-client switch (OAuth2DeviceConfig), off unless "true". */
export const deviceGrantEnabled = (client: Client) => client.attributes['oauth2.device.authorization.grant.enabled'] === 'true';

/** Keycloak's defaults: a device code lives 600 s and may be polled every 5 s. */
const DEFAULT_LIFESPAN_S = 600;
const DEFAULT_INTERVAL_S = 5;

/** Wrong user codes one client address may type per window before the page refuses it (RFC 8628 5.1). */
export const USER_CODE_ATTEMPTS = 10;
const USER_CODE_WINDOW_MS = 10 * 60 * 1000;

const positiveInt = (value: string | undefined): number | undefined => {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isInteger(n) && n > 0 ? n : undefined;
};

/** Keycloak's realm attribute naming the verification URI to show instead of the device page's own address. */
export const SHORT_VERIFICATION_URI = 'shortVerificationUri';

const devicePath = (realm: Realm) => `/realms/${encodeURIComponent(realm.name)}/device`;

/**
 * RFC 8628 as Keycloak 26.7.3: the device authorization endpoint, the user's verification page (`/realms/{r}/device`),
 * which starts a sign-in through the realm's browser flow and ends on a consent page, and the page that says how it
 * ended. The grant itself is token/device-code.ts; its state is authentication/device-code.ts (shared store).
 */
export function deviceRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  app.post<{ Params: { realm: string } }>('/realms/:realm/protocol/openid-connect/auth/device', async (request, reply) => {
    corsPending(request);
    const realm = await realmOrError(ctx.storage, request.params.realm);
    if (!isFormRequest(request)) throw oauthError.invalid_request('The device authorization request must be a form (application/x-www-form-urlencoded)');
    const client = await authenticateClient(ctx, realm, request);
    checkAllowedOrigin(ctx, request, client);
    const info = requestInfo(request);
    if (!deviceGrantEnabled(client)) {
      await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_AUTH_ERROR', clientId: client.clientId, error: 'not_allowed', request: info });
      throw oauthError.unauthorized_client('Client is not allowed to initiate OAuth 2.0 Device Authorization Grant. The flow is disabled for the client.');
    }
    // Keycloak parses this request as an authorization request: `request.object.required` holds here too, and a
    // request object's claims are the request's parameters, over the form's. A request_uri is not taken here.
    const form = formFields(request.body);
    const objectProblem = requestObjectRequiredProblem(client, form.request !== undefined, form.request_uri !== undefined) ?? (form.request_uri !== undefined ? 'Invalid parameter: request_uri' : null);
    let params = form;
    if (!objectProblem && form.request !== undefined) {
      const read = await readRequestObject(ctx, request, realm, client, form.request);
      params = read.ok ? { ...form, ...read.params } : form;
      if (!read.ok) {
        await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_AUTH_ERROR', clientId: client.clientId, error: 'invalid_request', request: info, details: { reason: read.reason } });
        throw oauthError.invalid_request(`Invalid parameter: request (${read.reason})`);
      }
    }
    if (objectProblem) {
      await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_AUTH_ERROR', clientId: client.clientId, error: 'invalid_request', request: info, details: { reason: objectProblem } });
      throw oauthError.invalid_request(objectProblem);
    }
    const param = (name: string) => params[name];
    // Keycloak does not refuse scopes here; names that are no client scope of the client are dropped.
    const requested = param('scope');
    const unknown = new Set(unknownScopes(await clientScopeSet(ctx.storage, client), requested));
    const scope = normalizeScope(requested, true)
      .split(' ')
      .filter((name) => name && !unknown.has(name))
      .join(' ');
    const lifespan = positiveInt(client.attributes['oauth2.device.code.lifespan']) ?? positiveInt(realm.attributes.oauth2DeviceCodeLifespan) ?? DEFAULT_LIFESPAN_S;
    const interval = positiveInt(client.attributes['oauth2.device.polling.interval']) ?? positiveInt(realm.attributes.oauth2DevicePollingInterval) ?? DEFAULT_INTERVAL_S;
    const nonce = param('nonce')?.slice(0, 2048) ?? null;
    // RFC 7636 here too, as Keycloak 26's device endpoint (checkPKCEParams): required only by the client's
    // `pkce.code.challenge.method`; the poll must then send the verifier (token/device-code.ts).
    const codeChallenge = param('code_challenge');
    const pkceProblem = pkceChallengeProblem(codeChallenge, param('code_challenge_method'), pkceEnforced(client));
    if (pkceProblem) {
      await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_AUTH_ERROR', clientId: client.clientId, error: 'invalid_request', request: info, details: { reason: pkceProblem } });
      throw oauthError.invalid_request(pkceProblem);
    }
    const { deviceCode, userCode } = await startDeviceGrant(ctx, {
      realmId: realm.id,
      clientId: client.clientId,
      scope,
      nonce,
      interval,
      lifespanSeconds: lifespan,
      ...(codeChallenge !== undefined ? { codeChallenge } : {}),
    });
    await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_AUTH', clientId: client.clientId, request: info, details: { scope } });
    // Keycloak's realm attribute `shortVerificationUri` (the console's Tokens tab, "Short verification URI"): an
    // address shorter to type that the operator forwards to the device page; as Keycloak, taken as given when set.
    const verificationUri = realm.attributes[SHORT_VERIFICATION_URI] || `${baseUrl(request, ctx.config.hostname)}${devicePath(realm)}`;
    return reply.header('cache-control', 'no-store').send({
      device_code: deviceCode,
      user_code: userCode,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${userCode}`,
      expires_in: lifespan,
      interval,
    });
  });

  app.get<{ Params: { realm: string }; Querystring: { user_code?: unknown } }>('/realms/:realm/device', async (request, reply) => {
    const realm = await enabledRealm(ctx, request, reply);
    if (!realm) return reply;
    const typed = typeof request.query.user_code === 'string' ? request.query.user_code : '';
    return typed ? verifyUserCode(ctx, request, reply, realm, typed) : verifyPage(ctx, reply, realm);
  });

  app.post<{ Params: { realm: string } }>('/realms/:realm/device', async (request, reply) => {
    const realm = await enabledRealm(ctx, request, reply);
    if (!realm) return reply;
    return verifyUserCode(ctx, request, reply, realm, formField(request.body, 'device_user_code') ?? '');
  });

  // The consent page's answer: approves or denies the grant its token names, once.
  app.post<{ Params: { realm: string } }>('/realms/:realm/device/consent', async (request, reply) => {
    const realm = await enabledRealm(ctx, request, reply);
    if (!realm) return reply;
    const grant = formField(request.body, 'grant') ?? '';
    const token = formField(request.body, 'consent') ?? '';
    const approve = formField(request.body, 'accept') !== undefined;
    const answered = grant && token ? await answerDeviceConsent(ctx, realm.id, grant, token, approve) : null;
    const info = requestInfo(request);
    if (!answered) return reply.code(302).header('location', `${devicePath(realm)}/status?error=expired_token`).send();
    await ctx.events.user(realm, {
      type: approve ? 'OAUTH2_DEVICE_VERIFY_USER_CODE' : 'OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR',
      clientId: answered.clientId,
      userId: answered.userId ?? null,
      sessionId: answered.sessionId ?? null,
      ...(approve ? {} : { error: 'rejected_by_user' as const }),
      request: info,
    });
    return reply.code(302).header('location', `${devicePath(realm)}/status${approve ? '' : '?error=access_denied'}`).send();
  });

  app.get<{ Params: { realm: string }; Querystring: { error?: unknown } }>('/realms/:realm/device/status', async (request, reply) => {
    const realm = await enabledRealm(ctx, request, reply);
    if (!realm) return reply;
    const error = request.query.error;
    if (!error) return ctx.forms.info(reply, realm, 'Device Login Successful', 'Device Login Successful. You may now close this browser window and go back to your device.');
    const text =
      error === 'access_denied'
        ? 'Consent denied for connecting the device.'
        : error === 'expired_token'
          ? 'The code has expired. Please go back to your device and try connecting again.'
          : 'Device login failed.';
    return ctx.forms.info(reply, realm, 'Device Login Failed', text, { href: devicePath(realm), label: 'Try again' });
  });
}

async function enabledRealm(ctx: ProtocolContext, request: FastifyRequest<{ Params: { realm: string } }>, reply: FastifyReply): Promise<Realm | null> {
  allowCorsForAnyOrigin(request);
  const realm = await ctx.storage.realms.cachedByName(request.params.realm.slice(0, 255));
  if (realm && realm.enabled) return realm;
  await ctx.forms.error(reply, null, 'Realm does not exist.', 404);
  return null;
}

const verifyPage = (ctx: ProtocolContext, reply: FastifyReply, realm: Realm, error?: string, status = 200) =>
  ctx.pages.send(reply, realm, 'device-verify', { action: devicePath(realm), errors: error ? { device_user_code: error } : {}, values: {} }, status);

/**
 * A typed user code: a wrong one is counted against the client address (a user code has 20^8 values; a limit per
 * address keeps guessing slow), a right one starts a sign-in through the client's browser flow for that device.
 */
async function verifyUserCode(ctx: ProtocolContext, request: FastifyRequest, reply: FastifyReply, realm: Realm, typed: string): Promise<FastifyReply> {
  const info = requestInfo(request);
  const attemptsKey = `device-user-code-attempts:${realm.id}:${info.ipAddress}`;
  if ((await ctx.hostStore.countHits(attemptsKey, USER_CODE_WINDOW_MS)) >= USER_CODE_ATTEMPTS) {
    return verifyPage(ctx, reply, realm, 'Too many wrong codes from this address. Try again later.', 429);
  }
  const userCode = normalizeUserCode(typed.slice(0, 64));
  const found = userCode ? await deviceGrantByUserCode(ctx, realm.id, userCode) : null;
  const client = found ? await ctx.storage.clients.cachedByClientId(realm.id, found.grant.clientId) : null;
  const usable = found && client && client.enabled && deviceGrantEnabled(client) && found.grant.status !== 'approved' && found.grant.status !== 'denied';
  if (!found || !client || !usable || found.grant.expiresAt <= Date.now()) {
    await ctx.hostStore.recordHit(attemptsKey, USER_CODE_WINDOW_MS);
    const expired = found !== null && found.grant.expiresAt <= Date.now();
    await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_VERIFY_USER_CODE_ERROR', clientId: found?.grant.clientId ?? null, error: 'invalid_oauth2_user_code', request: info, details: { reason: expired ? 'device code expired' : 'device code not found' } });
    return verifyPage(ctx, reply, realm, expired ? 'The code has expired. Please go back to your device and try connecting again.' : 'Invalid code, please try again.', 400);
  }
  const auth = {
    clientId: client.clientId,
    // No redirect: the sign-in ends on the consent page (LoginProtocol for `device`).
    redirectUri: `${baseUrl(request, ctx.config.hostname)}${devicePath(realm)}`,
    responseMode: 'query' as const,
    scope: found.grant.scope,
    state: null,
    nonce: found.grant.nonce,
    codeChallenge: null,
    device: found.id,
  };
  // Signed in already (and the client's browser flow takes the SSO session): straight to the consent page.
  const sso = await currentSsoSession(ctx, request, realm);
  if (sso && (await runBrowserSignIn(ctx, realm, client.clientId, info, null, null, sso.user)).status === 'success') {
    return completeLogin(ctx, request, reply, realm, ctx.authSessions.create(realm, auth), sso.user, sso.session);
  }
  const session = await ctx.authSessions.start(reply, request, realm, auth);
  if (!session) return ctx.forms.requestError(reply, realm, 'Invalid request: the device request is too long.');
  return ctx.forms.firstPage(request, reply, realm, session);
}

/** LoginProtocol's answer for a device-page sign-in: the consent page (its form carries the grant's consent token). */
export async function deviceSignedIn(ctx: ProtocolContext, reply: FastifyReply, realm: Realm, auth: AuthSession, token: string): Promise<FastifyReply> {
  if (!token || !auth.device) return reply.code(302).header('location', `${devicePath(realm)}/status?error=expired_token`).header('cache-control', 'no-store').send();
  const client = await ctx.storage.clients.cachedByClientId(realm.id, auth.clientId);
  const set = client ? await clientScopeSet(ctx.storage, client) : null;
  const asked = new Set(auth.scope.split(' ').filter(Boolean));
  // What the user is asked to grant: the client's default scopes and the optional ones the device asked for, by
  // their consent text (Keycloak's consent screen), else their name.
  const scopes = set
    ? [...set.defaultScopes, ...set.optionalScopes.filter((s) => asked.has(s.name))]
        .filter((s) => s.attributes['display.on.consent.screen'] !== 'false')
        .map((s) => (s.attributes['consent.screen.text'] && !s.attributes['consent.screen.text'].startsWith('${') ? s.attributes['consent.screen.text'] : s.name))
    : [];
  return ctx.pages.send(reply, realm, 'device-consent', {
    clientName: client?.name || auth.clientId,
    scopes,
    action: `${devicePath(realm)}/consent`,
    grant: auth.device,
    consent: token,
  });
}

/** The user cancelled a device-page sign-in (declined the terms …): the device hears access_denied. */
export async function deviceSignInRefused(ctx: ProtocolContext, reply: FastifyReply, realm: Realm, auth: AuthSession): Promise<FastifyReply> {
  if (auth.device) await denyDeviceGrant(ctx, realm.id, auth.device);
  return reply.code(302).header('location', `${devicePath(realm)}/status?error=access_denied`).header('cache-control', 'no-store').send();
}
