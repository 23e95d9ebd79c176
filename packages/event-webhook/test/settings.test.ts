import { describe, expect, it } from 'vitest';
import { ruleEntryProblem } from '../../server/src/http/target-guard.js';
import { readSettings } from '../src/settings.js';

/** The outbox settings' defaults, present (and unused) in the default in-memory mode. */
const MEMORY_MODE = { mode: 'memory', retentionDays: 7, pauseAfterFailures: 0, leaseMs: 60_000, pollMs: 1000, backoffJitterPercent: 10 };

describe('readSettings', () => {
  it('outbox mode: its own keys, retry waits up to 30 days, a lease longer than the response timeout', () => {
    const settings = readSettings(
      { mode: 'outbox', backoffMs: [1000, 60_000, 86_400_000, 2_592_000_000], maxAttempts: 10, pauseAfterFailures: 50 },
      { REALMGATE_WEBHOOK_RETENTION_DAYS: '30', REALMGATE_WEBHOOK_LEASE_MS: '120000', REALMGATE_WEBHOOK_BACKOFF_JITTER_PERCENT: '0' },
    );
    expect(settings).toMatchObject({ mode: 'outbox', backoffMs: [1000, 60_000, 86_400_000, 2_592_000_000], retentionDays: 30, leaseMs: 120_000, pauseAfterFailures: 50, backoffJitterPercent: 0 });
    expect(() => readSettings({ backoffMs: [86_400_000] }, {})).toThrow(/backoffMs=.*3600000/);
    expect(() => readSettings({ mode: 'outbox', backoffMs: [2_592_000_001] }, {})).toThrow(/up to 30 days/);
    expect(() => readSettings({}, { REALMGATE_WEBHOOK_MODE: 'disk' })).toThrow('invalid webhook setting REALMGATE_WEBHOOK_MODE="disk": must be one of memory, outbox');
    expect(() => readSettings({ mode: 'outbox', leaseMs: 10_000 }, {})).toThrow(/leaseMs=10000: must exceed responseTimeoutMs \(10000\)/);
    expect(() => readSettings({ retentionDays: 0 }, {})).toThrow('providers.ext-event-webhook.retentionDays=0: must be an integer from 1 to 3650');
    expect(readSettings({}, { REALMGATE_WEBHOOK_MODE: ' Outbox ' }).mode).toBe('outbox');
  });

  it('defaults to SPEC 5', () => {
    expect(readSettings({}, {})).toEqual({
      maxAttempts: 3,
      backoffMs: [1000, 2000, 3000],
      concurrency: 8,
      queueSize: 10_000,
      connectTimeoutMs: 5000,
      responseTimeoutMs: 10_000,
      shutdownGraceMs: 5000,
      allow: [],
      deny: [],
      ...MEMORY_MODE,
    });
  });

  it('reads every environment variable', () => {
    const settings = readSettings(
      {},
      {
        REALMGATE_WEBHOOK_MAX_ATTEMPTS: '5',
        REALMGATE_WEBHOOK_BACKOFF_MS: '100, 200 ,300',
        REALMGATE_WEBHOOK_CONCURRENCY: '2',
        REALMGATE_WEBHOOK_QUEUE_SIZE: '50',
        REALMGATE_WEBHOOK_CONNECT_TIMEOUT_MS: '1000',
        REALMGATE_WEBHOOK_RESPONSE_TIMEOUT_MS: '2000',
        REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS: '0',
        REALMGATE_WEBHOOK_ALLOW: 'loopback, 10.1.2.3/32,hooks.internal',
        REALMGATE_WEBHOOK_DENY: ' private,*.corp.example, fd00::/8 ',
      },
    );
    expect(settings).toEqual({
      maxAttempts: 5,
      backoffMs: [100, 200, 300],
      concurrency: 2,
      queueSize: 50,
      connectTimeoutMs: 1000,
      responseTimeoutMs: 2000,
      shutdownGraceMs: 0,
      allow: ['loopback', '10.1.2.3/32', 'hooks.internal'],
      deny: ['private', '*.corp.example', 'fd00::/8'],
      ...MEMORY_MODE,
    });
  });

  it('prefers the environment to the config file, and the file to the default', () => {
    const settings = readSettings(
      { maxAttempts: 4, concurrency: '16', backoffMs: [10, 20] },
      { REALMGATE_WEBHOOK_MAX_ATTEMPTS: '6', REALMGATE_WEBHOOK_CONCURRENCY: '  ' },
    );
    expect(settings).toMatchObject({ maxAttempts: 6, concurrency: 16, backoffMs: [10, 20], queueSize: 10_000 });
  });

  it('reads the target rules from the config file as a list or a string', () => {
    expect(readSettings({ allow: ['127.0.0.1'], deny: '10.0.0.0/8, 192.168.0.0/16' }, {})).toMatchObject({
      allow: ['127.0.0.1'],
      deny: ['10.0.0.0/8', '192.168.0.0/16'],
    });
  });

  it.each<[Record<string, unknown>, Record<string, string>, RegExp]>([
    [{}, { REALMGATE_WEBHOOK_MAX_ATTEMPTS: 'three' }, /REALMGATE_WEBHOOK_MAX_ATTEMPTS="three": must be an integer from 1 to 100/],
    [{}, { REALMGATE_WEBHOOK_MAX_ATTEMPTS: '0' }, /REALMGATE_WEBHOOK_MAX_ATTEMPTS="0"/],
    [{}, { REALMGATE_WEBHOOK_BACKOFF_MS: '1000,,3000' }, /REALMGATE_WEBHOOK_BACKOFF_MS="1000,,3000": must be a non-empty list/],
    [{}, { REALMGATE_WEBHOOK_BACKOFF_MS: '1s' }, /REALMGATE_WEBHOOK_BACKOFF_MS/],
    [{}, { REALMGATE_WEBHOOK_CONCURRENCY: '-1' }, /REALMGATE_WEBHOOK_CONCURRENCY="-1"/],
    [{}, { REALMGATE_WEBHOOK_QUEUE_SIZE: '1e4' }, /REALMGATE_WEBHOOK_QUEUE_SIZE="1e4"/],
    [{}, { REALMGATE_WEBHOOK_CONNECT_TIMEOUT_MS: '0' }, /REALMGATE_WEBHOOK_CONNECT_TIMEOUT_MS="0"/],
    [{}, { REALMGATE_WEBHOOK_RESPONSE_TIMEOUT_MS: '10.5' }, /REALMGATE_WEBHOOK_RESPONSE_TIMEOUT_MS="10.5"/],
    [{}, { REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS: '-5' }, /REALMGATE_WEBHOOK_SHUTDOWN_GRACE_MS="-5"/],
    [{ queueSize: 0 }, {}, /providers\.ext-event-webhook\.queueSize=0: must be an integer from 1/],
    [{ backoffMs: 'fast' }, {}, /providers\.ext-event-webhook\.backoffMs="fast"/],
    [{ maxAttempts: true }, {}, /providers\.ext-event-webhook\.maxAttempts=true/],
    [{}, { REALMGATE_WEBHOOK_DENY: '10.0.0.0/33' }, /REALMGATE_WEBHOOK_DENY="10.0.0.0\/33": "10.0.0.0\/33" is not a CIDR/],
    [{}, { REALMGATE_WEBHOOK_ALLOW: 'http://hooks.example' }, /REALMGATE_WEBHOOK_ALLOW="http:\/\/hooks.example"/],
    [{}, { REALMGATE_WEBHOOK_ALLOW: '300.1.1.1' }, /REALMGATE_WEBHOOK_ALLOW="300.1.1.1"/],
    [{ deny: [10] }, {}, /providers\.ext-event-webhook\.deny=\[10\]: must be a comma-separated list/],
    [{ maxAttemps: 3 }, {}, /unknown webhook setting providers\.ext-event-webhook\.maxAttemps/],
  ])('refuses %j %j, naming the key', (config, env, message) => {
    expect(() => readSettings(config, env, ruleEntryProblem)).toThrow(message);
  });
});
