import type { ProtocolContext } from '../../context.js';
import { oauthError } from '../../../model/errors.js';
import type { Client } from '../../../model/types.js';
import { clientScopeSet } from '../../../services/index.js';
import { normalizeScope, unknownScopes } from '../mappers/index.js';

/**
 * A grant's `scope` parameter, checked as Keycloak checks it: a name that is neither `openid` nor one of the
 * client's default or optional client scopes is refused (400 invalid_scope "Invalid scopes: …"). `offline_access`
 * is kept only where the grant can give an offline session.
 */
export async function checkedScope(
  ctx: Pick<ProtocolContext, 'storage'>,
  client: Client,
  requested: string | undefined,
  offlineAllowed: boolean,
  /** Records the refusal (Keycloak: the grant's error event, `invalid_request`, the reason in its details). */
  onRefusal: (reason: string) => Promise<unknown>,
): Promise<string> {
  if (unknownScopes(await clientScopeSet(ctx.storage, client), requested).length) {
    const reason = `Invalid scopes: ${requested}`;
    await onRefusal(reason);
    throw oauthError.invalid_scope(reason);
  }
  return normalizeScope(requested, offlineAllowed);
}

/**
 * A refresh's `scope` parameter: absent, the scope of the login; present, it must name only scopes the login asked
 * for (a default scope always counts as asked), and the new tokens carry only those. null: refused.
 */
export async function narrowedScope(ctx: Pick<ProtocolContext, 'storage'>, client: Client, granted: string, requested: string | undefined): Promise<string | null> {
  if (requested === undefined || requested.trim() === '') return granted;
  const had = new Set([...granted.split(' '), ...(await clientScopeSet(ctx.storage, client)).defaultScopes.map((s) => s.name)]);
  const asked = normalizeScope(requested, true).split(' ');
  return asked.every((n) => had.has(n)) ? asked.join(' ') : null;
}
