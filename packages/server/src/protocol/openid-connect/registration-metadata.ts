import { oauthError } from '../../model/errors.js';
import type { Client } from '../../model/types.js';
import { CLIENT_KEY_ATTRIBUTES } from '../../keys/client-keys.js';
import { X509_REGEX_COMPARISON, X509_SUBJECT_DN } from '../../keys/distinguished-name.js';
import { CERTIFICATE_BOUND_TOKENS } from './mtls.js';
import { DEVICE_CODE_GRANT } from './device.js';
import { TOKEN_EXCHANGE_GRANT } from './token/token-exchange.js';

/**
 * RFC 7591 client metadata as Keycloak 26.7.3 reads and answers it (its DescriptionConverter): what a registration
 * at `clients-registrations/openid-connect` makes of a client, and the metadata a client's answer shows.
 */

const DEVICE_GRANT_ATTRIBUTE = 'oauth2.device.authorization.grant.enabled';
const POST_LOGOUT_ATTRIBUTE = 'post.logout.redirect.uris';

/** token_endpoint_auth_method → Keycloak's client authenticator (`none`: a public client). */
const AUTH_METHODS: Record<string, Client['clientAuthenticatorType'] | 'none'> = {
  client_secret_basic: 'client-secret',
  client_secret_post: 'client-secret',
  client_secret_jwt: 'client-secret-jwt',
  private_key_jwt: 'client-jwt',
  tls_client_auth: 'client-x509',
  none: 'none',
};

/**
 * RFC 8705 2.1.2: a `tls_client_auth` client names what its certificate must say by exactly one of these. Keycloak
 * (as this server) compares the subject DN only; the others are refused by name rather than dropped, so a client
 * never believes a check is made that is not.
 */
const TLS_SUBJECT_DN = 'tls_client_auth_subject_dn';
const TLS_SUBJECT_ALTERNATIVES = ['tls_client_auth_san_dns', 'tls_client_auth_san_uri', 'tls_client_auth_san_ip', 'tls_client_auth_san_email'];

const metadataError = (field: string, problem: string) => oauthError.invalid_client_metadata(`Client metadata invalid: ${field} ${problem}`);

const MAX_TEXT = 2048;

function text(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw metadataError(field, 'must be a string');
  if (value.length > MAX_TEXT) throw metadataError(field, `must be at most ${MAX_TEXT} characters`);
  return value;
}

function texts(body: Record<string, unknown>, field: string, max = 100): string[] | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v.length > MAX_TEXT)) throw metadataError(field, `must be a list of strings of at most ${MAX_TEXT} characters`);
  if (value.length > max) throw metadataError(field, `must have at most ${max} entries`);
  return value as string[];
}

function flag(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw metadataError(field, 'must be true or false');
  return value;
}

/** What a client made from metadata is, and the names of its client scopes (`scope`: optional ones, as Keycloak). */
export interface RegisteredMetadata {
  client: Partial<Client> & { attributes: Record<string, string> };
  optionalClientScopes?: string[];
}

/**
 * The metadata of a registration (or an update: `existing` attributes are kept unless the metadata sets them) as a
 * client. Throws `invalid_client_metadata` naming the field.
 */
export function clientFromMetadata(body: unknown, existing: Readonly<Record<string, string>> = {}): RegisteredMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw oauthError.invalid_client_metadata('Client metadata invalid: the body must be a JSON object');
  const m = body as Record<string, unknown>;
  const attributes: Record<string, string> = { ...existing };
  const client: RegisteredMetadata['client'] = { protocol: 'openid-connect', attributes };
  const clientId = text(m, 'client_id');
  if (clientId !== undefined) client.clientId = clientId;
  const name = text(m, 'client_name');
  if (name !== undefined) client.name = name;
  const clientUri = text(m, 'client_uri');
  if (clientUri !== undefined) client.baseUrl = clientUri;
  const redirectUris = texts(m, 'redirect_uris');
  if (redirectUris !== undefined) client.redirectUris = redirectUris;

  const responseTypes = texts(m, 'response_types', 10) ?? ['code'];
  for (const type of responseTypes) {
    // This server answers the code flow only (discovery's response_types_supported).
    if (type !== 'code' && type !== 'none') throw metadataError('response_types', `${JSON.stringify(type.slice(0, 40))} is not supported (code)`);
  }
  client.standardFlowEnabled = responseTypes.includes('code');
  client.implicitFlowEnabled = false;

  const grantTypes = texts(m, 'grant_types', 20);
  if (grantTypes !== undefined) {
    if (grantTypes.includes('implicit')) throw metadataError('grant_types', '"implicit" is not supported');
    client.directAccessGrantsEnabled = grantTypes.includes('password');
    client.serviceAccountsEnabled = grantTypes.includes('client_credentials');
    attributes[DEVICE_GRANT_ATTRIBUTE] = String(grantTypes.includes(DEVICE_CODE_GRANT));
    attributes['standard.token.exchange.enabled'] = String(grantTypes.includes(TOKEN_EXCHANGE_GRANT));
    attributes['use.refresh.tokens'] = String(grantTypes.includes('refresh_token'));
  }

  const method = text(m, 'token_endpoint_auth_method');
  const authenticator = method === undefined ? 'client-secret' : AUTH_METHODS[method];
  if (authenticator === undefined) throw metadataError('token_endpoint_auth_method', `${JSON.stringify(method!.slice(0, 40))} is not a client authentication method of this server (${Object.keys(AUTH_METHODS).join(', ')})`);
  client.publicClient = authenticator === 'none';
  client.clientAuthenticatorType = authenticator === 'none' ? 'client-secret' : authenticator;

  // Keycloak's DescriptionConverter: the subject DN is the client's `x509.subjectdn`, compared as a DN (never as the
  // regular expression the admin console may set: the metadata names the DN exactly).
  const subjectDn = text(m, TLS_SUBJECT_DN);
  for (const field of TLS_SUBJECT_ALTERNATIVES) {
    if (m[field] !== undefined && m[field] !== null) throw metadataError(field, `is not supported (${TLS_SUBJECT_DN} only)`);
  }
  if (subjectDn !== undefined) Object.assign(attributes, { [X509_SUBJECT_DN]: subjectDn, [X509_REGEX_COMPARISON]: 'false' });
  if (method === 'tls_client_auth' && !attributes[X509_SUBJECT_DN]?.trim()) {
    throw metadataError(TLS_SUBJECT_DN, 'is required with token_endpoint_auth_method tls_client_auth');
  }

  const jwksUri = text(m, 'jwks_uri');
  const jwks = m.jwks;
  if (jwksUri !== undefined && jwks !== undefined && jwks !== null) throw oauthError.invalid_client_metadata('Client metadata invalid: Illegal to use both jwks_uri and jwks');
  const a = CLIENT_KEY_ATTRIBUTES;
  if (jwksUri !== undefined) {
    Object.assign(attributes, { [a.useJwksUrl]: 'true', [a.jwksUrl]: jwksUri, [a.useJwksString]: 'false' });
    delete attributes[a.jwksString];
  } else if (jwks !== undefined && jwks !== null) {
    if (typeof jwks !== 'object' || !Array.isArray((jwks as { keys?: unknown }).keys)) throw metadataError('jwks', 'must be a JWK set (an object with "keys")');
    const textual = JSON.stringify(jwks);
    if (textual.length > 16384) throw metadataError('jwks', 'must be at most 16384 characters');
    Object.assign(attributes, { [a.useJwksString]: 'true', [a.jwksString]: textual, [a.useJwksUrl]: 'false' });
    delete attributes[a.jwksUrl];
  }
  if (method === 'private_key_jwt' && attributes[a.jwksUrl] === undefined && attributes[a.jwksString] === undefined) {
    throw oauthError.invalid_client_metadata("Client metadata invalid: Didn't find key of supported keyType for use sig");
  }

  const scope = text(m, 'scope');
  const optionalClientScopes = scope === undefined ? undefined : scope.split(' ').filter((s) => s !== '');

  const algs: [string, string][] = [
    ['id_token_signed_response_alg', 'id.token.signed.response.alg'],
    ['userinfo_signed_response_alg', 'user.info.response.signature.alg'],
    ['request_object_signing_alg', 'request.object.signature.alg'],
    ['token_endpoint_auth_signing_alg', 'token.endpoint.auth.signing.alg'],
  ];
  for (const [field, attribute] of algs) {
    const value = text(m, field);
    if (value !== undefined) attributes[attribute] = value;
  }
  const postLogout = texts(m, 'post_logout_redirect_uris');
  if (postLogout !== undefined) attributes[POST_LOGOUT_ATTRIBUTE] = postLogout.join('##');
  const backchannel = text(m, 'backchannel_logout_uri');
  if (backchannel !== undefined) attributes['backchannel.logout.url'] = backchannel;
  attributes['backchannel.logout.session.required'] = String(flag(m, 'backchannel_logout_session_required') ?? true);
  attributes['backchannel.logout.revoke.offline.tokens'] = String(flag(m, 'backchannel_logout_revoke_offline_tokens') ?? false);
  const frontchannel = text(m, 'frontchannel_logout_uri');
  if (frontchannel !== undefined) {
    attributes['frontchannel.logout.url'] = frontchannel;
    client.frontchannelLogout = true;
  }
  const frontSession = flag(m, 'frontchannel_logout_session_required');
  if (frontSession !== undefined) attributes['frontchannel.logout.session.required'] = String(frontSession);
  const par = flag(m, 'require_pushed_authorization_requests');
  if (par !== undefined) attributes['require.pushed.authorization.requests'] = String(par);
  const dpop = flag(m, 'dpop_bound_access_tokens');
  if (dpop !== undefined) attributes['dpop.bound.access.tokens'] = String(dpop);
  const bound = flag(m, 'tls_client_certificate_bound_access_tokens');
  if (bound !== undefined) attributes[CERTIFICATE_BOUND_TOKENS] = String(bound);
  const subjectType = text(m, 'subject_type');
  if (subjectType !== undefined && subjectType !== 'public') throw metadataError('subject_type', 'must be "public" (pairwise subjects are not supported)');
  return { client, optionalClientScopes };
}

/** Keycloak's answer for a client (OIDCClientRepresentation, null members left out). */
export function metadataOf(client: Client, view: { optionalClientScopes: string[] }, extra: { registrationAccessToken?: string; registrationClientUri: string; issuedAt?: number }): Record<string, unknown> {
  const a = client.attributes;
  const k = CLIENT_KEY_ATTRIBUTES;
  const method = client.publicClient ? 'none' : client.clientAuthenticatorType === 'client-jwt' ? 'private_key_jwt' : client.clientAuthenticatorType === 'client-secret-jwt' ? 'client_secret_jwt' : client.clientAuthenticatorType === 'client-x509' ? 'tls_client_auth' : 'client_secret_basic';
  const grantTypes = [
    ...(client.standardFlowEnabled ? ['authorization_code'] : []),
    ...(client.implicitFlowEnabled ? ['implicit'] : []),
    ...(client.directAccessGrantsEnabled ? ['password'] : []),
    ...(client.serviceAccountsEnabled ? ['client_credentials'] : []),
    ...(a[DEVICE_GRANT_ATTRIBUTE] === 'true' ? [DEVICE_CODE_GRANT] : []),
    ...(a['standard.token.exchange.enabled'] === 'true' ? [TOKEN_EXCHANGE_GRANT] : []),
    ...(a['use.refresh.tokens'] !== 'false' ? ['refresh_token'] : []),
  ];
  const defined = (entries: [string, unknown][]) => Object.fromEntries(entries.filter(([, v]) => v !== undefined && v !== null));
  return defined([
    ['client_id', client.clientId],
    ...(method !== 'none' && client.clientAuthenticatorType === 'client-secret' ? [['client_secret', client.secret], ['client_secret_expires_at', 0]] as [string, unknown][] : []),
    ['client_id_issued_at', extra.issuedAt],
    ['redirect_uris', client.redirectUris],
    ['token_endpoint_auth_method', method],
    ['token_endpoint_auth_signing_alg', a['token.endpoint.auth.signing.alg'] || undefined],
    ['grant_types', grantTypes],
    ['response_types', client.standardFlowEnabled ? ['code', 'none'] : []],
    ['client_name', client.name],
    ['client_uri', client.baseUrl],
    ['scope', view.optionalClientScopes.join(' ')],
    ['jwks_uri', a[k.useJwksUrl] === 'true' ? a[k.jwksUrl] : undefined],
    ['jwks', a[k.useJwksString] === 'true' && a[k.jwksString] ? safeJson(a[k.jwksString]) : undefined],
    ['subject_type', 'public'],
    ['id_token_signed_response_alg', a['id.token.signed.response.alg'] || undefined],
    ['userinfo_signed_response_alg', a['user.info.response.signature.alg'] || undefined],
    ['request_object_signing_alg', a['request.object.signature.alg'] || undefined],
    ['tls_client_auth_subject_dn', client.clientAuthenticatorType === 'client-x509' && !client.publicClient ? a[X509_SUBJECT_DN] || undefined : undefined],
    ['tls_client_certificate_bound_access_tokens', a[CERTIFICATE_BOUND_TOKENS] === 'true'],
    ['post_logout_redirect_uris', a[POST_LOGOUT_ATTRIBUTE] ? a[POST_LOGOUT_ATTRIBUTE].split('##') : undefined],
    ['backchannel_logout_uri', a['backchannel.logout.url'] || undefined],
    ['backchannel_logout_session_required', a['backchannel.logout.session.required'] !== 'false'],
    ['backchannel_logout_revoke_offline_tokens', a['backchannel.logout.revoke.offline.tokens'] === 'true'],
    ['frontchannel_logout_uri', a['frontchannel.logout.url'] || undefined],
    ['require_pushed_authorization_requests', a['require.pushed.authorization.requests'] === 'true'],
    ['dpop_bound_access_tokens', a['dpop.bound.access.tokens'] === 'true'],
    ['registration_client_uri', extra.registrationClientUri],
    ['registration_access_token', extra.registrationAccessToken],
  ]);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
