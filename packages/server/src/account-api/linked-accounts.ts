import type { FastifyInstance, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { accountLinkHash, providerDisplayName, SOCIAL_PROVIDERS } from '../authentication/index.js';
import type { ServerContext } from '../context.js';
import { baseUrl, requestInfo } from '../http/index.js';
import { ACCOUNT_CONSOLE } from '../model/defaults.js';
import { badRequest } from '../model/errors.js';
import type { FederatedIdentity, IdentityProvider } from '../model/types.js';
import { keepsWayIn, waysIn } from './ways-in.js';
import { accountCallerWith, type AccountRequest } from './caller.js';

/**
 * The caller's links to identity providers, as Keycloak's account REST API answers them (LinkedAccountsResource):
 * `GET /account/linked-accounts` lists the realm's enabled providers with whether the user is linked (`?linked=true`
 * only the linked ones, `?linked=false` only the realm-level ones left to link; `search`, `first`, `max`), each
 * shown as its `showInAccountConsole` says (ALWAYS, WHEN_LINKED, NEVER); `DELETE /account/linked-accounts/{alias}`
 * removes a link, unless it is the user's last way to sign in (no password, no passkey, no other link).
 * `GET /account/linked-accounts/{alias}?redirectUri=` (deprecated in Keycloak, kept): the account console's
 * client-initiated link URI for the token's session, `{accountLinkUri, nonce, hash}`.
 */


interface LinkedAccount {
  connected: boolean;
  social: boolean;
  providerAlias: string;
  providerName: string;
  displayName: string;
  guiOrder?: string;
  linkedUsername?: string;
}

const MAX_RESULTS = 1000;

const showInAccountConsole = (provider: IdentityProvider) => provider.config.showInAccountConsole ?? 'ALWAYS';

function linkedAccount(provider: IdentityProvider, link: FederatedIdentity | undefined): LinkedAccount {
  return {
    connected: link !== undefined,
    social: Object.hasOwn(SOCIAL_PROVIDERS, provider.providerId),
    providerAlias: provider.alias,
    providerName: provider.alias,
    displayName: providerDisplayName(provider),
    ...(provider.config.guiOrder !== undefined ? { guiOrder: provider.config.guiOrder } : {}),
    ...(link?.userName ? { linkedUsername: link.userName } : {}),
  };
}

/** Keycloak's search of linked accounts: `"exact"`, `*contains*`, `prefix*`, or a bare prefix; on alias or display name. */
function matches(account: LinkedAccount, search: string | null): boolean {
  if (search === null) return true;
  const names = [account.providerAlias, account.displayName];
  if (search.length > 1 && search.startsWith('"') && search.endsWith('"')) return names.includes(search.slice(1, -1));
  if (search.length > 1 && search.startsWith('*') && search.endsWith('*')) return names.some((n) => n.includes(search.slice(1, -1)));
  const prefix = search.endsWith('*') ? search.slice(0, -1) : search;
  return names.some((n) => n.startsWith(prefix));
}

const order = (a: LinkedAccount, b: LinkedAccount) => {
  const rank = (x: LinkedAccount) => (x.guiOrder !== undefined && /^\d+$/.test(x.guiOrder) ? Number(x.guiOrder) : Number.MAX_SAFE_INTEGER);
  return rank(a) - rank(b) || a.displayName.localeCompare(b.displayName);
};

function page(query: Record<string, unknown>): { first: number; max: number } {
  const number = (name: string, fallback: number) => {
    const value = query[name];
    if (value === undefined) return fallback;
    if (typeof value !== 'string' || !/^\d{1,9}$/.test(value)) throw badRequest(`${name}: must be a whole number, at least 0`, name);
    return Number(value);
  };
  return { first: number('first', 0), max: Math.min(number('max', MAX_RESULTS), MAX_RESULTS) };
}

export function linkedAccountsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/linked-accounts', async (request: AccountRequest) => {
    const { realm, user } = await accountCallerWith(ctx, request, 'manage-account', 'view-profile');
    const query = request.query as Record<string, unknown>;
    const linked = query.linked === 'true' ? true : query.linked === 'false' ? false : null;
    const search = typeof query.search === 'string' && query.search !== '' ? query.search.slice(0, 255) : null;
    const { first, max } = page(query);
    const providers = (await ctx.storage.federation.cachedProviders(realm.id)).filter((p) => p.enabled);
    const links = new Map((await ctx.storage.federation.links(user.id)).map((link) => [link.identityProvider, link]));
    const accounts = providers
      .filter((provider) => {
        const link = links.get(provider.alias);
        const shown = showInAccountConsole(provider);
        if (linked === true) return link !== undefined && shown !== 'NEVER';
        if (linked === false) return link === undefined && shown === 'ALWAYS' && !provider.rest.organizationId;
        // Without `linked` (the older console): every provider shown, an organization's only once linked.
        return shown === 'ALWAYS' ? link !== undefined || !provider.rest.organizationId : shown === 'WHEN_LINKED' && link !== undefined;
      })
      .map((provider) => linkedAccount(provider, links.get(provider.alias)))
      .filter((account) => matches(account, search))
      .sort(order);
    return linked === null ? accounts : accounts.slice(first, first + max);
  });

  app.get('/realms/:realm/account/linked-accounts/:alias', async (request: FastifyRequest<{ Params: { realm: string; alias: string }; Querystring: Record<string, unknown> }>) => {
    const { realm, sessionId } = await accountCallerWith(ctx, request, 'manage-account');
    const alias = request.params.alias.slice(0, 255);
    const redirectUri = request.query.redirectUri;
    // Keycloak's message keys; the redirect URI itself is checked by the link endpoint against account-console.
    if (typeof redirectUri !== 'string' || !redirectUri || redirectUri.length > 4096) throw badRequest('invalidRedirectUriMessage', 'redirectUri');
    if (!alias) throw badRequest('missingIdentityProviderMessage');
    if (!(await ctx.storage.federation.providerByAlias(realm.id, alias))) throw badRequest('identityProviderNotFoundMessage');
    if (!sessionId) throw badRequest('sessionNotActiveMessage');
    const nonce = randomUUID();
    const hash = accountLinkHash(nonce, sessionId, ACCOUNT_CONSOLE, alias);
    const link = new URL(`${baseUrl(request, ctx.config.hostname)}/realms/${encodeURIComponent(realm.name)}/broker/${encodeURIComponent(alias)}/link`);
    for (const [name, value] of Object.entries({ redirect_uri: redirectUri, hash, nonce, client_id: ACCOUNT_CONSOLE })) link.searchParams.append(name, value);
    return { accountLinkUri: link.href, nonce, hash };
  });

  app.delete('/realms/:realm/account/linked-accounts/:alias', async (request: FastifyRequest<{ Params: { realm: string; alias: string } }>, reply) => {
    const { realm, user, clientId, sessionId } = await accountCallerWith(ctx, request, 'manage-account');
    const alias = request.params.alias.slice(0, 255);
    // Keycloak answers these with its message keys.
    if (!alias) throw badRequest('missingIdentityProviderMessage');
    if (!(await ctx.storage.federation.providerByAlias(realm.id, alias))) throw badRequest('identityProviderNotFoundMessage');
    if (!user.enabled) throw badRequest('accountDisabledMessage');
    const links = await ctx.storage.federation.links(user.id);
    const link = links.find((l) => l.identityProvider === alias);
    if (!link) throw badRequest('This link to an identity provider is not active.');
    // The last way in is kept: a user without a password or a passkey signs in through their only link.
    if (!keepsWayIn(await waysIn(ctx, user), 'link')) throw badRequest('You cannot remove your last linked account: set a password first.');
    await ctx.storage.federation.removeLink(realm.id, user.id, alias);
    await ctx.events.user(realm, {
      type: 'REMOVE_FEDERATED_IDENTITY',
      clientId,
      userId: user.id,
      sessionId,
      details: { username: user.username, identity_provider: alias, identity_provider_identity: link.userName ?? '' },
      request: requestInfo(request),
    });
    return reply.code(204).send();
  });
}
