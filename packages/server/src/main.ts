import { ConfigError, loadConfig } from './config/index.js';
import { createServer } from './server.js';

async function main(): Promise<void> {
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
  const server = await createServer(config);
  const { logger } = server.context;
  const url = await server.listen();
  const shown = url.replace('0.0.0.0', 'localhost').replace('[::]', 'localhost');
  logger.info({ url: shown, mode: config.mode }, 'Realmgate is running');
  if (server.bootstrapAdmin) {
    const { username, generatedPassword } = server.bootstrapAdmin;
    if (generatedPassword) {
      // Printed once, on the console only: it is not in any log line or file.
      process.stdout.write(
        `\n  Admin console credentials (master realm), shown once:\n    username: ${username}\n    password: ${generatedPassword}\n` +
          `  Token: curl -d grant_type=password -d client_id=admin-cli -d username=${username} -d 'password=…' ${shown}/realms/master/protocol/openid-connect/token\n\n`,
      );
    } else {
      logger.info({ username }, 'bootstrap administrator created in the master realm');
    }
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
