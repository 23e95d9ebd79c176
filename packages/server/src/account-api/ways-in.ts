import type { ServerContext } from '../context.js';
import { WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE } from '../credentials/webauthn.js';
import type { User } from '../model/types.js';
import { passwordCredentialRep } from '../representations/credential.js';

/**
 * The ways a user signs in alone, for the account API's "last way in" rule (written once, for removing a passkey
 * and for removing a link to an identity provider): a password, their passkeys, their identity provider links.
 */
export interface WaysIn {
  password: boolean;
  passkeys: number;
  links: number;
}

export async function waysIn(ctx: Pick<ServerContext, 'storage'>, user: User): Promise<WaysIn> {
  return {
    password: passwordCredentialRep(user) !== null,
    passkeys: (await ctx.storage.credentials.ofUser(user.id, WEBAUTHN_PASSWORDLESS_CREDENTIAL_TYPE)).length,
    links: (await ctx.storage.federation.links(user.id)).length,
  };
}

/** Whether the user has a way in (once one `removed`, a passkey or a link, is gone). */
export const keepsWayIn = (ways: WaysIn, removed?: 'passkey' | 'link') =>
  ways.password || ways.passkeys - (removed === 'passkey' ? 1 : 0) > 0 || ways.links - (removed === 'link' ? 1 : 0) > 0;
