import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerConfig } from './config/index.js';
import type { ServerContext } from './context.js';
import { newSecret } from './credentials/index.js';
import { REALM_FILE_LIMIT } from './http/index.js';
import { AppError, PasswordPolicyError } from './model/errors.js';
import { warnOpenRedirect } from './model/redirect-uri.js';
import { createUser, provisionRealm, setPassword, upgradeAccountRoles, upgradeAdminConsoleClient, upgradeAdminModel, upgradeClientScopes } from './services/index.js';
import { createRealmFromImport, logImportReport, parseRealmImport } from './services/realm-import/index.js';
import { isUniqueViolation } from './storage/index.js';

/** First start: the master realm and its administrator. Returns the generated password, if one was made. */
export async function ensureMasterRealm(ctx: ServerContext): Promise<{ username: string; generatedPassword: string | null } | null> {
  if (await ctx.storage.realms.byName('master')) {
    await upgradeExistingRealmsOnce(ctx);
    return null;
  }
  const { config } = ctx;
  let password = config.bootstrapAdminPassword;
  let generated: string | null = null;
  if (!password) {
    if (config.mode === 'production') {
      throw new Error('REALMGATE_BOOTSTRAP_ADMIN_PASSWORD must be set for the first start in production mode');
    }
    password = generated = newSecret(12);
  }
  const username = config.bootstrapAdminUsername;
  await ctx.storage.transaction(async (trx) => {
    const master = await provisionRealm(ctx.storage, ctx.keys, ctx.flows, 'master', (r) => (r.displayName = 'Realmgate'), trx);
    const admin = await createUser(ctx.storage, master, { username, enabled: true, emailVerified: true }, trx);
    await setPassword(ctx, master, admin, password!, trx);
    const adminRole = await trx.selectFrom('role').select('id').where('container_id', '=', master.id).where('name', '=', 'admin').executeTakeFirstOrThrow();
    await ctx.storage.roles.grant(admin.id, [adminRole.id], trx);
  });
  return { username, generatedPassword: generated };
}

/** A database from before the master admin model, the account roles, stored client scopes or the admin console (see upgradeAdminModel, upgradeAccountRoles, upgradeAdminConsoleClient, upgradeClientScopes); another process may be doing the same. */
async function upgradeExistingRealmsOnce(ctx: ServerContext): Promise<void> {
  try {
    const upgraded = await ctx.storage.transaction((trx) => upgradeAdminModel(ctx.storage, trx));
    if (upgraded.length) ctx.logger.info({ realms: upgraded }, 'master realm: administration clients added for existing realms');
    const withAccountRoles = await ctx.storage.transaction((trx) => upgradeAccountRoles(ctx.storage, trx));
    if (withAccountRoles.length) ctx.logger.info({ realms: withAccountRoles }, 'account client: roles added for existing realms');
    const withConsole = await ctx.storage.transaction((trx) => upgradeAdminConsoleClient(ctx.storage, trx));
    if (withConsole.length) ctx.logger.info({ realms: withConsole }, 'security-admin-console client added for existing realms');
    const withScopes = await ctx.storage.transaction((trx) => upgradeClientScopes(ctx.storage, trx));
    if (withScopes.length) ctx.logger.info({ realms: withScopes }, 'client scopes: the built-in ones added to existing realms and their clients');
  } catch (error) {
    // A concurrent start-up did it first: its transaction committed the same rows.
    if (!isUniqueViolation(error)) throw error;
  }
}

/** The placeholder a realm file may use in any string value, e.g. a webhook URL that points back at this server. */
export const BASE_URL_PLACEHOLDER = '${realmgate.base-url}';

/**
 * What the placeholder becomes: the configured hostname, else this server's own listening address (loopback
 * for a wildcard host, since the server calls itself). Fixed at import: a realm imported while listening on
 * one port keeps that port.
 */
export function importBaseUrl(config: ServerConfig): string {
  if (config.hostname) return config.hostname;
  const host = config.httpHost === '0.0.0.0' ? '127.0.0.1' : config.httpHost === '::' ? '[::1]' : config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost;
  return `http://${host}:${config.httpPort}`;
}

function substitute(value: unknown, placeholder: string, replacement: string): unknown {
  if (typeof value === 'string') return value.replaceAll(placeholder, replacement);
  if (Array.isArray(value)) return value.map((v) => substitute(v, placeholder, replacement));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, placeholder, replacement)]));
  }
  return value;
}

/** Deeper JSON than any realm export is refused before it is walked (a hostile file, not a realm). */
const REALM_FILE_MAX_DEPTH = 64;

export interface RealmFileResult {
  file: string;
  realm: string | null;
  outcome: 'imported' | 'exists' | 'refused';
  /** Why it was refused: the file's own problem, with the JSON path where there is one. */
  error?: string;
  /** JSON paths of what the file holds and this server does not import (see parseRealmImport). */
  notImported: string[];
  /** JSON paths of what is imported as data and not acted on (identity providers, components). */
  keptAsData: string[];
}

function depthOf(value: unknown, limit: number, depth = 0): number {
  if (depth > limit || typeof value !== 'object' || value === null) return depth;
  let max = depth;
  for (const child of Object.values(value)) {
    max = Math.max(max, depthOf(child, limit, depth + 1));
    if (max > limit) break;
  }
  return max;
}

/** An error that says what is wrong with the file (what the admin API answers with a 4xx), not with the server. */
const isFileProblem = (error: unknown) =>
  (error instanceof AppError && error.status < 500) || error instanceof PasswordPolicyError || isUniqueViolation(error);

/** Reads, parses and creates one realm file; its problems are returned, never thrown. */
async function importRealmFile(ctx: ServerContext, path: string): Promise<RealmFileResult> {
  const result: RealmFileResult = { file: path, realm: null, outcome: 'refused', notImported: [], keptAsData: [] };
  const refuse = (error: string) => Object.assign(result, { error });
  const size = (await stat(path)).size;
  if (size > REALM_FILE_LIMIT) return refuse(`file of ${size} bytes is over the ${REALM_FILE_LIMIT}-byte limit`);
  let body: unknown;
  try {
    // One leading UTF-8 byte order mark is skipped, as Keycloak's reader (Jackson) skips it; anything else is the JSON's.
    body = JSON.parse((await readFile(path, 'utf8')).replace(/^\uFEFF/, ''));
  } catch (error) {
    return refuse(`not valid JSON (${(error as Error).message})`);
  }
  if (depthOf(body, REALM_FILE_MAX_DEPTH) > REALM_FILE_MAX_DEPTH) return refuse(`JSON nested deeper than ${REALM_FILE_MAX_DEPTH} levels`);
  body = substitute(body, BASE_URL_PLACEHOLDER, importBaseUrl(ctx.config));
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;
  let parsed;
  try {
    parsed = parseRealmImport(body, isListener, (field) => result.notImported.push(field));
  } catch (error) {
    return refuse((error as Error).message);
  }
  result.notImported = parsed.notImported;
  result.keptAsData = parsed.keptAsData;
  result.realm = parsed.settings.realm as string;
  if (await ctx.storage.realms.byName(result.realm)) return Object.assign(result, { outcome: 'exists' as const });
  try {
    await createRealmFromImport(ctx, parsed);
  } catch (error) {
    // A file's own problem (a 4xx of the admin API) is reported with it; anything else is the server's and stops it.
    if (!isFileProblem(error)) throw error;
    return refuse((error as Error).message);
  }
  for (const client of parsed.clients) warnOpenRedirect(ctx.logger, result.realm, client, `--import-realm ${path}`);
  return Object.assign(result, { outcome: 'imported' as const });
}

/**
 * Imports every *.json realm file of `directory` (`--import-realm`), each on its own: a file that cannot be
 * imported is refused with its name and the JSON path of the problem, and the others still are; realms that exist
 * are left as they are. With `strict` (`--import-realm-strict`) a refused file is an error that stops start-up.
 * `${realmgate.base-url}` in any string value is replaced first (see importBaseUrl).
 */
export async function importRealmDirectory(ctx: ServerContext, directory: string, strict = false): Promise<RealmFileResult[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    throw new Error(`realm import directory ${directory} cannot be read: ${(error as Error).message}`);
  }
  const results: RealmFileResult[] = [];
  const seen = new Map<string, string>();
  for (const file of entries.filter((f) => f.endsWith('.json')).sort()) {
    const result = await importRealmFile(ctx, join(directory, file));
    const earlier = result.realm !== null ? seen.get(result.realm) : undefined;
    if (earlier && result.outcome === 'exists') {
      Object.assign(result, { outcome: 'refused', error: `realm "${result.realm}" is also defined by ${earlier}` });
    } else if (result.realm !== null && result.outcome !== 'refused') {
      seen.set(result.realm, result.file);
    }
    results.push(result);
    const { file: path, realm, outcome, error } = result;
    logImportReport(ctx, realm, result, path);
    if (outcome === 'imported') ctx.logger.info({ realm, file: path }, 'realm imported');
    else if (outcome === 'exists') ctx.logger.info({ realm, file: path }, 'realm exists, import skipped');
    else {
      if (strict) throw new Error(`realm import ${path}: ${error}`);
      ctx.logger.error({ file: path, error }, 'realm import: file refused, the others are imported');
    }
  }
  return results;
}
