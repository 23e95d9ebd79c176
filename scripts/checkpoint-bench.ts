/**
 * How long the server's thread waits in SQLite commits: with the write-ahead log checkpointed on a thread of its own
 * (packages/server/src/storage/sqlite-checkpointer.ts, what the server does) beside SQLite's automatic checkpoint,
 * which runs inside the commit that takes the log past 1,000 pages and waits for its fsyncs. Same run, alternately.
 * Each run writes WRITES rows of 1 KB (with an index) through the driver, one commit each, pausing 1 ms every 4 as
 * a server's event loop does between requests, and times every commit.
 * `npx tsx scripts/checkpoint-bench.ts`; also `npm run bench -- checkpoints`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultSqliteDriver, openSqliteDriver } from '../packages/server/src/storage/sqlite-driver.js';
import { median } from './bench-support.js';

const WRITES = 12_000;
const ROUNDS = 2;
/** A commit that took longer than this held up every request waiting behind it. */
const SLOW_MS = 5;

export interface CommitFigures {
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  /** Commits over SLOW_MS, and the ms the thread spent in them, per 10,000 commits. */
  slowPer10k: number;
  slowMsPer10k: number;
}

export interface CheckpointBench {
  driver: string;
  writes: number;
  rounds: number;
  /** Medians over the rounds. */
  thread: CommitFigures;
  sqlite: CommitFigures;
  /**
   * sqlite.slowMsPer10k / thread.slowMsPer10k: how many times less the thread's way holds the server up; null when the
   * thread's runs had no slow commit at all (no finite ratio).
   */
  ratio: number | null;
  /** sqlite.p999Ms / thread.p999Ms. */
  p999Ratio: number;
}

async function commits(checkpointThread: boolean, writes: number): Promise<CommitFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-checkpoint-bench-'));
  const database = await openSqliteDriver(join(dir, 'bench.db'), defaultSqliteDriver(), { checkpointThread });
  try {
    database.prepare('create table probe (id integer primary key, tag text, body text)').run([]);
    database.prepare('create index probe_tag on probe (tag)').run([]);
    const insert = database.prepare('insert into probe (id, tag, body) values (?, ?, ?)');
    const body = 'x'.repeat(1000);
    const times: number[] = [];
    for (let i = 0; i < writes; i++) {
      if (i % 4 === 0) await new Promise((done) => setTimeout(done, 1));
      const started = performance.now();
      insert.run([i, Math.random().toString(36), body]);
      times.push(performance.now() - started);
    }
    const sorted = [...times].sort((a, b) => a - b);
    const slow = times.filter((ms) => ms > SLOW_MS);
    const per10k = 10_000 / writes;
    return {
      p99Ms: sorted[Math.floor(writes * 0.99)],
      p999Ms: sorted[Math.floor(writes * 0.999)],
      maxMs: sorted[writes - 1],
      slowPer10k: slow.length * per10k,
      slowMsPer10k: slow.reduce((sum, ms) => sum + ms, 0) * per10k,
    };
  } finally {
    database.close();
    await database.closed();
    rmSync(dir, { recursive: true, force: true });
  }
}

const medianFigures = (runs: CommitFigures[]): CommitFigures => ({
  p99Ms: median(runs.map((r) => r.p99Ms)),
  p999Ms: median(runs.map((r) => r.p999Ms)),
  maxMs: median(runs.map((r) => r.maxMs)),
  slowPer10k: median(runs.map((r) => r.slowPer10k)),
  slowMsPer10k: median(runs.map((r) => r.slowMsPer10k)),
});

export async function run(writes = WRITES, rounds = ROUNDS): Promise<CheckpointBench> {
  const thread: CommitFigures[] = [];
  const sqlite: CommitFigures[] = [];
  for (let round = 0; round < rounds; round++) {
    // Alternately, each going first in turn.
    const order = round % 2 === 0 ? [true, false] : [false, true];
    for (const own of order) (own ? thread : sqlite).push(await commits(own, writes));
  }
  const t = medianFigures(thread);
  const s = medianFigures(sqlite);
  return { driver: defaultSqliteDriver(), writes, rounds, thread: t, sqlite: s, ratio: t.slowMsPer10k > 0 ? s.slowMsPer10k / t.slowMsPer10k : null, p999Ratio: s.p999Ms / t.p999Ms };
}

export function format(result: CheckpointBench): string {
  const line = (name: string, f: CommitFigures) =>
    `  ${name}: p99 ${f.p99Ms.toFixed(2)} ms, p99.9 ${f.p999Ms.toFixed(2)} ms, max ${f.maxMs.toFixed(1)} ms; commits over ${SLOW_MS} ms per 10,000: ${f.slowPer10k.toFixed(1)}, ${f.slowMsPer10k.toFixed(0)} ms in them`;
  return [
    `  ${result.writes} commits of 1 KB on ${result.driver}, median of ${result.rounds} runs each, alternately`,
    line('checkpoints on their own thread (the server)', result.thread),
    line("SQLite's automatic checkpoint (baseline)   ", result.sqlite),
    `  time the server's thread spent in slow commits, baseline / thread: ${result.ratio === null ? 'none with the thread' : result.ratio.toFixed(1)}`,
    `  p99.9 of a commit, baseline / thread: ${result.p999Ratio.toFixed(1)}`,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  console.log(format(await run()));
}
