import type { FastifyRequest } from 'fastify';
import type { ServerContext } from '../context.js';
import { forbidden } from '../model/errors.js';
import { hasAnyRole, hasRole, isAnyAdministrator, type AdminRole } from './permissions.js';
import { callerOf, targetRealm } from './routing.js';

/**
 * The permission every admin route requires, in one table, and what enforces it: `requireRoutePermission` runs
 * before every admin handler. The admin plugin refuses to start with a route this table does not cover (and the
 * door refuses such a route at request time), `docs/admin-permissions.md` is generated from it with the route
 * list, and a test sends every route a token of each single role and expects 403 exactly where the table says.
 * Where the handlers check more (the admin-role rule, the role's container), `note` says so.
 */
export interface RoutePermission {
  /** The role(s) the caller needs over the realm in the path (all of them); empty when `caller` says who passes. */
  roles: AdminRole[];
  /**
   * Roles that pass the door instead of `roles`: the handler then decides by the resource which of the two it
   * needs (a client role needs the clients' role, a realm role the realm's), which the path alone cannot say.
   */
  instead?: AdminRole[];
  /**
   * Who passes a route without roles: `administrator` holds any administrative role over the realm in the path (over
   * any realm where the path names none); `signed-in` is any caller the admin API authenticated, the handler
   * answering only what the caller administers; `public` is anyone (the console's page, outside the API's door).
   */
  caller?: 'administrator' | 'signed-in' | 'public';
  note?: string;
}

type Rule = [methods: RegExp, path: RegExp, permission: RoutePermission];

const read = /^GET$/;
const write = /^(POST|PUT|DELETE)$/;
const R = '^/admin/realms/:realm';
const ADMIN_ROLE_RULE = 'each administrative role named, or contained in a role named, must be held by the caller (or be within its power)';
const GROUP_ROLES_RULE = "each administrative role the group's members hold through it must be held by the caller (or be within its power)";
const FIXED = 'roles of realm-management and master {realm}-realm clients are fixed';
const ACCOUNT_RULE = 'each administrative role the user holds must be held by the caller (or be within its power)';
const ADMIN_CLIENT_RULE = 'security-admin-console, admin-cli, account-console, broker, realm-management and master {realm}-realm clients: only a realm administrator (realm-admin), beyond their name and description';
const SECRET_RULE = "each administrative role of the client's service account must be within the caller's power, else no secret (403, or `secret` left out)";

const rules: Rule[] = [
  [read, /^\/admin\/serverinfo$/, { roles: [], caller: 'administrator', note: 'any administrative role on any realm' }],
  [read, /^\/admin\/:realm\/console$/, { roles: [], caller: 'public', note: "public: the admin console's page (it signs in with keycloak-js)" }],
  [read, /^\/admin\/:realm\/console\/whoami$/, { roles: [], caller: 'signed-in', note: "a token of that realm; answers the caller's own administrative roles over currentRealm" }],
  [read, /^\/admin\/realms$/, { roles: [], caller: 'signed-in', note: 'any administrative role; lists the realms the caller administers' }],
  [write, /^\/admin\/realms$/, { roles: ['create-realm'], note: 'master realm role; the creator gets every role of the new realm' }],
  [read, new RegExp(`${R}$`), { roles: [], caller: 'administrator', note: 'any administrative role on the realm' }],
  [write, new RegExp(`${R}$`), { roles: ['manage-realm'] }],
  [write, new RegExp(`${R}/partialImport$`), { roles: ['manage-realm'], note: `users and groups also need manage-users, clients and client roles manage-clients; ${ADMIN_ROLE_RULE}; a user it replaces: ${ACCOUNT_RULE}` }],
  [/^(GET|POST)$/, new RegExp(`${R}/partial-export$`), { roles: ['view-realm'], note: 'exportClients=true also needs view-clients' }],

  [read, new RegExp(`${R}/clients-initial-access$`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/clients-initial-access(/:id)?$`), { roles: ['manage-clients'], note: 'the token is answered once, by the POST' }],
  [write, new RegExp(`${R}/clients/:id/registration-access-token$`), { roles: ['manage-clients'], note: `${ADMIN_CLIENT_RULE}; ${SECRET_RULE}` }],
  [/^(GET|POST|DELETE)$/, new RegExp(`${R}/clients/:id/(nodes(/:node)?|test-nodes-available)$`), { roles: ['manage-clients'], note: 'registered cluster nodes; the availability check sends requests, so manage as Keycloak' }],
  [read, new RegExp(`${R}/client-registration-policy/providers$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/client-policies/(profiles|policies)$`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/client-policies/(profiles|policies)$`), { roles: ['manage-realm'], note: 'an executor or condition Realmgate does not run is refused by name (400)' }],
  [read, new RegExp(`${R}/client-scopes/:id/scope-mappings`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/client-scopes/:id/scope-mappings/realm$`), { roles: ['manage-clients', 'manage-realm'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/client-scopes/:id/scope-mappings/clients/:client$`), { roles: ['manage-clients'], note: ADMIN_ROLE_RULE }],
  [read, new RegExp(`${R}/client-scopes`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/client-scopes`), { roles: ['manage-clients'] }],
  [read, new RegExp(`${R}/default-(default|optional)-client-scopes$`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/default-(default|optional)-client-scopes/:scopeId$`), { roles: ['manage-realm'] }],
  [read, new RegExp(`${R}/clients/:id/scope-mappings`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/clients/:id/scope-mappings/realm$`), { roles: ['manage-clients', 'manage-realm'], note: ADMIN_CLIENT_RULE }],
  [write, new RegExp(`${R}/clients/:id/scope-mappings/clients/:client$`), { roles: ['manage-clients'], note: ADMIN_CLIENT_RULE }],
  [read, new RegExp(`${R}/clients/:id/roles/:roleName/(users|groups)$`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/clients/:id/roles/:roleName/composites$`), { roles: ['manage-clients'], note: `${FIXED}; a realm-role child also needs manage-realm; ${ADMIN_ROLE_RULE}` }],
  [write, new RegExp(`${R}/clients/:id/roles`), { roles: ['manage-clients'], note: FIXED }],
  [/^DELETE$/, new RegExp(`${R}/clients/:id$`), { roles: ['manage-clients'], note: `administration clients are not deleted; ${ADMIN_CLIENT_RULE}` }],
  [write, new RegExp(`${R}/clients/:id$`), { roles: ['manage-clients'], note: `administration clients are not renamed; ${ADMIN_CLIENT_RULE}; a secret set: ${SECRET_RULE}` }],
  [read, new RegExp(`${R}/clients/:id/evaluate-scopes/generate-example-(access-token|id-token|userinfo)$`), { roles: ['view-clients', 'view-users'], note: 'view-users too: an example names a user' }],
  [read, new RegExp(`${R}/clients/:id/evaluate-scopes/`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/clients(/:id|/:id/client-secret|/:id/installation/providers/:provider)?$`), { roles: ['view-clients'], note: `the secret: ${SECRET_RULE}` }],
  [read, new RegExp(`${R}/clients/:id/client-secret/rotated$`), { roles: ['view-clients'], note: `always 404: no secret rotation here; ${SECRET_RULE}` }],
  [/^DELETE$/, new RegExp(`${R}/clients/:id/client-secret/rotated$`), { roles: ['manage-clients'], note: `nothing to invalidate: no secret rotation here; ${ADMIN_CLIENT_RULE}; ${SECRET_RULE}` }],
  [write, new RegExp(`${R}/clients/:id/client-secret$`), { roles: ['manage-clients'], note: `${ADMIN_CLIENT_RULE}; ${SECRET_RULE}` }],
  [write, new RegExp(`${R}/clients/:id/(protocol-mappers|default-client-scopes|optional-client-scopes)/`), { roles: ['manage-clients'], note: ADMIN_CLIENT_RULE }],
  [read, new RegExp(`${R}/clients`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/clients`), { roles: ['manage-clients'] }],

  [read, new RegExp(`${R}/users/profile$`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/users/profile$`), { roles: ['manage-realm'], note: 'the profile is fixed: only an unchanged configuration is accepted' }],
  [write, new RegExp(`${R}/users/:id/role-mappings`), { roles: ['manage-users'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/users/:id(/reset-password|/credentials/:credentialId(/moveToFirst|/moveAfter/:newPreviousCredentialId)?)?$`), { roles: ['manage-users'], note: ACCOUNT_RULE }],
  [/^POST$/, new RegExp(`${R}/users/:id/impersonation$`), { roles: ['impersonation'], note: `${ACCOUNT_RULE}; a caller signed in to that realm has its own session ended` }],
  [write, new RegExp(`${R}/users/:id/groups/:groupId$`), { roles: ['manage-users'], note: GROUP_ROLES_RULE }],
  [read, new RegExp(`${R}/groups(/count)?$`), { roles: ['query-groups'] }],
  [read, new RegExp(`${R}/(groups|group-by-path)/`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/groups/:id/role-mappings`), { roles: ['manage-users'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/groups(/|$)`), { roles: ['manage-users'], note: `moving or deleting a group with members: ${GROUP_ROLES_RULE}` }],
  [read, new RegExp(`${R}/default-groups$`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/default-groups/:groupId$`), { roles: ['manage-realm'], note: `adding: ${GROUP_ROLES_RULE}` }],
  [read, new RegExp(`${R}/roles/:roleName/groups$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/users/:id/federated-identity$`), { roles: ['view-users'], note: 'links to identity providers, kept as data' }],
  [write, new RegExp(`${R}/users/:id/federated-identity/:provider$`), { roles: ['manage-users'], note: `links to identity providers, kept as data; ${ACCOUNT_RULE}` }],
  [read, new RegExp(`${R}/users`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/users`), { roles: ['manage-users'] }],
  [write, new RegExp(`${R}/sessions/:id$`), { roles: ['manage-users'] }],
  [write, new RegExp(`${R}/logout-all$`), { roles: ['manage-users'], note: "also sets the realm's notBefore, as Keycloak's" }],
  [write, new RegExp(`${R}/push-revocation$`), { roles: ['manage-realm'] }],
  [/^POST$/, new RegExp(`${R}/clear-(realm|user|keys|crl)-cache$`), { roles: ['manage-realm'], note: 'the configuration cache of every node' }],
  [write, new RegExp(`${R}/clients/:id/push-revocation$`), { roles: ['manage-clients'] }],
  [read, new RegExp(`${R}/client-session-stats$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/attack-detection/brute-force/users/:id$`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/attack-detection/brute-force/users(/:id)?$`), { roles: ['manage-users'] }],

  [read, new RegExp(`${R}/roles/:roleName/users$`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/roles/:roleName/composites$`), { roles: ['manage-realm'], note: `a client-role child also needs manage-clients; ${ADMIN_ROLE_RULE}` }],
  [read, new RegExp(`${R}/roles(/|$)`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/roles(/|$)`), { roles: ['manage-realm'], note: 'master admin and create-realm only by their holders' }],
  [read, new RegExp(`${R}/roles-by-id/`), { roles: ['view-realm'], instead: ['view-clients'], note: 'view-clients instead for a client role' }],
  [write, new RegExp(`${R}/roles-by-id/:id/composites$`), { roles: ['manage-realm'], instead: ['manage-clients'], note: `manage-clients instead for a client role; ${FIXED}; ${ADMIN_ROLE_RULE}` }],
  [write, new RegExp(`${R}/roles-by-id/`), { roles: ['manage-realm'], instead: ['manage-clients'], note: `manage-clients instead for a client role; ${FIXED}` }],

  [/^POST$/, new RegExp(`${R}/organizations/:id/members/invite-(user|existing-user)$`), { roles: ['manage-realm', 'manage-users'], note: 'sends the invitation e-mail; its link lets the invitee join (or register and join)' }],
  [/^(GET|POST|DELETE)$/, new RegExp(`${R}/organizations/:id/invitations(/:invitationId(/resend)?)?$`), { roles: ['manage-realm', 'manage-users'], note: 'an invitation shows its link, which lets the invitee join' }],
  [read, new RegExp(`${R}/organizations/:id/(groups/:orgGroupId/members|members/:userId/groups)$`), { roles: ['view-realm', 'view-users'], note: 'organization groups: their members, a member\'s groups' }],
  [write, new RegExp(`${R}/organizations/:id/groups/:orgGroupId/members/:userId$`), { roles: ['manage-realm', 'manage-users'], note: 'only members of the organization join its groups' }],
  [write, new RegExp(`${R}/organizations/:id/groups/:orgGroupId/role-mappings`), { roles: ['manage-realm'], note: `${ADMIN_ROLE_RULE}; an organization group's roles do not reach its members' tokens (as Keycloak)` }],
  [read, new RegExp(`${R}/organizations`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/organizations`), { roles: ['manage-realm'] }],
  [read, new RegExp(`${R}/(events|admin-events)`), { roles: ['view-events'] }],
  [write, new RegExp(`${R}/(events|admin-events)`), { roles: ['manage-events'] }],
  [read, new RegExp(`${R}/authentication/`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/authentication/`), { roles: ['manage-realm'] }],
  [read, new RegExp(`${R}/keys$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/components`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/components`), { roles: ['manage-realm'], note: 'key providers (the server\'s signing keys) are read-only: 400' }],
  [read, new RegExp(`${R}/identity-provider/instances/:alias/reload-keys$`), { roles: ['manage-identity-providers'], note: 'a GET that fetches the JWKS again, manage as Keycloak' }],
  [read, new RegExp(`${R}/identity-provider/`), { roles: ['view-identity-providers'], instead: ['view-realm'], note: 'either, as Keycloak' }],
  [write, new RegExp(`${R}/identity-provider/`), { roles: ['manage-identity-providers'] }],
  [read, new RegExp(`${R}/ui-ext/brute-force-user$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/available-roles/(users|groups)/:id$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/role-mappings/roles/:id$`), { roles: ['view-realm'], instead: ['view-clients'], note: 'view-clients instead for a client role' }],
  [read, new RegExp(`${R}/ui-ext/available-roles/(clients|clientScopes)/:id$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/(users|groups)/:id$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/(clients|clientScopes)/:id$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/roles/:id$`), { roles: ['view-realm'], instead: ['view-clients'], note: 'view-clients instead for a client role' }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/(users|groups)/:id$`), { roles: ['manage-users'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/(clients|clientScopes)/:id$`), { roles: ['manage-clients'], note: `a realm role also needs manage-realm; ${ADMIN_ROLE_RULE}` }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/roles/:id$`), { roles: ['manage-realm'], instead: ['manage-clients'], note: `manage-clients instead for a client role; ${FIXED}; ${ADMIN_ROLE_RULE}` }],
  [read, new RegExp(`${R}/ui-ext/sessions$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/sessions/client$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/authentication-management/(flows|required-actions)$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/ui-ext/available-event-listeners$`), { roles: [], caller: 'administrator', note: 'any administrative role on the realm' }],
  [read, new RegExp(`${R}/ui-ext/realms/names$`), { roles: [], caller: 'signed-in', note: 'lists the realms the caller administers' }],
  [read, new RegExp(`${R}/ui-ext/info$`), { roles: [], caller: 'administrator', note: 'any administrative role on the realm' }],
  [/^PUT$/, new RegExp(`${R}/ui-ext$`), { roles: ['manage-realm'], note: "the console's realm save: the realm PUT's update; `upConfig` as PUT users/profile takes it" }],
  [read, new RegExp(`${R}/localization(/:locale(/:key)?)?$`), { roles: [], caller: 'administrator', note: 'any administrative role on the realm' }],
  [write, new RegExp(`${R}/localization/:locale(/:key)?$`), { roles: ['manage-realm'] }],
];

/** The permission of an admin route (Fastify's pattern, e.g. `/admin/realms/:realm/users`), or null if none is declared. */
export function routePermission(method: string, url: string): RoutePermission | null {
  for (const [methods, path, permission] of rules) {
    if (methods.test(method) && path.test(url)) return permission;
  }
  return null;
}

/**
 * The admin API's door: every admin route passes here after its body is read and before its handler runs, and is
 * let in only as its entry in the table says (a provider's route as the role it declares). A route without an entry
 * is refused, whatever its handler would do. The realm in the path is looked up first (404 `Realm not found.`, as
 * Keycloak answers before any permission), then the caller's roles over it (403). Handlers check only what the
 * table cannot say: whether this caller may map this role, change this account, touch this client.
 */
export async function requireRoutePermission(ctx: ServerContext, request: FastifyRequest): Promise<void> {
  const caller = callerOf(request);
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  const providerRole = request.routeOptions.config.providerAdminRole;
  const permission: RoutePermission | null = providerRole ? { roles: [providerRole as AdminRole] } : routePermission(method, request.routeOptions.url ?? '');
  if (!permission) throw forbidden('This admin route declares no permission');
  const realm = (request.params as { realm?: string } | undefined)?.realm !== undefined ? await targetRealm(ctx, request, true) : null;
  if (permission.roles.length === 0) {
    if (permission.caller === 'signed-in') return;
    if (permission.caller === 'administrator' && (realm ? hasAnyRole(caller, realm) : isAnyAdministrator(caller))) return;
    throw forbidden(realm ? 'Forbidden' : 'Server information is for administrators');
  }
  if (permission.instead?.every((role) => hasRole(caller, realm, role))) return;
  const missing = permission.roles.find((role) => !hasRole(caller, realm, role));
  if (missing) throw forbidden(`Missing the ${missing} role for this realm`);
}

const callerText: Record<NonNullable<RoutePermission['caller']>, string> = { administrator: 'any administrative role', 'signed-in': 'signed in', public: 'nobody' };

/** The table of docs/admin-permissions.md for the given routes. */
export function permissionTable(routes: { method: string; url: string }[]): string {
  const rows = routes.map(({ method, url }) => {
    const p = routePermission(method, url);
    const roles = p?.roles.length ? [p.roles, p.instead ?? []].filter((set) => set.length).map((set) => set.map((r) => `\`${r}\``).join(' and ')).join(' or ') : p?.caller ? callerText[p.caller] : '—';
    return `| ${method} | \`${url}\` | ${roles} | ${p?.note ?? ''} |`;
  });
  return [
    '# Admin API permissions',
    '',
    'Generated from `packages/server/src/admin/route-permissions.ts` and the routes the server registers',
    '(`npm run docs:permissions`; a test fails when this file is stale). A role is held over the realm in the path:',
    "through that realm's `realm-management` client, or the master realm's `{realm}-realm` client; master `admin`",
    'holds every role over every realm. `manage-X` includes `view-X`, `view-X` includes `query-X`. The server enforces',
    'this table before every admin handler runs and refuses a route it does not list; where two sets are given (`or`),',
    'either passes and the handler decides by the resource which it needs.',
    '',
    '| method | route | needs | and |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
