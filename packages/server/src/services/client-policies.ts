import { CONDITION, EXECUTOR, configFlag, configList, globalClientProfiles, type ClientPolicyCondition, type ClientPolicyExecutor } from '../model/client-policies.js';
import { oauthError, type OAuthError } from '../model/errors.js';
import type { Client, Realm } from '../model/types.js';
import type { Storage } from '../storage/index.js';
import { defaultClient } from '../model/defaults.js';
import { clientScopeSet } from './client-scope-set.js';
import { clientFrom } from './clients.js';
import { checkClientRedirectUris, checkRedirectUri, redirectUrisConfig } from './secure-redirect-uris.js';

/**
 * Keycloak's client policies run (its ClientPolicyEvents this server raises): a client registered or updated (the
 * admin API and dynamic client registration), an authorization request and a token request. The realm's policies
 * come with the cached realm (model/client-policies.ts, storage/realms.ts), so a realm without any costs nothing.
 *
 * A policy applies when it is enabled and its conditions vote: at least one yes and no no (a condition that does not
 * look at this kind of event abstains, as Keycloak's). Its profiles' executors then run in order: at registration
 * and update they auto-configure the proposed client or refuse it (`invalid_client_metadata`); at the endpoints they
 * refuse the request with the OAuth error Keycloak's executor answers. PRE_AUTHORIZATION_REQUEST is Keycloak's first
 * look at an authorization request, before its parameters are read (only `secure-redirect-uris-enforcer` acts on it;
 * of the conditions only any-client, client-roles and client-attributes vote, the others abstain, as Keycloak's).
 */
export type ClientPolicyEvent = 'REGISTER' | 'UPDATE' | 'PRE_AUTHORIZATION_REQUEST' | 'AUTHORIZATION_REQUEST' | 'TOKEN_REQUEST';

export interface PolicyContext {
  event: ClientPolicyEvent;
  /** The client as stored (null while it is being registered). */
  client: Client | null;
  /** REGISTER and UPDATE: the client as it would be saved; executors auto-configure it in place. */
  proposed?: Client;
  /** REGISTER and UPDATE: the fields the request gave (an executor's default fills only what it left out). */
  given?: Partial<Client>;
  /** TOKEN_REQUEST: the grant type. */
  grantType?: string;
  /** AUTHORIZATION_REQUEST and TOKEN_REQUEST: the scope parameter. */
  scope?: string;
  /** REGISTER and UPDATE: this server's origin, against which a client's relative redirect URIs are resolved. */
  origin?: string;
  /** AUTHORIZATION_REQUEST and PRE_AUTHORIZATION_REQUEST: the request's parameters. */
  param?: (name: string) => string | undefined;
  /** TOKEN_REQUEST: whether a DPoP proof came with it. */
  dpopProof?: boolean;
  /** TOKEN_REQUEST: whether a client certificate came with it (a trusted proxy's, http/client-certificate.ts). */
  clientCertificate?: boolean;
}

type Vote = 'yes' | 'no' | 'abstain';

const CRUD: readonly ClientPolicyEvent[] = ['REGISTER', 'UPDATE'];

/** The executors the realm's applicable policies run for this event, in order (global profiles by name too). */
export async function applicableExecutors(storage: Storage, realm: Realm, context: PolicyContext): Promise<ClientPolicyExecutor[]> {
  const policies = (realm.clientPolicies ?? []).filter((p) => p.enabled && p.conditions.length > 0);
  if (policies.length === 0) return [];
  const profiles = new Map([...globalClientProfiles(), ...(realm.clientProfiles ?? [])].map((p) => [p.name, p]));
  const executors: ClientPolicyExecutor[] = [];
  for (const policy of policies) {
    const votes = await Promise.all(policy.conditions.map((c) => vote(storage, c, context)));
    if (votes.includes('no') || !votes.includes('yes')) continue;
    if (policy.mode === 'STRICT' && votes.includes('abstain')) continue;
    for (const name of policy.profiles) executors.push(...(profiles.get(name)?.executors ?? []));
  }
  return executors;
}

async function vote(storage: Storage, condition: ClientPolicyCondition, context: PolicyContext): Promise<Vote> {
  const v = await conditionVote(storage, condition, context);
  if (v === 'abstain' || !configFlag(condition.configuration.is_negative_logic)) return v;
  return v === 'yes' ? 'no' : 'yes';
}

/** The clients a condition looks at: the stored one and, at registration or update, the proposed one. */
const clientsOf = (context: PolicyContext): Client[] => [context.client, context.proposed].filter((c): c is Client => c !== null && c !== undefined);

const accessType = (c: Client) => (c.publicClient ? 'public' : c.bearerOnly ? 'bearer-only' : 'confidential');

async function conditionVote(storage: Storage, condition: ClientPolicyCondition, context: PolicyContext): Promise<Vote> {
  const config = condition.configuration;
  const yes = (match: boolean): Vote => (match ? 'yes' : 'no');
  const preAuthorization = context.event === 'PRE_AUTHORIZATION_REQUEST';
  switch (condition.condition) {
    case CONDITION.anyClient:
      return 'yes';
    case CONDITION.accessType: {
      if (preAuthorization) return 'abstain';
      const types = configList(config.type ?? ['confidential']);
      return yes(clientsOf(context).some((c) => types.includes(accessType(c))));
    }
    case CONDITION.protocol: {
      if (preAuthorization) return 'abstain';
      const protocol = typeof config.protocol === 'string' ? config.protocol : 'openid-connect';
      return yes(clientsOf(context).some((c) => c.protocol === protocol));
    }
    case CONDITION.attributes: {
      const wanted = attributePairs(config.attributes);
      if (!wanted) return 'no';
      return yes(clientsOf(context).some((c) => wanted.every(([k, v]) => c.attributes[k] === v)));
    }
    case CONDITION.roles: {
      // A client being registered has no roles yet.
      if (!context.client) return 'abstain';
      const wanted = configList(config.roles);
      const roles = await storage.roles.list(context.client.id);
      return yes(roles.some((r) => wanted.includes(r.name)));
    }
    case CONDITION.scopes: {
      if (CRUD.includes(context.event) || preAuthorization || !context.client) return 'abstain';
      const wanted = configList(config.scopes);
      if ((typeof config.type === 'string' ? config.type : 'Optional') === 'Default') {
        const set = await clientScopeSet(storage, context.client);
        return yes(set.defaultScopes.some((s) => wanted.includes(s.name)));
      }
      const requested = (context.scope ?? '').split(' ');
      return yes(wanted.some((s) => requested.includes(s)));
    }
    case CONDITION.grantType:
      if (context.event !== 'TOKEN_REQUEST') return 'abstain';
      return yes(configList(config.grant_types).includes(context.grantType ?? ''));
    default:
      // Refused when saved (representations/client-policies.ts); one from an older file never matches.
      return 'no';
  }
}

/** Keycloak's client-attributes configuration: a JSON text of `[{key, value}]` (its key-value list). */
export function attributePairs(text: unknown): [string, string][] | null {
  if (typeof text !== 'string') return null;
  try {
    const list: unknown = JSON.parse(text);
    if (!Array.isArray(list)) return null;
    const pairs: [string, string][] = [];
    for (const item of list) {
      if (typeof item !== 'object' || item === null || typeof item.key !== 'string' || typeof item.value !== 'string') return null;
      pairs.push([item.key, item.value]);
    }
    return pairs;
  } catch {
    return null;
  }
}

const metadata = (what: string): OAuthError => oauthError.invalid_client_metadata(`Invalid client metadata: ${what}`);

/**
 * Runs the applicable executors: REGISTER and UPDATE change `context.proposed` (auto-configure) or throw
 * `invalid_client_metadata`; the endpoints' events throw the executor's OAuth error.
 */
export async function enforceClientPolicies(storage: Storage, realm: Realm, context: PolicyContext): Promise<void> {
  for (const { executor, configuration } of await applicableExecutors(storage, realm, context)) {
    if (CRUD.includes(context.event)) configureClient(executor, configuration, context);
    else checkRequest(executor, configuration, context);
  }
}

function configureClient(executor: string, config: Record<string, unknown>, context: PolicyContext): void {
  const client = context.proposed;
  if (!client) return;
  const auto = configFlag(config['auto-configure']);
  switch (executor) {
    case EXECUTOR.pkce:
      if (auto) client.attributes = { ...client.attributes, 'pkce.code.challenge.method': 'S256' };
      else if (client.attributes['pkce.code.challenge.method'] !== 'S256') throw metadata('code_challenge_method');
      return;
    case EXECUTOR.fullScopeDisabled:
      if (auto) client.fullScopeAllowed = false;
      else if (client.fullScopeAllowed) throw oauthError.invalid_registration('Not permitted to enable fullScopeAllowed');
      return;
    case EXECUTOR.rejectImplicit:
      if (auto) client.implicitFlowEnabled = false;
      else if (client.implicitFlowEnabled) throw metadata('implicit flow enabled');
      return;
    case EXECUTOR.rejectRopc:
      if (auto) client.directAccessGrantsEnabled = false;
      else if (client.directAccessGrantsEnabled) throw metadata('resource owner password credentials grant enabled');
      return;
    case EXECUTOR.dpopBind:
      if (auto) client.attributes = { ...client.attributes, 'dpop.bound.access.tokens': 'true' };
      return;
    case EXECUTOR.holderOfKey:
      // RFC 8705 certificate-bound tokens: switched on (auto-configure), else required.
      if (auto) client.attributes = { ...client.attributes, 'tls.client.certificate.bound.access.tokens': 'true' };
      else if (client.attributes['tls.client.certificate.bound.access.tokens'] !== 'true') throw metadata('MTLS token in disabled');
      return;
    case EXECUTOR.secureRedirectUris:
      checkClientRedirectUris(client, redirectUrisConfig(config), context.origin);
      return;
    case EXECUTOR.clientAuthenticator: {
      if (client.publicClient || client.bearerOnly) return;
      const allowed = configList(config['allowed-client-authenticators']);
      const fallback = typeof config['default-client-authenticator'] === 'string' ? config['default-client-authenticator'] : undefined;
      // A client created or changed without naming one takes the executor's default, as Keycloak's autoConfigure
      // (REGISTER and UPDATE; dynamic registration's openid-connect metadata always names one, client_secret_basic
      // when token_endpoint_auth_method is absent, as Keycloak's DescriptionConverter).
      if (context.given?.clientAuthenticatorType === undefined && fallback) {
        client.clientAuthenticatorType = fallback as Client['clientAuthenticatorType'];
      }
      if (!allowed.includes(client.clientAuthenticatorType)) throw metadata('token_endpoint_auth_method');
      return;
    }
    default:
      // confidential-client looks at the endpoints only.
      return;
  }
}

function checkRequest(executor: string, config: Record<string, unknown>, context: PolicyContext): void {
  const client = context.client;
  if (context.event === 'PRE_AUTHORIZATION_REQUEST') {
    // Keycloak's checks the request's redirect_uri (even under allow-open-redirect, which concerns registered URIs)
    // when the client uses a flow that redirects. Without one in the query (a pushed request, a request object)
    // there is nothing to check here: the redirect URI used must match a registered one, checked when saved.
    const redirectUri = context.param?.('redirect_uri');
    if (executor === EXECUTOR.secureRedirectUris && client && (client.standardFlowEnabled || client.implicitFlowEnabled) && redirectUri !== undefined) {
      checkRedirectUri(redirectUri, redirectUrisConfig(config), true);
    }
    return;
  }
  switch (executor) {
    case EXECUTOR.confidentialClient:
      // Keycloak's runs at the authorization request and the code's redemption, not at the other grants.
      if (context.event === 'TOKEN_REQUEST' && context.grantType !== 'authorization_code') return;
      if (client?.publicClient) throw oauthError.invalid_client('invalid client access type: public');
      return;
    case EXECUTOR.pkce: {
      if (context.event !== 'AUTHORIZATION_REQUEST') return;
      const method = context.param?.('code_challenge_method');
      const challenge = context.param?.('code_challenge');
      if (!method) throw oauthError.invalid_request('Missing parameter: code_challenge_method');
      if (method !== 'S256') throw oauthError.invalid_request('Invalid parameter: invalid code_challenge_method');
      if (!challenge) throw oauthError.invalid_request('Missing parameter: code_challenge');
      return;
    }
    case EXECUTOR.clientAuthenticator:
      // Keycloak's validateDuringClientRequest: a confidential client whose stored authenticator the executor no
      // longer allows is refused at the token endpoint (every grant), whatever it authenticated with.
      if (context.event === 'TOKEN_REQUEST' && client && !client.publicClient && !configList(config['allowed-client-authenticators']).includes(client.clientAuthenticatorType)) {
        throw oauthError.invalid_request('Configured client authentication method not allowed for client');
      }
      return;
    case EXECUTOR.rejectRopc:
      if (context.event === 'TOKEN_REQUEST' && context.grantType === 'password') throw oauthError.invalid_grant('resource owner password credentials grant is prohibited.');
      return;
    case EXECUTOR.rejectImplicit:
      // Only response_type=code is answered here (protocol/openid-connect/auth.ts): nothing implicit gets through.
      return;
    case EXECUTOR.holderOfKey:
      // A refresh is checked by the refresh grant itself (the token's certificate against the request's).
      if (context.event === 'TOKEN_REQUEST' && context.grantType !== 'refresh_token' && !context.clientCertificate) {
        throw oauthError.invalid_request('Client Certification missing for MTLS HoK Token Binding');
      }
      return;
    case EXECUTOR.dpopBind:
      if (context.event === 'TOKEN_REQUEST' && !context.dpopProof) throw oauthError.invalid_dpop_proof('DPoP proof is missing');
      if (context.event === 'AUTHORIZATION_REQUEST' && configFlag(config['enforce-authorization-code-binding-to-dpop']) && !context.param?.('dpop_jkt')) {
        throw oauthError.invalid_request('Missing parameter: dpop_jkt');
      }
      return;
    default:
      return;
  }
}

/** The fields executors set at registration (configureClient). */
const CONFIGURED_FIELDS = ['attributes', 'fullScopeAllowed', 'implicitFlowEnabled', 'directAccessGrantsEnabled', 'clientAuthenticatorType'] as const;

/**
 * REGISTER for a client made from `input` (the admin API's and dynamic registration's create): the policies see
 * the client `input` makes, and their auto-configured fields are written back into what is returned.
 */
export async function registerWithPolicies(storage: Storage, realm: Realm, input: Partial<Client>, origin?: string): Promise<Partial<Client>> {
  if (!realm.clientPolicies?.length) return input;
  const proposed = clientFrom({ ...input }, defaultClient('', realm.id, input.clientId ?? ''));
  await enforceClientPolicies(storage, realm, { event: 'REGISTER', client: null, proposed, given: input, origin });
  const configured: Partial<Client> = { ...input };
  for (const field of CONFIGURED_FIELDS) (configured as Record<string, unknown>)[field] = proposed[field];
  return configured;
}
