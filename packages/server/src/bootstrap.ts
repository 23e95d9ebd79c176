import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerConfig } from './config/index.js';
import type { ServerContext } from './context.js';
import { newSecret } from './credentials/index.js';
import { createUser, provisionRealm, setPassword, upgradeAccountRoles, upgradeAdminModel } from './services/index.js';
import { createRealmFromImport, parseRealmImport } from './services/realm-import/index.js';
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
    await setPassword(ctx.storage, master, admin, password!, trx);
    const adminRole = await trx.selectFrom('role').select('id').where('container_id', '=', master.id).where('name', '=', 'admin').executeTakeFirstOrThrow();
    await ctx.storage.roles.grant(admin.id, [adminRole.id], trx);
  });
  return { username, generatedPassword: generated };
}

/** A database from before the master admin model or the account roles (see upgradeAdminModel, upgradeAccountRoles); another process may be doing the same. */
async function upgradeExistingRealmsOnce(ctx: ServerContext): Promise<void> {
  try {
    const upgraded = await ctx.storage.transaction((trx) => upgradeAdminModel(ctx.storage, trx));
    if (upgraded.length) ctx.logger.info({ realms: upgraded }, 'master realm: administration clients added for existing realms');
    const withAccountRoles = await ctx.storage.transaction((trx) => upgradeAccountRoles(ctx.storage, trx));
    if (withAccountRoles.length) ctx.logger.info({ realms: withAccountRoles }, 'account client: roles added for existing realms');
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

/**
 * Imports every *.json realm file of `directory`; realms that exist are left as they are. `${realmgate.base-url}`
 * in any string value is replaced first (see importBaseUrl).
 */
export async function importRealmDirectory(ctx: ServerContext, directory: string): Promise<string[]> {
  const imported: string[] = [];
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    throw new Error(`realm import directory ${directory} cannot be read: ${(error as Error).message}`);
  }
  const files = entries.filter((f) => f.endsWith('.json')).sort();
  const isListener = (id: string) => ctx.providers.get('event-listener', id) !== undefined;
  for (const file of files) {
    const path = join(directory, file);
    let body: unknown;
    try {
      body = substitute(JSON.parse(await readFile(path, 'utf8')), BASE_URL_PLACEHOLDER, importBaseUrl(ctx.config));
    } catch (error) {
      throw new Error(`realm import ${path}: not valid JSON (${(error as Error).message})`);
    }
    let parsed;
    try {
      parsed = parseRealmImport(body, isListener, (field) => ctx.logger.warn({ file: path, field }, 'realm import: field not supported, ignored'));
    } catch (error) {
      throw new Error(`realm import ${path}: ${(error as Error).message}`);
    }
    const name = parsed.settings.realm as string;
    if (await ctx.storage.realms.byName(name)) {
      ctx.logger.info({ realm: name, file: path }, 'realm exists, import skipped');
      continue;
    }
    try {
      await createRealmFromImport(ctx, parsed);
    } catch (error) {
      throw new Error(`realm import ${path}: ${(error as Error).message}`);
    }
    ctx.logger.info({ realm: name, file: path }, 'realm imported');
    imported.push(name);
  }
  return imported;
}
