import type { ChildProcess } from 'node:child_process';

/**
 * Helpers the benches' scripts share.
 *
 * The loop every load phase of the benches runs: `clients` concurrent loops calling `op` until `seconds` have
 * passed, each call's latency kept. Returns the latencies (sorted, ms) and the seconds the phase took.
 */
export async function concurrently(clients: number, seconds: number, op: () => Promise<void>): Promise<{ latencies: number[]; elapsed: number; at(q: number): number }> {
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { latencies, elapsed, at: (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0 };
}

/** Stops a server process the bench started (SIGTERM) and resolves when it has exited. */
export function stopper(proc: ChildProcess): () => Promise<void> {
  let exited = proc.exitCode !== null || proc.signalCode !== null;
  proc.on('exit', () => (exited = true));
  return () =>
    new Promise((done) => {
      if (exited) return done();
      proc.on('exit', () => done());
      proc.kill('SIGTERM');
    });
}
