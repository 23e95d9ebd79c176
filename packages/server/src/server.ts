import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { ServerConfig } from './config/index.js';
import type { ServerContext } from './context.js';
import { adminApi } from './admin/index.js';
import { ensureMasterRealm, importRealmDirectory } from './bootstrap.js';
import { EventBus } from './events/index.js';
import { createHttpApp } from './http/index.js';
import { RealmKeys } from './keys/index.js';
import { createLogger, MetricsRegistry, type ServerLogger } from './observability/index.js';
import { openIdConnectRoutes, TokenService } from './protocol/openid-connect/index.js';
import { builtinProviders, loadProviderPackages, mountRealmResources, providerContext, ProviderRegistry } from './providers/index.js';
import { Storage } from './storage/index.js';
import { createSharedStore } from './store/index.js';

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface RealmgateServer {
  app: FastifyInstance;
  context: ServerContext;
  /** Set on first start when the admin password was generated. */
  bootstrapAdmin: { username: string; generatedPassword: string | null } | null;
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface ServerOptions {
  logger?: ServerLogger;
  env?: Readonly<Record<string, string | undefined>>;
}

/** The composition root: builds every service once, loads providers, mounts routes. Nothing listens yet. */
export async function createServer(config: ServerConfig, options: ServerOptions = {}): Promise<RealmgateServer> {
  const logger = options.logger ?? createLogger({ mode: config.mode as 'development' | 'production', level: config.logLevel });
  const env = options.env ?? process.env;
  const metrics = new MetricsRegistry();
  const storage = await Storage.open(config.dbUrl);
  const store = createSharedStore({ redisUrl: config.redisUrl ?? undefined, logger: { debug: (m, f) => logger.debug(f ?? {}, m), info: (m, f) => logger.info(f ?? {}, m), warn: (m, f) => logger.warn(f ?? {}, m), error: (m, f) => logger.error(f ?? {}, m) } });
  const keys = new RealmKeys(storage);
  const tokens = new TokenService(storage, keys);
  const events = new EventBus(storage, logger, metrics);
  const providers = new ProviderRegistry();
  const context: ServerContext = { config, logger, metrics, storage, keys, tokens, events, store, providers, version };
  try {
    providers.add({ name: '@realmgate/server', version, factories: builtinProviders() }, true);
    for (const pkg of await loadProviderPackages(config.providersDir)) {
      providers.add(pkg, false);
      logger.info({ package: pkg.name, version: pkg.version, providers: pkg.factories.map((f) => f.id) }, 'provider package loaded');
    }
    await providers.init((factory) => providerContext(context, factory, env));
    for (const [id, listener] of providers.eventListeners) events.register(id, listener);
  } catch (error) {
    await store.close().catch(() => {});
    await storage.close();
    throw error;
  }

  const bootstrapAdmin = await ensureMasterRealm(context);
  if (config.importRealm) await importRealmDirectory(context, config.importRealm);

  const app = await createHttpApp({ logger, trustedProxies: config.proxyTrustedAddresses });
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/health/live', async () => ({ status: 'UP' }));
  app.get('/health/ready', async (_request, reply) => {
    try {
      await storage.db.selectFrom('realm').select('id').limit(1).execute();
      return { status: 'UP', checks: [{ name: 'database', status: 'UP' }] };
    } catch {
      return reply.code(503).send({ status: 'DOWN', checks: [{ name: 'database', status: 'DOWN' }] });
    }
  });
  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
  openIdConnectRoutes(app, context);
  await adminApi(app, context);
  mountRealmResources(app, context, providers.realmResources);

  let closed = false;
  return {
    app,
    context,
    bootstrapAdmin,
    async listen() {
      return app.listen({ host: config.httpHost, port: config.httpPort });
    },
    /** Stops accepting, lets requests in flight finish, then closes providers (bounded), the store and the database. */
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await providers.close((id, error) => logger.error({ err: error, provider: id }, 'provider failed to close'));
      await store.close().catch((error) => logger.warn({ err: error }, 'shared store failed to close'));
      await storage.close();
    },
  };
}
