/**
 * Server verification cost, each figure beside a baseline measured in the same run:
 * - a valid solution's full verification vs one raw Argon2id hash with the same parameters (target <= 1.2);
 * - a submission rejected at each of steps 1-4 vs one full verification (target <= 0.01).
 * Run alone: npx tsx packages/pow/bench/verify.ts
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { hashRaw } from '@node-rs/argon2';
import type { Algorithm, Version } from '@node-rs/argon2';
import {
  decodeChallenge,
  encodeChallenge,
  ProofOfWork,
  resolveSettings,
  solve,
  VerificationPool,
} from '../src/index.js';
import type { Submission } from '../src/index.js';
import { MemoryStore } from '../test/memory-store.js';

export interface Figure {
  name: string;
  medianMs: number;
  baseline: string;
  baselineMs: number;
  ratio: number;
  target: number;
  ok: boolean;
}

const ROUNDS = 31;
const who = { realm: 'bench', flow: 'login', ip: '203.0.113.9' } as const;
/**
 * Each timed submission comes from its own client address: every submission counts towards its client's
 * rate, and one address posting 32 solutions in a row would soon be refused as stale_difficulty (step 3b)
 * instead of being verified.
 */
const client = (i: number) => ({ ...who, ip: `198.51.${100 + (i >> 8)}.${i & 255}` });

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function time(task: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await task();
  return performance.now() - started;
}

export async function run(): Promise<Figure[]> {
  const settings = resolveSettings();
  const clock = { now: Date.now() };
  const store = new MemoryStore(() => clock.now);
  const key = randomBytes(32);
  const pool = new VerificationPool({ concurrency: 1, queueLimit: 64 });
  const pow = new ProofOfWork({ store, key, pool, now: () => clock.now });
  const late = () => {
    clock.now += settings.min_solve_time_ms + 1;
  };

  // Solutions prepared beforehand: only verification is timed.
  const solved: Submission[] = [];
  for (let i = 0; i < ROUNDS + 1; i++) {
    const challenge = await pow.issueChallenge(client(i), settings);
    solved.push({ ...client(i), challenge, nonce: (await solve(challenge)).nonce });
  }
  late();
  const { m, t } = { m: settings.argon2_memory_kb, t: settings.argon2_iterations };
  const raw = () =>
    hashRaw('12345', {
      algorithm: 2 as Algorithm,
      version: 1 as Version,
      memoryCost: m,
      timeCost: t,
      parallelism: 1,
      outputLen: 32,
      salt: randomBytes(16),
    });

  // Warm-up of both paths, then interleaved so that drift in machine load hits both alike.
  await raw();
  await pow.verifySolution(solved.pop()!, settings);
  const verifyTimes: number[] = [];
  const rawTimes: number[] = [];
  for (const submission of solved) {
    rawTimes.push(await time(raw));
    verifyTimes.push(
      await time(async () => {
        const verdict = await pow.verifySolution(submission, settings);
        if (!verdict.ok) throw new Error(`bench solution rejected: ${verdict.reason}`);
      }),
    );
  }
  const verifyMs = median(verifyTimes);
  const rawMs = median(rawTimes);

  const fresh = await pow.issueChallenge(who, settings);
  late();
  const spent = solved[0];
  const rejections: [string, string, Submission][] = [
    ['step 1 honeypot', 'honeypot', { ...who, challenge: fresh, honeypot: 'x' }],
    ['step 2 bad signature', 'bad_signature', { ...who, challenge: encodeChallenge(decodeChallenge(fresh), randomBytes(32)) }],
    ['step 3 too fast', 'too_fast', who],
    ['step 4 replayed', 'replayed', spent],
  ];
  const figures: Figure[] = [
    {
      name: 'valid solution, full verification',
      medianMs: verifyMs,
      baseline: 'one raw Argon2id hashRaw, same parameters',
      baselineMs: rawMs,
      ratio: verifyMs / rawMs,
      target: 1.2,
      ok: verifyMs / rawMs <= 1.2,
    },
  ];
  let next = ROUNDS + 1;
  for (const [name, reason, template] of rejections) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // Step 3 needs a challenge issued just now; the others reuse theirs. A replay comes from a new client,
      // whose rate is low, so that it reaches step 4.
      const submission = name.startsWith('step 3')
        ? { ...template, challenge: await pow.issueChallenge(who, settings) }
        : name.startsWith('step 4')
          ? { ...template, ip: client(next++).ip }
          : template;
      times.push(
        await time(async () => {
          const verdict = await pow.verifySolution(submission, settings);
          if (verdict.ok || verdict.reason !== reason) throw new Error(`${name}: ${JSON.stringify(verdict)}`);
        }),
      );
    }
    const ms = median(times);
    figures.push({
      name: `rejected at ${name}`,
      medianMs: ms,
      baseline: 'one full verification',
      baselineMs: verifyMs,
      ratio: ms / verifyMs,
      target: 0.01,
      ok: ms / verifyMs <= 0.01,
    });
  }
  return figures;
}

/** As bench/results.json keeps figures: name, value, unit, baseline, ratio, goal. */
export function entriesOf(figures: Figure[]) {
  return figures.map((f) => ({
    name: f.name,
    value: f.medianMs,
    unit: 'ms',
    baseline: { name: f.baseline, value: f.baselineMs },
    ratio: f.ratio,
    goal: f.target,
  }));
}

export function format(figures: Figure[]): string {
  return figures
    .map(
      (f) =>
        `  ${f.ok ? 'ok  ' : 'MISS'} ${f.name}: ${f.medianMs.toFixed(3)} ms vs ${f.baseline} ` +
        `${f.baselineMs.toFixed(3)} ms = ${f.ratio.toFixed(4)} (target <= ${f.target})`,
    )
    .join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(format(await run()));
}
