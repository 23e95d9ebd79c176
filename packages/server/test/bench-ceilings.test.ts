import { describe, expect, it } from 'vitest';
import { CEILING_GOAL, ceiling, entriesOf as outboxEntries, ofCeiling, type OutboxThroughput } from '../../event-webhook/bench/outbox.js';
import { entriesOf as powEntries, FLOOR_GOAL, floorMs, throttlesOf, type ProfileRun } from '../../pow/bench/browser.js';
import { PASSWORD_CEILING_GOAL, passwordCeiling } from '../../../scripts/token-bench.js';

/** Issue 44's ceilings and floors, as the benches compute them (no timing: figures given, arithmetic checked). */

describe('proof-of-work floor', () => {
  it('is an empty worker start, the memory step and one warm hash', () => {
    expect(floorMs({ emptyWorkerStart: 40, memory: 25 }, 15)).toBe(80);
    expect(floorMs({ emptyWorkerStart: Number.NaN, memory: 25 }, 15)).toBeNaN();
  });

  const run = (profile: ProfileRun['profile'], d: number, solveMs: number): ProfileRun => ({
    profile,
    throttle: 1,
    d,
    memoryKb: 16384,
    iterations: 1,
    workers: 2,
    rounds: 11,
    wasm: 'simd',
    hashMs: 14,
    packageHashMs: 17,
    hashWasmMs: 24,
    nativeMs: 3,
    warmHashMs: 20,
    solveMs,
    solveFromArrivalMs: solveMs + 40,
    hashesPerSolve: 2 ** d,
    roundsPerSolve: 1.3,
    breakdown: { toWorkers: 0.2, workerStart: 45, memory: 25, wasm: 30, toFirstHash: 80, firstHash: 35, laterHash: 20, answerToPage: 0.5, emptyWorkerStart: 40 },
    load: { before: 2, after: 3 },
  });

  it('gives every profile its solve beside the floor with the goal, and strict its 2^d warm hashes', () => {
    const entries = powEntries([run('basic', 1, 100), run('strict', 2, 120)]);
    const floor = entries.filter((e) => e.name.includes('beside the floor'));
    expect(floor.map((e) => [e.name.split(':')[0], e.baseline.value, e.ratio, e.goal])).toEqual([
      ['basic', 85, 100 / 85, FLOOR_GOAL],
      ['strict', 85, 120 / 85, FLOOR_GOAL],
    ]);
    const strict = entries.find((e) => e.name.startsWith('strict: median solve') && e.name.includes('challenge to first answer (d='))!;
    expect([strict.baseline.value, strict.ratio, strict.goal]).toEqual([80, 1.5, 1.2]);
    expect(floor[0].load).toEqual({ before: 2, after: 3 });
  });

  it('reads the throttling rates and refuses nonsense', () => {
    expect(throttlesOf(undefined)).toEqual([1, 4]);
    expect(throttlesOf('1')).toEqual([1]);
    expect(throttlesOf('1, 6')).toEqual([1, 6]);
    expect(() => throttlesOf('0')).toThrow(/POW_BENCH_THROTTLE/);
    expect(() => throttlesOf('fast')).toThrow(/POW_BENCH_THROTTLE/);
  });
});

describe('outbox ceiling', () => {
  it('is in-memory time over in-memory time plus the database work alone', () => {
    // 8,000/s in memory: 0.125 ms a delivery; 0.125 ms of database work halves it.
    expect(ceiling(8000, 0.125)).toBeCloseTo(0.5, 12);
    expect(ceiling(8000, 0)).toBe(1);
    // 3,000/s outbox beside 8,000/s in memory is 0.375 of it: 0.75 of a 0.5 ceiling.
    expect(ofCeiling(3000, 8000, 0.125)).toBeCloseTo(0.75, 12);
  });

  const throughput = (postgres: boolean): OutboxThroughput => ({
    deliveries: 8000,
    rounds: 3,
    outboxPerSecond: 3200,
    memoryPerSecond: 8000,
    ratio: 0.4,
    postgresPerSecond: postgres ? 2400 : null,
    postgresRatio: postgres ? 0.3 : null,
    storeMs: 0.075,
    postgresStoreMs: postgres ? 0.125 : null,
    postgresStoreWallMs: postgres ? 0.25 : null,
    ceiling: 0.625,
    postgresCeiling: postgres ? 0.5 : null,
    ofCeiling: 0.64,
    postgresOfCeiling: postgres ? 0.6 : null,
    load: { before: 4, after: 5 },
    perRound: [],
  });

  it('records each database beside its ceiling rate with the goal, PostgreSQL only when measured', () => {
    const entries = outboxEntries(throughput(true));
    expect(entries.map((e) => [e.value, e.baseline.value, e.ratio, e.goal])).toEqual([
      [3200, 5000, 0.64, CEILING_GOAL],
      [2400, 4000, 0.6, CEILING_GOAL],
    ]);
    expect(entries[1].name).toContain('PostgreSQL');
    expect(entries[0].load).toEqual({ before: 4, after: 5 });
    expect(outboxEntries(throughput(false))).toHaveLength(1);
  });
});

describe('password-grant ceiling', () => {
  it("is the Argon2id rate scaled by one verification's share of a grant's CPU", () => {
    // 100 verifications/s at 20 ms each; a grant adds 1 ms of server CPU and 4 ms of the load process's: 80/s.
    expect(passwordCeiling(100, 20, 1, 4)).toBeCloseTo(80, 12);
    expect(passwordCeiling(100, 20, 0, 0)).toBe(100);
    expect(PASSWORD_CEILING_GOAL).toBe(0.95);
  });
});
