import type { UpdaterSource } from '../../model/client-policies.js';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProtocolContext } from '../context.js';
import { newSecret, secretsEqual } from '../../credentials/index.js';
import { baseUrl, requestInfo } from '../../http/index.js';
import { adminClientId, REALM_MANAGEMENT } from '../../model/defaults.js';
import { AppError, OAuthError, oauthError, TokenVerificationError, type EventError } from '../../model/errors.js';
import type { RegistrationAuth } from '../../model/client-registration.js';
import type { Client, Realm } from '../../model/types.js';
import { clientRep, parseClient, parseClientExtras } from '../../representations/client.js';
import { clientScopeViews, effectiveRoles, enforceClientPolicies, ensureServiceAccount, registerWithPolicies, insertClient, replaceClientMappers, rolesStillHeld, serviceAccountNamed, syncServiceAccountScope } from '../../services/index.js';
import type { InitialAccess } from '../../storage/index.js';
import { checkClientAttributes } from './client-attributes.js';
import { realmOrError } from './realm-lookup.js';
import { clientFromMetadata, metadataOf } from './registration-metadata.js';
import { runRegistrationPolicies, type PolicyInput } from './registration-policies.js';
import {
  claimedType,
  INITIAL_ACCESS_TOKEN,
  issueRegistrationToken,
  REGISTRATION_ACCESS_TOKEN,
  registrationTokenHash,
  verifyRegistrationToken,
} from './registration-tokens.js';
import { issuerOf } from './tokens.js';

/**
 * Dynamic client registration as Keycloak 26.7.3 answers it (ClientRegistrationService and its `default` and
 * `openid-connect` providers): `POST /realms/{r}/clients-registrations/{provider}` registers a client, and
 * `GET`/`PUT`/`DELETE …/{provider}/{clientId}` read, change and remove it. The caller is anonymous, or shows an initial
 * access token, a client's registration access token (good for one update: each PUT answers a new one and the old
 * one is refused from then on), or a user's access token of the realm with manage-clients (create-client for a
 * registration, view-clients to read). Policies (registration-policies.ts) run for anonymous or authenticated callers.
 * Events CLIENT_REGISTER, CLIENT_INFO, CLIENT_UPDATE, CLIENT_DELETE and their _ERROR twins, as Keycloak records them.
 */

type Provider = 'default' | 'openid-connect';
const PROVIDERS: ReadonlySet<string> = new Set<Provider>(['default', 'openid-connect']);

type Caller =
  | { kind: 'anonymous' }
  | { kind: 'initial'; model: InitialAccess }
  | { kind: 'registration'; token: string; jti: string; kid: string; hash: string }
  | { kind: 'user'; roles: ReadonlySet<string> };

type Params = { realm: string; provider: string; clientId?: string };

/** Keycloak's client-updater-context source of a registration caller (the token it came with). */
const updaterOf = (caller: Caller): UpdaterSource =>
  caller.kind === 'initial' ? 'ByInitialAccessToken' : caller.kind === 'registration' ? 'ByRegistrationAccessToken' : caller.kind === 'user' ? 'ByAuthenticatedUser' : 'ByAnonymous';

/** A client id from the path that could name a client (no NUL, not longer than a stored one), else null. */
const storableClientId = (id: string): string | null => (id.length <= 255 && !id.includes('\u0000') ? id : null);

const unauthorized = (description: string) => oauthError.invalid_token(description);
const forbidden = (description = 'Forbidden') => oauthError.insufficient_scope(description);

/** The error a refusal records with its _ERROR event (Keycloak's ClientRegistrationAuth), or none. */
function eventErrorOf(error: unknown): EventError | null {
  if (!(error instanceof OAuthError)) return null;
  if (error.status === 401) return 'invalid_token';
  if (error.status === 403) return 'not_allowed';
  if (error.status === 404 && error.error === 'invalid_request') return 'client_not_found';
  return null;
}

/** A representation's refusal (the admin API's 400 naming a field) as registration's answer. */
function asMetadataError(error: unknown): unknown {
  if (error instanceof AppError && (error.code === 'invalid_input' || error.code === 'unreadable_body' || error.code === 'conflict')) {
    if (error.field === 'redirectUris') return oauthError.invalid_redirect_uri(error.message);
    return oauthError.invalid_client_metadata(error.code === 'conflict' ? `Client Identifier in use: ${error.message}` : error.message);
  }
  return error;
}

async function metadataWork<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asMetadataError(error);
  }
}

export function clientRegistrationRoutes(app: FastifyInstance, ctx: ProtocolContext): void {
  const managementClient = (realm: Realm) => (realm.name === 'master' ? adminClientId('master') : REALM_MANAGEMENT);

  /** Who calls, from the Authorization header (Keycloak's ClientRegistrationAuth.init): anything but Bearer is anonymous. */
  async function callerOf(realm: Realm, base: string, request: FastifyRequest): Promise<Caller> {
    const header = request.headers.authorization;
    if (typeof header !== 'string') return { kind: 'anonymous' };
    const [scheme, token] = header.trim().split(/ +/, 2);
    if (scheme.toLowerCase() !== 'bearer') return { kind: 'anonymous' };
    const typ = token ? claimedType(token) : null;
    if (typ === null) throw unauthorized('Failed decode token');
    if (typ === INITIAL_ACCESS_TOKEN || typ === REGISTRATION_ACCESS_TOKEN) {
      const verified = await verifyRegistrationToken(ctx, realm, base, token, typ);
      if (!verified) throw unauthorized('Failed decode token');
      const hash = registrationTokenHash(verified.jti);
      if (typ === REGISTRATION_ACCESS_TOKEN) return { kind: 'registration', token, jti: verified.jti, kid: verified.kid, hash };
      const model = await ctx.storage.clientRegistration.initialAccessByHash(realm.id, hash);
      if (!model) throw unauthorized('Initial Access Token not found');
      return { kind: 'initial', model };
    }
    try {
      const claims = await rolesStillHeld(ctx.storage, realm.id, await ctx.tokens.verify(realm, token, 'Bearer', base));
      return { kind: 'user', roles: new Set(claims.resource_access?.[managementClient(realm)]?.roles ?? []) };
    } catch (error) {
      if (!(error instanceof TokenVerificationError)) throw error;
      throw unauthorized(error.reason === 'wrong_type' ? 'Invalid type of token' : 'Failed decode token');
    }
  }

  const holds = (caller: Caller, ...roles: string[]) => caller.kind === 'user' && roles.some((r) => caller.roles.has(r) || caller.roles.has('realm-admin'));

  /**
   * A user's token reaches only clients that have a registration access token (registered here, or given one by an
   * administrator), never one whose service account holds administrative roles: through the admin API the same
   * caller could not read that client's secret (admin/clients.ts mayHoldSecret), and this path must not be a way round.
   */
  async function userMayReach(realm: Realm, client: Client): Promise<boolean> {
    if (!(await ctx.storage.clientRegistration.registrationToken(client.id))) return false;
    const account = client.serviceAccountsEnabled ? await ctx.storage.users.serviceAccountOf(client.id) : null;
    if (!account) return true;
    const roles = await effectiveRoles(ctx.storage, realm.id, account.id);
    return !Object.entries(roles.clientRoles).some(([owner, names]) => names.length > 0 && (owner === REALM_MANAGEMENT || (realm.name === 'master' && owner.endsWith('-realm'))));
  }

  /** The registration auth of a caller that may read (`view`) or change a client, or a refusal as Keycloak's. */
  async function requireClientAccess(realm: Realm, caller: Caller, client: Client | null, mode: 'view' | 'update'): Promise<RegistrationAuth> {
    if (caller.kind === 'user') {
      if (!(mode === 'view' ? holds(caller, 'manage-clients', 'view-clients') : holds(caller, 'manage-clients'))) throw forbidden();
      if (!client) throw oauthError.invalid_request('Client not found', { status: 404 });
      if (!(await userMayReach(realm, client))) throw forbidden('Client not registered through client registration, or its service account holds administrative roles');
      return 'authenticated';
    }
    if (caller.kind === 'registration' && client) {
      const stored = await ctx.storage.clientRegistration.registrationToken(client.id);
      if (stored && secretsEqual(stored.tokenHash, caller.hash)) return stored.registrationAuth === 'anonymous' ? 'anonymous' : 'authenticated';
    }
    if (mode === 'view') {
      if (caller.kind === 'initial') throw unauthorized('Not initial access token allowed');
      throw unauthorized('Not authorized to view client. Not valid token or client credentials provided.');
    }
    throw unauthorized('Not authorized to update client. Maybe missing token or bad token type.');
  }

  /** The parsed request: a client, the fields it gave, its scope names and mappers; 400 invalid_client_metadata otherwise. */
  async function readBody(provider: Provider, body: unknown, existing: Client | null) {
    return metadataWork(async () => {
      if (provider === 'openid-connect') {
        const { client, optionalClientScopes } = clientFromMetadata(body, existing?.attributes ?? {});
        const given = parseClient(client);
        return { given, optionalClientScopes, defaultClientScopes: undefined as string[] | undefined, protocolMappers: undefined as ReturnType<typeof parseClientExtras>['protocolMappers'] };
      }
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw oauthError.invalid_client_metadata('Client metadata invalid: the body must be a client representation (a JSON object)');
      const given = parseClient(body);
      return { given, ...parseClientExtras(body) };
    });
  }

  async function checkClient(realm: Realm, caller: Caller, client: Client, previousOverrides: Record<string, string>): Promise<void> {
    // A client's flow overrides decide how users sign in (and an SSO session made through a weaker flow serves every
    // client): only an administrator's token sets them here, as through the admin API (a deliberate restriction).
    const overrides = JSON.stringify(Object.entries(client.authenticationFlowBindingOverrides).sort());
    if (caller.kind !== 'user' && overrides !== JSON.stringify(Object.entries(previousOverrides).sort())) {
      throw oauthError.invalid_client_metadata('Client metadata invalid: authenticationFlowBindingOverrides are set by an administrator (the admin API or a user token with manage-clients)');
    }
    await metadataWork(() => checkClientAttributes(ctx, client.attributes));
    const problem = await ctx.flows.validateOverrides(realm, client.authenticationFlowBindingOverrides, previousOverrides);
    if (problem) throw oauthError.invalid_client_metadata(problem);
  }

  /** The registration access token to answer a reader with: the one shown, signed again if the realm's key changed since. */
  async function tokenForReader(realm: Realm, base: string, caller: Extract<Caller, { kind: 'registration' }>, auth: RegistrationAuth): Promise<string> {
    if ((await ctx.keys.signingKey(realm.id)).kid === caller.kid) return caller.token;
    return (await issueRegistrationToken(ctx, realm, base, REGISTRATION_ACCESS_TOKEN, { jti: caller.jti, registrationAuth: auth })).token;
  }

  async function answer(realm: Realm, base: string, provider: Provider, client: Client, token: string | undefined, issuedAt?: number) {
    const view = (await clientScopeViews(ctx.storage, realm.id, [client.id])).get(client.id) ?? { defaultClientScopes: [], optionalClientScopes: [], protocolMappers: [] };
    const uri = `${issuerOf(base, realm.name)}/clients-registrations/${provider}/${encodeURIComponent(client.clientId)}`;
    if (provider === 'openid-connect') return { uri, body: metadataOf(client, view, { registrationAccessToken: token, registrationClientUri: uri, issuedAt }) };
    const rep: Record<string, unknown> = { ...clientRep(client, view) };
    if (!client.publicClient && !client.bearerOnly && client.secret !== null) rep.secret = client.secret;
    if (token) rep.registrationAccessToken = token;
    return { uri, body: rep };
  }

  /** Runs an operation and records its event: `type` on success, `type_ERROR` for the refusals Keycloak records. */
  async function withEvent<T>(realm: Realm, request: FastifyRequest, type: string, clientId: () => string | null, work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      await ctx.events.user(realm, { type, clientId: clientId(), request: requestInfo(request) });
      return result;
    } catch (error) {
      const eventError = eventErrorOf(error);
      if (eventError) {
        await ctx.events.user(realm, { type: `${type}_ERROR`, clientId: clientId(), error: eventError, details: { reason: (error as OAuthError).description }, request: requestInfo(request) });
      }
      throw error;
    }
  }

  async function start(request: FastifyRequest<{ Params: Params }>) {
    const realm = await realmOrError(ctx.storage, request.params.realm);
    if (!PROVIDERS.has(request.params.provider)) throw oauthError.invalid_request('Client registration provider not found', { status: 404 });
    return { realm, base: baseUrl(request, ctx.config.hostname), provider: request.params.provider as Provider };
  }

  app.post<{ Params: Params }>('/realms/:realm/clients-registrations/:provider', async (request, reply: FastifyReply) => {
    const { realm, base, provider } = await start(request);
    let clientId: string | null = null;
    return withEvent(realm, request, 'CLIENT_REGISTER', () => clientId, async () => {
      const body = request.body as Record<string, unknown> | null;
      if (provider === 'openid-connect' && body && typeof body === 'object' && body.client_id !== undefined) {
        throw oauthError.invalid_client_metadata('Client Identifier included');
      }
      const parsed = await readBody(provider, body, null);
      const caller = await callerOf(realm, base, request);
      let auth: RegistrationAuth = 'anonymous';
      if (caller.kind === 'user') {
        if (!holds(caller, 'manage-clients', 'create-client')) throw forbidden();
        auth = 'authenticated';
      } else if (caller.kind === 'initial') {
        const { model } = caller;
        if (model.remainingCount <= 0) throw unauthorized('No remaining count on initial access token');
        if (model.expiration > 0 && model.timestamp + model.expiration <= Math.floor(Date.now() / 1000)) throw unauthorized('Expired initial access token');
        auth = 'authenticated';
      } else if (caller.kind === 'registration') {
        // Keycloak takes such a caller as anonymous; a client's token does not register others.
        auth = 'anonymous';
      }
      const named = { ...parsed.given, clientId: parsed.given.clientId ?? randomUUID() };
      // Keycloak's client policies (REGISTER): what they auto-configure is registered, a violation refused.
      const input = (await registerWithPolicies(ctx.storage, realm, named, new URL(base).origin, { updater: updaterOf(caller), remoteAddress: request.ip })) as Partial<Client> & { clientId: string };
      clientId = input.clientId;
      if (realm.name === 'master' && input.clientId.endsWith('-realm')) {
        throw oauthError.invalid_client_metadata('Client metadata invalid: client ids ending in -realm are kept for the master realm\'s administration clients');
      }
      const policyInput: PolicyInput = {
        ip: request.ip,
        client: input,
        given: parsed.given,
        defaultClientScopes: parsed.defaultClientScopes,
        optionalClientScopes: parsed.optionalClientScopes,
        mapperTypes: (parsed.protocolMappers ?? []).map((m) => m.protocolMapper),
      };
      await runRegistrationPolicies(ctx, realm, auth, 'register', policyInput);
      const draft = { ...input, attributes: input.attributes ?? {}, authenticationFlowBindingOverrides: input.authenticationFlowBindingOverrides ?? {} } as Client;
      await checkClient(realm, caller, draft, {});
      const issued = await issueRegistrationToken(ctx, realm, base, REGISTRATION_ACCESS_TOKEN, { registrationAuth: auth });
      const client = await metadataWork(() =>
        ctx.storage.transaction(async (trx) => {
          // One use of the initial access token, taken atomically: two registrations racing for the last use get one client.
          if (caller.kind === 'initial' && !(await ctx.storage.clientRegistration.takeInitialAccessUse(caller.model.id, trx))) {
            throw unauthorized('No remaining count on initial access token');
          }
          const created = await insertClient(ctx.storage, realm, input, trx, 'client', {
            defaultClientScopes: parsed.defaultClientScopes,
            optionalClientScopes: parsed.optionalClientScopes,
            protocolMappers: parsed.protocolMappers,
          });
          await ctx.storage.clientRegistration.setRegistrationToken({ clientId: created.id, realmId: realm.id, tokenHash: issued.hash, registrationAuth: auth }, trx);
          return created;
        }),
      );
      const { uri, body: answered } = await answer(realm, base, provider, client, issued.token, Math.floor(Date.now() / 1000));
      reply.code(201).header('location', uri).header('cache-control', 'no-store');
      return answered;
    });
  });

  app.get<{ Params: Params & { clientId: string } }>('/realms/:realm/clients-registrations/:provider/:clientId', async (request, reply) => {
    const { realm, base, provider } = await start(request);
    const clientId = storableClientId(request.params.clientId);
    return withEvent(realm, request, 'CLIENT_INFO', () => clientId, async () => {
      const caller = await callerOf(realm, base, request);
      const client = clientId === null ? null : await ctx.storage.clients.byClientId(realm.id, clientId);
      const auth = await requireClientAccess(realm, caller, client, 'view');
      await runRegistrationPolicies(ctx, realm, auth, 'view', { ip: request.ip, client: client! });
      const token = caller.kind === 'registration' ? await tokenForReader(realm, base, caller, auth) : undefined;
      reply.header('cache-control', 'no-store');
      return (await answer(realm, base, provider, client!, token)).body;
    });
  });

  app.put<{ Params: Params & { clientId: string } }>('/realms/:realm/clients-registrations/:provider/:clientId', async (request, reply) => {
    const { realm, base, provider } = await start(request);
    const clientId = storableClientId(request.params.clientId);
    return withEvent(realm, request, 'CLIENT_UPDATE', () => clientId, async () => {
      const caller = await callerOf(realm, base, request);
      const client = clientId === null ? null : await ctx.storage.clients.byClientId(realm.id, clientId);
      const auth = await requireClientAccess(realm, caller, client, 'update');
      const current = client!;
      const parsed = await readBody(provider, request.body, current);
      if (parsed.given.clientId !== current.clientId) throw oauthError.invalid_client_metadata('Client Identifier modified');
      // As Keycloak's update: what the request gives replaces, the rest stays (the secret too, unless given).
      const updated: Client = { ...current, ...parsed.given, id: current.id, realmId: current.realmId, clientId: current.clientId, secret: parsed.given.secret ?? current.secret };
      if (!updated.publicClient && !updated.bearerOnly && updated.secret === null) updated.secret = newSecret();
      await enforceClientPolicies(ctx.storage, realm, { event: 'UPDATE', client: current, proposed: updated, given: parsed.given, origin: new URL(base).origin, updater: updaterOf(caller), remoteAddress: request.ip });
      const view = (await clientScopeViews(ctx.storage, realm.id, [current.id])).get(current.id);
      await runRegistrationPolicies(ctx, realm, auth, 'update', {
        ip: request.ip,
        client: updated,
        given: parsed.given,
        defaultClientScopes: parsed.defaultClientScopes,
        optionalClientScopes: parsed.optionalClientScopes,
        existingScopes: [...(view?.defaultClientScopes ?? []), ...(view?.optionalClientScopes ?? [])],
        mapperTypes: (parsed.protocolMappers ?? []).map((m) => m.protocolMapper),
      });
      await checkClient(realm, caller, updated, current.authenticationFlowBindingOverrides);
      const next = caller.kind === 'registration' ? await issueRegistrationToken(ctx, realm, base, REGISTRATION_ACCESS_TOKEN, { registrationAuth: auth }) : null;
      await metadataWork(() =>
        ctx.storage.transaction(async (trx) => {
          // The token shown is good for this one update: a second request with it (even a concurrent one) is refused.
          if (caller.kind === 'registration' && !(await ctx.storage.clientRegistration.rotateRegistrationToken(current.id, caller.hash, next!.hash, trx))) {
            throw unauthorized('Not authorized to update client. Maybe missing token or bad token type.');
          }
          await ctx.storage.clients.update(updated, trx);
          if (updated.serviceAccountsEnabled) await serviceAccountNamed(updated.clientId, () => ensureServiceAccount(ctx.storage, realm, updated, trx));
          await syncServiceAccountScope(ctx.storage, updated, trx);
          if (parsed.protocolMappers) await replaceClientMappers(ctx.storage, updated, parsed.protocolMappers, trx);
        }),
      );
      reply.header('cache-control', 'no-store');
      return (await answer(realm, base, provider, updated, next?.token)).body;
    });
  });

  app.delete<{ Params: Params & { clientId: string } }>('/realms/:realm/clients-registrations/:provider/:clientId', async (request, reply) => {
    const { realm, base } = await start(request);
    const clientId = storableClientId(request.params.clientId);
    return withEvent(realm, request, 'CLIENT_DELETE', () => clientId, async () => {
      const caller = await callerOf(realm, base, request);
      const client = clientId === null ? null : await ctx.storage.clients.byClientId(realm.id, clientId);
      const auth = await requireClientAccess(realm, caller, client, 'update');
      await runRegistrationPolicies(ctx, realm, auth, 'delete', { ip: request.ip, client: client! });
      await ctx.storage.transaction(async (trx) => {
        await trx.deleteFrom('role').where('container_id', '=', client!.id).execute();
        await ctx.storage.clients.delete(client!.id, trx);
      });
      return reply.code(204).send();
    });
  });
}
