export { operationsRoutes, type ReadinessChecks } from './health.js';
export { createLogger, requestLoggerFactory, spiLogger, type ServerLogger } from './logger.js';
export { MetricsRegistry } from './metrics.js';
export { listenForMetrics, type MetricsAccess } from './metrics-endpoint.js';
