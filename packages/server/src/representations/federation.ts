/**
 * Keycloak's IdentityProviderRepresentation, IdentityProviderMapperRepresentation and ComponentRepresentation (and
 * the ComponentExportRepresentation of realm files): read with the admin API's field rules, answered with secrets
 * masked as Keycloak masks them. Realmgate keeps these as data and acts on none of them (README).
 */
import { badRequest } from '../model/errors.js';
import type { Component, IdentityProvider, IdentityProviderMapper } from '../model/types.js';
import { parseRepresentation, type Spec } from './fields.js';

/** Keycloak's provider type of key providers (the console's Realm settings → Keys). */
export const KEY_PROVIDER_TYPE = 'org.keycloak.keys.KeyProvider';

/** What Keycloak answers in place of a secret (ComponentRepresentation.SECRET_VALUE); a PUT that sends it back keeps the stored one. */
export const SECRET_MASK = '**********';

/**
 * Config keys holding secrets: the identity providers' `clientSecret` (and Apple's key, `p8Content`), LDAP's `bindCredential`, key providers'
 * `privateKey`/`secret`, keystore passwords. Keycloak knows them from each provider's config properties; with no
 * providers here, the names decide. A vault reference (`${vault.x}`) is not a secret and is shown, as Keycloak shows it.
 */
const SECRET_KEY = /secret|password|credential|privatekey|p8content/i;
const isVaultReference = (value: string) => /^\$\{vault\.[^}]+\}$/.test(value);
export const isSecretKey = (key: string) => SECRET_KEY.test(key);

/** Longest config value: SAML certificates and metadata run to some kilobytes; a config is at most 500 entries. */
export const CONFIG_VALUE_MAX = 16384;

const aliasPattern = /^[^/\\?#%\s\u0000-\u001f]+$/;

const providerSpec: Spec = {
  alias: { type: 'string', min: 1, pattern: aliasPattern, patternHint: 'an alias without spaces, "/", "\\", "?", "#" or "%"' },
  displayName: { type: 'string' },
  providerId: { type: 'string', min: 1 },
  enabled: { type: 'boolean' },
  updateProfileFirstLoginMode: { type: 'string' },
  trustEmail: { type: 'boolean' },
  storeToken: { type: 'boolean' },
  addReadTokenRoleOnCreate: { type: 'boolean' },
  authenticateByDefault: { type: 'boolean' },
  linkOnly: { type: 'boolean' },
  hideOnLogin: { type: 'boolean' },
  firstBrokerLoginFlowAlias: { type: 'string' },
  postBrokerLoginFlowAlias: { type: 'string' },
  organizationId: { type: 'string' },
  types: { type: 'stringArray' },
  config: { type: 'stringMap', max: CONFIG_VALUE_MAX },
};
const providerIgnored = ['internalId', 'updateProfileFirstLogin'];

export type IdentityProviderInput = Omit<IdentityProvider, 'internalId' | 'realmId'>;

/** An identity provider representation: `alias` and `providerId` required; 400 naming the field otherwise. */
export function parseIdentityProvider(body: unknown, path = 'identityProvider', onUnknown?: (path: string) => void): IdentityProviderInput {
  const rep = parseRepresentation(body, providerSpec, providerIgnored, path, onUnknown);
  const { alias, providerId, enabled, displayName, config, ...rest } = rep as Record<string, unknown> & { alias?: string; providerId?: string; enabled?: boolean; displayName?: string; config?: Record<string, string> };
  if (alias === undefined) throw badRequest(`${path}.alias: is required`, 'alias');
  if (providerId === undefined) throw badRequest(`${path}.providerId: is required`, 'providerId');
  return { alias, providerId, enabled: enabled ?? true, displayName: displayName ?? null, config: config ?? {}, rest };
}

/** The secrets of a config map as Keycloak answers them: `**********` (vault references shown). */
function maskedConfig<V extends string | string[]>(config: Record<string, V>): Record<string, V> {
  const out: Record<string, V> = {};
  for (const [key, value] of Object.entries(config)) {
    const secret = isSecretKey(key) && (Array.isArray(value) ? value.some((v) => v !== '' && !isVaultReference(v)) : value !== '' && !isVaultReference(value));
    out[key] = (secret ? (Array.isArray(value) ? value.map(() => SECRET_MASK) : SECRET_MASK) : value) as V;
  }
  return out;
}

/** A config sent back with masks: each masked secret takes the stored value, as Keycloak keeps it. */
export function unmaskConfig<V extends string | string[]>(config: Record<string, V>, stored: Record<string, V>): Record<string, V> {
  const out: Record<string, V> = { ...config };
  for (const [key, value] of Object.entries(config)) {
    const masked = Array.isArray(value) ? value.length > 0 && value.every((v) => v === SECRET_MASK) : value === SECRET_MASK;
    if (masked && isSecretKey(key) && Object.hasOwn(stored, key)) out[key] = stored[key];
  }
  return out;
}

/** Keycloak's IdentityProviderRepresentation; `secrets` false (the admin API, partial export) masks them. */
/** The OpenID Connect kinds (authentication/brokering's OIDC_PROVIDER_IDS; representations sit below it). */
const OIDC_KINDS = new Set(['oidc', 'keycloak-oidc']);

export function identityProviderRep(provider: IdentityProvider, secrets = false) {
  return {
    alias: provider.alias,
    ...(provider.displayName !== null ? { displayName: provider.displayName } : {}),
    internalId: provider.internalId,
    providerId: provider.providerId,
    enabled: provider.enabled,
    // Keycloak's defaults for the flags a representation did not give.
    trustEmail: false,
    storeToken: false,
    addReadTokenRoleOnCreate: false,
    authenticateByDefault: false,
    linkOnly: false,
    hideOnLogin: false,
    // Keycloak's capabilities of the provider: here an OpenID Connect provider signs users in and does nothing else
    // (no client assertions, trust material or external token exchange); Keycloak lists none for social providers.
    types: OIDC_KINDS.has(provider.providerId) ? ['USER_AUTHENTICATION'] : [],
    ...provider.rest,
    config: secrets ? provider.config : maskedConfig(provider.config),
  };
}

const mapperSpec: Spec = {
  name: { type: 'string', min: 1 },
  identityProviderAlias: { type: 'string', min: 1 },
  identityProviderMapper: { type: 'string', min: 1 },
  config: { type: 'stringMap', max: CONFIG_VALUE_MAX },
};

export type IdentityProviderMapperInput = Omit<IdentityProviderMapper, 'id'>;

export function parseIdentityProviderMapper(body: unknown, path = 'identityProviderMapper', onUnknown?: (path: string) => void): IdentityProviderMapperInput {
  const rep = parseRepresentation(body, mapperSpec, ['id'], path, onUnknown) as Partial<IdentityProviderMapperInput>;
  if (rep.name === undefined) throw badRequest(`${path}.name: is required`, 'name');
  if (rep.identityProviderMapper === undefined) throw badRequest(`${path}.identityProviderMapper: is required`, 'identityProviderMapper');
  return { name: rep.name, identityProviderAlias: rep.identityProviderAlias ?? '', identityProviderMapper: rep.identityProviderMapper, config: rep.config ?? {} };
}

export function identityProviderMapperRep(mapper: IdentityProviderMapper, secrets = false) {
  return { id: mapper.id, name: mapper.name, identityProviderAlias: mapper.identityProviderAlias, identityProviderMapper: mapper.identityProviderMapper, config: secrets ? mapper.config : maskedConfig(mapper.config) };
}

const componentSpec: Spec = {
  name: { type: 'string' },
  providerId: { type: 'string', min: 1 },
  providerType: { type: 'string', min: 1 },
  parentId: { type: 'string', min: 1 },
  subType: { type: 'string' },
  config: { type: 'multiMap', max: CONFIG_VALUE_MAX },
};

export type ComponentInput = Omit<Component, 'id' | 'realmId' | 'parentId' | 'providerType'> & { parentId?: string; providerType?: string };

/** A ComponentRepresentation (config values as strings or string arrays, as Keycloak's MultivaluedHashMap reads them). */
export function parseComponent(body: unknown, path = 'component'): ComponentInput {
  const rep = parseRepresentation(body, componentSpec, ['id'], path) as Partial<ComponentInput>;
  if (rep.providerId === undefined) throw badRequest(`${path}.providerId: is required`, 'providerId');
  return { ...rep, name: rep.name ?? '', providerId: rep.providerId, subType: rep.subType ?? null, config: rep.config ?? {} };
}

/** Keycloak's ComponentRepresentation; `secrets` false masks them. */
export function componentRep(component: Component, secrets = false) {
  return {
    id: component.id,
    // A component without a name (Keycloak allows it) is answered without one.
    ...(component.name !== '' ? { name: component.name } : {}),
    providerId: component.providerId,
    providerType: component.providerType,
    parentId: component.parentId,
    ...(component.subType !== null ? { subType: component.subType } : {}),
    config: secrets ? component.config : maskedConfig(component.config),
  };
}

/** A component of a realm file (Keycloak's ComponentExportRepresentation), its sub-components nested by provider type. */
export interface ImportedComponent {
  name: string;
  providerId: string;
  providerType: string;
  subType: string | null;
  config: Record<string, string[]>;
  subComponents: ImportedComponent[];
  path: string;
}

const exportSpec: Spec = { name: { type: 'string' }, providerId: { type: 'string', min: 1 }, subType: { type: 'string' }, config: { type: 'multiMap', max: CONFIG_VALUE_MAX }, subComponents: { type: 'object' } };

/** Keycloak's `components` of a realm file: `{providerType: [ComponentExportRepresentation]}`, sub-components alike. */
export function parseImportedComponents(value: unknown, path: string, onUnknown?: (path: string) => void, depth = 0): ImportedComponent[] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${path}: must be an object of component lists by provider type`);
  if (depth > 4) throw badRequest(`${path}: components nested deeper than 4 levels`);
  const out: ImportedComponent[] = [];
  for (const [providerType, list] of Object.entries(value)) {
    if (!Array.isArray(list)) throw badRequest(`${path}.${providerType}: must be an array`);
    if (providerType.length > 255 || providerType.includes('\u0000')) throw badRequest(`${path}: a provider type of at most 255 characters`);
    for (const [i, item] of list.entries()) {
      const at = `${path}["${providerType}"][${i}]`;
      const rep = parseRepresentation(item, exportSpec, ['id', 'parentId', 'providerType'], at, onUnknown) as { name?: string; providerId?: string; subType?: string; config?: Record<string, string[]>; subComponents?: unknown };
      if (rep.providerId === undefined) throw badRequest(`${at}.providerId: is required`, 'providerId');
      out.push({
        // Keycloak's exports carry components without a name (the declarative user profile): kept as ''.
        name: rep.name ?? '',
        providerId: rep.providerId,
        providerType,
        subType: rep.subType ?? null,
        config: rep.config ?? {},
        subComponents: parseImportedComponents(rep.subComponents, `${at}.subComponents`, onUnknown, depth + 1),
        path: at,
      });
    }
  }
  return out;
}
