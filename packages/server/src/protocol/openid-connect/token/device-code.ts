import type { FastifyRequest } from 'fastify';
import { pollDeviceGrant } from '../../../authentication/index.js';
import { oauthError, type EventError, type OAuthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { formField } from '../client-auth.js';
import { deviceGrantEnabled } from '../device.js';
import { refusalDescription } from './authorization-code.js';
import { tokensForBrowserSession } from './session-tokens.js';

/** RFC 8628 3.4: the device polls with its device code; Keycloak's answers, in Keycloak's order (authentication/device-code.ts). */
export async function deviceCodeGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  const refuse = async (error: EventError, answer: OAuthError, userId: string | null = null): Promise<never> => {
    await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR', clientId: client.clientId, userId, error, request: info });
    throw answer;
  };
  if (!deviceGrantEnabled(client)) return refuse('not_allowed', oauthError.invalid_grant('Client not allowed OAuth 2.0 Device Authorization Grant'));
  const deviceCode = formField(request.body, 'device_code');
  if (deviceCode === undefined) return refuse('invalid_oauth2_device_code', oauthError.invalid_request('Missing parameter: device_code'));
  const poll = await pollDeviceGrant(ctx, realm.id, client.clientId, deviceCode, formField(request.body, 'code_verifier'));
  switch (poll.status) {
    case 'not_valid':
      return refuse('invalid_oauth2_device_code', oauthError.invalid_grant('Device code not valid'));
    case 'expired':
      return refuse('expired_oauth2_device_code', oauthError.expired_token('Device code is expired'));
    case 'other_client':
      return refuse('invalid_oauth2_device_code', oauthError.invalid_grant('unauthorized client'));
    case 'slow_down':
      return refuse('slow_down', oauthError.slow_down('Slow down'));
    case 'denied':
      return refuse('access_denied', oauthError.access_denied('The end user denied the authorization request'));
    case 'pkce':
      return refuse('invalid_code_verifier', oauthError.invalid_grant(refusalDescription[poll.reason]));
    case 'pending':
      // Not an error event in Keycloak: the device is expected to ask until the user answers.
      throw oauthError.authorization_pending('The authorization request is still pending');
  }
  const { grant } = poll;
  const session = await ctx.storage.sessions.byId(grant.sessionId);
  const user = await ctx.storage.users.byId(realm.id, grant.userId);
  if (!user || !user.enabled) return refuse('user_disabled', oauthError.invalid_grant('User disabled'), grant.userId);
  if (!session) return refuse('user_session_not_found', oauthError.invalid_grant('Session not active'), user.id);
  const tokens = await tokensForBrowserSession(ctx, request, realm, client, user, session, { scope: grant.scope, nonce: grant.nonce, authTime: grant.authTime ?? Math.floor(session.started / 1000) }, () =>
    ctx.events.user(realm, { type: 'OAUTH2_DEVICE_CODE_TO_TOKEN_ERROR', clientId: client.clientId, userId: user.id, sessionId: session.id, error: 'not_allowed', request: info }),
  );
  await ctx.events.user(realm, { type: 'OAUTH2_DEVICE_CODE_TO_TOKEN', clientId: client.clientId, userId: user.id, sessionId: session.id, request: info, details: { code_id: session.id } });
  return tokens;
}
