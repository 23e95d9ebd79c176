import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { brokerEndpointOverrides, checkHostname, checkTestOnlyOptions, type ServerConfig } from './config/index.js';
import type { ServerContext } from './context.js';
import { accountApi } from './account-api/index.js';
import { adminApi, adminConsoleRoutes } from './admin/index.js';
import { ensureMasterRealm, importRealmDirectory } from './bootstrap.js';
import { devRoutes, type DevTools } from './dev/index.js';
import { EventBus } from './events/index.js';
import { Flows } from './flows/index.js';
import { clientCertificateLookup, createHttpApp, installSslRequired, TargetGuard } from './http/index.js';
import { RealmKeys, type RsaKeyPairSource } from './keys/index.js';
import { ClientKeys } from './keys/client-keys.js';
import { secretsEqual } from './credentials/index.js';
import { createLogger, listenForMetrics, MetricsRegistry, operationsRoutes, spiLogger, type MetricsAccess, type ServerLogger } from './observability/index.js';
import { BackchannelLogout, openIdConnectLoginProtocol, openIdConnectRoutes, TokenService } from './protocol/openid-connect/index.js';
import { builtinProviders, loadProviderPackages, mountRealmResources, providerContext, ProviderRegistry } from './providers/index.js';
import { Storage } from './storage/index.js';
import { createSharedStore, namespacedStore, type HostStore, type OwnedSharedStore } from './store/index.js';
import { Mailer } from './mail/index.js';

import { ActionTokens, AuthSessions } from './authentication/index.js';
import { firstPage, PageRenderer, pageForms, pageRoutes, Themes } from './pages/index.js';

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface RealmgateServer {
  app: FastifyInstance;
  context: ServerContext;
  /** Set on first start when the admin password was generated. */
  bootstrapAdmin: { username: string; generatedPassword: string | null } | null;
  /** Development mode only: the demo's links. */
  dev: DevTools | null;
  listen(): Promise<string>;
  /** Where /metrics is served once listening, when it has a port of its own (metricsPort); else null. */
  metricsUrl: string | null;
  close(): Promise<void>;
}

/** The metricsPort and metricsToken options as the metrics routes take them. */
function metricsAccessOf(config: ServerConfig): MetricsAccess {
  const token = config.metricsToken;
  return {
    onMainPort: config.metricsPort === null,
    authorized: (authorization) => token === null || (authorization !== undefined && /^bearer /i.test(authorization) && secretsEqual(authorization.slice(7).trim(), token)),
  };
}

export interface ServerOptions {
  logger?: ServerLogger;
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Tests only: the clock of the in-memory shared store (monotonic ms; no effect with Redis), so a test moves rate
   * windows and TTLs on instead of sleeping through them.
   */
  sharedStoreClock?: () => number;
  /**
   * Tests only: where realms' RSA signing keys come from instead of being generated (a 2048-bit key costs 0.2-1 s of
   * CPU, and a test suite creates thousands of realms). Code only, never configuration: no deployment can set it.
   */
  rsaKeyPairs?: RsaKeyPairSource;
}

/**
 * A keep-alive connection whose request was in flight when close() began stays open once the response is sent,
 * and close() would wait for the client to hang up (until the grace period cuts it). Responses sent while closing
 * tell the client to close the connection instead.
 */
function closeKeepAliveOnShutdown(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close');
    return payload;
  });
}

/**
 * The configuration cache's invalidations reach the other processes through the shared store's pub/sub; its
 * tallies are metrics. With Redis, until the subscription is made the cache serves nothing from memory (every
 * read goes to the database), so a process never trusts entries another process may have changed unheard.
 */
function shareConfigCache(storage: Storage, store: HostStore, metrics: MetricsRegistry, logger: ServerLogger, shared: boolean): void {
  const cache = storage.cache;
  metrics.readAtScrape('realmgate_config_cache_hits_total', 'Configuration cache reads answered from memory', 'counter', () => cache.snapshot().hits);
  metrics.readAtScrape('realmgate_config_cache_misses_total', 'Configuration cache reads that went to the database', 'counter', () => cache.snapshot().misses);
  metrics.readAtScrape('realmgate_config_cache_hit_ratio', 'Configuration cache hits / reads since start', 'gauge', () => cache.hitRatio());
  metrics.readAtScrape('realmgate_config_cache_entries', 'Configuration cache entries held', 'gauge', () => cache.snapshot().entries);
  metrics.readAtScrape('realmgate_db_queries_total', 'Statements sent to the database (transaction control excluded)', 'counter', () => storage.queryCount + storage.backgroundQueryCount);
  if (storage.statements) {
    const statements = storage.statements;
    metrics.readAtScrape('realmgate_sqlite_statements_prepared_total', 'SQLite statements prepared (reuses are not counted)', 'counter', () => statements.prepared);
  }
  // One process (memory store): nothing else writes the database, so there is nobody to tell.
  if (!shared) return;
  cache.bypass = true;
  const subscribe = (): void => {
    if (cache.closed) return;
    cache
      .connect(store, (error) => logger.warn({ err: error }, 'configuration cache: invalidation not published; other processes see the change within the cache lifetime'))
      .then(() => {
        cache.bypass = false;
      })
      .catch((error: unknown) => {
        if (!warned) logger.warn({ error: (error as Error).message }, 'configuration cache: no subscription to invalidations yet; reading configuration from the database');
        warned = true;
        // Soon: until subscribed every configuration read goes to the database.
        const retry = setTimeout(subscribe, 250);
        retry.unref();
      });
  };
  let warned = false;
  subscribe();
}

/** Whether the database and the shared store are up, and what an outage of the shared store cost: at /metrics. */
function dependencyMetrics(metrics: MetricsRegistry, storage: Storage, store: OwnedSharedStore): void {
  metrics.readAtScrape('realmgate_database_up', '1 while the database answers, 0 during an outage (as the last statement found it)', 'gauge', () => (storage.state.up ? 1 : 0));
  metrics.readAtScrape('realmgate_database_outages_total', 'Database outages (lost, refused or timed-out connections) since start', 'counter', () => storage.state.outages);
  metrics.readAtScrape('realmgate_database_connections_lost_total', 'Pooled database connections found broken (a restart, pg_terminate_backend); the pool connects anew', 'counter', () => storage.state.connectionsLost);
  metrics.readAtScrape('realmgate_database_timeouts_total', 'Statements ended by the statement timeout, and waits for a pooled connection ended by the acquisition timeout (a lock, a slow query); each answered 503', 'counter', () => storage.state.timeouts);
  metrics.readAtScrape('realmgate_shared_store_up', '1 while the shared store (Redis) answers, 0 during an outage: counters are per node, single-use claims answer 503', 'gauge', () => (store.state?.up ?? true ? 1 : 0));
  metrics.readAtScrape('realmgate_shared_store_outages_total', 'Shared store outages since start', 'counter', () => store.state?.outages ?? 0);
  metrics.readAtScrape('realmgate_shared_store_counter_fallbacks_total', 'Counter operations (rate limits, brute force per address) counted in this node\'s memory because the shared store was down', 'counter', () => store.counterFallbacks ?? 0);
}

/** The composition root: builds every service once, loads providers, mounts routes. Nothing listens yet. */
export async function createServer(config: ServerConfig, options: ServerOptions = {}): Promise<RealmgateServer> {
  // loadConfig checks these too; a configuration built in code must not skip them.
  checkHostname(config);
  checkTestOnlyOptions(config);
  brokerEndpointOverrides(config);
  const logger = options.logger ?? createLogger({ mode: config.mode as 'development' | 'production', level: config.logLevel });
  const env = options.env ?? process.env;
  // Themes are read (templates compiled) before anything else starts: a theme that would give broken pages stops the start.
  const themes = Themes.load(config.themeDir, (message) => logger.warn({ themeDir: config.themeDir }, `theme directory: ${message}`));
  const metrics = new MetricsRegistry();
  const storage = await Storage.open(config.dbUrl, {
    logger: spiLogger(logger, { component: 'database' }),
    acquireTimeoutMs: config.dbAcquireTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
  });
  const store = createSharedStore({
    redisUrl: config.redisUrl ?? undefined,
    logger: spiLogger(logger, { component: 'shared-store' }),
    now: options.sharedStoreClock,
  });
  dependencyMetrics(metrics, storage, store);
  const keys = new RealmKeys(storage, options.rsaKeyPairs);
  const tokens = new TokenService(storage, keys);
  const events = new EventBus(storage, logger, metrics);
  const providers = new ProviderRegistry();
  // Built now for the context; it reads the registry lazily and does its start-up work after providers.init.
  const flows = new Flows(storage, providers, logger);
  const hostStore = namespacedStore(store, 'host');
  shareConfigCache(storage, hostStore, metrics, logger, Boolean(config.redisUrl));
  const pages = new PageRenderer(
    themes,
    (realmId) => storage.localization.cachedAll(realmId),
    config.hostname,
    (level, fields, message) => logger[level](fields, message),
    async (realmId, clientId) => (await storage.clients.cachedByClientId(realmId, clientId))?.attributes,
  );
  // The one guard on the server's own outbound HTTP (identity providers, clients' JWKS URLs; webhooks get theirs
  // from the same code through the SPI).
  const outbound = new TargetGuard({ mode: config.mode === 'production' ? 'production' : 'development', allow: config.outboundAllow, label: 'outboundAllow' });
  const context: ServerContext = {
    config,
    logger,
    metrics,
    storage,
    keys,
    clientKeys: new ClientKeys({ guard: outbound }),
    tokens,
    events,
    store,
    providers,
    flows,
    version,
    hostStore,
    authSessions: new AuthSessions(keys, config.hostname),
    actionTokens: new ActionTokens(keys, hostStore),
    pages,
    forms: pageForms({ pages, flows, storage, hostStore, config, events }, (request, reply, realm, auth) => firstPage(context, request, reply, realm, auth)),
    loginProtocol: openIdConnectLoginProtocol(config, () => context),
    mailer: new Mailer(logger, config.mode),
    mailFailures: metrics.counter('realmgate_mail_failures_total', 'E-mails that could not be sent', ['realm']),
    outbound,
    logoutNotifications: new BackchannelLogout({ storage, tokens, outbound, logger }),
  };
  const closeProviders = () =>
    providers.close(config.shutdownGraceMs, (id, error) => logger.error({ err: error, provider: id }, 'provider failed to close'));
  let app: FastifyInstance | undefined;
  let bootstrapAdmin: RealmgateServer['bootstrapAdmin'];
  let dev: DevTools | null = null;
  try {
    providers.add({ name: '@realmgate/server', version, factories: builtinProviders() }, true);
    for (const pkg of await loadProviderPackages(config.providersDir)) {
      providers.add(pkg, false);
      logger.info({ package: pkg.name, version: pkg.version, providers: pkg.factories.map((f) => f.id) }, 'provider package loaded');
    }
    await providers.init((factory) => providerContext(context, factory, env));
    for (const [id, listener] of providers.eventListeners) events.register(id, listener);
    await flows.start();

    bootstrapAdmin = await ensureMasterRealm(context);
    if (config.importRealm) await importRealmDirectory(context, config.importRealm, config.importRealmStrict);

    app = await createHttpApp({ logger, trustedProxies: config.proxyTrustedAddresses, requestTimeoutMs: config.requestTimeoutMs });
    // The client-certificate lookup (mutual TLS behind a proxy): a trusted-proxy entry it cannot read stops the start.
    clientCertificateLookup(config);
    closeKeepAliveOnShutdown(app);
    installSslRequired(app, { hostname: config.hostname, sslRequired: async (name) => (await storage.realms.cachedByName(name))?.sslRequired ?? null });
    operationsRoutes(app, metrics, {
      database: () => storage.db.selectFrom('realm').select('id').limit(1).execute(),
      ...(config.redisUrl ? { sharedStore: () => store.ping() } : {}),
    }, metricsAccessOf(config));
    if (config.mode === 'production' && config.metricsPort === null && config.metricsToken === null) {
      logger.warn('/metrics is served to anyone on the main port: set metricsPort (a private port) or metricsToken (a bearer token)');
    }
    openIdConnectRoutes(app, context);
    pageRoutes(app, context);
    accountApi(app, context);
    await adminApi(app, context);
    adminConsoleRoutes(app, context);
    mountRealmResources(app, context, providers.realmResources);
    if (config.mode === 'development') dev = devRoutes(app, context);
    await app.ready();
  } catch (error) {
    // A failed start must not leave providers' timers, Redis or the database open: a caller that retries
    // (a test, a supervisor) would otherwise pile them up, and the process would not exit on its own.
    await app?.close().catch(() => {});
    await closeProviders();
    await storage.cache.disconnect().catch(() => {});
    await store.close().catch(() => {});
    await storage.close().catch(() => {});
    throw error;
  }
  const http = app;

  let closed = false;
  let metricsListener: { url: string; close(): Promise<void> } | null = null;
  const server: RealmgateServer = {
    app: http,
    context,
    bootstrapAdmin,
    dev,
    metricsUrl: null,
    async listen() {
      const url = await http.listen({ host: config.httpHost, port: config.httpPort });
      context.logoutNotifications.start();
      if (config.metricsPort !== null) {
        metricsListener = await listenForMetrics(metrics, metricsAccessOf(config), config.metricsHost, config.metricsPort);
        server.metricsUrl = metricsListener.url;
      }
      return url;
    },
    /**
     * Stops accepting, lets requests in flight finish (for at most the grace period: a client that stops reading a
     * response must not hold the close for ever), then closes providers (bounded), the store and the database.
     */
    async close() {
      if (closed) return;
      closed = true;
      await metricsListener?.close();
      const cutOff = setTimeout(() => http.server.closeAllConnections(), config.shutdownGraceMs);
      cutOff.unref();
      await http.close().finally(() => clearTimeout(cutOff));
      await context.logoutNotifications.close(config.shutdownGraceMs);
      await closeProviders();
      await storage.cache.disconnect().catch(() => {});
      await store.close().catch((error) => logger.warn({ err: error }, 'shared store failed to close'));
      await storage.close();
    },
  };
  return server;
}
