import { isIP } from 'node:net';
import {
  ADMIN_ONLY_SIGNATURE_ALGORITHM_ATTRIBUTE,
  CONDITION,
  EXECUTOR,
  FAPI_ALGORITHMS,
  SIGNATURE_ALGORITHM_ATTRIBUTES,
  configFlag,
  configList,
  globalClientProfiles,
  type ClientPolicyCondition,
  type ClientPolicyExecutor,
  type UpdaterSource,
} from '../model/client-policies.js';
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
 * PUSHED_AUTHORIZATION_REQUEST, TOKEN_INTROSPECT, TOKEN_REVOKE and LOGOUT_REQUEST are raised by the PAR,
 * introspection and revocation endpoints and the refresh token's logout once the client is authenticated (Keycloak
 * raises LOGOUT_REQUEST there, not at the browser's logout); only the executors Keycloak runs there act on them.
 */
export type ClientPolicyEvent = 'REGISTER' | 'UPDATE' | 'PRE_AUTHORIZATION_REQUEST' | 'AUTHORIZATION_REQUEST' | 'TOKEN_REQUEST' | 'PUSHED_AUTHORIZATION_REQUEST' | 'TOKEN_INTROSPECT' | 'TOKEN_REVOKE' | 'LOGOUT_REQUEST';

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
  /** REGISTER and UPDATE: through the admin API (Keycloak checks the access token's algorithm only there). */
  adminApi?: boolean;
  /** REGISTER and UPDATE: who asks (Keycloak's client-updater-context). */
  updater?: UpdaterSource;
  /** REGISTER and UPDATE: the sender's address (client-updater-source-host). */
  remoteAddress?: string;
  /** Where the client authenticates (token, PAR, introspection, revocation): the request's form fields. */
  form?: (name: string) => string | undefined;
  /** With `form`: the realm's issuer, the one audience a client assertion may name under secure-client-authentication-assertion. */
  issuer?: string;
  /**
   * PRE_AUTHORIZATION_REQUEST: the parameter names of the pushed request the query's request_uri names (not taken),
   * or null when it names none; `dropPushedRequest` spends it (a refused request leaves nothing to retry with).
   */
  pushedRequest?: () => Promise<string[] | null>;
  dropPushedRequest?: () => Promise<void>;
  /** PRE_AUTHORIZATION_REQUEST: the names of the query's (or form's) parameters. */
  queryNames?: string[];
}

type Vote = 'yes' | 'no' | 'abstain';

const CRUD: readonly ClientPolicyEvent[] = ['REGISTER', 'UPDATE'];
/** The events after client authentication at the token, PAR, introspection and revocation endpoints. */
const AUTHENTICATED: readonly ClientPolicyEvent[] = ['TOKEN_REQUEST', 'PUSHED_AUTHORIZATION_REQUEST', 'TOKEN_INTROSPECT', 'TOKEN_REVOKE', 'LOGOUT_REQUEST'];

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
    case CONDITION.updaterContext:
      if (!CRUD.includes(context.event)) return 'abstain';
      return yes(configList(config['update-client-source']).includes(context.updater ?? 'ByAnonymous'));
    case CONDITION.updaterSourceHost:
      if (!CRUD.includes(context.event)) return 'abstain';
      return yes(context.remoteAddress !== undefined && sourceHostTrusted(context.remoteAddress, configList(config['trusted-hosts'])));
    default:
      // Refused when saved (representations/client-policies.ts); one from an older file never matches.
      return 'no';
  }
}

const bareIp = (ip: string) => ip.toLowerCase().replace(/^\[|\]$/g, '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');

/**
 * client-updater-source-host: the sender's address is one of the trusted hosts. Keycloak resolves each host name;
 * here a trusted host is an address, or `localhost` for a loopback sender (the only name not refused when saved,
 * representations/client-policies.ts), so no name is looked up while a client is saved.
 */
export function sourceHostTrusted(remoteAddress: string, trustedHosts: string[]): boolean {
  const sender = bareIp(remoteAddress);
  const loopback = sender.startsWith('127.') || sender === '::1';
  return trustedHosts.some((host) => (host.toLowerCase() === 'localhost' ? loopback : isIP(bareIp(host)) !== 0 && bareIp(host) === sender));
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
    else await checkRequest(executor, configuration, context);
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
    // Keycloak's ConsentRequiredExecutor: the client asks the user's consent (the consent screen, pages/consent.ts).
    case EXECUTOR.consentRequired:
      if (auto) client.consentRequired = true;
      else if (!client.consentRequired) throw oauthError.invalid_registration('Client is required to enable consentRequired');
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
    case EXECUTOR.signatureAlgorithm: {
      // Keycloak's: each algorithm attribute left out takes the default (PS256 unless configured), one given must be FAPI's.
      const fallback = typeof config['default-algorithm'] === 'string' && FAPI_ALGORITHMS.includes(config['default-algorithm']) ? config['default-algorithm'] : 'PS256';
      const targets: string[] = [...SIGNATURE_ALGORITHM_ATTRIBUTES, ...(context.adminApi ? [ADMIN_ONLY_SIGNATURE_ALGORITHM_ATTRIBUTE] : [])];
      const attributes = { ...client.attributes };
      for (const target of targets) {
        const alg = attributes[target];
        if (alg === undefined || alg === null) attributes[target] = fallback;
        else if (!FAPI_ALGORITHMS.includes(alg)) throw oauthError.invalid_request('not allowed signature algorithm.');
      }
      client.attributes = attributes;
      return;
    }
    case EXECUTOR.clientUris:
      checkClientUris(client, context.event === 'REGISTER');
      return;
    case EXECUTOR.secureLogout:
      // Keycloak's: front-channel logout (the switch or a front-channel URL) only with allow-front-channel-logout. Its
      // check of the logout request (GET refused) never meets one: LOGOUT_REQUEST is raised by the refresh token's POST.
      if (!configFlag(config['allow-front-channel-logout']) && (client.frontchannelLogout || (client.attributes['frontchannel.logout.url'] ?? '').trim() !== '')) {
        throw oauthError.invalid_registration('Front-channel logout is not allowed for this client');
      }
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

/**
 * secure-client-uris at registration and update, as Keycloak's: every URL the client names is https and has no
 * wildcard (`invalid_client_metadata`, "Invalid <field>"); registered with a root URL and no redirect URI, the root
 * URL becomes its redirect URI. Web origins and post-logout redirect URIs of `+` stand for the redirect URIs.
 */
function checkClientUris(client: Client, registering: boolean): void {
  if (registering && client.rootUrl && client.redirectUris.length === 0) client.redirectUris = [client.rootUrl];
  const a = client.attributes;
  const multi = (key: string) => (a[key] ? a[key].split('##').filter((v) => v !== '') : []);
  const withRedirects = (values: string[]) => values.flatMap((v) => (v === '+' ? client.redirectUris : [v]));
  const fields: [string, (string | null | undefined)[]][] = [
    ['rootUrl', [client.rootUrl]],
    ['adminUrl', [client.adminUrl]],
    ['baseUrl', [client.baseUrl]],
    ['logoutUrl', [a['backchannel.logout.url']]],
    ['redirectUris', client.redirectUris],
    ['webOrigins', withRedirects(client.webOrigins)],
    ['jwksUri', [a['jwks.url']]],
    ['requestUris', multi('request.uris')],
    ['postLogoutUris', withRedirects(multi('post.logout.redirect.uris'))],
    ['logoUri', [a.logoUri]],
    ['tosUri', [a.tosUri]],
    ['policyUri', [a.policyUri]],
  ];
  for (const [name, values] of fields) {
    for (const value of values) {
      if (!value) continue;
      if (!value.startsWith('https://') || value.includes('*')) throw oauthError.invalid_client_metadata(`Invalid ${name}`);
    }
  }
}

/** A client authenticator that authenticates with a signed JWT (Keycloak's supportsClientAssertion). */
const ASSERTION_AUTHENTICATORS = ['client-jwt', 'client-secret-jwt'];

/** The JOSE header and claims of a compact JWT, without verifying it (the client authenticator has). */
function jwtParts(jwt: string): { header: Record<string, unknown>; claims: Record<string, unknown> } | null {
  const parts = jwt.split('.');
  if (parts.length < 2 || parts.length > 3) return null;
  try {
    const header: unknown = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    if (typeof header !== 'object' || header === null || typeof claims !== 'object' || claims === null) return null;
    return { header: header as Record<string, unknown>, claims: claims as Record<string, unknown> };
  } catch {
    return null;
  }
}

async function checkRequest(executor: string, config: Record<string, unknown>, context: PolicyContext): Promise<void> {
  const client = context.client;
  if (AUTHENTICATED.includes(context.event)) {
    const grant = context.grantType;
    // Keycloak raises TOKEN_REQUEST for the code grant, TOKEN_REFRESH and SERVICE_ACCOUNT_TOKEN_REQUEST for theirs.
    if (executor === EXECUTOR.assertionAudience && context.event !== 'LOGOUT_REQUEST' && (context.event !== 'TOKEN_REQUEST' || grant === 'authorization_code' || grant === 'refresh_token')) {
      checkAssertionAudience(context);
    }
    if (executor === EXECUTOR.signedJwtAlgorithm && context.event !== 'PUSHED_AUTHORIZATION_REQUEST' && (context.event !== 'TOKEN_REQUEST' || ['authorization_code', 'refresh_token', 'client_credentials'].includes(grant ?? ''))) {
      checkAssertionAlgorithm(config, context);
    }
    if (executor === EXECUTOR.parContent && context.event === 'PUSHED_AUTHORIZATION_REQUEST' && !context.form?.('redirect_uri')) {
      throw oauthError.invalid_request("PAR is required to have a 'redirect_uri' parameter");
    }
    // Keycloak's secure-client-authenticator checks these too (the token endpoint's check is below).
    if (executor === EXECUTOR.clientAuthenticator && ['TOKEN_INTROSPECT', 'TOKEN_REVOKE', 'LOGOUT_REQUEST'].includes(context.event)) {
      checkConfiguredAuthenticator(config, context);
    }
    if (context.event !== 'TOKEN_REQUEST') return;
  }
  if (context.event === 'PRE_AUTHORIZATION_REQUEST' && executor === EXECUTOR.parContent) {
    await checkPushedRequestOnly(context);
    return;
  }
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
      if (context.event === 'TOKEN_REQUEST') checkConfiguredAuthenticator(config, context);
      return;
    case EXECUTOR.rejectRopc:
      if (context.event === 'TOKEN_REQUEST' && context.grantType === 'password') throw oauthError.invalid_grant('resource owner password credentials grant is prohibited.');
      return;
    case EXECUTOR.rejectImplicit:
      // Only response_type=code is answered here (protocol/openid-connect/auth.ts): nothing implicit gets through.
      return;
    case EXECUTOR.secureSession:
      // Keycloak's: an OpenID Connect request (scope openid) carries a nonce, any other a state.
      if (context.event !== 'AUTHORIZATION_REQUEST') return;
      if ((context.scope ?? '').split(' ').includes('openid')) {
        if (!context.param?.('nonce')) throw oauthError.invalid_request('Missing parameter: nonce');
      } else if (!context.param?.('state')) {
        throw oauthError.invalid_request('Missing parameter: state');
      }
      return;
    case EXECUTOR.clientUris: {
      // Keycloak's: the request's redirect URI is https (or http on localhost/127.0.0.1 when allowed), no wildcard.
      if (context.event !== 'AUTHORIZATION_REQUEST') return;
      const redirectUri = context.param?.('redirect_uri');
      if (!redirectUri) throw oauthError.invalid_request('no redirect_uri specified.');
      if (redirectUri.includes('*')) throw oauthError.invalid_request('Invalid redirect_uri');
      const loopback = redirectUri.startsWith('http://localhost') || redirectUri.startsWith('http://127.0.0.1');
      if (!redirectUri.startsWith('https://') && !(configFlag(config['allow-http-on-localhost']) && loopback)) throw oauthError.invalid_request('Invalid redirect_uri');
      return;
    }
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

/** secure-client-authenticator at the endpoints: a confidential client whose configured method the executor no longer allows. */
function checkConfiguredAuthenticator(config: Record<string, unknown>, context: PolicyContext): void {
  const client = context.client;
  if (client && !client.publicClient && !configList(config['allowed-client-authenticators']).includes(client.clientAuthenticatorType)) {
    throw oauthError.invalid_request('Configured client authentication method not allowed for client');
  }
}

/** secure-client-authentication-assertion: a client assertion names exactly one audience, the realm's issuer. */
function checkAssertionAudience(context: PolicyContext): void {
  if (!context.client || context.client.publicClient) return;
  const type = context.form?.('client_assertion_type');
  const assertion = context.form?.('client_assertion');
  if (type !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' || assertion === undefined) return;
  if (assertion.split('.').length < 2 || assertion.split('.').length > 3) throw oauthError.invalid_request('invalid client assertion format');
  const parts = jwtParts(assertion);
  if (!parts) throw oauthError.invalid_request('invalid client assertion');
  const aud = parts.claims.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (audiences.length !== 1 || audiences[0] !== context.issuer) throw oauthError.invalid_request('invalid audience in client assertion');
}

/** secure-signature-algorithm-signed-jwt: a client authenticating with a signed JWT signs it with a FAPI algorithm. */
function checkAssertionAlgorithm(config: Record<string, unknown>, context: PolicyContext): void {
  const client = context.client;
  if (!client || client.publicClient || !ASSERTION_AUTHENTICATORS.includes(client.clientAuthenticatorType)) {
    if (configFlag(config['require-client-assertion'])) throw oauthError.invalid_request('client assertion is required.');
    return;
  }
  const parts = jwtParts(context.form?.('client_assertion') ?? '');
  if (!parts) throw oauthError.invalid_request('not allowed input format.');
  if (typeof parts.header.alg !== 'string' || !FAPI_ALGORITHMS.includes(parts.header.alg)) throw oauthError.invalid_request('not allowed signature algorithm.');
}

/**
 * secure-par-content, before the authorization request is read: it names a pushed request (request_uri) and every
 * other query parameter is one the pushed request has; otherwise refused, and a pushed request found is spent.
 */
async function checkPushedRequestOnly(context: PolicyContext): Promise<void> {
  const requestUri = context.param?.('request_uri');
  if (!requestUri?.startsWith('urn:ietf:params:oauth:request_uri:')) throw oauthError.invalid_request('PAR request_uri not included.');
  const pushed = await context.pushedRequest?.();
  if (!pushed) throw oauthError.invalid_request_uri('PAR not found, not issued or used multiple times.');
  const extra = (context.queryNames ?? []).filter((name) => name !== 'request_uri' && !pushed.includes(name));
  if (extra.length > 0) {
    await context.dropPushedRequest?.();
    throw oauthError.invalid_request_object('PAR request did not include query parameter');
  }
}

/** The fields executors set at registration (configureClient). */
const CONFIGURED_FIELDS = ['attributes', 'fullScopeAllowed', 'consentRequired', 'implicitFlowEnabled', 'directAccessGrantsEnabled', 'clientAuthenticatorType', 'redirectUris'] as const;

/**
 * REGISTER for a client made from `input` (the admin API's and dynamic registration's create): the policies see
 * the client `input` makes, and their auto-configured fields are written back into what is returned.
 */
export async function registerWithPolicies(
  storage: Storage,
  realm: Realm,
  input: Partial<Client>,
  origin?: string,
  caller: Pick<PolicyContext, 'adminApi' | 'updater' | 'remoteAddress'> = {},
): Promise<Partial<Client>> {
  if (!realm.clientPolicies?.length) return input;
  const proposed = clientFrom({ ...input }, defaultClient('', realm.id, input.clientId ?? ''));
  await enforceClientPolicies(storage, realm, { event: 'REGISTER', client: null, proposed, given: input, origin, ...caller });
  const configured: Partial<Client> = { ...input };
  for (const field of CONFIGURED_FIELDS) (configured as Record<string, unknown>)[field] = proposed[field];
  return configured;
}
