import type { FastifyRequest } from 'fastify';
import { oauthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ProtocolContext } from '../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import type { IssuedTokens } from '../tokens.js';
import { checkedScope } from './scope.js';
import { formField } from '../client-auth.js';

/** A token for the client's service-account user; no session and no refresh token, as Keycloak 26. */
export async function clientCredentialsGrant(ctx: ProtocolContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  if (client.publicClient) throw oauthError.unauthorized_client('Public client not allowed to retrieve service account', { status: 401 });
  const user = client.serviceAccountsEnabled ? await ctx.storage.users.cachedServiceAccountOf(client.id) : null;
  if (!user) {
    await ctx.events.user(realm, { type: 'CLIENT_LOGIN_ERROR', clientId: client.clientId, error: 'invalid_client', request: info });
    throw oauthError.unauthorized_client('Client not enabled to retrieve service account', { status: 401 });
  }
  if (!user.enabled) throw oauthError.invalid_grant('User associated with client is not enabled');
  const scope = await checkedScope(ctx, client, formField(request.body, 'scope'), false, (reason) =>
    ctx.events.user(realm, { type: 'CLIENT_LOGIN_ERROR', clientId: client.clientId, userId: user.id, error: 'invalid_request', details: { grant_type: 'client_credentials', reason }, request: info }),
  );
  const tokens = await ctx.tokens.issue(
    { base: baseUrl(request, ctx.config.hostname), realm, client, user, sessionId: null, scope, clientAddress: info.ipAddress },
    false,
  );
  await ctx.events.user(realm, {
    type: 'CLIENT_LOGIN',
    clientId: client.clientId,
    userId: user.id,
    details: { grant_type: 'client_credentials', client_auth_method: 'client-secret', username: user.username },
    request: info,
  });
  return tokens;
}
