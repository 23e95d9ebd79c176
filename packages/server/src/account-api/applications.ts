import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { requestInfo } from '../http/index.js';
import { notFoundResponse } from '../model/errors.js';
import type { Client, ClientScope, UserConsent } from '../model/types.js';
import { clientConsentText } from '../authentication/index.js';
import { revokeClientGrants } from '../services/index.js';
import { accountCallerWith, type AccountRequest } from './caller.js';
import { liveSessions } from './sessions.js';

/**
 * English texts of the built-in scopes' consent keys (`consent.screen.text` `${key}`), for `displayText`; in our
 * words. A key not here is shown as the key's name, a plain text as itself.
 */
const CONSENT_TEXTS: Record<string, string> = {
  profileScopeConsentText: 'User profile',
  emailScopeConsentText: 'Email address',
  addressScopeConsentText: 'Address',
  phoneScopeConsentText: 'Phone number',
  offlineAccessScopeConsentText: 'Offline access',
  rolesScopeConsentText: 'User roles',
  organizationScopeConsentText: 'Organization',
};

/** A granted consent line's text: a `${key}` of the built-in scopes resolved to its English text, else as it is. */
function displayTextOf(text: string): string {
  const key = text.match(/^\$\{(.+)\}$/)?.[1];
  return key !== undefined ? (CONSENT_TEXTS[key] ?? key) : text;
}

/**
 * Keycloak's account ConsentRepresentation: `grantedScopes` as ConsentScopeRepresentation (`id`, `name`: the scope's
 * consent text or its name, `displayText`: that text resolved, and `displayTest`, the same under the misspelt name
 * Keycloak 26.7.3 answers too), the dates. A granted name is a client scope's, else the client's own line (its
 * clientId: Keycloak's consent lists the client itself when it is shown on the consent screen). A granted scope the
 * realm no longer has is left out, as Keycloak's consent holds scope models.
 */
function consentRepresentation(consent: UserConsent, scopes: Map<string, ClientScope>, client: Client) {
  const grantedScopes = consent.grantedClientScopes.flatMap((name) => {
    const scope = scopes.get(name);
    if (!scope && name === client.clientId) {
      const text = clientConsentText(client);
      return [{ id: client.id, name: text, displayText: displayTextOf(text), displayTest: displayTextOf(text) }];
    }
    if (!scope) return [];
    const text = scope.attributes['consent.screen.text'] || null;
    const displayText = text === null ? null : displayTextOf(text);
    return [{ id: scope.id, name: text ?? scope.name, ...(displayText !== null ? { displayText, displayTest: displayText } : {}) }];
  });
  // The client's own line first, as on the consent screen.
  grantedScopes.sort((a, b) => Number(b.id === client.id) - Number(a.id === client.id));
  return {
    grantedScopes,
    ...(consent.createdDate !== null ? { createdDate: consent.createdDate } : {}),
    ...(consent.lastUpdatedDate !== null ? { lastUpdatedDate: consent.lastUpdatedDate } : {}),
  };
}

/**
 * GET /account/applications: the clients the caller is signed in to (`inUse`), holds an offline token of
 * (`offlineAccess`) or has consented to (`consent`, the granted scopes), in Keycloak's account ClientRepresentation. DELETE /account/applications/{clientId}/consent
 * (manage-account or manage-consent): revokes the caller's consent to the client and its offline tokens, as
 * Keycloak's (204 whether or not there was any; 404 for a client the realm does not have; REVOKE_GRANT).
 */
export function applicationsRoute(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/realms/:realm/account/applications', async (request: AccountRequest) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'view-applications');
    const inUse = new Map<string, Client>();
    const offline = new Map<string, Client>();
    for (const { clients } of await liveSessions(ctx, caller)) for (const client of clients) inUse.set(client.id, client);
    for (const { clients } of await liveSessions(ctx, caller, true)) for (const client of clients) offline.set(client.id, client);
    // The user's consents (kept from realm files): their clients are listed too, each with the scopes granted.
    const consents = new Map(((await ctx.storage.consents.ofUsers([caller.user.id])).get(caller.user.id) ?? []).map((c) => [c.clientId, c]));
    const consented = new Map<string, Client>();
    for (const clientId of consents.keys()) {
      if (inUse.has(clientId) || offline.has(clientId)) continue;
      const client = await ctx.storage.clients.cachedById(caller.realm.id, clientId);
      if (client) consented.set(client.id, client);
    }
    const scopes = consents.size ? new Map((await ctx.storage.clientScopes.list(caller.realm.id)).map((scope) => [scope.name, scope])) : new Map<string, ClientScope>();
    return [...new Map([...consented, ...offline, ...inUse]).values()]
      .sort((a, b) => a.clientId.localeCompare(b.clientId))
      .map((client) => ({
        clientId: client.clientId,
        ...(client.name ? { clientName: client.name } : {}),
        ...(client.description ? { description: client.description } : {}),
        userConsentRequired: client.consentRequired,
        inUse: inUse.has(client.id),
        offlineAccess: offline.has(client.id),
        ...(client.rootUrl ? { rootUrl: client.rootUrl } : {}),
        ...(client.baseUrl ? { baseUrl: client.baseUrl } : {}),
        ...(client.baseUrl || client.rootUrl ? { effectiveUrl: `${client.baseUrl?.startsWith('/') || !client.baseUrl ? (client.rootUrl ?? '') : ''}${client.baseUrl ?? ''}` } : {}),
        ...(consents.has(client.id) ? { consent: consentRepresentation(consents.get(client.id)!, scopes, client) } : {}),
      }));
  });

  app.delete('/realms/:realm/account/applications/:clientId/consent', async (request: FastifyRequest<{ Params: { realm: string; clientId: string } }>, reply) => {
    const caller = await accountCallerWith(ctx, request, 'manage-account', 'manage-consent');
    const client = await ctx.storage.clients.byClientId(caller.realm.id, request.params.clientId.slice(0, 255));
    if (!client) throw notFoundResponse(`No client with clientId: ${request.params.clientId.slice(0, 255)} found.`);
    await revokeClientGrants(ctx.storage, caller.realm.id, caller.user.id, client.id);
    await ctx.events.user(caller.realm, { type: 'REVOKE_GRANT', clientId: caller.clientId, userId: caller.user.id, sessionId: caller.sessionId, details: { revoked_client: client.clientId }, request: requestInfo(request) });
    return reply.code(204).send();
  });
}
