/**
 * Realm export in Keycloak's format: what `POST /admin/realms/{realm}/partial-export` answers, and what the
 * realm import (services/realm-import) reads back, so an export imported into an empty server exports the same
 * document again (ids aside: the new realm gets its own, as Keycloak regenerates them).
 */
import { configRep, flowRep } from '../representations/authentication.js';
import { clientRep } from '../representations/client.js';
import { clientScopeRep } from '../representations/client-scope.js';
import { KEY_PROVIDER_TYPE, componentRep, identityProviderMapperRep, identityProviderRep } from '../representations/federation.js';
import { realmRep } from '../representations/realm.js';
import { organizationRep } from '../representations/organization.js';
import type { ServiceContext } from './context.js';
import { exportedPasswordCredential } from '../credentials/keycloak-hash.js';
import { exportedOtpCredential, OTP_CREDENTIAL_TYPE } from '../credentials/otp.js';
import { exportedWebAuthnCredential, WEBAUTHN_TYPES } from '../credentials/webauthn.js';
import { exportedRecoveryCodes, RECOVERY_CODES_TYPE } from '../credentials/recovery-codes.js';
import type { Client, Component, Group, Realm, Role, UserConsent } from '../model/types.js';
import type { StoredCredential } from '../storage/index.js';
import { GroupTree } from './groups.js';
import { clientScopeViews, realmDefaultScopeNames } from './client-scopes.js';
import { realmRequiredActions } from './required-actions.js';

/** An entry of Keycloak's `scopeMappings` / `clientScopeMappings`: a client's or a client scope's. */
type ScopeMappingExport = ({ client: string } | { clientScope: string }) & { roles: string[] };

/** A representation without its ids (the importing server makes its own): the object's and its mappers'. */
function withoutIds<T extends { id: string; protocolMappers?: { id: string }[] }>(rep: T) {
  const { id: _id, protocolMappers, ...rest } = rep;
  return { ...rest, ...(protocolMappers ? { protocolMappers: protocolMappers.map(({ id: _mapperId, ...m }) => m) } : {}) };
}

/** Members of an organization read at once by a whole export. */
const MEMBER_PAGE = 500;

/** What Keycloak's partial export puts where a secret was (its import stores it as given). */
export const EXPORT_SECRET_MASK = '**********';

/** Role names by container: `realm` for realm roles, else the clientId. */
type RoleNames = { realm?: string[]; client?: Record<string, string[]> };

export interface ExportOptions {
  clients: boolean;
  groupsAndRoles: boolean;
  /** Client secrets (and the SMTP password) as stored, for a full export that restores the realm (the CLI's). */
  secrets?: boolean;
  /** The realm's organizations with their members and groups: a whole export's, as Keycloak's (not its partial export). */
  organizations?: boolean;
}

export interface RealmExporter {
  /** The realm's document without its users. */
  document(options: ExportOptions): Promise<Record<string, unknown>>;
  /** Users after `afterUsername` in username order, as Keycloak exports them (password hashes, links to identity providers). */
  users(afterUsername: string | null, limit: number): Promise<{ last: string | null; users: Record<string, unknown>[] }>;
}

export async function realmExporter(ctx: Pick<ServiceContext, 'storage' | 'flows' | 'keys'>, realm: Realm): Promise<RealmExporter> {
  const { storage } = ctx;
  const clients = await storage.clients.list(realm.id);
  const clientById = new Map(clients.map((c) => [c.id, c]));
  const realmRoles = await storage.roles.list(realm.id);
  const clientRoles = new Map<Client, Role[]>();
  for (const client of clients) clientRoles.set(client, await storage.roles.list(client.id));
  const allRoles = [...realmRoles, ...[...clientRoles.values()].flat()];
  const roleById = new Map(allRoles.map((r) => [r.id, r]));

  /** Keycloak's `{realm: [...], client: {clientId: [...]}}` for a set of role ids, names sorted. */
  const byContainer = (ids: Iterable<string>): RoleNames => {
    const names: RoleNames = {};
    for (const id of ids) {
      const role = roleById.get(id);
      if (!role) continue;
      if (!role.clientRole) (names.realm ??= []).push(role.name);
      else {
        const clientId = clientById.get(role.containerId)?.clientId;
        if (clientId) ((names.client ??= {})[clientId] ??= []).push(role.name);
      }
    }
    names.realm?.sort();
    for (const list of Object.values(names.client ?? {})) list.sort();
    return names;
  };
  const roleExport = async (role: Role) => {
    const children = await storage.roles.composites(role.id);
    return {
      name: role.name,
      ...(role.description !== null ? { description: role.description } : {}),
      composite: children.length > 0,
      ...(children.length ? { composites: byContainer(children.map((c) => c.id)) } : {}),
      clientRole: role.clientRole,
      attributes: {},
    };
  };
  const groups = await GroupTree.load(storage, realm.id);
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  /**
   * Keycloak's group export: the tree, each with its attributes and the roles mapped to it by name. An organization's
   * groups carry their ids, which its members' `groups` name (Keycloak's export of organizations).
   */
  const exportGroup = async (tree: GroupTree, group: Group, withId: boolean): Promise<Record<string, unknown>> => {
    const mapped = byContainer(await storage.groups.roleIds([group.id]));
    return {
      ...(withId ? { id: group.id } : {}),
      name: group.name,
      path: tree.path(group.id),
      ...(group.description !== null ? { description: group.description } : {}),
      attributes: group.attributes,
      realmRoles: mapped.realm ?? [],
      clientRoles: mapped.client ?? {},
      subGroups: await Promise.all(tree.childrenOf(group.id).map((g) => exportGroup(tree, g, withId))),
    };
  };
  /**
   * Keycloak's `organizations` of a whole export: each with its domains, its members by username (with the ids of the
   * organization's groups they are in, by path) and its groups. Members are read in pages; ordered by name and username.
   */
  const exportOrganizations = async () => {
    const organizations = await storage.organizations.list(realm.id, { max: await storage.organizations.count(realm.id) });
    return Promise.all(
      [...organizations].sort(byName).map(async (org) => {
        const { id: _id, ...rep } = organizationRep(org);
        const tree = await GroupTree.loadOrganization(storage, realm.id, org.id);
        const members: { username: string; membershipType: 'UNMANAGED'; groups?: string[] }[] = [];
        for (let first = 0, page: string[] = []; first === 0 || page.length === MEMBER_PAGE; first += MEMBER_PAGE) {
          page = await storage.organizations.memberIds(org.id, first, MEMBER_PAGE);
          for (const userId of page) {
            const user = await storage.users.byId(realm.id, userId);
            if (!user) continue;
            const groupIds = (await storage.groups.organizationGroupIds(userId, org.id)).sort((a, b) => (tree.path(a) < tree.path(b) ? -1 : 1));
            members.push({ username: user.username, membershipType: 'UNMANAGED', ...(groupIds.length ? { groups: groupIds } : {}) });
          }
        }
        members.sort((a, b) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0));
        return { ...rep, members, groups: await Promise.all(tree.childrenOf(null).map((g) => exportGroup(tree, g, true))) };
      }),
    );
  };

  const document = async (options: ExportOptions) => {
    const { id: _id, ...settings } = realmRep(realm);
    if (options.secrets && realm.smtpServer.password) settings.smtpServer = { ...realm.smtpServer };
    const out: Record<string, unknown> = { ...settings };
    if (options.groupsAndRoles) {
      const client: Record<string, unknown[]> = {};
      for (const [c, roles] of clientRoles) if (roles.length) client[c.clientId] = await Promise.all([...roles].sort(byName).map(roleExport));
      out.roles = { realm: await Promise.all([...realmRoles].sort(byName).map(roleExport)), client };
    }
    if (options.groupsAndRoles) {
      out.groups = await Promise.all(groups.childrenOf(null).map((g) => exportGroup(groups, g, false)));
      out.defaultGroups = (await storage.groups.defaultGroupIds(realm.id)).map((id) => groups.path(id)).sort();
    }
    if (options.organizations) out.organizations = await exportOrganizations();
    // Keycloak's clientScopes (with their mappers), the realm's default and optional scopes by name, and the
    // scopes' role scope mappings (`scopeMappings`/`clientScopeMappings` entries with `clientScope`).
    const scopes = await storage.clientScopes.list(realm.id);
    out.clientScopes = scopes.map((sc) => withoutIds(clientScopeRep(sc)));
    Object.assign(out, await realmDefaultScopeNames(storage, realm.id));
    const scopeMappings: ScopeMappingExport[] = [];
    const clientScopeMappings: Record<string, ScopeMappingExport[]> = {};
    for (const sc of scopes) {
      const mapped = byContainer(await storage.clientScopes.roleIds([sc.id]));
      if (mapped.realm) scopeMappings.push({ clientScope: sc.name, roles: mapped.realm });
      for (const [container, roles] of Object.entries(mapped.client ?? {})) (clientScopeMappings[container] ??= []).push({ clientScope: sc.name, roles });
    }
    const flows = await ctx.flows.editor.load(realm.id);
    if (options.clients) {
      const views = await clientScopeViews(storage, realm.id, clients.map((c) => c.id));
      out.clients = clients
        .map((c) => {
          const { access: _access, ...full } = clientRep(c, views.get(c.id));
          // Flows are exported without ids (the importing server makes its own), so overrides name them by alias;
          // the import takes a flow's alias as well as the file's flow ids Keycloak's exports give.
          const overrides = Object.fromEntries(Object.entries(full.authenticationFlowBindingOverrides).map(([binding, id]) => [binding, flows.flow(id)?.alias ?? id]));
          // Kept as data (no authorization services here), written back as Keycloak's export writes it.
          const authorization = c.authorizationSettings ? { authorizationSettings: c.authorizationSettings } : {};
          const rep = withoutIds({ ...full, authenticationFlowBindingOverrides: overrides, ...authorization });
          return 'secret' in rep && !options.secrets ? { ...rep, secret: EXPORT_SECRET_MASK } : rep;
        })
        .sort((a, b) => (a.clientId < b.clientId ? -1 : 1));
      // Keycloak's scopeMappings (realm roles a client's tokens may carry) and clientScopeMappings (by role container).
      for (const c of [...clients].sort((a, b) => (a.clientId < b.clientId ? -1 : 1))) {
        const mapped = byContainer(await storage.roles.scopeMappedRoleIds(c.id));
        if (mapped.realm) scopeMappings.push({ client: c.clientId, roles: mapped.realm });
        for (const [container, roles] of Object.entries(mapped.client ?? {})) (clientScopeMappings[container] ??= []).push({ client: c.clientId, roles });
      }
    }
    if (scopeMappings.length) out.scopeMappings = scopeMappings;
    if (Object.keys(clientScopeMappings).length) out.clientScopeMappings = clientScopeMappings;
    // Identity providers, their mappers and components, kept as data (secrets masked unless `secrets`). Components
    // nest as Keycloak's ComponentExportRepresentation: by provider type, sub-components under their parent.
    out.identityProviders = (await storage.federation.providers(realm.id)).map((p) => {
      const { internalId: _internalId, ...rep } = identityProviderRep(p, options.secrets);
      return rep;
    });
    out.identityProviderMappers = (await storage.federation.mappers(realm.id)).map((m) => {
      const { id: _mapperId, ...rep } = identityProviderMapperRep(m, options.secrets);
      return rep;
    });
    // Ordered by what they hold, not by id (new on every import): Keycloak's two "Allowed Client Scopes" policies differ by subType.
    const componentKey = (c: Component) => JSON.stringify([c.name, c.subType ?? '', c.providerId, c.config]);
    const components = (await storage.federation.components(realm.id)).sort((a, b) => (componentKey(a) < componentKey(b) ? -1 : componentKey(a) > componentKey(b) ? 1 : 0));
    const exportComponents = (parentId: string): Record<string, unknown[]> => {
      const byType: Record<string, unknown[]> = {};
      for (const c of components.filter((x: Component) => x.parentId === parentId)) {
        const { id: _componentId, providerType: _type, parentId: _parent, ...rep } = componentRep(c, options.secrets);
        (byType[c.providerType] ??= []).push({ ...rep, subComponents: exportComponents(c.id) });
      }
      return byType;
    };
    out.components = exportComponents(realm.id);
    // The realm's keys as Keycloak's key-provider components, with their key material in a full export (the CLI's).
    const keyProviders = await ctx.keys.exportProviders(realm.id, options.secrets === true);
    if (keyProviders.length) (out.components as Record<string, unknown[]>)[KEY_PROVIDER_TYPE] = keyProviders;
    out.authenticationFlows = flows.allFlows().map((f) => {
      const { id: _flowId, ...rep } = flowRep(flows, f);
      return rep;
    });
    out.authenticatorConfig = flows.allConfigs().map((c) => {
      const { id: _configId, ...rep } = configRep(c);
      return rep;
    });
    // Every required action of the realm, the server's own and those a realm file listed that it does not carry out
    // (kept as data), as Keycloak writes them: by priority, then name, each with its name, providerId and config.
    out.requiredActions = await realmRequiredActions(storage, realm.id);
    // The realm's own texts by locale, as Keycloak's export writes them (left out when there are none).
    const localizationTexts = await storage.localization.all(realm.id);
    if (Object.keys(localizationTexts).length) out.localizationTexts = localizationTexts;
    return out;
    };

  const users = async (afterUsername: string | null, limit: number) => {
    const page = await storage.users.page(realm.id, afterUsername, limit);
    // Links to identity providers, kept as data: as Keycloak writes them, only on users that have some.
    const links = await storage.federation.linksOf(page.map((u) => u.id));
    // Consents kept from realm files, as Keycloak writes them: by clientId, only on users that have some.
    const consents = await storage.consents.ofUsers(page.map((u) => u.id));
    const consentRep = (c: UserConsent) => ({
      clientId: clientById.get(c.clientId)?.clientId,
      grantedClientScopes: c.grantedClientScopes,
      ...(c.createdDate !== null ? { createdDate: c.createdDate } : {}),
      ...(c.lastUpdatedDate !== null ? { lastUpdatedDate: c.lastUpdatedDate } : {}),
    });
    // In the user's order (the password among them at its own place), as Keycloak writes them and reads them back.
    const orderedCredentials = async (userId: string, password: Record<string, unknown> | null, webAuthn: StoredCredential[]) => {
      const placed: [number, Record<string, unknown>][] = [
        ...(password ? [[await storage.credentials.passwordPriority(userId), password] as [number, Record<string, unknown>]] : []),
        ...(await storage.credentials.ofUser(userId, OTP_CREDENTIAL_TYPE)).map((c) => [c.priority, exportedOtpCredential(c)] as [number, Record<string, unknown>]),
        ...webAuthn.map((c) => [c.priority, exportedWebAuthnCredential(c)] as [number, Record<string, unknown>]),
        ...(await storage.credentials.ofUser(userId, RECOVERY_CODES_TYPE)).map((c) => [c.priority, exportedRecoveryCodes(c)] as [number, Record<string, unknown>]),
      ];
      return placed.sort((a, b) => a[0] - b[0]).map(([, rep]) => rep);
    };
    const reps = await Promise.all(
      page.map(async (user) => {
        const direct = byContainer(await storage.roles.userRoleIds(user.id));
        const hashed = user.passwordHash ? exportedPasswordCredential(user.passwordHash, user.passwordCreated) : null;
        const credential = hashed && user.passwordLabel ? { ...hashed, userLabel: user.passwordLabel } : hashed;
        const webAuthn = (await storage.credentials.ofUser(user.id)).filter((c) => WEBAUTHN_TYPES.includes(c.type));
        return {
          // A user with security keys or passkeys keeps, as Keycloak's id, the user handle their authenticators hold.
          ...(webAuthn.length ? { id: webAuthn.map((c) => c.secretData.userHandle).find((h): h is string => typeof h === 'string') ?? user.id } : {}),
          username: user.username,
          ...(user.firstName !== null ? { firstName: user.firstName } : {}),
          ...(user.lastName !== null ? { lastName: user.lastName } : {}),
          ...(user.email !== null ? { email: user.email } : {}),
          emailVerified: user.emailVerified,
          enabled: user.enabled,
          createdTimestamp: user.createdTimestamp,
          ...(Object.keys(user.attributes).length ? { attributes: user.attributes } : {}),
          ...(user.serviceAccountClientId ? { serviceAccountClientId: clientById.get(user.serviceAccountClientId)?.clientId } : {}),
          credentials: await orderedCredentials(user.id, credential, webAuthn),
          realmRoles: direct.realm ?? [],
          ...(direct.client ? { clientRoles: direct.client } : {}),
          requiredActions: await storage.credentials.requiredActions(user.id),
          ...(consents.has(user.id) ? { clientConsents: consents.get(user.id)!.map(consentRep).sort((a, b) => ((a.clientId ?? '') < (b.clientId ?? '') ? -1 : 1)) } : {}),
          ...(links.has(user.id) ? { federatedIdentities: links.get(user.id)!.map(({ userName, ...link }) => ({ ...link, ...(userName !== null ? { userName } : {}) })) } : {}),
          groups: (await storage.groups.userGroupIds(user.id)).map((id) => groups.path(id)).sort(),
        };
      }),
    );
    return { last: page.length === limit ? page[page.length - 1].username : null, users: reps };
  };
  return { document, users };
}

/** The partial export of the admin API: one realm's document, secrets masked, no users. */
export async function exportRealm(ctx: Pick<ServiceContext, 'storage' | 'flows' | 'keys'>, realm: Realm, options: ExportOptions): Promise<Record<string, unknown>> {
  return (await realmExporter(ctx, realm)).document(options);
}
