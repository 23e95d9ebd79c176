import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OTP_CREDENTIAL_TYPE } from '../authentication/index.js';
import { credentialRep, passwordCredentialRep } from '../representations/credential.js';
import { uuidPattern } from '../representations/fields.js';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { badRequest, notFound } from '../model/errors.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { CONFIGURE_RECOVERY_AUTHN_CODES, CONFIGURE_TOTP, UPDATE_PASSWORD, WEBAUTHN_REGISTER, WEBAUTHN_REGISTER_PASSWORDLESS } from '../required-actions/index.js';
import { WEBAUTHN_CREDENTIAL_TYPE, WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE } from '../credentials/webauthn.js';
import { RECOVERY_CODES_TYPE } from '../credentials/recovery-codes.js';
import { keepsWayIn, waysIn } from './ways-in.js';

/**
 * The credential types of issue 38 as Keycloak's account console lists them; each is listed for a user who has one
 * (the console then shows and removes them), so a realm that does not use them lists what it did before.
 */
const SECOND_FACTORS = [
  { type: WEBAUTHN_CREDENTIAL_TYPE, category: 'two-factor', displayName: 'webauthn-display-name', helptext: 'webauthn-help-text', iconCssClass: 'kcAuthenticatorWebAuthnClass', createAction: WEBAUTHN_REGISTER },
  { type: WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE, category: 'passwordless', displayName: 'webauthn-passwordless-display-name', helptext: 'webauthn-passwordless-help-text', iconCssClass: 'kcAuthenticatorWebAuthnPasswordlessClass', createAction: WEBAUTHN_REGISTER_PASSWORDLESS },
  { type: RECOVERY_CODES_TYPE, category: 'two-factor', displayName: 'recovery-authn-codes-display-name', helptext: 'recovery-authn-codes-help-text', iconCssClass: 'kcAuthenticatorRecoveryAuthnCodesClass', createAction: CONFIGURE_RECOVERY_AUTHN_CODES },
] as const;

/**
 * The last way in (ways-in.ts): Keycloak lets a user remove any WebAuthn credential (each is `removeable`), and so a
 * user without a password could lock themselves out with their only passkey; here the account API refuses that one, and
 * lists the passkeys as not removable while it is the last (README, issue 38). An administrator may still remove it,
 * as in Keycloak.
 */
const LAST_WAY_IN = 'The last way to sign in cannot be removed';

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
    const types: Record<string, unknown>[] = [
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
    const own = await ctx.storage.credentials.ofUser(user.id);
    for (const kind of SECOND_FACTORS) {
      const held = own.filter((c) => c.type === kind.type);
      if (held.length === 0) continue;
      const removeable = kind.type !== WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE || keepsWayIn(await waysIn(ctx, user), 'passkey');
      types.push({ ...kind, removeable, ...(withOwn ? { userCredentialMetadatas: held.map((c) => ({ credential: credentialRep(c) })) } : {}) });
    }
    return typeof query.type === 'string' ? types.filter((t) => t.type === query.type) : types;
  });

  // DELETE /account/credentials/{id} (manage-account): an OTP, WebAuthn or recovery-codes credential of the caller; the password is not removable.
  app.delete('/realms/:realm/account/credentials/:id', async (request: FastifyRequest<{ Params: { realm: string; id: string } }>, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account');
    const id = request.params.id.toLowerCase();
    if (!uuidPattern.test(id)) throw notFound('Credential not found');
    if (passwordCredentialRep(caller.user)?.id === id) throw badRequest('The password cannot be removed here');
    const own = await ctx.storage.credentials.ofUser(caller.user.id);
    const removed = own.find((c) => c.id === id);
    const passkey = removed?.type === WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE;
    if (passkey && !keepsWayIn(await waysIn(ctx, caller.user), 'passkey')) throw badRequest(LAST_WAY_IN);
    if (!removed || !(await ctx.storage.credentials.delete(caller.user.id, id))) throw notFound('Credential not found');
    // Two passkeys removed at once (each saw the other): the one that finds none left puts its own back.
    if (passkey && !keepsWayIn(await waysIn(ctx, caller.user))) {
      await ctx.storage.credentials.insert(removed);
      throw badRequest(LAST_WAY_IN);
    }
    await ctx.events.user(caller.realm, {
      type: 'REMOVE_CREDENTIAL',
      clientId: caller.clientId,
      userId: caller.user.id,
      sessionId: caller.sessionId,
      details: { credential_type: removed.type, credential_id: id, context: 'ACCOUNT', username: caller.user.username },
      request: requestInfo(request),
    });
    return reply.code(204).send();
  });
}
