import { readFileSync } from 'node:fs';
import { options, type OptionSpec, type ServerConfig } from './schema.js';

export { options, type OptionSpec, type ServerConfig } from './schema.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface ConfigSources {
  argv?: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
}

/** Flag > environment variable > config file > default; every value validated, errors name key and source. */
export function loadConfig({ argv = [], env = {} }: ConfigSources = {}): ServerConfig {
  const flags = parseFlags(argv);
  const configFile = flags.get('--config') ?? env.REALMGATE_CONFIG_FILE ?? null;
  const file = configFile ? readConfigFile(configFile) : {};
  const known = new Set<string>(['providers', ...options.map((o) => o.key)]);
  for (const key of Object.keys(file)) {
    if (!known.has(key)) throw new ConfigError(`unknown key "${key}" in config file ${configFile}`);
  }
  const config: Record<string, unknown> = { configFile };
  for (const option of options as readonly OptionSpec[]) {
    const fromFlag = flags.get(option.flag);
    const fromEnv = env[option.env];
    if (fromFlag !== undefined) config[option.key] = parseValue(option, fromFlag, `flag ${option.flag}`);
    else if (fromEnv !== undefined && fromEnv !== '') config[option.key] = parseValue(option, fromEnv, `environment variable ${option.env}`);
    else if (option.key in file) config[option.key] = parseValue(option, file[option.key], `key "${option.key}" of config file ${configFile}`);
    else config[option.key] = option.default;
  }
  const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
  const providers = file.providers ?? {};
  if (!isObject(providers)) throw new ConfigError(`config file key "providers" must be an object of provider id → settings`);
  for (const [id, section] of Object.entries(providers as object)) {
    // A provider reads its section as an object; anything else would reach it as {} and be silently lost.
    if (!isObject(section)) throw new ConfigError(`config file key "providers.${id}" must be an object of settings, got ${JSON.stringify(section)}`);
  }
  config.providers = providers;
  checkHostname(config as ServerConfig);
  checkTestOnlyOptions(config as ServerConfig);
  brokerEndpointOverrides(config as ServerConfig);
  const flagNames = new Set<string>(['--config', ...options.map((o) => o.flag)]);
  for (const name of flags.keys()) {
    if (!flagNames.has(name)) throw new ConfigError(`unknown option ${name}; known: ${[...flagNames].join(', ')}`);
  }
  return config as ServerConfig;
}

/**
 * Keycloak 26's rule: production needs the public URL, so that e-mailed links, issuers and discovery cannot be
 * set by a request's Host or X-Forwarded-* headers; `hostname-strict=false` is the explicit way out.
 */
export function checkHostname(config: Pick<ServerConfig, 'mode' | 'hostname' | 'hostnameStrict'>): void {
  if (config.hostname !== null) {
    const url = new URL(config.hostname);
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash || url.username || url.password) {
      throw new ConfigError(`hostname must be an http:// or https:// URL without credentials, query or fragment (such as https://auth.example.com), got ${JSON.stringify(config.hostname)}`);
    }
    return;
  }
  if (config.mode === 'production' && config.hostnameStrict) {
    throw new ConfigError(
      'hostname is not set: production mode needs the public URL of this server (--hostname https://auth.example.com or ' +
        'REALMGATE_HOSTNAME), so that links in e-mails and token issuers do not come from the Host header of a request. ' +
        'To take it from each request instead (only behind a proxy that sets Host and X-Forwarded-*), set hostname-strict ' +
        'to false (--hostname-strict false or REALMGATE_HOSTNAME_STRICT=false).',
    );
  }
}

/**
 * The `brokerEndpointOverrides` option as a map from a fixed endpoint's host (`github.com`, `host:port`) to the
 * origin that replaces it. Throws a ConfigError naming the first malformed pair; checked at start.
 */
export function brokerEndpointOverrides(config: Pick<ServerConfig, 'brokerEndpointOverrides'>): Map<string, string> {
  const overrides = new Map<string, string>();
  for (const pair of config.brokerEndpointOverrides) {
    const fail = (why: string) =>
      new ConfigError(`brokerEndpointOverrides: ${JSON.stringify(pair)} ${why}; each entry is host=origin, such as github.com=http://127.0.0.1:4010`);
    const at = pair.indexOf('=');
    if (at <= 0) throw fail('is not of the form host=origin');
    const host = pair.slice(0, at).trim().toLowerCase();
    const target = pair.slice(at + 1).trim();
    if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?$/.test(host)) throw fail('does not start with a host name (and an optional port)');
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      throw fail('does not name an origin URL');
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash || url.pathname !== '/') {
      throw fail('must name an http:// or https:// origin without path, query, fragment or credentials');
    }
    if (overrides.has(host)) throw fail(`names ${host} a second time`);
    overrides.set(host, url.origin);
  }
  return overrides;
}

/** Options that make a server cheaper to test and weaker to attack: production mode refuses them. */
export function checkTestOnlyOptions(config: Pick<ServerConfig, 'mode' | 'passwordHashingTestCost'>): void {
  if (config.mode === 'production' && config.passwordHashingTestCost) {
    throw new ConfigError(
      'passwordHashingTestCost is for test suites only: it hashes passwords with 8 KiB of memory, which makes a stolen ' +
        'database cheap to crack. Production mode refuses it; remove --password-hashing-test-cost / ' +
        'REALMGATE_PASSWORD_HASHING_TEST_COST (or use development mode for tests).',
    );
  }
}

function parseFlags(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument "${arg}"`);
    const eq = arg.indexOf('=');
    if (eq > 0) {
      flags.set(arg.slice(0, eq), arg.slice(eq + 1));
    } else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new ConfigError(`option ${arg} needs a value`);
      flags.set(arg, value);
      i++;
    }
  }
  return flags;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
}

function parseValue(option: OptionSpec, raw: unknown, source: string): unknown {
  const shown = option.secret ? '(hidden)' : JSON.stringify(raw);
  const fail = (expected: string) => new ConfigError(`${option.key}: ${source} must be ${expected}, got ${shown}`);
  switch (option.type) {
    case 'integer': {
      const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
      if (!Number.isInteger(n) || (option.min !== undefined && n < option.min) || (option.max !== undefined && n > option.max)) {
        throw fail(`an integer from ${option.min} to ${option.max}`);
      }
      return n;
    }
    case 'boolean':
      if (raw === true || raw === 'true') return true;
      if (raw === false || raw === 'false') return false;
      throw fail('true or false');
    case 'enum':
      if (typeof raw === 'string' && option.values!.includes(raw)) return raw;
      throw fail(`one of ${option.values!.join(', ')}`);
    case 'url': {
      if (typeof raw !== 'string') throw fail('a URL');
      try {
        const url = new URL(raw);
        return url.href.replace(/\/$/, '');
      } catch {
        throw fail('a URL');
      }
    }
    case 'list':
      if (Array.isArray(raw) && raw.every((v) => typeof v === 'string')) return raw;
      if (typeof raw === 'string') return raw.split(',').map((s) => s.trim()).filter(Boolean);
      throw fail('a comma-separated list');
    case 'string':
      if (typeof raw !== 'string' || raw.length === 0) throw fail('a non-empty string');
      if (option.pattern && !option.pattern.test(raw)) throw fail(option.patternHint ?? `of the form ${option.pattern}`);
      return raw;
  }
}
