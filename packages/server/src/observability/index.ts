export { createLogger, providerLogger, type ServerLogger } from './logger.js';
export { MetricsRegistry } from './metrics.js';
