import { describe, expect, it } from 'vitest';
import { VerificationPool } from '../src/index.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('VerificationPool', () => {
  it('runs at most `concurrency` tasks, queues `queueLimit` more and refuses the rest', async () => {
    const pool = new VerificationPool({ concurrency: 2, queueLimit: 1 });
    const gates = [deferred(), deferred(), deferred()];
    let running = 0;
    let peak = 0;
    const leases = gates.map(() => pool.reserve());
    expect(leases.every((lease) => lease !== null)).toBe(true);
    expect(pool.reserve()).toBeNull();
    const done = leases.map((lease, i) =>
      lease!.run(async () => {
        running++;
        peak = Math.max(peak, running);
        await gates[i].promise;
        running--;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(running).toBe(2);
    gates.forEach((gate) => gate.resolve());
    expect(await Promise.all(done)).toEqual([0, 1, 2]);
    expect(peak).toBe(2);
    leases.forEach((lease) => lease!.release());
    expect(pool.size).toBe(0);
    expect(pool.reserve()).not.toBeNull();
  });

  it('frees a place on release, once, even when the task failed', async () => {
    const pool = new VerificationPool({ concurrency: 1, queueLimit: 0 });
    const lease = pool.reserve()!;
    await expect(lease.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    lease.release();
    lease.release();
    expect(pool.size).toBe(0);
    const again = pool.reserve()!;
    expect(pool.reserve()).toBeNull();
    expect(await again.run(async () => 'ran')).toBe('ran');
  });

  it('suggests a Retry-After of at least one second, growing with the backlog', () => {
    const pool = new VerificationPool({ concurrency: 1, queueLimit: 1000 });
    expect(pool.retryAfterSeconds()).toBe(1);
    for (let i = 0; i < 100; i++) pool.reserve();
    // 100 leases at the initial 50 ms estimate on one slot.
    expect(pool.retryAfterSeconds()).toBe(5);
  });
});
