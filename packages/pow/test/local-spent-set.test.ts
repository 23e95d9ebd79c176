import { describe, expect, it } from 'vitest';
import { LocalSpentSet } from '../src/local-spent-set.js';

describe("a process's own spent-set (used while the shared store is down)", () => {
  it('refuses an id spent before until it expires', () => {
    const clock = { now: 0 };
    const spent = new LocalSpentSet(10, () => clock.now);
    expect(spent.spend('a', 1_000)).toBe(true);
    expect(spent.spend('a', 1_000)).toBe(false);
    clock.now = 1_000;
    expect(spent.spend('a', 1_000)).toBe(true);
  });

  it('stays within its limit: expired entries go first, then the oldest', () => {
    const clock = { now: 0 };
    const spent = new LocalSpentSet(3, () => clock.now);
    spent.spend('short', 10);
    spent.spend('b', 1_000);
    spent.spend('c', 1_000);
    clock.now = 20;
    spent.spend('d', 1_000);
    expect(spent.size).toBe(3);
    expect(spent.spend('b', 1_000)).toBe(false);
    spent.spend('e', 1_000);
    expect(spent.size).toBe(3);
    expect(spent.spend('c', 1_000)).toBe(false);
    // 'b' was the oldest live entry when 'e' came: it went, so it is accepted again.
    expect(spent.spend('b', 1_000)).toBe(true);
    expect(spent.size).toBe(3);
  });
});
