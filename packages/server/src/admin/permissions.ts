import type { ServerContext } from '../context.js';
import { forbidden } from '../model/errors.js';
import { REALM_MANAGEMENT, adminClientRealmName, isMasterAdminRole, realmManagementRoles } from '../model/defaults.js';
import type { Client, Realm, Role } from '../model/types.js';
import { heldRoleIds } from '../services/index.js';
import type { AdminAuth } from './authenticate-admin.js';

/**
 * Who may do what in the admin API, written once. Keycloak's model: a realm's administrators hold roles of its
 * `realm-management` client (tokens of that realm), or of the master realm's `{realm}-realm` client (tokens of
 * master); the master `admin` role is the composite of every `{realm}-realm` client's roles and so administers
 * every realm; `create-realm` (master) creates realms. Only what the token carries counts: a token whose client
 * has `fullScopeAllowed: false` and no scope for these roles administers nothing.
 */
export type AdminRole =
  | 'view-realm'
  | 'manage-realm'
  | 'view-clients'
  | 'manage-clients'
  | 'create-client'
  | 'view-users'
  | 'manage-users'
  | 'query-users'
  | 'query-clients'
  | 'query-groups'
  | 'query-realms'
  | 'view-events'
  | 'manage-events'
  | 'view-identity-providers'
  | 'manage-identity-providers'
  | 'impersonation'
  | 'create-realm';

const MASTER = 'master';

const realmRoles = (auth: AdminAuth): string[] => auth.claims.realm_access?.roles ?? [];

export function isSuperAdmin(auth: AdminAuth): boolean {
  return auth.realm.name === MASTER && realmRoles(auth).includes('admin');
}

/** The administrative roles the token carries for `target`: from its realm-management, or master's `{target}-realm`. */
export function managementRolesFor(auth: AdminAuth, target: Realm): string[] {
  if (auth.realm.name === MASTER) return auth.claims.resource_access?.[`${target.name}-realm`]?.roles ?? [];
  if (auth.realm.id === target.id) return auth.claims.resource_access?.[REALM_MANAGEMENT]?.roles ?? [];
  return [];
}

/**
 * The power of a management role: `realm-admin` holds all, `manage-X` implies `view-X` (and `create-client`
 * for clients), `view-X` implies `query-X`, as Keycloak's composites and permission checks do.
 */
function impliedBy(held: string[], role: string): boolean {
  if (held.includes('realm-admin') || held.includes(role)) return true;
  if (role === 'create-client') return held.includes('manage-clients');
  if (role === 'query-realms') return held.includes('view-realm') || held.includes('manage-realm');
  if (role === 'query-groups') return impliedBy(held, 'view-users');
  const [verb, ...rest] = role.split('-');
  const what = rest.join('-');
  if (verb === 'view') return held.includes(`manage-${what}`);
  if (verb === 'query') return impliedBy(held, `view-${what}`);
  return false;
}

/** Whether the caller has `role`'s power over `target`. */
export function hasRole(auth: AdminAuth, target: Realm | null, role: AdminRole): boolean {
  if (isSuperAdmin(auth)) return true;
  if (role === 'create-realm') return auth.realm.name === MASTER && realmRoles(auth).includes('create-realm');
  if (!target) return false;
  return impliedBy(managementRolesFor(auth, target), role);
}

export function requireRole(auth: AdminAuth, target: Realm | null, role: AdminRole): void {
  if (!hasRole(auth, target, role)) throw forbidden(`Missing the ${role} role for this realm`);
}

/**
 * Every realm-management role whose power the caller holds over `target`, by name (what the admin console's
 * `whoami` lists for a realm to decide which pages to show).
 */
export function heldManagementRoles(auth: AdminAuth, target: Realm): string[] {
  if (isSuperAdmin(auth)) return [...realmManagementRoles];
  const held = managementRolesFor(auth, target);
  return realmManagementRoles.filter((role) => impliedBy(held, role));
}

/** Any administrative role at all on the realm: enough to read its basic representation, as in Keycloak. */
export function hasAnyRole(auth: AdminAuth, target: Realm): boolean {
  return isSuperAdmin(auth) || managementRolesFor(auth, target).length > 0;
}

/** The realms the caller administers in any way: any realm for a master caller, else only its own. */
export async function visibleRealms(ctx: ServerContext, auth: AdminAuth): Promise<Realm[]> {
  const candidates = auth.realm.name === MASTER ? await ctx.storage.realms.list() : [auth.realm];
  return candidates.filter((r) => hasAnyRole(auth, r));
}

/** Any administrative role on any realm, or `create-realm`: the callers who may read server information. */
export function isAnyAdministrator(auth: AdminAuth): boolean {
  if (auth.realm.name === MASTER) {
    if (realmRoles(auth).some(isMasterAdminRole)) return true;
    const access = auth.claims.resource_access ?? {};
    return Object.keys(access).some((clientId) => adminClientRealmName(clientId) !== null && (access[clientId]?.roles ?? []).length > 0);
  }
  return managementRolesFor(auth, auth.realm).length > 0;
}

/** A client whose roles administer a realm: a realm's realm-management, or any `{realm}-realm` client of master. */
export function isAdministrationClient(realm: Realm, client: Client): boolean {
  return realm.name === MASTER ? adminClientRealmName(client.clientId) !== null : client.clientId === REALM_MANAGEMENT;
}

/** What an administrative role administers: a management role over one realm, or a master realm role. */
type AdminRoleKind = { kind: 'management'; realm: Realm; name: string } | { kind: 'master'; name: string };

/**
 * Classifies roles: administrative ones are every role of a realm's `realm-management` client, every role of a
 * master `{realm}-realm` client, and master's `admin` and `create-realm`. Others map to null.
 */
async function classify(ctx: ServerContext, roles: Role[]): Promise<Map<string, AdminRoleKind | null>> {
  const result = new Map<string, AdminRoleKind | null>();
  // One lookup per role container (a realm or a client), however many roles of it the call names.
  const administeredBy = new Map<string, Promise<Realm | null>>();
  const administeredRealm = (role: Role): Promise<Realm | null> => {
    let found = administeredBy.get(role.containerId);
    if (!found) {
      found = (async () => {
        const owner = await ctx.storage.realms.byId(role.realmId);
        if (!owner) return null;
        if (!role.clientRole) return owner.name === MASTER && isMasterAdminRole(role.name) ? owner : null;
        const client = await ctx.storage.clients.byId(role.realmId, role.containerId);
        if (!client) return null;
        if (owner.name !== MASTER) return client.clientId === REALM_MANAGEMENT ? owner : null;
        const administered = adminClientRealmName(client.clientId);
        return administered !== null ? ctx.storage.realms.byName(administered) : null;
      })();
      administeredBy.set(role.containerId, found);
    }
    return found;
  };
  for (const role of roles) {
    if (result.has(role.id)) continue;
    const realm = role.clientRole || isMasterAdminRole(role.name) ? await administeredRealm(role) : null;
    if (!realm) result.set(role.id, null);
    else result.set(role.id, role.clientRole ? { kind: 'management', realm, name: role.name } : { kind: 'master', name: role.name });
  }
  return result;
}

/**
 * Whether the caller may give (or take) this administrative role to anyone: only with its power in hand.
 * The `query-*` roles reveal names only: whoever may map roles may hand them out, as Keycloak does.
 */
function mayGrant(auth: AdminAuth, role: AdminRoleKind): boolean {
  if (isSuperAdmin(auth)) return true;
  if (role.kind === 'master') return auth.realm.name === MASTER && realmRoles(auth).includes(role.name);
  if (role.name.startsWith('query-')) return true;
  // Nobody grants realm-admin, manage-realm or a role with no implied power (impersonation, …) without holding it.
  return impliedBy(managementRolesFor(auth, role.realm), role.name);
}

const notHeld = (role: Role, via: Role | null) =>
  forbidden(`Not allowed to grant the administrative role ${role.name}${via ? ` (contained in ${via.name})` : ''}: the caller does not hold it`);

/**
 * Keycloak's admin-role rule, the one check for every way a role reaches (or leaves) someone: mapped to a user or a
 * group, a group joined, left or moved, a composite added to a role (the default roles too), a client scope's role
 * scope mappings, a partial import. The roles are taken with everything they contain, transitively, since whoever
 * holds a composite holds its composites: an administrative role anywhere in that expansion passes only when the
 * caller holds it or already has its power. Callers pass a group's roles as the membership gives them
 * (groupEffectiveRoles: the group's and its ancestors'). Checked for all roles before anything is written; the 403
 * names the first role that fails and, when it came inside another, the role given.
 */
export async function requireMayMapRoles(ctx: ServerContext, auth: AdminAuth, roles: Role[]): Promise<void> {
  if (isSuperAdmin(auth) || roles.length === 0) return;
  const { storage } = ctx;
  // The roles given first, what they contain after (breadth first): a refusal names the nearest administrative role.
  const order = [...(await storage.roles.expand(roles.map((r) => r.id)))];
  const rank = new Map(order.map((id, i) => [id, i]));
  const reached = (await storage.roles.byIds(order)).sort((a, b) => rank.get(a.id)! - rank.get(b.id)!);
  const beyond = await firstRoleBeyond(ctx, auth, reached);
  if (!beyond) return;
  let via: Role | null = null;
  if (!roles.some((r) => r.id === beyond.id)) {
    for (const role of roles) {
      if ((await storage.roles.expand([role.id])).has(beyond.id)) {
        via = role;
        break;
      }
    }
  }
  throw notHeld(beyond, via);
}

/** The first administrative role of `roles` whose power the caller lacks, or null. */
async function firstRoleBeyond(ctx: ServerContext, auth: AdminAuth, roles: Role[]): Promise<Role | null> {
  if (isSuperAdmin(auth)) return null;
  const kinds = await classify(ctx, roles);
  return roles.find((role) => {
    const kind = kinds.get(role.id);
    return kind && !mayGrant(auth, kind);
  }) ?? null;
}

/**
 * Changing another person's account in a way that could give the caller that person's sign-in, or take it from
 * them — the password and other credentials, the e-mail address that password resets go to, enabled, deletion,
 * links to other identities — needs every administrative role the user holds (directly, through groups, as
 * composites) to be within the caller's power, as granting them would: a limited administrator cannot take over,
 * lock out or remove a greater one. Keycloak lets any manage-users holder do these; Realmgate is stricter on purpose.
 */
export async function requireMayChangeAccount(ctx: ServerContext, auth: AdminAuth, userId: string): Promise<void> {
  if (isSuperAdmin(auth)) return;
  const beyond = await firstRoleBeyond(ctx, auth, await ctx.storage.roles.byIds([...(await heldRoleIds(ctx.storage, userId))]));
  if (beyond) throw forbidden(`Not allowed to change the account of a user holding the administrative role ${beyond.name}, which the caller does not hold`);
}

/**
 * The roles of an administration client are fixed, as Keycloak keeps them, for every caller: none is added,
 * renamed or deleted, and their composites do not change (realm-admin under manage-clients would hand it out;
 * manage-users taken out of realm-admin would strip every realm administrator).
 */
async function requireNotFixed(ctx: ServerContext, role: Role): Promise<void> {
  if (!role.clientRole) return;
  const [realm, client] = await Promise.all([ctx.storage.realms.byId(role.realmId), ctx.storage.clients.byId(role.realmId, role.containerId)]);
  if (realm && client && isAdministrationClient(realm, client)) throw forbidden(`The roles of ${client.clientId} are fixed`);
}

/** Creating a role in a container: never in an administration client. */
export async function requireMayAddRoleTo(ctx: ServerContext, realm: Realm, containerId: string): Promise<void> {
  if (containerId === realm.id) return;
  const client = await ctx.storage.clients.byId(realm.id, containerId);
  if (client && isAdministrationClient(realm, client)) throw forbidden(`The roles of ${client.clientId} are fixed`);
}

/** Renaming or deleting a role: not one of an administration client, and a master admin role only by its holder. */
export async function requireMayChangeRole(ctx: ServerContext, auth: AdminAuth, role: Role): Promise<void> {
  await requireNotFixed(ctx, role);
  await requireMayMapRoles(ctx, auth, [role]);
}

/**
 * Adding or removing composites of `parent`: the parent may change (above), each child needs the power to
 * manage its kind (manage-realm for a realm role, manage-clients for a client role) and the admin-role rule.
 */
export async function requireMayCompose(ctx: ServerContext, auth: AdminAuth, realm: Realm, parent: Role, children: Role[]): Promise<void> {
  await requireMayChangeRole(ctx, auth, parent);
  for (const child of children) requireRole(auth, realm, child.clientRole ? 'manage-clients' : 'manage-realm');
  await requireMayMapRoles(ctx, auth, children);
}

/**
 * A realm administrator of `target`: the master super admin, or a caller with the power of every management role
 * over it (realm-admin, or every role of master's `{target}-realm` client). The clients that sign administrators in
 * are changed only by them (admin/clients.ts).
 */
export function isRealmAdministrator(auth: AdminAuth, target: Realm): boolean {
  if (isSuperAdmin(auth)) return true;
  const held = managementRolesFor(auth, target);
  return realmManagementRoles.every((role) => impliedBy(held, role));
}

/**
 * requireMayChangeAccount's rule as a yes or no: a client's secret signs in as its service account, so it is shown
 * only to callers who could change that account (admin/clients.ts).
 */
export async function mayChangeAccount(ctx: ServerContext, auth: AdminAuth, userId: string): Promise<boolean> {
  if (isSuperAdmin(auth)) return true;
  return (await firstRoleBeyond(ctx, auth, await ctx.storage.roles.byIds([...(await heldRoleIds(ctx.storage, userId))]))) === null;
}
