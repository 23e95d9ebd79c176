import type { SharedStore } from '@realmgate/spi';
import type { PowSettings } from './settings.js';

/** The sliding window of SPEC 6 over which attempts per client IP and realm are counted. */
export const RATE_WINDOW_MS = 60_000;

/**
 * Base difficulty at or below the threshold; above it one more bit per further threshold's worth of
 * attempts, never above the max.
 */
export function difficultyFor(attempts: number, base: number, max: number, threshold: number): number {
  if (attempts <= threshold) return base;
  return Math.min(max, base + Math.ceil((attempts - threshold) / threshold));
}

/** Difficulty bounds and threshold of the configured algorithm. */
export function difficultyRange(settings: PowSettings): { base: number; max: number; threshold: number } {
  const sha = settings.hash_algorithm === 'sha256';
  return {
    base: sha ? settings.sha256_base_difficulty : settings.argon2_base_difficulty,
    max: sha ? settings.sha256_max_difficulty : settings.argon2_max_difficulty,
    threshold: settings.argon2_rate_threshold,
  };
}

/** Realm names may contain `:`, as IPv6 addresses do; encoding the realm keeps keys unambiguous. */
export function rateKey(realm: string, ip: string): string {
  return `rate:${encodeURIComponent(realm)}:${ip}`;
}

/** A submission: counts towards the client's rate. */
export function recordAttempt(store: SharedStore, realm: string, ip: string): Promise<number> {
  return store.recordHit(rateKey(realm, ip), RATE_WINDOW_MS);
}

/** A page load: reads the rate without adding to it. */
export function currentAttempts(store: SharedStore, realm: string, ip: string): Promise<number> {
  return store.countHits(rateKey(realm, ip), RATE_WINDOW_MS);
}
