import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from '../context.js';
import type { IdentityProvider, Realm, User } from '../../model/types.js';
import { userSnapshot } from '../../services/index.js';
import { isUniqueViolation } from '../../storage/index.js';
import { applyMappers, preprocessIdentity, syncModeOf } from './idp-mappers.js';
import { upstreamUsername, type BrokeredIdentity } from './upstream-oidc.js';

/**
 * What happens around the first broker login flow, as Keycloak's IdentityBrokerService does it: the upstream's
 * identity preprocessed by the username mapper; a known link signs its user in (profile fields synced as the
 * provider's sync mode says, mappers run by theirs); a first login's user, once the flow named them, is linked
 * (FEDERATED_IDENTITY_LINK) and the mappers import.
 */

type BrokerLoginContext = Pick<AuthenticationContext, 'storage' | 'events' | 'logger'>;

export interface BrokerEventBase {
  clientId: string;
  request: RequestInfo;
}

/** The token response kept with the link when the provider stores tokens, as JSON. */
const storedToken = (provider: IdentityProvider, identity: BrokeredIdentity) => (provider.rest.storeToken === true ? JSON.stringify(identity.tokenResponse) : undefined);

export async function brokeredIdentityOf(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity): Promise<BrokeredIdentity> {
  return preprocessIdentity(provider, await ctx.storage.federation.cachedMappers(realm.id, provider.internalId), identity);
}

/** The local user linked to the upstream account, with the upstream username the link holds; null: a first login. */
export async function linkedUser(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity): Promise<{ user: User; linkedName: string | null } | null> {
  const link = await ctx.storage.federation.linkByUpstream(provider.internalId, identity.id);
  const user = link ? await ctx.storage.users.byId(realm.id, link.userId) : null;
  return link && user ? { user, linkedName: link.userName } : null;
}

/**
 * A later login of a linked user: FORCE rewrites the profile fields from the upstream, then the mappers by sync mode;
 * the link is written only when it changes (a stored token, or another upstream username).
 */
export async function updateLinkedUser(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity, linked: { user: User; linkedName: string | null }): Promise<User> {
  let current = linked.user;
  if (syncModeOf(provider) === 'FORCE') {
    const email = identity.email ? identity.email.toLowerCase() : current.email;
    const updated = { ...current, email, firstName: identity.firstName ?? current.firstName, lastName: identity.lastName ?? current.lastName };
    if (updated.email !== current.email || updated.firstName !== current.firstName || updated.lastName !== current.lastName) {
      // A trusted provider's address is verified; another changed address is not.
      updated.emailVerified = updated.email === current.email ? current.emailVerified : provider.rest.trustEmail === true && identity.emailVerified && identity.emailUnverified !== true;
      await ctx.storage.users.update(updated);
      current = updated;
    }
  }
  current = await applyMappers(ctx, realm, provider, await ctx.storage.federation.cachedMappers(realm.id, provider.internalId), identity, current, 'update');
  const token = storedToken(provider, identity);
  if (token !== undefined || linked.linkedName !== upstreamUsername(identity)) await ctx.storage.federation.updateLink(current.id, provider.internalId, { token, userName: upstreamUsername(identity) });
  return current;
}

/**
 * The end of a first broker login: the flow's user linked to the upstream account, the mappers imported. Null when
 * the user is linked to another account of this provider already, or this account to another user (a second tab
 * finished first): nothing is changed, the caller says so (Keycloak's federated_identity_account_exists).
 */
export async function linkFirstLogin(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity, user: User, event: BrokerEventBase): Promise<User | null> {
  try {
    await ctx.storage.federation.addLink(realm.id, user.id, provider.internalId, { userId: identity.id, userName: upstreamUsername(identity) });
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
  if ((await ctx.storage.federation.userIdByLink(provider.internalId, identity.id)) !== user.id) {
    await ctx.storage.federation.removeLink(realm.id, user.id, provider.alias);
    return null;
  }
  const token = storedToken(provider, identity);
  if (token) await ctx.storage.federation.updateLink(user.id, provider.internalId, { token });
  const mapped = await applyMappers(ctx, realm, provider, await ctx.storage.federation.cachedMappers(realm.id, provider.internalId), identity, user, 'import');
  await ctx.events.user(realm, {
    type: 'FEDERATED_IDENTITY_LINK',
    clientId: event.clientId,
    userId: mapped.id,
    details: { identity_provider: provider.alias, identity_provider_identity: upstreamUsername(identity), username: mapped.username },
    request: event.request,
    user: () => userSnapshot(ctx.storage, mapped),
  });
  return mapped;
}
