/**
 * Keycloak's legacy `userFederationProviders` and `userFederationMappers` (realm files of Keycloak 1–3), read as Keycloak
 * 26's import reads them: an `ldap` or `kerberos` provider becomes a component of type
 * `org.keycloak.storage.UserStorageProvider` (named by its displayName; its config, priority and sync periods as config),
 * an LDAP provider's mappers become its sub-components of type `org.keycloak.storage.ldap.mappers.LDAPStorageMapper`.
 * They are then kept as data like any component (no user federation here). What Keycloak drops (another provider, a
 * mapper of none of those providers) is named in `notImported`.
 */
import { CONFIG_VALUE_MAX, type ImportedComponent } from '../../representations/federation.js';
import { asArray, parseRepresentation, type Spec } from '../../representations/fields.js';
import { badRequest } from '../../model/errors.js';

const USER_STORAGE = 'org.keycloak.storage.UserStorageProvider';
const LDAP_MAPPER = 'org.keycloak.storage.ldap.mappers.LDAPStorageMapper';
/** The providers Keycloak 26 converts, with the component type their mappers become (Kerberos has none). */
const CONVERTED: Record<string, string | null> = { ldap: LDAP_MAPPER, kerberos: null };

const providerSpec: Spec = {
  displayName: { type: 'string' },
  providerName: { type: 'string', min: 1 },
  config: { type: 'stringMap', max: CONFIG_VALUE_MAX },
  priority: { type: 'integer', min: -2_147_483_648 },
  fullSyncPeriod: { type: 'integer', min: -2_147_483_648 },
  changedSyncPeriod: { type: 'integer', min: -2_147_483_648 },
  lastSync: { type: 'integer', min: -2_147_483_648 },
};
const mapperSpec: Spec = {
  name: { type: 'string' },
  federationProviderDisplayName: { type: 'string' },
  federationMapperType: { type: 'string', min: 1 },
  config: { type: 'stringMap', max: CONFIG_VALUE_MAX },
};

/** Keycloak's component config holds lists: each single value becomes a list of one. */
const asLists = (config: Record<string, string> | undefined) => Object.fromEntries(Object.entries(config ?? {}).map(([k, v]) => [k, [v]]));

export function parseLegacyUserFederation(rep: Record<string, unknown>, onUnknown?: (path: string) => void): { components: ImportedComponent[]; notImported: string[] } {
  const notImported: string[] = [];
  const byDisplayName = new Map<string, ImportedComponent>();
  const components: ImportedComponent[] = [];
  for (const [i, value] of asArray(rep.userFederationProviders, 'realm.userFederationProviders').entries()) {
    const path = `realm.userFederationProviders[${i}]`;
    const provider = parseRepresentation(value, providerSpec, ['id'], path, onUnknown);
    const providerName = provider.providerName;
    if (typeof providerName !== 'string') throw badRequest(`${path}.providerName: is required`, 'providerName');
    if (!Object.hasOwn(CONVERTED, providerName)) {
      notImported.push(`${path} (provider "${providerName}": Keycloak 26 converts only ldap and kerberos)`);
      continue;
    }
    const displayName = (provider.displayName as string | undefined) ?? '';
    const periods = Object.fromEntries((['priority', 'fullSyncPeriod', 'changedSyncPeriod', 'lastSync'] as const).map((key) => [key, [String(provider[key] ?? 0)]]));
    const component: ImportedComponent = {
      name: displayName,
      providerId: providerName,
      providerType: USER_STORAGE,
      subType: null,
      config: { ...asLists(provider.config as Record<string, string> | undefined), ...periods },
      subComponents: [],
      path,
    };
    components.push(component);
    // Mappers find their provider by display name; of two alike, the later one, as Keycloak's map keeps it.
    byDisplayName.set(displayName, component);
  }
  for (const [j, value] of asArray(rep.userFederationMappers, 'realm.userFederationMappers').entries()) {
    const path = `realm.userFederationMappers[${j}]`;
    const mapper = parseRepresentation(value, mapperSpec, ['id'], path, onUnknown);
    if (typeof mapper.federationMapperType !== 'string') throw badRequest(`${path}.federationMapperType: is required`, 'federationMapperType');
    const parent = byDisplayName.get((mapper.federationProviderDisplayName as string | undefined) ?? '');
    const mapperType = parent ? CONVERTED[parent.providerId] : null;
    if (!parent || !mapperType) {
      notImported.push(`${path} (no ldap provider "${mapper.federationProviderDisplayName ?? ''}" among realm.userFederationProviders)`);
      continue;
    }
    parent.subComponents.push({
      name: (mapper.name as string | undefined) ?? '',
      providerId: mapper.federationMapperType,
      providerType: mapperType,
      subType: null,
      config: asLists(mapper.config as Record<string, string> | undefined),
      subComponents: [],
      path,
    });
  }
  return { components, notImported };
}
