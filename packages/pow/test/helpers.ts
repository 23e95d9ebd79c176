import { randomBytes } from 'node:crypto';
import { ProofOfWork, VerificationPool, resolveSettings } from '../src/index.js';
import type { Logger } from '@realmgate/spi';
import type { PowSettings } from '../src/index.js';
import { MemoryStore, RecordingMetrics } from './memory-store.js';

/** Small Argon2id parameters: the machine is shared, and the checks do not depend on the cost. */
export const SMALL: Readonly<Record<string, string>> = {
  argon2_memory_kb: '1024',
  argon2_iterations: '1',
  argon2_base_difficulty: '2',
  argon2_max_difficulty: '4',
  argon2_rate_threshold: '3',
  sha256_base_difficulty: '8',
  sha256_max_difficulty: '10',
  min_solve_time_ms: '500',
  challenge_ttl_seconds: '60',
};

export function smallSettings(overrides: Record<string, string> = {}): PowSettings {
  return resolveSettings({ flow: { ...SMALL, ...overrides } });
}

/** A ProofOfWork on a memory store with a clock the test moves. */
export function harness(options: { pool?: VerificationPool; logger?: Logger } = {}) {
  const clock = { now: 1_700_000_000_000 };
  const store = new MemoryStore(() => clock.now);
  const metrics = new RecordingMetrics();
  const key = randomBytes(32);
  const pow = new ProofOfWork({ store, key, metrics, now: () => clock.now, pool: options.pool, logger: options.logger });
  return { clock, store, metrics, key, pow };
}
