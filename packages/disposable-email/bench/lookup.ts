/**
 * Lookup throughput of isDisposableEmail against mailchecker.isValid on the same addresses in the same run,
 * plus refresh time and the heap taken by one list. `npx tsx packages/disposable-email/bench/lookup.ts`
 * (add `NODE_OPTIONS=--expose-gc` for steadier memory figures; without it gc is enabled through v8 flags).
 */
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import mailchecker from 'mailchecker';
import { Blocklist, defaultBlocklist, isDisposableEmail } from '../src/blocklist.js';

export interface LookupBenchResult {
  addresses: number;
  disposable: number;
  /** Addresses on which the two disagree (expected 0: every generated address is well-formed). */
  mismatches: number;
  oursOpsPerSec: number;
  mailcheckerOpsPerSec: number;
  /** Our time divided by mailchecker's for the same addresses; below 1 means faster. */
  ratio: number;
  refreshMs: number;
  domains: number;
  listHeapBytes: number;
}

/** Deterministic 32-bit PRNG (mulberry32), so every run measures the same addresses. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ORDINARY = [
  'gmail.com',
  'outlook.com',
  'yahoo.com',
  'proton.me',
  'icloud.com',
  'example.org',
  'uni-hamburg.de',
  'mail.company.co.uk',
];

/** One third listed domains, one third subdomains of listed domains, one third ordinary domains; mixed case. */
export function addresses(count: number, seed = 42): string[] {
  const next = random(seed);
  const listed = [...mailchecker.blacklist()].sort();
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const result: string[] = [];
  for (let i = 0; i < count; i++) {
    const local = `user.${i}${next() < 0.2 ? '+tag' : ''}`;
    const kind = i % 3;
    let domain =
      kind === 0 ? pick(listed) : kind === 1 ? `${pick(['mx', 'a.b', 'inbox', 'x1'])}.${pick(listed)}` : pick(ORDINARY);
    if (next() < 0.25) domain = domain.toUpperCase();
    result.push(`${local}@${domain}`);
  }
  return result;
}

function gcFunction(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function timeMs(fn: () => void): number {
  const started = performance.now();
  fn();
  return performance.now() - started;
}

export async function run(count = 100_000): Promise<LookupBenchResult> {
  const input = addresses(count);
  let disposableCount = 0;
  let mismatches = 0;
  for (const address of input) {
    const disposable = isDisposableEmail(address);
    if (disposable === mailchecker.isValid(address)) mismatches++;
    if (disposable) disposableCount++;
  }

  // Best of several alternating rounds, after the warm-up above, so neither side pays for JIT or GC alone.
  // Results go to `sink` so the loops cannot be optimised away.
  let sink = 0;
  let oursBest = Infinity;
  let theirsBest = Infinity;
  for (let round = 0; round < 5; round++) {
    oursBest = Math.min(
      oursBest,
      timeMs(() => {
        let n = 0;
        for (let i = 0; i < input.length; i++) if (isDisposableEmail(input[i])) n++;
        sink += n;
      }),
    );
    theirsBest = Math.min(
      theirsBest,
      timeMs(() => {
        let n = 0;
        for (let i = 0; i < input.length; i++) if (!mailchecker.isValid(input[i])) n++;
        sink -= n;
      }),
    );
  }
  if (sink !== 0 && mismatches === 0) throw new Error('lookups disagreed between rounds');

  const refreshTimes: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await defaultBlocklist.refresh();
    refreshTimes.push(performance.now() - started);
  }
  refreshTimes.sort((a, b) => a - b);

  const gc = gcFunction();
  gc();
  const before = process.memoryUsage().heapUsed;
  const list = new Blocklist();
  gc();
  const listHeapBytes = process.memoryUsage().heapUsed - before;

  return {
    addresses: input.length,
    disposable: disposableCount,
    mismatches,
    oursOpsPerSec: Math.round((input.length / oursBest) * 1000),
    mailcheckerOpsPerSec: Math.round((input.length / theirsBest) * 1000),
    ratio: oursBest / theirsBest,
    refreshMs: refreshTimes[Math.floor(refreshTimes.length / 2)],
    domains: list.size,
    listHeapBytes,
  };
}

export function format(result: LookupBenchResult): string {
  return [
    `disposable-email lookup, ${result.addresses} addresses ` +
      `(${result.disposable} disposable, ${result.mismatches} disagreements with mailchecker)`,
    `  isDisposableEmail   ${result.oursOpsPerSec.toLocaleString('en')} ops/s`,
    `  mailchecker.isValid ${result.mailcheckerOpsPerSec.toLocaleString('en')} ops/s`,
    `  ratio (our time / mailchecker's time) ${result.ratio.toFixed(3)} (target <= 1.0)`,
    `  refresh ${result.refreshMs.toFixed(1)} ms (median of 5), ${result.domains} domains`,
    `  list heap ${(result.listHeapBytes / 1024 / 1024).toFixed(1)} MiB`,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(format(await run()));
}
