export { loadConfig, ConfigError, options as configOptions, type ServerConfig } from './config/index.js';
export { createServer, type RealmgateServer, type ServerOptions } from './server.js';
