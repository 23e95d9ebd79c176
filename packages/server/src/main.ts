import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from './config/index.js';
import type { DemoLinks } from './dev/index.js';
import { runExport } from './export-command.js';
import { createServer } from './server.js';

/** Imported in development mode when no --import-realm is given, so a fresh clone shows the extensions at work. */
const demoRealmDirectory = fileURLToPath(new URL('../../../demo/', import.meta.url));

function demoText(links: DemoLinks): string {
  return (
    `  Try the demo realm:\n` +
    `    1. Register with a disposable address (e.g. someone@mailinator.com): refused as you leave the e-mail field\n` +
    `       ${links.register}\n` +
    `    2. Register with a normal address: the webhook delivery appears at ${links.webhookInbox}\n` +
    `       ${links.register}\n` +
    `    3. Log in: proof of work solves in the background while you type\n` +
    `       ${links.login}\n\n`
  );
}

async function main(): Promise<void> {
  if (process.argv[2] === 'export') {
    try {
      await runExport(process.argv.slice(3), process.env);
    } catch (error) {
      console.error(`realmgate export: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    }
    process.exit(0);
  }
  let config;
  try {
    config = loadConfig({ argv: process.argv.slice(2), env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`realmgate: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  if (config.mode === 'development' && config.importRealm === null) config.importRealm = demoRealmDirectory;
  const server = await createServer(config);
  const { logger } = server.context;
  const url = await server.listen();
  const shown = url.replace('0.0.0.0', 'localhost').replace('[::]', 'localhost');
  logger.info({ url: shown, mode: config.mode, adminConsole: `${config.hostname ?? shown}/admin/master/console/` }, 'Realmgate is running');
  if (config.mode === 'production') {
    // Production's stdout is JSON lines only.
    if (server.bootstrapAdmin) logger.info({ username: server.bootstrapAdmin.username }, 'bootstrap administrator created in the master realm');
  } else {
    let banner = `\n  Realmgate ${server.context.version} is running at ${shown}\n  Admin console: ${config.hostname ?? shown}/admin/master/console/\n\n`;
    if (server.bootstrapAdmin?.generatedPassword) {
      const { username, generatedPassword } = server.bootstrapAdmin;
      // Printed once, on the console only: it is not in any log line or file.
      banner +=
        `  Admin (master realm), password shown once:\n    username: ${username}\n    password: ${generatedPassword}\n` +
        `  Token: curl -d grant_type=password -d client_id=admin-cli -d username=${username} -d 'password=…' ${shown}/realms/master/protocol/openid-connect/token\n\n`;
    } else {
      banner += `  Admin (master realm): ${config.bootstrapAdminUsername}, password ${server.bootstrapAdmin ? 'from REALMGATE_BOOTSTRAP_ADMIN_PASSWORD' : 'as printed at the first start'}\n\n`;
    }
    const links = await server.dev?.demoLinks(config.hostname ?? shown);
    if (links) banner += demoText(links);
    process.stdout.write(banner);
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ graceMs: config.shutdownGraceMs }, 'shutdown took longer than the grace period; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5000);
    timer.unref();
    try {
      await server.close();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  console.error(`realmgate: failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
