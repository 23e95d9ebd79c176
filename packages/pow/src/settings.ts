import { availableParallelism } from 'node:os';

export type HashAlgorithm = 'argon2' | 'sha256';

/** The per-flow settings of SPEC 6, parsed. */
export interface PowSettings {
  hash_algorithm: HashAlgorithm;
  argon2_base_difficulty: number;
  argon2_max_difficulty: number;
  argon2_memory_kb: number;
  argon2_iterations: number;
  argon2_rate_threshold: number;
  sha256_base_difficulty: number;
  sha256_max_difficulty: number;
  min_solve_time_ms: number;
  challenge_ttl_seconds: number;
}

export type SettingKey = keyof PowSettings;

/** Process-wide options: set in the server config or the environment, never per flow. */
export interface PowServerOptions {
  /** HMAC key material; when absent a random key is shared through the store. */
  secret: string | null;
  verify_concurrency: number;
  verify_queue_limit: number;
}

type Rule =
  | { kind: 'enum'; values: readonly string[]; default: string; label: string; help: string }
  | { kind: 'int'; min: number; max: number; default: number; label: string; help: string };

export const SETTING_RULES: { readonly [K in SettingKey]: Rule } = {
  hash_algorithm: {
    kind: 'enum',
    values: ['argon2', 'sha256'],
    default: 'argon2',
    label: 'Hash algorithm',
    help: 'argon2 (Argon2id, memory-hard) or sha256 (fallback for very high-traffic sites).',
  },
  argon2_base_difficulty: {
    kind: 'int',
    min: 0,
    max: 16,
    default: 1,
    label: 'Argon2 base difficulty',
    help: 'Leading zero bits required at normal rate.',
  },
  argon2_max_difficulty: {
    kind: 'int',
    min: 0,
    max: 16,
    default: 4,
    label: 'Argon2 max difficulty',
    help: 'Ceiling of the difficulty under rate scaling.',
  },
  argon2_memory_kb: {
    kind: 'int',
    min: 8,
    max: 1_048_576,
    default: 16_384,
    label: 'Argon2 memory (KiB)',
    help: 'Argon2id memory per hash, in KiB.',
  },
  argon2_iterations: {
    kind: 'int',
    min: 1,
    max: 16,
    default: 1,
    label: 'Argon2 iterations',
    help: 'Argon2id time cost.',
  },
  argon2_rate_threshold: {
    kind: 'int',
    min: 1,
    max: 1_000_000,
    default: 10,
    label: 'Rate threshold',
    help: 'Attempts per 60 s from one client IP before the difficulty rises (both algorithms).',
  },
  sha256_base_difficulty: {
    kind: 'int',
    min: 0,
    max: 32,
    default: 16,
    label: 'SHA-256 base difficulty',
    help: 'Leading zero bits required at normal rate in SHA-256 mode.',
  },
  sha256_max_difficulty: {
    kind: 'int',
    min: 0,
    max: 32,
    default: 22,
    label: 'SHA-256 max difficulty',
    help: 'Ceiling of the difficulty under rate scaling in SHA-256 mode.',
  },
  min_solve_time_ms: {
    kind: 'int',
    min: 0,
    max: 600_000,
    default: 500,
    label: 'Minimum solve time (ms)',
    help: 'A solution submitted sooner after the challenge was issued is rejected.',
  },
  challenge_ttl_seconds: {
    kind: 'int',
    min: 10,
    max: 86_400,
    default: 600,
    label: 'Challenge lifetime (s)',
    help: 'A challenge older than this is rejected.',
  },
};

export const SETTING_KEYS = Object.keys(SETTING_RULES) as SettingKey[];

export const DEFAULT_SETTINGS: Readonly<PowSettings> = Object.freeze(
  Object.fromEntries(SETTING_KEYS.map((key) => [key, SETTING_RULES[key].default])) as unknown as PowSettings,
);

/** Environment variable of a key: `POW_` + the key upper-cased. */
export function envName(key: string): string {
  return `POW_${key.toUpperCase()}`;
}

function asStrings(settings: Readonly<PowSettings>): Readonly<Record<SettingKey, string>> {
  return Object.freeze(
    Object.fromEntries(SETTING_KEYS.map((key) => [key, String(settings[key])])) as Record<SettingKey, string>,
  );
}

/**
 * The documented profiles as complete per-flow config maps (strings, as Keycloak stores them), ready to
 * paste into an `authenticatorConfig` or to export as `POW_*` variables.
 */
export const PROFILES = Object.freeze({
  basic: asStrings(DEFAULT_SETTINGS),
  strict: asStrings({
    ...DEFAULT_SETTINGS,
    argon2_base_difficulty: 2,
    argon2_memory_kb: 32_768,
    argon2_iterations: 2,
    argon2_max_difficulty: 8,
    argon2_rate_threshold: 5,
  }),
  'high-traffic': asStrings({
    ...DEFAULT_SETTINGS,
    argon2_base_difficulty: 1,
    argon2_memory_kb: 8_192,
    argon2_iterations: 1,
    argon2_max_difficulty: 3,
    argon2_rate_threshold: 20,
  }),
});

export type ProfileName = keyof typeof PROFILES;

export class PowSettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid proof-of-work settings: ${problems.join('; ')}`);
    this.name = 'PowSettingsError';
  }
}

/** Where a layer's values come from, for error messages. */
type Source = 'flow' | 'env' | 'server';

function where(source: Source, key: string): string {
  switch (source) {
    case 'flow':
      return `per-flow config ${key}`;
    case 'env':
      return `environment variable ${envName(key)}`;
    case 'server':
      return `server config ${key}`;
  }
}

/** Blank values count as unset: Keycloak's admin console saves untouched fields as "". */
function present(raw: unknown): raw is string | number | boolean {
  if (raw === undefined || raw === null) return false;
  return !(typeof raw === 'string' && raw.trim() === '');
}

function describe(raw: unknown): string {
  return typeof raw === 'string' ? JSON.stringify(raw) : String(raw);
}

function parseInteger(
  key: string,
  raw: unknown,
  min: number,
  max: number,
  source: Source,
  problems: string[],
): number | undefined {
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  const value = /^-?\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
  problems.push(`${where(source, key)}: ${key} must be an integer between ${min} and ${max}, got ${describe(raw)}`);
  return undefined;
}

function parseLayer(
  values: Readonly<Record<string, unknown>>,
  source: Source,
  problems: string[],
): Partial<PowSettings> {
  const out: Partial<Record<SettingKey, string | number>> = {};
  for (const key of SETTING_KEYS) {
    const raw = source === 'env' ? values[envName(key)] : values[key];
    if (!present(raw)) continue;
    const rule = SETTING_RULES[key];
    if (rule.kind === 'enum') {
      const text = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
      if (rule.values.includes(text)) out[key] = text;
      else
        problems.push(`${where(source, key)}: ${key} must be one of ${rule.values.join(', ')}, got ${describe(raw)}`);
    } else {
      const value = parseInteger(key, raw, rule.min, rule.max, source, problems);
      if (value !== undefined) out[key] = value;
    }
  }
  return out as Partial<PowSettings>;
}

export interface SettingsLayers {
  /** `authenticatorConfig.config` of the flow's `ext-pow` execution. */
  flow?: Readonly<Record<string, string>>;
  /** The process environment; only `POW_*` variables are read. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The provider's section of the server configuration file. */
  server?: Readonly<Record<string, unknown>>;
  /** Server-wide limits; read from `env` and `server` when absent. */
  limits?: PowLimits;
}

/**
 * Server-wide limits on what a per-flow config may set: one realm administrator must not be able to make
 * every anonymous form post cost the whole server a gigabyte (SPEC 6 gives no bound; issue 11).
 * Environment or server config only, never per flow.
 */
export interface PowLimits {
  max_argon2_memory_kb: number;
  max_argon2_iterations: number;
  max_argon2_difficulty: number;
  max_sha256_difficulty: number;
}

export type LimitKey = keyof PowLimits;

interface LimitRule {
  min: number;
  max: number;
  default: number;
  /** The settings this limit bounds. */
  bounds: readonly SettingKey[];
}

export const LIMIT_RULES: { readonly [K in LimitKey]: LimitRule } = {
  // 64 MiB: the strict profile (32 MiB) fits; with one verification per core, a 2-core server holds 128 MiB.
  max_argon2_memory_kb: { min: 8, max: 1_048_576, default: 65_536, bounds: ['argon2_memory_kb'] },
  max_argon2_iterations: { min: 1, max: 16, default: 4, bounds: ['argon2_iterations'] },
  // Difficulty costs the browser, not the server: 8 bits is the strict profile's ceiling (about 20 s).
  max_argon2_difficulty: {
    min: 0,
    max: 16,
    default: 8,
    bounds: ['argon2_base_difficulty', 'argon2_max_difficulty'],
  },
  max_sha256_difficulty: {
    min: 0,
    max: 32,
    default: 24,
    bounds: ['sha256_base_difficulty', 'sha256_max_difficulty'],
  },
};

export const LIMIT_KEYS = Object.keys(LIMIT_RULES) as LimitKey[];

export const DEFAULT_LIMITS: Readonly<PowLimits> = Object.freeze(
  Object.fromEntries(LIMIT_KEYS.map((key) => [key, LIMIT_RULES[key].default])) as unknown as PowLimits,
);

/** The limit bounding a setting, if any. */
export function limitOf(key: SettingKey): LimitKey | undefined {
  return LIMIT_KEYS.find((limit) => LIMIT_RULES[limit].bounds.includes(key));
}

/** A value from the environment or the server config, with where it came from. */
function pickProcessWide(
  layers: Pick<SettingsLayers, 'env' | 'server'>,
  key: string,
): { raw: unknown; source: Source } | undefined {
  const fromEnv = layers.env?.[envName(key)];
  if (present(fromEnv)) return { raw: fromEnv, source: 'env' };
  const fromServer = layers.server?.[key];
  return present(fromServer) ? { raw: fromServer, source: 'server' } : undefined;
}

/**
 * Server-wide limits: `POW_MAX_<…>` environment variable > server config `max_<…>` > default.
 * Throws a {@link PowSettingsError} naming every bad value.
 */
export function resolveLimits(layers: Pick<SettingsLayers, 'env' | 'server'> = {}): PowLimits {
  const problems: string[] = [];
  const limits = { ...DEFAULT_LIMITS };
  for (const key of LIMIT_KEYS) {
    const found = pickProcessWide(layers, key);
    if (!found) continue;
    const rule = LIMIT_RULES[key];
    const value = parseInteger(key, found.raw, rule.min, rule.max, found.source, problems);
    if (value !== undefined) limits[key] = value;
  }
  if (problems.length > 0) throw new PowSettingsError(problems);
  return limits;
}

function aboveLimit(key: SettingKey, value: number, limit: LimitKey, limits: PowLimits): string {
  return `${key} ${value} is above this server's limit of ${limits[limit]} (${limit}, environment variable ${envName(limit)})`;
}

export interface ResolvedSettings {
  settings: PowSettings;
  /** Per-flow values above a server-wide limit, used at the limit instead: one message each. */
  clamped: string[];
}

/**
 * {@link resolveSettings}, also reporting the per-flow values that were lowered to a server-wide limit.
 * With `strict`, such a value is an error instead (what the admin API answers with a 400).
 */
export function resolveSettingsReport(layers: SettingsLayers = {}, strict = false): ResolvedSettings {
  const problems: string[] = [];
  const clamped: string[] = [];
  let limits = layers.limits;
  if (!limits) {
    try {
      limits = resolveLimits(layers);
    } catch (error) {
      if (!(error instanceof PowSettingsError)) throw error;
      problems.push(...error.problems);
      limits = DEFAULT_LIMITS;
    }
  }
  const server = parseLayer(layers.server ?? {}, 'server', problems);
  const env = parseLayer(layers.env ?? {}, 'env', problems);
  const flow = parseLayer(layers.flow ?? {}, 'flow', problems);
  const settings: PowSettings = { ...DEFAULT_SETTINGS };
  // Limits apply layer by layer: the operator's own values above a limit are a start-up error, a realm's
  // are lowered (or refused by the admin API), and a default above a lowered limit just follows it.
  for (const [source, layer] of [['server', server], ['env', env], ['flow', flow]] as const) {
    for (const [key, value] of Object.entries(layer) as [SettingKey, PowSettings[SettingKey]][]) {
      const limit = limitOf(key);
      if (limit && typeof value === 'number' && value > limits[limit]) {
        const message = `${where(source, key)}: ${aboveLimit(key, value, limit, limits)}`;
        if (source === 'flow' && !strict) {
          clamped.push(message);
          (settings as unknown as Record<string, unknown>)[key] = limits[limit];
        } else problems.push(message);
        continue;
      }
      (settings as unknown as Record<string, unknown>)[key] = value;
    }
  }
  for (const key of SETTING_KEYS) {
    const limit = limitOf(key);
    const value = settings[key];
    if (limit && typeof value === 'number' && value > limits[limit])
      (settings as unknown as Record<string, unknown>)[key] = limits[limit];
  }
  for (const alg of ['argon2', 'sha256'] as const) {
    const base = settings[`${alg}_base_difficulty`];
    const max = settings[`${alg}_max_difficulty`];
    if (max < base)
      problems.push(`${alg}_max_difficulty (${max}) must not be below ${alg}_base_difficulty (${base})`);
  }
  if (settings.min_solve_time_ms >= settings.challenge_ttl_seconds * 1000)
    problems.push(
      `min_solve_time_ms (${settings.min_solve_time_ms}) must be below ` +
        `challenge_ttl_seconds (${settings.challenge_ttl_seconds}) in milliseconds`,
    );
  if (problems.length > 0) throw new PowSettingsError(problems);
  return { settings, clamped };
}

/**
 * Settings with precedence per-flow config > `POW_<KEY>` environment variable > server config > default,
 * per-flow values above a server-wide limit lowered to it (see {@link resolveSettingsReport}).
 * Throws a {@link PowSettingsError} naming every bad key and value.
 */
export function resolveSettings(layers: SettingsLayers = {}): PowSettings {
  return resolveSettingsReport(layers).settings;
}

/**
 * What the admin API should refuse in a per-flow config (`authenticatorConfig.config` of an `ext-pow`
 * execution) before storing it: every value that is not a valid setting, above a server-wide limit, or
 * inconsistent with the server-wide settings it combines with. Each message names the key; empty when valid.
 */
export function flowConfigProblems(
  config: Readonly<Record<string, unknown>>,
  layers: Pick<SettingsLayers, 'env' | 'server' | 'limits'> = {},
): string[] {
  const problems: string[] = [];
  const unknown = Object.keys(config).filter((key) => !(SETTING_KEYS as string[]).includes(key));
  for (const key of unknown)
    problems.push(`per-flow config ${key}: not a proof-of-work setting (known: ${SETTING_KEYS.join(', ')})`);
  const flow: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (typeof value === 'string') flow[key] = value;
    else problems.push(`per-flow config ${key}: values are strings, got ${describe(value)}`);
  }
  try {
    resolveSettingsReport({ ...layers, flow }, true);
  } catch (error) {
    if (!(error instanceof PowSettingsError)) throw error;
    problems.push(...error.problems);
  }
  return problems;
}

/**
 * Process-wide options from the environment (`POW_SECRET`, `POW_VERIFY_CONCURRENCY`,
 * `POW_VERIFY_QUEUE_LIMIT`) over the server config (`secret`, `verify_concurrency`, `verify_queue_limit`).
 */
export function resolveServerOptions(
  layers: Pick<SettingsLayers, 'env' | 'server'> = {},
): PowServerOptions {
  const problems: string[] = [];
  const pick = (key: keyof PowServerOptions) => pickProcessWide(layers, key);
  const integer = (key: 'verify_concurrency' | 'verify_queue_limit', min: number, max: number, fallback: number) => {
    const found = pick(key);
    return found ? (parseInteger(key, found.raw, min, max, found.source, problems) ?? fallback) : fallback;
  };
  const options: PowServerOptions = {
    secret: null,
    verify_concurrency: integer('verify_concurrency', 1, 1024, availableParallelism()),
    verify_queue_limit: integer('verify_queue_limit', 0, 100_000, 64),
  };
  const secret = pick('secret');
  if (secret) {
    // Shorter secrets would make the HMAC key guessable offline from one signed challenge.
    if (typeof secret.raw === 'string' && secret.raw.length >= 32) options.secret = secret.raw;
    else problems.push(`${where(secret.source, 'secret')}: secret must be a string of at least 32 characters`);
  }
  if (problems.length > 0) throw new PowSettingsError(problems);
  return options;
}

/** Server-config keys this package understands, to warn about typos. */
export const SERVER_CONFIG_KEYS: readonly string[] = [
  ...SETTING_KEYS,
  'secret',
  'verify_concurrency',
  'verify_queue_limit',
  ...LIMIT_KEYS,
];
