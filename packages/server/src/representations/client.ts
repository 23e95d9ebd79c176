import { badRequest } from '../model/errors.js';
import { BUILTIN_ROOT_URLS } from '../model/defaults.js';
import { isOverrideBinding } from '../flows/index.js';
import { CLIENT_AUTHENTICATOR_TYPES, type Client, type ProtocolMapper } from '../model/types.js';
import { X509_CA_SUBJECT_DN, X509_REGEX_COMPARISON, X509_SUBJECT_DN, normalizeDn, subjectDnPattern } from '../keys/distinguished-name.js';
import { parseProtocolMappers, protocolMapperRep, type ProtocolMapperInput } from './client-scope.js';
import { parseRepresentation, stringList, type Spec } from './fields.js';

const uriSpec = { type: 'stringArray', max: 2048 } as const;
export const clientSpec: Spec = {
  clientId: { type: 'string', min: 1, pattern: /^[^\s/\\]+$/, patternHint: 'a client id without spaces or slashes' },
  name: { type: 'string' },
  description: { type: 'string' },
  secret: { type: 'string', min: 1, max: 1024 },
  publicClient: { type: 'boolean' },
  bearerOnly: { type: 'boolean' },
  enabled: { type: 'boolean' },
  protocol: { type: 'string', pattern: /^openid-connect$/, patternHint: '"openid-connect"' },
  rootUrl: { type: 'string', max: 2048 },
  baseUrl: { type: 'string', max: 2048 },
  redirectUris: uriSpec,
  webOrigins: uriSpec,
  serviceAccountsEnabled: { type: 'boolean' },
  standardFlowEnabled: { type: 'boolean' },
  directAccessGrantsEnabled: { type: 'boolean' },
  implicitFlowEnabled: { type: 'boolean' },
  fullScopeAllowed: { type: 'boolean' },
  attributes: { type: 'stringMap', max: 4096 },
  consentRequired: { type: 'boolean' },
  authenticationFlowBindingOverrides: { type: 'stringMap', max: 36 },
  clientAuthenticatorType: { type: 'string', max: 64 },
  frontchannelLogout: { type: 'boolean' },
  adminUrl: { type: 'string', max: 2048 },
  notBefore: { type: 'integer', min: 0, max: 2_147_483_647 },
};
export const clientIgnored = [
  'id', 'access', 'authorizationServicesEnabled', 'authorizationSettings',
  'defaultClientScopes', 'defaultRoles', 'alwaysDisplayInConsole',
  'nodeReRegistrationTimeout', 'optionalClientScopes', 'origin', 'protocolMappers', 'registeredNodes',
  'registrationAccessToken', 'surrogateAuthRequired', 'type', 'directGrantsOnly', 'clientTemplate', 'useTemplateConfig',
  'useTemplateScope', 'useTemplateMappers',
];

/**
 * The client fields this server acts on, each with the source file (under src/) where it takes effect; every
 * other accepted field is in the README's "Stored, not enforced" table (test/silent-settings.test.ts).
 */
export const clientFieldUse: Record<string, string> = {
  clientId: 'protocol/openid-connect/client-auth.ts',
  name: 'account-api/applications.ts',
  description: 'account-api/applications.ts',
  secret: 'protocol/openid-connect/client-auth.ts',
  publicClient: 'protocol/openid-connect/client-auth.ts',
  bearerOnly: 'protocol/openid-connect/client-auth.ts',
  enabled: 'protocol/openid-connect/client-auth.ts',
  protocol: 'representations/client.ts',
  rootUrl: 'model/redirect-uri.ts',
  baseUrl: 'account-api/applications.ts',
  redirectUris: 'model/redirect-uri.ts',
  webOrigins: 'http/cors.ts',
  serviceAccountsEnabled: 'protocol/openid-connect/token/client-credentials.ts',
  standardFlowEnabled: 'protocol/openid-connect/auth.ts',
  directAccessGrantsEnabled: 'protocol/openid-connect/token/password.ts',
  fullScopeAllowed: 'services/roles.ts',
  attributes: 'protocol/openid-connect/auth.ts',
  authenticationFlowBindingOverrides: 'flows/runner.ts',
  clientAuthenticatorType: 'protocol/openid-connect/client-auth.ts',
  frontchannelLogout: 'protocol/openid-connect/logout.ts',
  adminUrl: 'admin/revocation.ts',
  notBefore: 'protocol/openid-connect/tokens.ts',
  consentRequired: 'authentication/consent.ts',
};

/** A client's scopes by name and its own mappers, as its representation shows them. */
export interface ClientScopeView {
  defaultClientScopes: string[];
  optionalClientScopes: string[];
  protocolMappers: ProtocolMapper[];
}

function rootUrlOf(client: Pick<Client, 'rootUrl' | 'clientId'>): { rootUrl?: string } {
  const rootUrl = client.rootUrl ?? BUILTIN_ROOT_URLS[client.clientId];
  return rootUrl !== undefined ? { rootUrl } : {};
}

export function clientRep(client: Client, scopes: ClientScopeView = { defaultClientScopes: [], optionalClientScopes: [], protocolMappers: [] }) {
  return {
    id: client.id,
    clientId: client.clientId,
    ...(client.name !== null ? { name: client.name } : {}),
    ...(client.description !== null ? { description: client.description } : {}),
    ...rootUrlOf(client),
    ...(client.adminUrl ? { adminUrl: client.adminUrl } : {}),
    ...(client.baseUrl !== null ? { baseUrl: client.baseUrl } : {}),
    surrogateAuthRequired: false,
    enabled: client.enabled,
    alwaysDisplayInConsole: false,
    clientAuthenticatorType: client.clientAuthenticatorType,
    ...(client.publicClient || client.secret === null ? {} : { secret: client.secret }),
    redirectUris: client.redirectUris,
    webOrigins: client.webOrigins,
    notBefore: client.notBefore,
    bearerOnly: client.bearerOnly,
    consentRequired: client.consentRequired,
    standardFlowEnabled: client.standardFlowEnabled,
    implicitFlowEnabled: client.implicitFlowEnabled,
    directAccessGrantsEnabled: client.directAccessGrantsEnabled,
    serviceAccountsEnabled: client.serviceAccountsEnabled,
    publicClient: client.publicClient,
    frontchannelLogout: client.frontchannelLogout,
    protocol: client.protocol,
    attributes: client.attributes,
    authenticationFlowBindingOverrides: client.authenticationFlowBindingOverrides,
    fullScopeAllowed: client.fullScopeAllowed,
    nodeReRegistrationTimeout: -1,
    ...(scopes.protocolMappers.length ? { protocolMappers: scopes.protocolMappers.map(protocolMapperRep) } : {}),
    defaultClientScopes: scopes.defaultClientScopes,
    optionalClientScopes: scopes.optionalClientScopes,
    access: { view: true, configure: true, manage: true },
  };
}

/**
 * Client fields (and attributes) accepted only with some values: any other is refused with 400 naming it rather
 * than stored without effect (issue 17, point 4). Each with why.
 */
export const clientRefusedValues: Record<string, string> = {
  authorizationServicesEnabled: 'true is refused by the admin API (a realm file names it as not imported): Realmgate has no authorization services',
  'pkce.code.challenge.method': 'only "S256" (or "" for none) is accepted: Realmgate supports no other PKCE method',
};

export function parseClient(body: unknown, path = 'client', onUnknown?: (path: string) => void, fromFile = false): Partial<Client> {
  const input = parseRepresentation(body, clientSpec, clientIgnored, path, onUnknown) as Partial<Client>;
  // The console's client wizard shows its Authorization switch whatever the server has: say so rather than drop it.
  // A realm file's client is imported without it and the import names it (realm-import/parse.ts).
  if (!fromFile && (body as { authorizationServicesEnabled?: unknown }).authorizationServicesEnabled === true) {
    throw badRequest(`${path}.authorizationServicesEnabled: not supported, Realmgate has no authorization services`, 'authorizationServicesEnabled');
  }
  const authenticator = input.clientAuthenticatorType as string | undefined;
  if (authenticator !== undefined && !(CLIENT_AUTHENTICATOR_TYPES as readonly string[]).includes(authenticator)) {
    // Never stored as another method: a client set up for signed assertions must not then accept a plain secret.
    throw badRequest(
      `${path}.clientAuthenticatorType: ${JSON.stringify(authenticator)} is not a client authenticator Realmgate runs (${CLIENT_AUTHENTICATOR_TYPES.join(', ')})`,
      'clientAuthenticatorType',
    );
  }
  if (input.attributes) checkX509Attributes(input.attributes, path);
  const overrides = input.authenticationFlowBindingOverrides;
  if (overrides) input.authenticationFlowBindingOverrides = flowBindingOverrides(overrides, `${path}.authenticationFlowBindingOverrides`, fromFile);
  const pkce = input.attributes?.['pkce.code.challenge.method'];
  if (pkce !== undefined && pkce !== '' && pkce !== 'S256') {
    throw badRequest(`${path}.attributes.pkce.code.challenge.method: must be "S256" or "" (no other PKCE method is supported)`, 'attributes');
  }
  for (const field of ['redirectUris', 'webOrigins'] as const) {
    // The console's client wizard sends an untouched URI list as [""]: a blank entry names nothing and is dropped.
    if (input[field]) input[field] = input[field].filter((uri) => uri.trim() !== '');
    for (const [i, uri] of (input[field] ?? []).entries()) {
      if (uri.includes('#')) throw badRequest(`${path}.${field}[${i}]: must not contain a fragment`, field);
      if (field === 'redirectUris' && !isRedirectPattern(uri)) throw badRequest(`${path}.${field}[${i}]: must be a URI with a scheme, a path, * or +`, field);
    }
  }
  return input;
}

/**
 * A client's flow overrides as the admin API takes them: an empty value means none (Keycloak removes that override),
 * and a key other than Keycloak's two bindings (`browser`, `direct_grant`) is refused, since nothing would read it
 * (Keycloak stores any key). A realm file's other keys are left for the import to name in `notImported`. Whether
 * each id names a flow that can run is the flows' check (Flows.validateOverrides), which needs the realm.
 */
function flowBindingOverrides(given: Record<string, string>, path: string, fromFile: boolean): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, flowId] of Object.entries(given)) {
    if (!fromFile && !isOverrideBinding(key)) {
      throw badRequest(`${path}.${key}: not a flow binding Realmgate honours; use "browser" or "direct_grant"`, 'authenticationFlowBindingOverrides');
    }
    if (flowId.trim() !== '') kept[key] = flowId;
  }
  return kept;
}

/**
 * What Keycloak stores as a redirect URI: `*`, `+`, a path relative to the root URL, or any URI with a scheme
 * (`http://localhost:*\/cb` is one: it is kept and compared as text, as Keycloak does) — never a script.
 */
function isRedirectPattern(uri: string): boolean {
  if (uri === '*' || uri === '+' || uri.startsWith('/')) return true;
  const scheme = /^([a-z][a-z0-9+.-]*):\S+$/i.exec(uri)?.[1]?.toLowerCase();
  return scheme !== undefined && scheme !== 'javascript' && scheme !== 'data' && scheme !== 'vbscript';
}

/**
 * What a client representation carries besides the client itself: the scope names, each list given or not (read
 * on create and import; a PUT leaves them, as Keycloak's), and the client's own protocol mappers, validated.
 */
export function parseClientExtras(body: unknown, path = 'client', onUnknown?: (path: string) => void): { defaultClientScopes?: string[]; optionalClientScopes?: string[]; protocolMappers?: ProtocolMapperInput[] } {
  if (typeof body !== 'object' || body === null) return {};
  const rep = body as Record<string, unknown>;
  const given = (key: string) => rep[key] !== undefined && rep[key] !== null;
  return {
    ...(given('defaultClientScopes') ? { defaultClientScopes: stringList(rep.defaultClientScopes, `${path}.defaultClientScopes`) } : {}),
    ...(given('optionalClientScopes') ? { optionalClientScopes: stringList(rep.optionalClientScopes, `${path}.optionalClientScopes`) } : {}),
    ...(given('protocolMappers') ? { protocolMappers: parseProtocolMappers(rep.protocolMappers, `${path}.protocolMappers`, onUnknown) } : {}),
  };
}

/** Admin events never carry a client secret, nor attributes that hold one (such as `api.key`). */
export function clientEventRep(client: Client) {
  const { secret: _secret, ...rep } = clientRep(client) as ReturnType<typeof clientRep> & { secret?: string };
  const attributes = Object.fromEntries(
    Object.entries(client.attributes).map(([k, v]) => [k, /key|secret|password|token/i.test(k) ? '**********' : v]),
  );
  return { ...rep, attributes };
}

/**
 * A `client-x509` client's `x509.subjectdn` must be what its comparison can use: a regular expression when
 * `x509.allow.regex.pattern.comparison` is true, else a distinguished name (400 naming the attribute otherwise).
 */
function checkX509Attributes(attributes: Record<string, string>, path: string): void {
  const dn = attributes[X509_SUBJECT_DN];
  if (dn === undefined || dn.trim() === '') return;
  if (dn.length > 1024) throw badRequest(`${path}.attributes.${X509_SUBJECT_DN}: at most 1024 characters`, 'attributes');
  if (attributes[X509_REGEX_COMPARISON] === 'true') {
    if (!subjectDnPattern(dn)) throw badRequest(`${path}.attributes.${X509_SUBJECT_DN}: not a regular expression`, 'attributes');
  } else if (normalizeDn(dn) === null) {
    throw badRequest(`${path}.attributes.${X509_SUBJECT_DN}: not a distinguished name (set ${X509_REGEX_COMPARISON} to compare it as a regular expression)`, 'attributes');
  }
  const ca = attributes[X509_CA_SUBJECT_DN];
  if (ca !== undefined && ca.trim() !== '' && normalizeDn(ca) === null) throw badRequest(`${path}.attributes.${X509_CA_SUBJECT_DN}: not a distinguished name`, 'attributes');
}
