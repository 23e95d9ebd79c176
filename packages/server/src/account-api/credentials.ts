import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OTP_CREDENTIAL_TYPE } from '../authentication/index.js';
import { credentialRep, passwordCredentialRep } from '../representations/credential.js';
import { uuidPattern } from '../representations/fields.js';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { CONFIGURE_TOTP, UPDATE_PASSWORD } from '../required-actions/index.js';

/**
 * GET /realms/{realm}/account/credentials: the credential types the user can have, as Keycloak's account console
 * lists them: the password, and OTP (its credentials, removable; `createAction` CONFIGURE_TOTP). `?type=` filters,
 * `?user-credentials=false` leaves the user's own out. The OTP secret is never answered.
 */
export function credentialsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/credentials', async (request: AccountRequest) => {
    const { user } = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    const query = request.query as Record<string, unknown>;
    const withOwn = query['user-credentials'] !== 'false';
    const password = passwordCredentialRep(user);
    const otp = await ctx.storage.credentials.ofUser(user.id, OTP_CREDENTIAL_TYPE);
    const types = [
      {
        type: 'password',
        category: 'basic-authentication',
        displayName: 'password-display-name',
        helptext: 'password-help-text',
        iconCssClass: 'kcAuthenticatorPasswordClass',
        ...(password ? { updateAction: UPDATE_PASSWORD } : { createAction: UPDATE_PASSWORD }),
        removeable: false,
        ...(withOwn ? { userCredentialMetadatas: password ? [{ credential: password }] : [] } : {}),
      },
      {
        type: OTP_CREDENTIAL_TYPE,
        category: 'two-factor',
        displayName: 'otp-display-name',
        helptext: 'otp-help-text',
        iconCssClass: 'kcAuthenticatorOTPClass',
        createAction: CONFIGURE_TOTP,
        removeable: true,
        ...(withOwn ? { userCredentialMetadatas: otp.map((c) => ({ credential: credentialRep(c) })) } : {}),
      },
    ];
    return typeof query.type === 'string' ? types.filter((t) => t.type === query.type) : types;
  });

  // DELETE /account/credentials/{id} (manage-account): an OTP credential of the caller; the password is not removable.
  app.delete('/realms/:realm/account/credentials/:id', async (request: FastifyRequest<{ Params: { realm: string; id: string } }>, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account');
    const id = request.params.id.toLowerCase();
    if (!uuidPattern.test(id)) throw notFound('Credential not found');
    if (passwordCredentialRep(caller.user)?.id === id) throw badRequest('The password cannot be removed here');
    if (!(await ctx.storage.credentials.delete(caller.user.id, id))) throw notFound('Credential not found');
    await ctx.events.user(caller.realm, {
      type: 'REMOVE_CREDENTIAL',
      clientId: caller.clientId,
      userId: caller.user.id,
      sessionId: caller.sessionId,
      details: { credential_type: OTP_CREDENTIAL_TYPE, credential_id: id, context: 'ACCOUNT', username: caller.user.username },
      request: requestInfo(request),
    });
    return reply.code(204).send();
  });
}
