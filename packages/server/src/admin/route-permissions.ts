import type { AdminRole } from './permissions.js';

/**
 * The permission every admin route requires, in one table. The admin plugin refuses to start with a route
 * this table does not cover, `docs/admin-permissions.md` is generated from it with the route list, and a test
 * sends every route a token of each single role that lacks the requirement and expects 403. Where the routes
 * check more (the admin-role rule, the role's container), `note` says so.
 */
export interface RoutePermission {
  /** The role(s) the caller needs over the realm in the path; empty for the routes described by `note` alone. */
  roles: AdminRole[];
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
  [read, /^\/admin\/serverinfo$/, { roles: [], note: 'any administrative role on any realm' }],
  [read, /^\/admin\/:realm\/console$/, { roles: [], note: "public: the admin console's page (it signs in with keycloak-js)" }],
  [read, /^\/admin\/:realm\/console\/whoami$/, { roles: [], note: "a token of that realm; answers the caller's own administrative roles over currentRealm" }],
  [read, /^\/admin\/realms$/, { roles: [], note: 'any administrative role; lists the realms the caller administers' }],
  [write, /^\/admin\/realms$/, { roles: ['create-realm'], note: 'master realm role; the creator gets every role of the new realm' }],
  [read, new RegExp(`${R}$`), { roles: [], note: 'any administrative role on the realm' }],
  [write, new RegExp(`${R}$`), { roles: ['manage-realm'] }],
  [write, new RegExp(`${R}/partialImport$`), { roles: ['manage-realm'], note: `users and groups also need manage-users, clients and client roles manage-clients; ${ADMIN_ROLE_RULE}; a user it replaces: ${ACCOUNT_RULE}` }],
  [/^(GET|POST)$/, new RegExp(`${R}/partial-export$`), { roles: ['view-realm'], note: 'exportClients=true also needs view-clients' }],

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
  [read, new RegExp(`${R}/clients(/:id|/:id/client-secret|/:id/installation/providers/:provider)?$`), { roles: ['view-clients'], note: `the secret: ${SECRET_RULE}` }],
  [write, new RegExp(`${R}/clients/:id/client-secret$`), { roles: ['manage-clients'], note: `${ADMIN_CLIENT_RULE}; ${SECRET_RULE}` }],
  [write, new RegExp(`${R}/clients/:id/(protocol-mappers|default-client-scopes|optional-client-scopes)/`), { roles: ['manage-clients'], note: ADMIN_CLIENT_RULE }],
  [read, new RegExp(`${R}/clients`), { roles: ['view-clients'] }],
  [write, new RegExp(`${R}/clients`), { roles: ['manage-clients'] }],

  [read, new RegExp(`${R}/users/profile$`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/users/profile$`), { roles: ['manage-realm'], note: 'the profile is fixed: only an unchanged configuration is accepted' }],
  [write, new RegExp(`${R}/users/:id/role-mappings`), { roles: ['manage-users'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/users/:id(/reset-password|/credentials/:credentialId)?$`), { roles: ['manage-users'], note: ACCOUNT_RULE }],
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
  [read, new RegExp(`${R}/attack-detection/brute-force/users/:id$`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/attack-detection/brute-force/users(/:id)?$`), { roles: ['manage-users'] }],

  [read, new RegExp(`${R}/roles/:roleName/users$`), { roles: ['view-users'] }],
  [write, new RegExp(`${R}/roles/:roleName/composites$`), { roles: ['manage-realm'], note: `a client-role child also needs manage-clients; ${ADMIN_ROLE_RULE}` }],
  [read, new RegExp(`${R}/roles(/|$)`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/roles(/|$)`), { roles: ['manage-realm'], note: 'master admin and create-realm only by their holders' }],
  [read, new RegExp(`${R}/roles-by-id/`), { roles: ['view-realm'], note: 'view-clients instead for a client role' }],
  [write, new RegExp(`${R}/roles-by-id/:id/composites$`), { roles: ['manage-realm'], note: `manage-clients instead for a client role; ${FIXED}; ${ADMIN_ROLE_RULE}` }],
  [write, new RegExp(`${R}/roles-by-id/`), { roles: ['manage-realm'], note: `manage-clients instead for a client role; ${FIXED}` }],

  [read, new RegExp(`${R}/organizations`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/organizations`), { roles: ['manage-realm'] }],
  [read, new RegExp(`${R}/(events|admin-events)`), { roles: ['view-events'] }],
  [write, new RegExp(`${R}/(events|admin-events)`), { roles: ['manage-events'] }],
  [read, new RegExp(`${R}/authentication/`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/authentication/`), { roles: ['manage-realm'] }],
  [read, new RegExp(`${R}/keys$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/components`), { roles: ['view-realm'] }],
  [write, new RegExp(`${R}/components`), { roles: ['manage-realm'], note: 'key providers (the server\'s signing keys) are read-only: 400' }],
  [read, new RegExp(`${R}/identity-provider/`), { roles: ['view-identity-providers'], note: 'or view-realm, as Keycloak' }],
  [write, new RegExp(`${R}/identity-provider/`), { roles: ['manage-identity-providers'] }],
  [read, new RegExp(`${R}/ui-ext/brute-force-user$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/available-roles/(users|groups)/:id$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/role-mappings/roles/:id$`), { roles: ['view-realm'], note: 'view-clients instead for a client role' }],
  [read, new RegExp(`${R}/ui-ext/available-roles/(clients|clientScopes)/:id$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/(users|groups)/:id$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/(clients|clientScopes)/:id$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/effective-roles-all/roles/:id$`), { roles: ['view-realm'], note: 'view-clients instead for a client role' }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/(users|groups)/:id$`), { roles: ['manage-users'], note: ADMIN_ROLE_RULE }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/(clients|clientScopes)/:id$`), { roles: ['manage-clients'], note: `a realm role also needs manage-realm; ${ADMIN_ROLE_RULE}` }],
  [write, new RegExp(`${R}/ui-ext/role-mapping-delete/roles/:id$`), { roles: ['manage-realm'], note: `manage-clients instead for a client role; ${FIXED}; ${ADMIN_ROLE_RULE}` }],
  [read, new RegExp(`${R}/ui-ext/sessions$`), { roles: ['view-users'] }],
  [read, new RegExp(`${R}/ui-ext/sessions/client$`), { roles: ['view-clients'] }],
  [read, new RegExp(`${R}/ui-ext/authentication-management/(flows|required-actions)$`), { roles: ['view-realm'] }],
  [read, new RegExp(`${R}/ui-ext/available-event-listeners$`), { roles: [], note: 'any administrative role on the realm' }],
  [read, new RegExp(`${R}/ui-ext/realms/names$`), { roles: [], note: 'lists the realms the caller administers' }],
  [read, new RegExp(`${R}/ui-ext/info$`), { roles: [], note: 'any administrative role on the realm' }],
  [read, new RegExp(`${R}/localization(/:locale(/:key)?)?$`), { roles: [], note: 'any administrative role on the realm' }],
  [write, new RegExp(`${R}/localization/:locale(/:key)?$`), { roles: ['manage-realm'] }],
];

/** The permission of an admin route (Fastify's pattern, e.g. `/admin/realms/:realm/users`), or null if none is declared. */
export function routePermission(method: string, url: string): RoutePermission | null {
  for (const [methods, path, permission] of rules) {
    if (methods.test(method) && path.test(url)) return permission;
  }
  return null;
}

/** The table of docs/admin-permissions.md for the given routes. */
export function permissionTable(routes: { method: string; url: string }[]): string {
  const rows = routes.map(({ method, url }) => {
    const p = routePermission(method, url);
    const roles = p?.roles.length ? p.roles.map((r) => `\`${r}\``).join(' and ') : '—';
    return `| ${method} | \`${url}\` | ${roles} | ${p?.note ?? ''} |`;
  });
  return [
    '# Admin API permissions',
    '',
    'Generated from `packages/server/src/admin/route-permissions.ts` and the routes the server registers',
    '(`npm run docs:permissions`; a test fails when this file is stale). A role is held over the realm in the path:',
    "through that realm's `realm-management` client, or the master realm's `{realm}-realm` client; master `admin`",
    'holds every role over every realm. `manage-X` includes `view-X`, `view-X` includes `query-X`.',
    '',
    '| method | route | needs | and |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
