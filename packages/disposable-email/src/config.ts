import { DEFAULT_SOURCE_TIMEOUT_MS, checkSource, normalizeListEntry } from './blocklist.js';

export const ENV_ALLOWLIST = 'REALMGATE_DISPOSABLE_EMAIL_ALLOWLIST';
export const ENV_EXTRA_SOURCES = 'REALMGATE_DISPOSABLE_EMAIL_EXTRA_SOURCES';
export const ENV_SOURCE_TIMEOUT_MS = 'REALMGATE_DISPOSABLE_EMAIL_SOURCE_TIMEOUT_MS';

export interface DisposableEmailSettings {
  allowlist: string[];
  extraSources: string[];
  sourceTimeoutMs: number;
}

export const SETTING_KEYS = ['allowlist', 'extraSources', 'sourceTimeoutMs'] as const;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

interface Value {
  /** How the error message names where the value came from. */
  where: string;
  value: unknown;
}

/**
 * Settings from the provider's config section and the environment (the environment wins, as everywhere in
 * the server), validated. Throws a ConfigError naming the key and value. `section` names the config
 * section in messages, e.g. `providers.ext-disposable-email-resource-provider`.
 */
export function parseSettings(
  config: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
  section: string,
): DisposableEmailSettings {
  const pick = (key: (typeof SETTING_KEYS)[number], envName: string): Value | undefined => {
    const fromEnv = env[envName];
    if (fromEnv !== undefined && fromEnv.trim() !== '') return { where: envName, value: fromEnv };
    if (config[key] !== undefined) return { where: `${section}.${key}`, value: config[key] };
    return undefined;
  };

  const allowlistValue = pick('allowlist', ENV_ALLOWLIST);
  const sourcesValue = pick('extraSources', ENV_EXTRA_SOURCES);
  const timeoutValue = pick('sourceTimeoutMs', ENV_SOURCE_TIMEOUT_MS);
  return {
    allowlist: allowlistValue ? list(allowlistValue).map((entry, i) => domain(allowlistValue, entry, i)) : [],
    extraSources: sourcesValue ? list(sourcesValue).map((entry, i) => source(sourcesValue, entry, i)) : [],
    sourceTimeoutMs: timeoutValue ? positiveInteger(timeoutValue) : DEFAULT_SOURCE_TIMEOUT_MS,
  };
}

/** Keys of a config section this package does not know (likely typos). */
export function unknownKeys(config: Record<string, unknown>): string[] {
  return Object.keys(config).filter((key) => !(SETTING_KEYS as readonly string[]).includes(key));
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
}

/** A JSON array of strings, or a comma-separated string (the form environment variables take). */
function list({ where, value }: Value): string[] {
  if (typeof value === 'string') {
    return value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  }
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
    return value.map((item: string) => item.trim());
  }
  throw new ConfigError(`Invalid ${where}: ${show(value)} is neither a list of strings nor a comma-separated string`);
}

function domain({ where }: Value, entry: string, index: number): string {
  if (normalizeListEntry(entry) === null) {
    throw new ConfigError(`Invalid ${where}[${index}]: ${show(entry)} is not a domain name (e.g. example.com)`);
  }
  return entry;
}

function source({ where }: Value, entry: string, index: number): string {
  try {
    checkSource(entry);
  } catch (error) {
    throw new ConfigError(`Invalid ${where}[${index}]: ${(error as Error).message}`);
  }
  return entry;
}

function positiveInteger({ where, value }: Value): number {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number <= 0) {
    throw new ConfigError(`Invalid ${where}: ${show(value)} is not a positive integer (milliseconds)`);
  }
  return number;
}
