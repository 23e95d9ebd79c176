/**
 * Server-wide settings of the webhook provider: environment variable > config file section
 * (`providers.ext-event-webhook`) > default, each validated with an error that names its key.
 */
import { DEFAULT_SETTINGS, settingProblem } from './delivery.js';
import type { DispatcherSettings } from './delivery.js';
import { ruleEntryProblem } from './target-guard.js';

export interface WebhookSettings extends DispatcherSettings {
  /** How long close() lets queued deliveries and retries run before dropping them. */
  shutdownGraceMs: number;
  /** Webhook target rules (see TargetGuard): CIDRs, addresses, host names, `*.domain`, `loopback`, `private`. */
  allow: string[];
  deny: string[];
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 5000;
const SHUTDOWN_GRACE_LIMITS = { min: 0, max: 600_000 };

/** Config-file key → environment variable. */
export const SETTING_ENV: Readonly<Record<keyof WebhookSettings, string>> = {
  maxAttempts: 'REALMGATE_WEBHOOK_MAX_ATTEMPTS',
  backoffMs: 'REALMGATE_WEBHOOK_BACKOFF_MS',
  concurrency: 'REALMGATE_WEBHOOK_CONCURRENCY',
  queueSize: 'REALMGATE_WEBHOOK_QUEUE_SIZE',
  connectTimeoutMs: 'REALMGATE_WEBHOOK_CONNECT_TIMEOUT_MS',
  responseTimeoutMs: 'REALMGATE_WEBHOOK_RESPONSE_TIMEOUT_MS',
  shutdownGraceMs: 'REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS',
  allow: 'REALMGATE_WEBHOOK_ALLOW',
  deny: 'REALMGATE_WEBHOOK_DENY',
};

const CONFIG_PREFIX = 'providers.ext-event-webhook.';

export function readSettings(
  config: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): WebhookSettings {
  const unknown = Object.keys(config).filter((key) => !Object.hasOwn(SETTING_ENV, key));
  if (unknown.length > 0) {
    throw new Error(
      `unknown webhook setting ${CONFIG_PREFIX}${unknown[0]}; known: ${Object.keys(SETTING_ENV).join(', ')}`,
    );
  }
  const settings: WebhookSettings = {
    ...DEFAULT_SETTINGS,
    backoffMs: [...DEFAULT_SETTINGS.backoffMs],
    shutdownGraceMs: DEFAULT_SHUTDOWN_GRACE_MS,
    allow: [],
    deny: [],
  };
  for (const key of Object.keys(SETTING_ENV) as (keyof WebhookSettings)[]) {
    const envName = SETTING_ENV[key];
    const fromEnv = env[envName];
    const [source, raw] =
      fromEnv !== undefined && fromEnv.trim() !== ''
        ? [envName, fromEnv]
        : config[key] !== undefined
          ? [CONFIG_PREFIX + key, config[key]]
          : [null, undefined];
    if (source === null) continue;
    if (key === 'allow' || key === 'deny') {
      const entries = toStringList(raw);
      const problem = entries === null ? 'must be a comma-separated list or a list of strings' : entries.map(ruleEntryProblem).find(Boolean);
      if (problem) throw new Error(`invalid webhook setting ${source}=${JSON.stringify(raw)}: ${problem}`);
      settings[key] = entries!;
      continue;
    }
    const value = key === 'backoffMs' ? toIntegerList(raw) : toInteger(raw);
    const problem = key === 'shutdownGraceMs' ? graceProblem(value) : settingProblem(key, value);
    if (problem) throw new Error(`invalid webhook setting ${source}=${JSON.stringify(raw)}: ${problem}`);
    Object.assign(settings, { [key]: value });
  }
  return settings;
}

/** Integers written as numbers or decimal strings; anything else becomes NaN and fails validation. */
function toInteger(raw: unknown): number {
  if (typeof raw === 'number') return raw;
  if (typeof raw === 'string' && /^\s*\d+\s*$/.test(raw)) return Number(raw);
  return Number.NaN;
}

/** `10.0.0.0/8, hooks.internal` or a list of strings; blank entries are ignored. null for anything else. */
function toStringList(raw: unknown): string[] | null {
  const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : null;
  if (!items || !items.every((item) => typeof item === 'string')) return null;
  return (items as string[]).map((item) => item.trim()).filter((item) => item.length > 0);
}

/** `1000,2000,3000` or a list. */
function toIntegerList(raw: unknown): number[] {
  const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : [raw];
  return items.map(toInteger);
}

function graceProblem(value: unknown): string | null {
  const { min, max } = SHUTDOWN_GRACE_LIMITS;
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max ? null : `must be an integer from ${min} to ${max}`;
}
