import { describe, expect, it } from 'vitest';
import { difficultyFor, difficultyRange, rateKey } from '../src/index.js';
import { smallSettings } from './helpers.js';

describe('difficultyFor', () => {
  it('is the base difficulty at or below the threshold', () => {
    for (const attempts of [0, 1, 9, 10]) expect(difficultyFor(attempts, 1, 4, 10)).toBe(1);
  });

  it('adds one bit per further threshold of attempts, started', () => {
    const table: [number, number][] = [
      [11, 2],
      [20, 2],
      [21, 3],
      [30, 3],
      [31, 4],
      [40, 4],
    ];
    for (const [attempts, expected] of table) expect(difficultyFor(attempts, 1, 10, 10)).toBe(expected);
  });

  it('never exceeds the max', () => {
    expect(difficultyFor(41, 1, 4, 10)).toBe(4);
    expect(difficultyFor(1_000_000, 1, 4, 10)).toBe(4);
    expect(difficultyFor(6, 2, 8, 5)).toBe(3);
    expect(difficultyFor(1000, 2, 8, 5)).toBe(8);
  });

  it('works with a threshold of one', () => {
    expect([1, 2, 3, 4].map((a) => difficultyFor(a, 0, 2, 1))).toEqual([0, 1, 2, 2]);
  });
});

describe('difficultyRange', () => {
  it('uses the bounds of the configured algorithm and the shared threshold', () => {
    expect(difficultyRange(smallSettings())).toEqual({ base: 2, max: 4, threshold: 3 });
    expect(difficultyRange(smallSettings({ hash_algorithm: 'sha256' }))).toEqual({ base: 8, max: 10, threshold: 3 });
  });
});

describe('rateKey', () => {
  it('keeps realm and IPv6 addresses apart', () => {
    expect(rateKey('a:b', 'c')).not.toBe(rateKey('a', 'b:c'));
    expect(rateKey('demo', '2001:db8::1')).toBe('rate:demo:2001:db8::1');
  });
});
