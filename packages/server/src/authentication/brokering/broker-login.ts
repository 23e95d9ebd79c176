import type { RequestInfo } from '@realmgate/spi';
import type { AuthenticationContext } from '../context.js';
import type { IdentityProvider, Realm, User } from '../../model/types.js';
import { userSnapshot } from '../../services/index.js';
import { isUniqueViolation } from '../../storage/index.js';
import { applyMappers, preprocessIdentity, syncModeOf } from './idp-mappers.js';
import type { BrokeredIdentity } from './upstream-oidc.js';

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
  return preprocessIdentity(provider, await ctx.storage.federation.mappers(realm.id, provider.internalId), identity);
}

/** The local user linked to the upstream account, or null (a first login). */
export async function linkedUser(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity): Promise<User | null> {
  const userId = await ctx.storage.federation.userIdByLink(provider.internalId, identity.id);
  return userId ? ctx.storage.users.byId(realm.id, userId) : null;
}

/** A later login of a linked user: FORCE rewrites the profile fields from the upstream, then the mappers by sync mode. */
export async function updateLinkedUser(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity, user: User): Promise<User> {
  let current = user;
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
  current = await applyMappers(ctx, realm, provider, await ctx.storage.federation.mappers(realm.id, provider.internalId), identity, current, 'update');
  await ctx.storage.federation.updateLink(current.id, provider.internalId, { token: storedToken(provider, identity), userName: identity.username });
  return current;
}

/**
 * The end of a first broker login: the flow's user linked to the upstream account, the mappers imported. Null when
 * the user is linked to another account of this provider already, or this account to another user (a second tab
 * finished first): nothing is changed, the caller says so (Keycloak's federated_identity_account_exists).
 */
export async function linkFirstLogin(ctx: BrokerLoginContext, realm: Realm, provider: IdentityProvider, identity: BrokeredIdentity, user: User, event: BrokerEventBase): Promise<User | null> {
  try {
    await ctx.storage.federation.addLink(realm.id, user.id, provider.internalId, { userId: identity.id, userName: identity.username });
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
  const mapped = await applyMappers(ctx, realm, provider, await ctx.storage.federation.mappers(realm.id, provider.internalId), identity, user, 'import');
  await ctx.events.user(realm, {
    type: 'FEDERATED_IDENTITY_LINK',
    clientId: event.clientId,
    userId: mapped.id,
    details: { identity_provider: provider.alias, identity_provider_identity: identity.username, username: mapped.username },
    request: event.request,
    user: () => userSnapshot(ctx.storage, mapped),
  });
  return mapped;
}
