import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SETTINGS,
  envName,
  PowSettingsError,
  PROFILES,
  resolveServerOptions,
  resolveSettings,
  SETTING_KEYS,
} from '../src/index.js';

describe('resolveSettings', () => {
  it('has the defaults of SPEC 6', () => {
    expect(resolveSettings()).toEqual({
      hash_algorithm: 'argon2',
      argon2_base_difficulty: 1,
      argon2_max_difficulty: 4,
      argon2_memory_kb: 16384,
      argon2_iterations: 1,
      argon2_rate_threshold: 10,
      sha256_base_difficulty: 16,
      sha256_max_difficulty: 22,
      min_solve_time_ms: 500,
      challenge_ttl_seconds: 600,
    });
  });

  it('takes per-flow config over POW_ env over server config over default, key by key', () => {
    const settings = resolveSettings({
      server: { argon2_memory_kb: 8192, argon2_iterations: '2', min_solve_time_ms: 700, argon2_max_difficulty: 6 },
      env: { POW_ARGON2_MEMORY_KB: '32768', POW_ARGON2_ITERATIONS: '3', PATH: '/bin' },
      flow: { argon2_memory_kb: '4096' },
    });
    expect(settings).toMatchObject({
      argon2_memory_kb: 4096,
      argon2_iterations: 3,
      min_solve_time_ms: 700,
      argon2_max_difficulty: 6,
      argon2_base_difficulty: 1,
    });
  });

  it('reads every key from its POW_ variable', () => {
    expect(SETTING_KEYS.map(envName)).toEqual([
      'POW_HASH_ALGORITHM',
      'POW_ARGON2_BASE_DIFFICULTY',
      'POW_ARGON2_MAX_DIFFICULTY',
      'POW_ARGON2_MEMORY_KB',
      'POW_ARGON2_ITERATIONS',
      'POW_ARGON2_RATE_THRESHOLD',
      'POW_SHA256_BASE_DIFFICULTY',
      'POW_SHA256_MAX_DIFFICULTY',
      'POW_MIN_SOLVE_TIME_MS',
      'POW_CHALLENGE_TTL_SECONDS',
    ]);
    const env = { POW_HASH_ALGORITHM: 'SHA256', POW_SHA256_BASE_DIFFICULTY: '12', POW_CHALLENGE_TTL_SECONDS: '120' };
    expect(resolveSettings({ env })).toMatchObject({
      hash_algorithm: 'sha256',
      sha256_base_difficulty: 12,
      challenge_ttl_seconds: 120,
    });
  });

  it('treats blank values as unset, as the admin console saves untouched fields', () => {
    expect(resolveSettings({ flow: { argon2_memory_kb: '' }, env: { POW_ARGON2_MEMORY_KB: ' ' } })).toEqual(
      DEFAULT_SETTINGS,
    );
  });

  it('names the key and value of every bad setting, and where it came from', () => {
    const attempt = () =>
      resolveSettings({
        flow: { argon2_memory_kb: 'abc', hash_algorithm: 'md5' },
        env: { POW_MIN_SOLVE_TIME_MS: '1.5' },
        server: { argon2_iterations: 0 },
      });
    expect(attempt).toThrow(PowSettingsError);
    let message = '';
    try {
      attempt();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('argon2_memory_kb must be an integer between 8 and 1048576, got "abc"');
    expect(message).toContain('per-flow config hash_algorithm: hash_algorithm must be one of argon2, sha256, got "md5"');
    expect(message).toContain('environment variable POW_MIN_SOLVE_TIME_MS: min_solve_time_ms must be an integer');
    expect(message).toContain('server config argon2_iterations: argon2_iterations must be an integer between 1 and 16, got 0');
  });

  it('refuses a max below the base, and a minimum solve time beyond the lifetime', () => {
    expect(() => resolveSettings({ flow: { argon2_base_difficulty: '5' } })).toThrow(
      'argon2_max_difficulty (4) must not be below argon2_base_difficulty (5)',
    );
    expect(() => resolveSettings({ env: { POW_CHALLENGE_TTL_SECONDS: '10', POW_MIN_SOLVE_TIME_MS: '10000' } })).toThrow(
      'min_solve_time_ms (10000) must be below challenge_ttl_seconds (10)',
    );
  });
});

describe('PROFILES', () => {
  it('are complete, valid per-flow configs with the documented values', () => {
    for (const profile of Object.values(PROFILES))
      expect(Object.keys(profile).sort()).toEqual([...SETTING_KEYS].sort());
    expect(resolveSettings({ flow: PROFILES.basic })).toEqual(DEFAULT_SETTINGS);
    expect(resolveSettings({ flow: PROFILES.strict })).toMatchObject({
      argon2_base_difficulty: 2,
      argon2_memory_kb: 32768,
      argon2_iterations: 2,
      argon2_max_difficulty: 8,
      argon2_rate_threshold: 5,
    });
    expect(resolveSettings({ flow: PROFILES['high-traffic'] })).toMatchObject({
      argon2_base_difficulty: 1,
      argon2_memory_kb: 8192,
      argon2_iterations: 1,
      argon2_max_difficulty: 3,
      argon2_rate_threshold: 20,
    });
  });
});

describe('resolveServerOptions', () => {
  it('reads the secret and the pool size from env over server config', () => {
    const secret = 'k'.repeat(32);
    expect(
      resolveServerOptions({
        env: { POW_SECRET: secret, POW_VERIFY_QUEUE_LIMIT: '8' },
        server: { secret: 'x'.repeat(40), verify_concurrency: 3, verify_queue_limit: 100 },
      }),
    ).toEqual({ secret, verify_concurrency: 3, verify_queue_limit: 8 });
    expect(resolveServerOptions().secret).toBeNull();
    expect(resolveServerOptions().verify_queue_limit).toBe(64);
  });

  it('refuses a short secret without printing it', () => {
    expect(() => resolveServerOptions({ env: { POW_SECRET: 'hunter2' } })).toThrow(
      'environment variable POW_SECRET: secret must be a string of at least 32 characters',
    );
    expect(() => resolveServerOptions({ env: { POW_SECRET: 'hunter2' } })).not.toThrow(/hunter2/);
    expect(() => resolveServerOptions({ server: { verify_concurrency: 'lots' } })).toThrow(
      'verify_concurrency must be an integer between 1 and 1024, got "lots"',
    );
  });
});
