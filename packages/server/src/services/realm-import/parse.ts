import { parseAuthentication } from '../../representations/authentication.js';
import { CLIENT_REGISTRATION_POLICY_TYPE } from '../../model/client-registration.js';
import { parseClient, parseClientExtras } from '../../representations/client.js';
import { parseClientScope, type ClientScopeInput } from '../../representations/client-scope.js';
import {
  parseIdentityProvider,
  parseIdentityProviderMapper,
  parseImportedComponents,
  type IdentityProviderInput,
  type IdentityProviderMapperInput,
  KEY_PROVIDER_TYPE,
  type ImportedComponent,
} from '../../representations/federation.js';
import { asArray, parseRepresentation, stringList } from '../../representations/fields.js';
import { parseImportedGroup, type ImportedGroup } from '../../representations/group.js';
import { parseRealmLocalizationTexts, type LocalizationTexts } from '../../representations/localization.js';
import { parseOrganization, type OrganizationInput } from '../../representations/organization.js';
import { realmIgnored, realmSpec } from '../../representations/realm.js';
import { parseImportedRole, type ImportedRole } from '../../representations/role.js';
import { parseUser, type UserInput } from '../../representations/user.js';
import type { FlowImport } from '../../flows/index.js';
import { parseImportedKeyProviders, type ImportedKey } from '../../keys/import.js';
import { badRequest, conflict } from '../../model/errors.js';
import type { Client } from '../../model/types.js';
import type { RequiredActionSetting } from '../../storage/index.js';
import type { ClientExtras } from '../clients.js';
import { parseRequiredActions } from '../required-actions.js';
import { parseConsents, type ImportedConsent } from './consents.js';
import { parseFederatedIdentities, type ImportedFederatedIdentity } from './federated-identities.js';
import { parseLegacyUserFederation } from './legacy-user-federation.js';

/** A client of a realm file with what its representation names besides: scopes by name, its own mappers. */
export type ImportedClient = Partial<Client> & { scopes: ClientExtras };

/** A member of an organization in a realm file: by username, with the file's ids of the organization's groups it is in. */
export interface ImportedMember {
  username: string;
  groups: string[];
}

export interface RealmImport {
  settings: Record<string, unknown>;
  realmRoles: ImportedRole[];
  clientRoles: Record<string, ImportedRole[]>;
  clients: ImportedClient[];
  /**
   * Keycloak's `clientScopes` (with their mappers), or null when the file has none: then the realm keeps the
   * built-in ones; with them, they replace the built-ins, as in Keycloak.
   */
  clientScopes: ClientScopeInput[] | null;
  /** The realm's default and optional client scopes by name (`defaultDefaultClientScopes`, `defaultOptionalClientScopes`). */
  defaultDefaultClientScopes?: string[];
  defaultOptionalClientScopes?: string[];
  users: (UserInput & {
    realmRoles?: string[];
    clientRoles?: Record<string, string[]>;
    groups?: string[];
    serviceAccountOf?: string | null;
    /** Keycloak's `federatedIdentities`: links to identity providers of the file or the realm, kept as data. */
    federatedIdentities?: ImportedFederatedIdentity[];
    /** Keycloak's `clientConsents`: consents to clients of the file or the realm, kept (the consent screen reads them). */
    clientConsents?: ImportedConsent[];
    /** Where the entry is in the file (`realm.users[3]`): errors name it, also when a partial import skips others. */
    path?: string;
  })[];
  /** Keycloak's `groups` (top-level groups, subgroups nested) and `defaultGroups` (paths). */
  groups: ImportedGroup[];
  defaultGroups: string[];
  /** Keycloak's `organizations`: members by username with the ids (in the file) of the organization's groups they are in. */
  organizations: (OrganizationInput & { members?: ImportedMember[]; groups?: ImportedGroup[] })[];
  authentication: FlowImport;
  /** Keycloak's `scopeMappings` (realm roles) and `clientScopeMappings` (roles of the client named by the key). */
  scopeMappings: ImportedScopeMapping[];
  /** Keycloak's `identityProviders`, their `identityProviderMappers` and `components`: kept as data, not acted on. */
  identityProviders: IdentityProviderInput[];
  identityProviderMappers: (IdentityProviderMapperInput & { path: string })[];
  components: ImportedComponent[];
  /** The file's key providers (keys/import.ts): the realm's keys, as the same providers. */
  signingKeys: ImportedKey[];
  /** Keycloak's `requiredActions`: every entry; those this server does not carry out are kept as data (named in `keptAsData`). */
  requiredActions: RequiredActionSetting[];
  /** Keycloak's `localizationTexts`: the realm's texts by locale and key (stored and served, not used by the pages). */
  localizationTexts: Record<string, LocalizationTexts>;
  /** JSON paths of what the export holds and this server does not import (reported, never dropped silently). */
  notImported: string[];
  /**
   * JSON paths of what is imported and kept (exported again, shown by the admin API) but not acted on: identity
   * providers, users' links to them (`realm.users[*].federatedIdentities`, named once for all users) and components
   * (user federation, …). Nobody signs in through them; reported like `notImported`.
   */
  keptAsData: string[];
}

/**
 * Parts of Keycloak's representations that this server accepts and has no model for yet: an export that carries
 * them is imported without them and each non-empty one is named in `notImported`.
 */
const NOT_IMPORTED = {
  realm: [
    'federatedUsers', 'requiredCredentials',
  ],
} as const;

function holdsData(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length > 0;
  return false;
}

function notImportedParts(rep: Record<string, unknown>): string[] {
  const paths: string[] = [];
  const check = (object: unknown, fields: readonly string[], path: string) => {
    if (typeof object !== 'object' || object === null) return;
    for (const field of fields) if (holdsData((object as Record<string, unknown>)[field])) paths.push(`${path}.${field}`);
  };
  // `requiredCredentials: ["password"]`, in every Keycloak export, asks for what every realm here asks for: not named.
  const onlyPassword = Array.isArray(rep.requiredCredentials) && rep.requiredCredentials.length === 1 && rep.requiredCredentials[0] === 'password';
  check(rep, NOT_IMPORTED.realm.filter((field) => !(field === 'requiredCredentials' && onlyPassword)), 'realm');
  if (Array.isArray(rep.clients)) {
    rep.clients.forEach((c, i) => {
      if ((c as { authorizationServicesEnabled?: unknown })?.authorizationServicesEnabled === true) paths.push(`realm.clients[${i}].authorizationServicesEnabled`);
    });
  }
  return paths;
}

/**
 * A client's `authorizationSettings` (Keycloak's ResourceServerRepresentation: resources, policies, permissions), kept
 * as data: Realmgate has no authorization services, so it is stored and exported again, never evaluated. Any JSON
 * object is taken as it is (its size is bounded by the file's).
 */
function parseAuthorizationSettings(client: unknown, path: string): Record<string, unknown> | null {
  const value = (client as { authorizationSettings?: unknown } | null)?.authorizationSettings;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${path}.authorizationSettings: must be an object`, 'authorizationSettings');
  return Object.keys(value).length ? (value as Record<string, unknown>) : null;
}

export interface ImportedScopeMapping {
  /** The client whose scope this is, or null for a client scope's (`clientScope`). */
  client: string | null;
  /** The client scope whose role scope mappings these are (Keycloak's entries with `clientScope`). */
  clientScope: string | null;
  /** The client whose roles are named, or null for realm roles. */
  roleContainer: string | null;
  roles: string[];
  path: string;
}

/**
 * Role scope mappings of clients (`client`) and of client scopes (`clientScope`). A role the realm lacks is
 * skipped when written (Keycloak's exports name roles of built-in clients that differ between versions).
 */
function parseScopeMappings(rep: Record<string, unknown>): ImportedScopeMapping[] {
  const result: ImportedScopeMapping[] = [];
  const read = (list: unknown, path: string, roleContainer: string | null) => {
    for (const [i, entry] of asArray(list, path).entries()) {
      const at = `${path}[${i}]`;
      if (typeof entry !== 'object' || entry === null) throw badRequest(`${at}: must be an object`);
      const { client, clientScope, roles } = entry as { client?: unknown; clientScope?: unknown; roles?: unknown };
      if (clientScope !== undefined && clientScope !== null) {
        if (typeof clientScope !== 'string') throw badRequest(`${at}.clientScope: must be a string`);
        result.push({ client: null, clientScope, roleContainer, roles: stringList(roles, `${at}.roles`), path: at });
        continue;
      }
      if (typeof client !== 'string') throw badRequest(`${at}.client: is required`);
      result.push({ client, clientScope: null, roleContainer, roles: stringList(roles, `${at}.roles`), path: at });
    }
  };
  read(rep.scopeMappings, 'realm.scopeMappings', null);
  const byContainer = rep.clientScopeMappings;
  if (byContainer !== undefined && byContainer !== null) {
    if (typeof byContainer !== 'object' || Array.isArray(byContainer)) throw badRequest('realm.clientScopeMappings: must be an object');
    for (const [container, list] of Object.entries(byContainer)) read(list, `realm.clientScopeMappings.${container}`, container);
  }
  return result;
}

/**
 * Reads a Keycloak realm export (the subset this server keeps). With `onUnknown` (start-up import) unknown
 * fields are reported and skipped; without it (the admin API) they are refused. Every error names its JSON path.
 */
/**
 * A Keycloak file is refused when it names one thing twice, as Keycloak's import (its database) refuses it: an `id`
 * given to two entries of one list, or a role name twice in one container. Nothing else would tell which one was
 * meant (this server makes its own ids, so the file's are only compared here).
 */
function refuseRepeats(rep: Record<string, unknown>, realmRoles: ImportedRole[], clientRoles: Record<string, ImportedRole[]>): void {
  const once = <T>(items: T[], key: (item: T) => unknown, pathOf: (i: number) => string, what: string) => {
    const seen = new Map<unknown, number>();
    items.forEach((item, i) => {
      const value = key(item);
      if (value === undefined || value === null || value === '') return;
      const first = seen.get(value);
      if (first !== undefined) throw badRequest(`${pathOf(i)}: ${what} ${JSON.stringify(value).slice(0, 80)} is also given to ${pathOf(first)}`);
      seen.set(value, i);
    });
  };
  const idOf = (item: unknown) => (typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined);
  for (const list of ['clients', 'users', 'groups', 'clientScopes', 'authenticationFlows', 'authenticatorConfig'] as const) {
    if (Array.isArray(rep[list])) once(rep[list] as unknown[], idOf, (i) => `realm.${list}[${i}].id`, 'the id');
  }
  const roles = rep.roles as { realm?: unknown } | undefined;
  if (Array.isArray(roles?.realm)) once(roles.realm as unknown[], idOf, (i) => `realm.roles.realm[${i}].id`, 'the id');
  once(realmRoles, (r) => r.name, (i) => `realm.roles.realm[${i}].name`, 'the role name');
  for (const [clientId, list] of Object.entries(clientRoles)) once(list, (r) => r.name, (i) => `realm.roles.client.${clientId}[${i}].name`, 'the role name');
}

export function parseRealmImport(body: unknown, isListener: (id: string) => boolean, reportUnknown?: (path: string) => void): RealmImport {
  const notImported: string[] = [];
  const onUnknown = reportUnknown
    ? (path: string) => {
        notImported.push(path);
        reportUnknown(path);
      }
    : undefined;
  const settings = parseRepresentation(body, realmSpec, realmIgnored, 'realm', onUnknown);
  if (typeof settings.realm !== 'string') throw badRequest('realm.realm: is required', 'realm');
  const rep = body as Record<string, unknown>;
  // Kept as Keycloak 26 keeps them (a realm POST answers 201): events go to such a listener once it is installed.
  const listenersKept = ((settings.eventsListeners ?? []) as string[]).flatMap((id, i) =>
    isListener(id) ? [] : [`realm.eventsListeners[${i}] ("${id}" is not installed: kept, events go to it once it is)`],
  );
  const roles = (rep.roles ?? {}) as { realm?: unknown; client?: unknown };
  if (typeof roles !== 'object') throw badRequest('realm.roles: must be an object');
  const realmRoles = asArray(roles.realm, 'realm.roles.realm').map((r, i) => parseImportedRole(r, `realm.roles.realm[${i}]`, onUnknown));
  const clientRoles: Record<string, ImportedRole[]> = {};
  if (roles.client !== undefined && roles.client !== null) {
    if (typeof roles.client !== 'object') throw badRequest('realm.roles.client: must be an object');
    for (const [clientId, list] of Object.entries(roles.client)) {
      clientRoles[clientId] = asArray(list, `realm.roles.client.${clientId}`).map((r, i) => parseImportedRole(r, `realm.roles.client.${clientId}[${i}]`, onUnknown));
    }
  }
  const authorizationKept: string[] = [];
  const clients = asArray(rep.clients, 'realm.clients').map((c, i) => {
    const authorizationSettings = parseAuthorizationSettings(c, `realm.clients[${i}]`);
    if (authorizationSettings) authorizationKept.push(`realm.clients[${i}].authorizationSettings`);
    return {
      ...parseClient(c, `realm.clients[${i}]`, onUnknown, true),
      ...(authorizationSettings ? { authorizationSettings } : {}),
      scopes: { ...parseClientExtras(c, `realm.clients[${i}]`, onUnknown), fromFile: true },
    };
  });
  const clientScopes = rep.clientScopes === undefined || rep.clientScopes === null ? null : asArray(rep.clientScopes, 'realm.clientScopes').map((sc, i) => parseClientScope(sc, `realm.clientScopes[${i}]`, onUnknown, true));
  const scopeNames = new Set<string>();
  for (const [i, sc] of (clientScopes ?? []).entries()) {
    if (scopeNames.has(sc.name)) throw badRequest(`realm.clientScopes[${i}].name: "${sc.name}" is named twice`, 'name');
    scopeNames.add(sc.name);
  }
  const given = (key: 'defaultDefaultClientScopes' | 'defaultOptionalClientScopes') =>
    rep[key] === undefined || rep[key] === null ? {} : { [key]: stringList(rep[key], `realm.${key}`) };
  const users = asArray(rep.users, 'realm.users').map((u, i) => {
    const path = `realm.users[${i}]`;
    const raw = u as { realmRoles?: unknown; clientRoles?: unknown };
    const clientRoleMap: Record<string, string[]> = {};
    if (raw?.clientRoles !== undefined && raw.clientRoles !== null) {
      if (typeof raw.clientRoles !== 'object') throw badRequest(`${path}.clientRoles: must be an object`);
      for (const [clientId, names] of Object.entries(raw.clientRoles)) clientRoleMap[clientId] = stringList(names, `${path}.clientRoles.${clientId}`);
    }
    // Keycloak exports a client's service-account user by the client's clientId; it becomes that client's one.
    const serviceAccountOf = (u as { serviceAccountClientId?: unknown })?.serviceAccountClientId;
    if (serviceAccountOf !== undefined && serviceAccountOf !== null && typeof serviceAccountOf !== 'string') throw badRequest(`${path}.serviceAccountClientId: must be a string`);
    return {
      ...parseUser(u, path, onUnknown),
      realmRoles: stringList(raw?.realmRoles, `${path}.realmRoles`),
      clientRoles: clientRoleMap,
      groups: stringList((u as { groups?: unknown })?.groups, `${path}.groups`),
      serviceAccountOf: serviceAccountOf ?? null,
      federatedIdentities: parseFederatedIdentities((u as { federatedIdentities?: unknown })?.federatedIdentities, `${path}.federatedIdentities`, onUnknown),
      clientConsents: parseConsents((u as { clientConsents?: unknown })?.clientConsents, `${path}.clientConsents`, notImported, onUnknown),
      path,
    };
  });
  const organizations = asArray(rep.organizations, 'realm.organizations').map((o, i) => {
    const path = `realm.organizations[${i}]`;
    const members = asArray((o as { members?: unknown })?.members, `${path}.members`).map((m, j) => {
      const username = (m as { username?: unknown })?.username;
      if (typeof username !== 'string') throw badRequest(`${path}.members[${j}].username: is required`);
      return { username, groups: stringList((m as { groups?: unknown }).groups, `${path}.members[${j}].groups`) };
    });
    const groups = asArray((o as { groups?: unknown })?.groups, `${path}.groups`).map((g, j) => parseImportedGroup(g, `${path}.groups[${j}]`, onUnknown));
    return { ...parseOrganization(o, path, onUnknown), members, groups };
  });
  const groups = asArray(rep.groups, 'realm.groups').map((g, i) => parseImportedGroup(g, `realm.groups[${i}]`, onUnknown));
  const defaultGroups = stringList(rep.defaultGroups, 'realm.defaultGroups');
  const authentication = parseAuthentication(rep, onUnknown);
  const scopeMappings = parseScopeMappings(rep);
  refuseRepeats(rep, realmRoles, clientRoles);
  notImported.push(...notImportedParts(rep));
  const federation = parseFederation(rep, onUnknown);
  notImported.push(...federation.notImported);
  federation.keptAsData.push(...listenersKept, ...authorizationKept);
  const requiredActions = parseRequiredActions(rep.requiredActions, notImported, federation.keptAsData);
  // Named once for every user (a file may link thousands), after the identity providers and their mappers.
  if (users.some((u) => u.federatedIdentities.length)) {
    const after = federation.keptAsData.filter((path) => path.startsWith('realm.identityProvider')).length;
    federation.keptAsData.splice(after, 0, 'realm.users[*].federatedIdentities');
  }
  return {
    settings, realmRoles, clientRoles, clients, clientScopes, ...given('defaultDefaultClientScopes'), ...given('defaultOptionalClientScopes'),
    users, groups, defaultGroups, organizations, authentication, scopeMappings, ...federation, requiredActions, notImported,
    localizationTexts: parseRealmLocalizationTexts(rep.localizationTexts, 'realm.localizationTexts'),
  };
}

/**
 * Identity providers, their mappers and components of a realm file, kept as data. Key providers are not kept as
 * data: they become the realm's keys as the same providers (keys/import.ts), each one not taken named in `notImported`.
 */
function parseFederation(rep: Record<string, unknown>, onUnknown?: (path: string) => void) {
  const keptAsData: string[] = [];
  const notImported: string[] = [];
  const identityProviders = asArray(rep.identityProviders, 'realm.identityProviders').map((p, i) => parseIdentityProvider(p, `realm.identityProviders[${i}]`, onUnknown));
  const aliases = new Set<string>();
  for (const [i, p] of identityProviders.entries()) {
    if (aliases.has(p.alias)) throw conflict(`realm.identityProviders[${i}].alias: "${p.alias}" is named twice`, 'alias');
    aliases.add(p.alias);
  }
  const identityProviderMappers = asArray(rep.identityProviderMappers, 'realm.identityProviderMappers').map((m, i) => {
    const path = `realm.identityProviderMappers[${i}]`;
    const mapper = parseIdentityProviderMapper(m, path, onUnknown);
    if (!aliases.has(mapper.identityProviderAlias)) throw badRequest(`${path}.identityProviderAlias: no identity provider "${mapper.identityProviderAlias}" in this file`, 'identityProviderAlias');
    return { ...mapper, path };
  });
  const all = parseImportedComponents(rep.components, 'realm.components', onUnknown);
  const components = all.filter((c) => c.providerType !== KEY_PROVIDER_TYPE);
  const keyProviders = parseImportedKeyProviders(all.filter((c) => c.providerType === KEY_PROVIDER_TYPE));
  notImported.push(...keyProviders.notImported);
  // Keycloak 1–3's user federation, converted to components as Keycloak 26 converts it.
  const legacy = parseLegacyUserFederation(rep, onUnknown);
  notImported.push(...legacy.notImported);
  components.push(...legacy.components);
  if (identityProviders.length) keptAsData.push('realm.identityProviders');
  if (identityProviderMappers.length) keptAsData.push('realm.identityProviderMappers');
  // Client registration policies are run (protocol/openid-connect/registration-policies.ts), not kept as data.
  for (const type of new Set(components.filter((c) => c.path.startsWith('realm.components') && c.providerType !== CLIENT_REGISTRATION_POLICY_TYPE).map((c) => c.providerType))) keptAsData.push(`realm.components["${type}"]`);
  if (legacy.components.length) keptAsData.push('realm.userFederationProviders (as components of type org.keycloak.storage.UserStorageProvider)');
  if (legacy.components.some((c) => c.subComponents.length)) keptAsData.push('realm.userFederationMappers (as their sub-components)');
  return { identityProviders, identityProviderMappers, components, signingKeys: keyProviders.keys, keptAsData, notImported };
}
