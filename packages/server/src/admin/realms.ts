import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.js';
import { REALM_IMPORT_BODY_LIMIT } from '../http/index.js';
import { badRequest, conflict, forbidden } from '../model/errors.js';
import type { Realm } from '../model/types.js';
import { defaultRolesName, realmDefaultScopeNames, removeAdminClient, renameAdminClient, renameAdminConsolePaths } from '../services/index.js';
import { exportRealm } from '../services/realm-export.js';
import { warnOpenRedirect } from '../model/redirect-uri.js';
import { createRealmFromImport, logImportReport, parseRealmImport } from '../services/realm-import/index.js';
import { parsePartialImport, partialImport } from '../services/realm-import/partial.js';
import { isUniqueViolation } from '../storage/index.js';
import { isSuperAdmin, visibleRealms, requireMayAddRoleTo, requireMayChangeAccount, requireMayChangeRole, requireMayCompose, requireMayMapRoles, requireRole } from './permissions.js';
import { queryBool } from './query.js';
import { callerOf, locationOf, recordAdminEvent, targetRealm, type AdminRequest } from './routing.js';
import { parseRepresentation } from '../representations/fields.js';
import { roleRep } from '../representations/role.js';
import { applyRealmSettings, realmIgnored, realmRep, realmSpec } from '../representations/realm.js';
import { THEME_FIELDS } from '../model/themes.js';

export function realmRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;

  app.get('/realms', async (request: AdminRequest) => {
    // A master caller may administer any realm through master's {realm}-realm clients; others only their own.
    const realms = await visibleRealms(ctx, callerOf(request));
    // Keycloak answers 403, not an empty list, to a caller who may see no realm at all.
    if (realms.length === 0) throw forbidden('No realm is visible to this caller');
    // Each with its defaultRole, as Keycloak's list.
    return Promise.all(realms.map(async (realm) => ({ ...realmRep(realm), ...(await defaultRoleField(ctx, realm)) })));
  });

  app.post('/realms', { bodyLimit: REALM_IMPORT_BODY_LIMIT }, async (request: AdminRequest, reply) => {
    const caller = callerOf(request);
    const parsed = parseRealmImport(request.body, isListener);
    if (await ctx.storage.realms.byName(parsed.settings.realm as string)) throw conflict(`Realm ${String(parsed.settings.realm)} already exists`, 'realm');
    let realm: Realm;
    try {
      // Keycloak gives a creator who is not the master administrator every role over the new realm, so what the
      // import grants inside that realm is never more than the creator holds afterwards.
      realm = await createRealmFromImport(ctx, parsed, isSuperAdmin(caller) ? null : caller.userId);
    } catch (error) {
      // Another request created the same name between the check above and the insert.
      if (isUniqueViolation(error)) throw conflict(`Realm ${String(parsed.settings.realm)} already exists`, 'realm');
      throw error;
    }
    logImportReport(ctx, realm.name, parsed);
    for (const client of parsed.clients) warnOpenRedirect(ctx.logger, realm.name, client, 'admin API realm import');
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'REALM', '', realmRep(realm));
    reply.code(201).header('location', locationOf(ctx, request, realm.name));
    // Keycloak answers an empty 201. What the file held that this server does not use is also answered (as the
    // partial import's answer carries it), so whoever imported the file sees it without reading the server's log;
    // clients that read only the Location header, as Keycloak's admin client does, are unaffected.
    const { notImported, keptAsData } = parsed;
    return notImported.length || keptAsData.length ? reply.send({ notImported, keptAsData }) : reply.send();
  });

  // Keycloak's partial export (POST, as the admin console sends it): realm settings and flows, with
  // `exportClients` its clients (secrets masked) and scope mappings, with `exportGroupsAndRoles` its roles. It
  // changes nothing, so GET answers the same (a browser or curl can fetch it; Keycloak has only the POST).
  const partialExport = async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const caller = callerOf(request);
    const clients = queryBool(request.query, 'exportClients') ?? false;
    const groupsAndRoles = queryBool(request.query, 'exportGroupsAndRoles') ?? false;
    if (clients) requireRole(caller, realm, 'view-clients');
    return exportRealm(ctx, realm, { clients, groupsAndRoles });
  };
  app.post('/realms/:realm/partial-export', partialExport);
  app.get('/realms/:realm/partial-export', partialExport);

  // Keycloak's partial import: roles, clients and users of a file into this realm (FAIL, SKIP or OVERWRITE what
  // exists). Each role written goes through the admin API's own rules, so a file cannot grant its caller more, and
  // each account it replaces or changes through the single-user endpoints' rule (requireMayChangeAccount).
  app.post('/realms/:realm/partialImport', { bodyLimit: REALM_IMPORT_BODY_LIMIT }, async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    const caller = callerOf(request);
    const input = parsePartialImport(request.body, realm);
    if (input.data.users.length || input.data.groups.length) requireRole(caller, realm, 'manage-users');
    if (input.data.clients.length || Object.keys(input.data.clientRoles).length) requireRole(caller, realm, 'manage-clients');
    if (input.data.identityProviders.length) requireRole(caller, realm, 'manage-identity-providers');
    const results = await partialImport(ctx, realm, input, {
      addRole: (containerId) => requireMayAddRoleTo(ctx, realm, containerId),
      change: (role) => requireMayChangeRole(ctx, caller, role),
      compose: (parent, children) => requireMayCompose(ctx, caller, realm, parent, children),
      grant: (roles) => requireMayMapRoles(ctx, caller, roles),
      // As the single-user endpoints: replacing an account needs every administrative role it holds.
      changeAccount: (userId) => requireMayChangeAccount(ctx, caller, userId),
    });
    logImportReport(ctx, realm.name, results);
    for (const client of input.data.clients) warnOpenRedirect(ctx.logger, realm.name, client, 'admin API partial import');
    await recordAdminEvent(ctx, request, realm, 'CREATE', 'REALM', 'partialImport', { overwritten: results.overwritten, added: results.added, skipped: results.skipped });
    return results;
  });

  app.get('/realms/:realm', async (request: AdminRequest) => {
    const realm = await targetRealm(ctx, request);
    return {
      ...realmRep(realm),
      ...(await realmDefaultScopeNames(ctx.storage, realm.id)),
      ...(await defaultRoleField(ctx, realm)),
    };
  });

  app.put('/realms/:realm', async (request: AdminRequest, reply) => {
    await updateRealm(ctx, request, request.body);
    return reply.code(204).send();
  });

  app.delete('/realms/:realm', async (request: AdminRequest, reply) => {
    const realm = await targetRealm(ctx, request);
    if (realm.name === 'master') throw badRequest('The master realm cannot be deleted');
    await ctx.storage.transaction(async (trx) => {
      await removeAdminClient(realm.name, trx);
      await ctx.storage.realms.delete(realm.id, trx);
    });
    const master = await ctx.storage.realms.byName('master');
    if (master) await recordAdminEvent(ctx, request, master, 'DELETE', 'REALM', `realms/${realm.name}`);
    return reply.code(204).send();
  });
}

/**
 * The realm update, the one path for `PUT /admin/realms/{realm}` and the console's `PUT …/{realm}/ui-ext` (the
 * route permission table requires manage-realm of both): the representation checked field by field, the themes it
 * names, the flow bindings, then stored with the renames a new name brings, and recorded as an admin event.
 */
export async function updateRealm(ctx: ServerContext, request: AdminRequest, body: unknown): Promise<void> {
  const realm = await targetRealm(ctx, request);
  const rep = parseRepresentation(body, realmSpec, realmIgnored, 'realm');
  if (rep.realm !== undefined && rep.realm !== realm.name && realm.name === 'master') throw badRequest('realm.realm: the master realm cannot be renamed', 'realm');
  checkThemes(ctx, realm, rep);
  const updated = structuredClone(realm);
  applyRealmSettings(updated, rep);
  const binding = await ctx.flows.validateBindings(updated);
  if (binding) throw badRequest(binding.message, binding.field);
  try {
    await ctx.storage.transaction(async (trx) => {
      await ctx.storage.realms.update(updated, trx);
      // New users get the default role by its name, default-roles-<realm>: it is renamed with the realm, as Keycloak does.
      if (updated.name !== realm.name) {
        await renameAdminClient(realm.name, updated.name, trx);
        await renameAdminConsolePaths(realm.id, realm.name, updated.name, trx);
        await trx
          .updateTable('role')
          .set({ name: defaultRolesName(updated.name) })
          .where('container_id', '=', realm.id)
          .where('name', '=', defaultRolesName(realm.name))
          .execute();
      }
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`Realm ${updated.name} already exists`, 'realm');
    throw error;
  }
  await recordAdminEvent(ctx, request, updated, 'UPDATE', 'REALM', '', realmRep(updated));
}

/**
 * A realm PUT may name only a theme this server has (the built-in one's names, or the theme directory's of the
 * type): else 400 naming the field, where Keycloak stores the name and falls back to its built-in theme at every
 * page. The value already stored passes, so a console tab that PUTs the whole realm back keeps working for a realm
 * imported with a theme this server lacks.
 */
function checkThemes(ctx: ServerContext, realm: Realm, rep: Record<string, unknown>): void {
  for (const [field, type] of Object.entries(THEME_FIELDS)) {
    const name = rep[field];
    if (typeof name !== 'string' || name === '' || name === realm.attributes[field] || ctx.pages.themes.has(type, name)) continue;
    const known = ctx.pages.themes.names(type);
    throw badRequest(`realm.${field}: no ${type} theme "${name}" (the server has the built-in theme${known.length ? ` and ${known.map((n) => `"${n}"`).join(', ')}` : ''})`, field);
  }
}

/** Keycloak's brief role representation of default-roles-<realm> (the console's "User registration" tab edits it). */
async function defaultRoleField(ctx: ServerContext, realm: Realm) {
  const defaultRole = await ctx.storage.roles.byName(realm.id, defaultRolesName(realm.name));
  return defaultRole ? { defaultRole: roleRep(defaultRole, true) } : {};
}
