/**
 * What one more PostgreSQL statement costs a form login: a one-row insert (its own commit) through the server's
 * database handle, timed back to back, and after the process and the database have been idle for as long as a
 * login's password check (20 ms) — the first, second and third statement after the pause.
 * `npx tsx packages/event-webhook/bench/round-trip.ts [samples]`; needs PostgreSQL at 127.0.0.1:5432 (a database of
 * its own, dropped afterwards).
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { openDatabase } from '../../server/src/storage/db.js';
import { createPgDatabase } from '../../server/test/support/server.js';
import { quantile } from './login.js';

const PAUSE_MS = 20;

export interface RoundTrips {
  samples: number;
  /** Medians, ms. */
  backToBack: number;
  afterPause: [number, number, number];
}

export async function run(samples = 200): Promise<RoundTrips> {
  const database = await createPgDatabase();
  const handle = await openDatabase(database.url);
  try {
    await sql`create table round_trip_probe (id integer primary key, v text)`.execute(handle.db);
    let id = 0;
    const insert = async () => {
      const started = performance.now();
      await sql`insert into round_trip_probe (id, v) values (${id++}, ${'x'.repeat(100)})`.execute(handle.db);
      return performance.now() - started;
    };
    for (let i = 0; i < 50; i++) await insert();
    const backToBack: number[] = [];
    for (let i = 0; i < samples; i++) backToBack.push(await insert());
    const afterPause: number[][] = [[], [], []];
    for (let i = 0; i < samples; i++) {
      await new Promise((done) => setTimeout(done, PAUSE_MS));
      for (const times of afterPause) times.push(await insert());
    }
    return { samples, backToBack: quantile(backToBack, 0.5), afterPause: afterPause.map((times) => quantile(times, 0.5)) as [number, number, number] };
  } finally {
    await handle.close();
    await database.drop();
  }
}

export function format(result: RoundTrips): string {
  const [first, second, third] = result.afterPause.map((ms) => ms.toFixed(2));
  return [
    `  one-row insert, back to back (median of ${result.samples}): ${result.backToBack.toFixed(2)} ms`,
    `  after ${PAUSE_MS} ms idle, 1st / 2nd / 3rd statement: ${first} / ${second} / ${third} ms`,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  console.log(format(await run(process.argv[2] ? Number(process.argv[2]) : undefined)));
}
