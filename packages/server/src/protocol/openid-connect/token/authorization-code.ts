import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { newId, secretsEqual } from '../../../credentials/index.js';
import { OAuthError } from '../../../model/errors.js';
import type { Client, Realm } from '../../../model/types.js';
import type { ServerContext } from '../../../context.js';
import { baseUrl, requestInfo } from '../../../http/index.js';
import { codeKey, type CodeGrant } from '../../../pages/index.js';
import type { IssuedTokens } from '../tokens.js';
import { formField } from '../client-auth.js';

/** Redeems a code once: same client, same redirect_uri, PKCE verifier matching the challenge. */
export async function authorizationCodeGrant(ctx: ServerContext, realm: Realm, client: Client, request: FastifyRequest): Promise<IssuedTokens> {
  const info = requestInfo(request);
  const code = formField(request.body, 'code');
  if (!code) throw new OAuthError(400, 'invalid_request', 'Missing parameter: code');
  const refuse = async (description: string, error = 'invalid_code') => {
    await ctx.events.user(realm, { type: 'CODE_TO_TOKEN_ERROR', clientId: client.clientId, error, request: info });
    return new OAuthError(400, 'invalid_grant', description);
  };
  if (code.length > 256) throw await refuse('Code not valid');
  const key = codeKey(code);
  const raw = await ctx.hostStore.get(key);
  // Claimed before anything else, so two concurrent redemptions cannot both succeed.
  if (!raw || !(await ctx.hostStore.setIfAbsent(`${key}:used`, '1', 120_000))) throw await refuse('Code not valid');
  await ctx.hostStore.delete(key);
  const grant = JSON.parse(raw) as CodeGrant;
  if (grant.realmId !== realm.id || grant.clientId !== client.clientId) throw await refuse('Code not valid', 'invalid_client_credentials');
  if (formField(request.body, 'redirect_uri') !== grant.redirectUri) throw await refuse('Incorrect redirect_uri', 'invalid_redirect_uri');
  const verifier = formField(request.body, 'code_verifier');
  if (grant.codeChallenge !== null) {
    if (!verifier || !/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) throw await refuse('PKCE code verifier not specified or malformed', 'invalid_code_verifier');
    const computed = createHash('sha256').update(verifier).digest('base64url');
    if (!secretsEqual(computed, grant.codeChallenge)) throw await refuse('PKCE verification failed', 'invalid_code_verifier');
  } else if (verifier !== undefined) {
    throw await refuse('PKCE code verifier given for a request without a challenge', 'invalid_code_verifier');
  }
  const session = await ctx.storage.sessions.byId(grant.sessionId);
  const user = session ? await ctx.storage.users.byId(realm.id, grant.userId) : null;
  if (!session || !user || !user.enabled) throw await refuse('Session not active', 'invalid_code');
  const refreshTokenId = newId();
  await ctx.storage.sessions.upsertClientSession({ id: newId(), sessionId: session.id, clientId: client.id, refreshTokenId, scope: grant.scope, started: Date.now() });
  const tokens = await ctx.tokens.issue(
    {
      base: baseUrl(request, ctx.config.hostname),
      realm,
      client,
      user,
      sessionId: session.id,
      sessionStarted: session.started,
      scope: grant.scope,
      refreshTokenId,
      nonce: grant.nonce ?? undefined,
      authTime: grant.authTime,
    },
    true,
  );
  await ctx.events.user(realm, { type: 'CODE_TO_TOKEN', clientId: client.clientId, userId: user.id, sessionId: session.id, request: info, details: { code_id: session.id } });
  return tokens;
}
