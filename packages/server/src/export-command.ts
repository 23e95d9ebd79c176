import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from './config/index.js';
import { createServer } from './server.js';
import { realmExporter } from './services/realm-export.js';

/** Users read and written per step, so a realm of a million users is never held in memory at once. */
const USER_PAGE = 1000;

/**
 * `realmgate export --realm R --file F` (or `--dir D`, every realm or the one named, one `<realm>-realm.json`
 * each), as Keycloak's `kc.sh export`: the whole realm with its clients' secrets, roles, flows and users with
 * their password hashes, in Keycloak's format, so that `--import-realm` (here or in Keycloak) restores it. The
 * other options are the server's (`--db-url`, …). A file is written under a temporary name and renamed when
 * complete: an export that fails leaves no partial file. Progress goes to stderr.
 */
export async function runExport(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const own = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].split(/=(.*)/s, 2);
    if (name === '--realm' || name === '--file' || name === '--dir') {
      const value = inline ?? argv[++i];
      if (!value) throw new Error(`${name} needs a value`);
      own.set(name, value);
    } else rest.push(argv[i]);
  }
  const file = own.get('--file');
  const dir = own.get('--dir');
  const realmName = own.get('--realm');
  if ((file === undefined) === (dir === undefined)) throw new Error('export needs exactly one of --file F or --dir D');
  if (file !== undefined && realmName === undefined) throw new Error('export --file needs --realm R');

  const server = await createServer(loadConfig({ argv: rest, env }));
  try {
    const { storage, flows, keys } = server.context;
    const realms = realmName !== undefined ? [await storage.realms.byName(realmName)] : await storage.realms.list();
    if (realms.some((r) => r === null)) throw new Error(`realm "${realmName}" does not exist`);
    for (const realm of realms) {
      if (!realm) continue;
      const target = file ?? join(dir!, `${realm.name}-realm.json`);
      const partial = `${target}.partial`;
      const out = await open(partial, 'w');
      try {
        const exporter = await realmExporter({ storage, flows, keys }, realm);
        const document = JSON.stringify(await exporter.document({ clients: true, groupsAndRoles: true, secrets: true, organizations: true }), null, 2);
        await out.write(`${document.slice(0, document.lastIndexOf('}')).trimEnd()},\n  "users" : [`);
        let after: string | null = null;
        let written = 0;
        do {
          const page: Awaited<ReturnType<typeof exporter.users>> = await exporter.users(after, USER_PAGE);
          if (page.users.length) await out.write(`${written ? ',' : ''}\n${page.users.map((u) => `    ${JSON.stringify(u)}`).join(',\n')}`);
          written += page.users.length;
          after = page.last;
          process.stderr.write(`realmgate export: ${realm.name}: ${written} users\n`);
        } while (after !== null);
        await out.write('\n  ]\n}\n');
        await out.close();
        await rename(partial, target);
      } catch (error) {
        await out.close().catch(() => undefined);
        await rm(partial, { force: true });
        throw error;
      }
      process.stderr.write(`realmgate export: ${realm.name} written to ${target}\n`);
    }
  } finally {
    await server.close();
  }
}
