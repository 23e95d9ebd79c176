/**
 * `npm run docs:permissions`: writes docs/admin-permissions.md from the admin routes the server registers and
 * the table in packages/server/src/admin/route-permissions.ts (a test compares the committed file with this).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { permissionTable } from '../packages/server/src/admin/index.js';
import { createServer, loadConfig } from '../packages/server/src/index.js';
import { adminRoutes } from '../packages/server/test/support/admin-routes.js';

export const permissionsPath = fileURLToPath(new URL('../docs/admin-permissions.md', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-permissions-'));
  const config = loadConfig({
    env: {
      REALMGATE_DB_URL: 'sqlite::memory:',
      REALMGATE_PROVIDERS_DIR: join(dir, 'providers'),
      REALMGATE_BOOTSTRAP_ADMIN_PASSWORD: 'not-used-outside-this-script',
    },
  });
  const server = await createServer(config, { logger: pino({ level: 'silent' }), env: {} });
  await server.app.ready();
  writeFileSync(permissionsPath, permissionTable(adminRoutes(server.app)));
  await server.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(`wrote ${permissionsPath}`);
}
