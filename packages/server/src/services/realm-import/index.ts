/**
 * Realm import, one service for the admin API (`POST /admin/realms`) and start-up (`--import-realm`, the demo
 * realm): `parseRealmImport` reads a Keycloak realm export (the subset this server keeps), `createRealmFromImport`
 * provisions the realm and writes what the export holds in one transaction, all or nothing.
 */
import { applyRealmSettings } from '../../representations/realm.js';
import type { ServiceContext } from '../context.js';
import type { Realm } from '../../model/types.js';
import { grantAdminClientRoles, provisionRealm } from '../realm-provisioning.js';
import type { RealmImport } from './parse.js';
import { importRealmContents } from './write.js';

export { parseRealmImport, type RealmImport } from './parse.js';

/** Creates a realm from an import; `creatorUserId`, a master user, is given every role of master's client for it. */
export async function createRealmFromImport(ctx: ServiceContext, parsed: RealmImport, creatorUserId: string | null = null): Promise<Realm> {
  return ctx.storage.transaction(async (trx) => {
    // The file's RSA signing keys, as Keycloak imports them (tokens and the published key stay the same).
    const firstKeys = async (r: Realm, db: typeof trx) => parsed.notImported.push(...(await ctx.keys.importKeys(r.id, parsed.signingKeys, db)));
    const realm = await provisionRealm(ctx.storage, ctx.keys, ctx.flows, parsed.settings.realm as string, (r) => applyRealmSettings(r, parsed.settings), trx, firstKeys);
    await importRealmContents(ctx, realm, parsed, trx);
    if (creatorUserId) await grantAdminClientRoles(creatorUserId, realm.name, trx);
    return realm;
  });
}

/**
 * The import's report in the log, once per file: what is not imported, and what is kept as data without being acted
 * on (identity providers, components: nobody signs in through them). JSON paths only, never values (no secrets).
 */
export function logImportReport(ctx: Pick<ServiceContext, 'logger'>, realm: string | null, report: { notImported: string[]; keptAsData: string[] }, file?: string): void {
  const where = file !== undefined ? { file, realm } : { realm };
  if (report.notImported.length) ctx.logger.warn({ ...where, notImported: report.notImported }, 'realm import: parts of the file are not imported');
  if (report.keptAsData.length) ctx.logger.warn({ ...where, keptAsData: report.keptAsData }, 'realm import: parts of the file are kept as data, not used for sign-in');
}
