/**
 * Server-wide settings of the webhook provider: environment variable > config file section
 * (`providers.ext-event-webhook`) > default, each validated with an error that names its key.
 */
import { DEFAULT_SETTINGS, settingProblem } from './delivery.js';
import type { DispatcherSettings } from './delivery.js';

export interface WebhookSettings extends DispatcherSettings {
  /** How long close() lets queued deliveries and retries run before dropping them. */
  shutdownGraceMs: number;
  /** Webhook target rules (checked by the host's outbound guard, ProviderContext.outbound): CIDRs, addresses, host names, `*.domain`, `loopback`, `private`. */
  allow: string[];
  deny: string[];
  /** `memory` (the default: the original's in-memory queue) or `outbox` (durable, in the server's database). */
  mode: WebhookMode;
  /** Outbox: delivered and dead deliveries are removed this many days after their last change. */
  retentionDays: number;
  /** Outbox: a client's endpoint is paused after this many consecutive failed attempts; 0 never pauses. */
  pauseAfterFailures: number;
  /** Outbox: how long a node holds a claimed delivery before another node may take it. */
  leaseMs: number;
  /** Outbox: how often a node looks for due deliveries (its own events wake it at once). */
  pollMs: number;
  /** Outbox: each retry wait is moved by a random amount within ± this percentage. */
  backoffJitterPercent: number;
}

export type WebhookMode = 'memory' | 'outbox';
export const WEBHOOK_MODES: readonly WebhookMode[] = ['memory', 'outbox'];

export const DEFAULT_SHUTDOWN_GRACE_MS = 5000;
const SHUTDOWN_GRACE_LIMITS = { min: 0, max: 600_000 };

/** The outbox's own integer settings, and its longer retry waits (up to 30 days each). */
const OUTBOX_LIMITS = {
  retentionDays: { min: 1, max: 3650 },
  pauseAfterFailures: { min: 0, max: 1_000_000 },
  leaseMs: { min: 1000, max: 86_400_000 },
  pollMs: { min: 10, max: 600_000 },
  backoffJitterPercent: { min: 0, max: 100 },
} as const;
export const OUTBOX_BACKOFF_MAX_MS = 30 * 86_400_000;

export const OUTBOX_DEFAULTS = {
  retentionDays: 7,
  pauseAfterFailures: 0,
  leaseMs: 60_000,
  pollMs: 1000,
  backoffJitterPercent: 10,
} as const;

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
  mode: 'REALMGATE_WEBHOOK_MODE',
  retentionDays: 'REALMGATE_WEBHOOK_RETENTION_DAYS',
  pauseAfterFailures: 'REALMGATE_WEBHOOK_PAUSE_AFTER_FAILURES',
  leaseMs: 'REALMGATE_WEBHOOK_LEASE_MS',
  pollMs: 'REALMGATE_WEBHOOK_POLL_MS',
  backoffJitterPercent: 'REALMGATE_WEBHOOK_BACKOFF_JITTER_PERCENT',
};

const CONFIG_PREFIX = 'providers.ext-event-webhook.';

export function readSettings(
  config: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
  /** The host's allow/deny rule syntax (ProviderContext.outbound); without it a bad entry is refused when the guard is made. */
  ruleProblem: (entry: string) => string | null = () => null,
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
    mode: 'memory',
    ...OUTBOX_DEFAULTS,
  };
  const sourceOf = (key: keyof WebhookSettings): [string | null, unknown] => {
    const envName = SETTING_ENV[key];
    const fromEnv = env[envName];
    return fromEnv !== undefined && fromEnv.trim() !== ''
      ? [envName, fromEnv]
      : config[key] !== undefined
        ? [CONFIG_PREFIX + key, config[key]]
        : [null, undefined];
  };
  // The mode first: it sets how long a retry wait may be.
  const [modeSource, modeRaw] = sourceOf('mode');
  if (modeSource !== null) {
    const mode = typeof modeRaw === 'string' ? modeRaw.trim().toLowerCase() : modeRaw;
    if (!WEBHOOK_MODES.includes(mode as WebhookMode)) {
      throw new Error(`invalid webhook setting ${modeSource}=${JSON.stringify(modeRaw)}: must be one of ${WEBHOOK_MODES.join(', ')}`);
    }
    settings.mode = mode as WebhookMode;
  }
  for (const key of Object.keys(SETTING_ENV) as (keyof WebhookSettings)[]) {
    const [source, raw] = sourceOf(key);
    if (source === null || key === 'mode') continue;
    if (key === 'allow' || key === 'deny') {
      const entries = toStringList(raw);
      const problem = entries === null ? 'must be a comma-separated list or a list of strings' : entries.map(ruleProblem).find(Boolean);
      if (problem) throw new Error(`invalid webhook setting ${source}=${JSON.stringify(raw)}: ${problem}`);
      settings[key] = entries!;
      continue;
    }
    const value = key === 'backoffMs' ? toIntegerList(raw) : toInteger(raw);
    const problem =
      key === 'shutdownGraceMs'
        ? graceProblem(value)
        : key in OUTBOX_LIMITS
          ? rangeProblem(OUTBOX_LIMITS[key as keyof typeof OUTBOX_LIMITS], value)
          : key === 'backoffMs' && settings.mode === 'outbox'
            ? outboxBackoffProblem(value as number[])
            : settingProblem(key as Exclude<keyof WebhookSettings, 'allow' | 'deny' | 'mode' | 'shutdownGraceMs' | keyof typeof OUTBOX_LIMITS>, value);
    if (problem) throw new Error(`invalid webhook setting ${source}=${JSON.stringify(raw)}: ${problem}`);
    Object.assign(settings, { [key]: value });
  }
  if (settings.mode === 'outbox' && settings.leaseMs < settings.responseTimeoutMs + 1000) {
    throw new Error(
      `invalid webhook setting leaseMs=${settings.leaseMs}: must exceed responseTimeoutMs (${settings.responseTimeoutMs}) by at least 1000, or another node could take a delivery still being sent`,
    );
  }
  return settings;
}

function rangeProblem({ min, max }: { min: number; max: number }, value: unknown): string | null {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max ? null : `must be an integer from ${min} to ${max}`;
}

function outboxBackoffProblem(value: number[]): string | null {
  return value.length > 0 && value.every((n) => rangeProblem({ min: 0, max: OUTBOX_BACKOFF_MAX_MS }, n) === null)
    ? null
    : `must be a non-empty list of integers from 0 to ${OUTBOX_BACKOFF_MAX_MS} (milliseconds, up to 30 days in outbox mode)`;
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
  return rangeProblem(SHUTDOWN_GRACE_LIMITS, value);
}
