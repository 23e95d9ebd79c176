import type { ServerContext } from '../context.js';
import type { Realm, User } from '../model/types.js';
import { findLoginUser } from './password.js';

/**
 * Who may be mailed a reset-credentials link for this login name (username or, where allowed, e-mail): an
 * enabled user with an address, not a service account; null for anyone else (the page answers alike).
 */
export async function resetCredentialsUser(ctx: Pick<ServerContext, 'storage'>, realm: Realm, login: string): Promise<User | null> {
  const user = await findLoginUser(ctx, realm, login);
  return user && user.enabled && user.email && !user.serviceAccountClientId ? user : null;
}
