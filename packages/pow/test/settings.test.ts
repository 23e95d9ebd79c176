import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  DEFAULT_SETTINGS,
  envName,
  flowConfigProblems,
  LIMIT_KEYS,
  resolveLimits,
  resolveSettingsReport,
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

// Issue 11: a realm administrator must not be able to make every anonymous form post cost the server 1 GiB.
describe('server-wide limits', () => {
  it('have defaults every documented profile fits under, read from POW_MAX_* over the server config', () => {
    expect(DEFAULT_LIMITS).toEqual({
      max_argon2_memory_kb: 65536,
      max_argon2_iterations: 4,
      max_argon2_difficulty: 8,
      max_sha256_difficulty: 24,
    });
    expect(LIMIT_KEYS.map(envName)).toEqual([
      'POW_MAX_ARGON2_MEMORY_KB',
      'POW_MAX_ARGON2_ITERATIONS',
      'POW_MAX_ARGON2_DIFFICULTY',
      'POW_MAX_SHA256_DIFFICULTY',
    ]);
    for (const profile of Object.values(PROFILES)) expect(flowConfigProblems(profile)).toEqual([]);
    expect(
      resolveLimits({
        env: { POW_MAX_ARGON2_MEMORY_KB: '8192', POW_MAX_ARGON2_ITERATIONS: ' ' },
        server: { max_argon2_memory_kb: 4096, max_argon2_iterations: '2' },
      }),
    ).toMatchObject({ max_argon2_memory_kb: 8192, max_argon2_iterations: 2 });
    expect(() => resolveLimits({ env: { POW_MAX_ARGON2_MEMORY_KB: '1GiB' } })).toThrow(
      'environment variable POW_MAX_ARGON2_MEMORY_KB: max_argon2_memory_kb must be an integer between 8 and 1048576, got "1GiB"',
    );
  });

  it('lower a stored per-flow value above them to the limit, and say so', () => {
    const { settings, clamped } = resolveSettingsReport({
      flow: {
        argon2_memory_kb: '1048576',
        argon2_iterations: '16',
        argon2_base_difficulty: '12',
        argon2_max_difficulty: '16',
        sha256_max_difficulty: '32',
      },
    });
    expect(settings).toMatchObject({
      argon2_memory_kb: 65536,
      argon2_iterations: 4,
      argon2_base_difficulty: 8,
      argon2_max_difficulty: 8,
      sha256_max_difficulty: 24,
    });
    expect(clamped).toContain(
      "per-flow config argon2_memory_kb: argon2_memory_kb 1048576 is above this server's limit of 65536 " +
        '(max_argon2_memory_kb, environment variable POW_MAX_ARGON2_MEMORY_KB)',
    );
    expect(clamped).toHaveLength(5);
    // resolveSettings is the same, minus the report.
    expect(resolveSettings({ flow: { argon2_memory_kb: '1048576' } }).argon2_memory_kb).toBe(65536);
  });

  it("refuse the operator's own value above a limit at start-up, and let the defaults follow a lowered one", () => {
    expect(() => resolveSettings({ env: { POW_ARGON2_MEMORY_KB: '131072' } })).toThrow(
      "environment variable POW_ARGON2_MEMORY_KB: argon2_memory_kb 131072 is above this server's limit of 65536",
    );
    expect(() => resolveSettings({ server: { argon2_iterations: 8 } })).toThrow('server config argon2_iterations');
    // Raising the limit is how an operator allows more.
    expect(resolveSettings({ env: { POW_ARGON2_MEMORY_KB: '131072', POW_MAX_ARGON2_MEMORY_KB: '131072' } }).argon2_memory_kb).toBe(131072);
    // Lowering it below a default lowers the default with it.
    expect(resolveSettings({ env: { POW_MAX_ARGON2_MEMORY_KB: '8192', POW_MAX_SHA256_DIFFICULTY: '20' } })).toMatchObject({
      argon2_memory_kb: 8192,
      sha256_base_difficulty: 16,
      sha256_max_difficulty: 20,
    });
  });
});

describe('flowConfigProblems (what the admin API refuses)', () => {
  const limitMessage = (key: string, value: string, limit: string, cap: number) =>
    `per-flow config ${key}: ${key} ${value} is above this server's limit of ${cap} (${limit}, environment variable ${envName(limit)})`;

  it('names the key and the limit of every value above one', () => {
    expect(flowConfigProblems({ argon2_memory_kb: '1048576' })).toEqual([
      limitMessage('argon2_memory_kb', '1048576', 'max_argon2_memory_kb', 65536),
    ]);
    expect(flowConfigProblems({ argon2_iterations: '5' })).toEqual([
      limitMessage('argon2_iterations', '5', 'max_argon2_iterations', 4),
    ]);
    expect(flowConfigProblems({ argon2_max_difficulty: '9' })).toEqual([
      limitMessage('argon2_max_difficulty', '9', 'max_argon2_difficulty', 8),
    ]);
    expect(flowConfigProblems({ sha256_base_difficulty: '25', sha256_max_difficulty: '25' })).toEqual([
      limitMessage('sha256_base_difficulty', '25', 'max_sha256_difficulty', 24),
      limitMessage('sha256_max_difficulty', '25', 'max_sha256_difficulty', 24),
    ]);
    // Exactly at the limit is allowed; the limit is the server's, whatever the realm says.
    expect(flowConfigProblems({ argon2_memory_kb: '65536', argon2_iterations: '4', argon2_max_difficulty: '8' })).toEqual([]);
    expect(flowConfigProblems({ argon2_memory_kb: '65536' }, { env: { POW_MAX_ARGON2_MEMORY_KB: '32768' } })).toEqual([
      limitMessage('argon2_memory_kb', '65536', 'max_argon2_memory_kb', 32768),
    ]);
  });

  it('is not fooled by other spellings of a big number', () => {
    for (const value of ['0000131072', ' 131072 ', '+131072', '131072.0', '1.31072e5', '0x20000', '131072 KiB', '１３１０７２']) {
      const problems = flowConfigProblems({ argon2_memory_kb: value });
      expect(problems, value).toHaveLength(1);
      expect(problems[0], value).toMatch(/^per-flow config argon2_memory_kb: /);
    }
    // A limit cannot be raised from the per-flow config: it is not a per-flow key.
    expect(flowConfigProblems({ max_argon2_memory_kb: '1048576', argon2_memory_kb: '1048576' })).toEqual([
      expect.stringMatching(/^per-flow config max_argon2_memory_kb: not a proof-of-work setting/),
      limitMessage('argon2_memory_kb', '1048576', 'max_argon2_memory_kb', 65536),
    ]);
    expect(flowConfigProblems({ ARGON2_MEMORY_KB: '1048576' })).toEqual([
      expect.stringMatching(/^per-flow config ARGON2_MEMORY_KB: not a proof-of-work setting/),
    ]);
  });

  it('also refuses what the flow would otherwise ignore: junk, max below base, and non-strings', () => {
    expect(flowConfigProblems({ argon2_memory_kb: 'lots' })).toEqual([
      'per-flow config argon2_memory_kb: argon2_memory_kb must be an integer between 8 and 1048576, got "lots"',
    ]);
    expect(flowConfigProblems({ argon2_base_difficulty: '6' })).toEqual([
      'argon2_max_difficulty (4) must not be below argon2_base_difficulty (6)',
    ]);
    expect(flowConfigProblems({ argon2_memory_kb: 1048576 as unknown as string })).toEqual([
      'per-flow config argon2_memory_kb: values are strings, got 1048576',
    ]);
    // Blank means unset, as the admin console saves untouched fields.
    expect(flowConfigProblems({ argon2_memory_kb: '', hash_algorithm: ' ' })).toEqual([]);
  });
});
