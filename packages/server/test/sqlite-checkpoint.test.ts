import { closeSync, existsSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/storage/db.js';
import { WAL_LIMIT_FRAMES } from '../src/storage/sqlite-checkpointer.js';
import { eventually } from './support/server.js';

const walRestarts = (wal: string) => {
  const header = Buffer.alloc(16);
  const fd = openSync(wal, 'r');
  try {
    readSync(fd, header, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  return header.readUInt32BE(12);
};

const size = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/**
 * Runs `write` while another thread holds the file's write lock as the checkpoint thread's RESTART does, for a
 * moment. The server's statements run synchronously on its thread, so only its busy timeout can make `write` wait.
 */
async function holdWriteLock(file: string, write: () => Promise<unknown>): Promise<void> {
  const holder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const database = new (require(workerData.module))(workerData.file, { timeout: 0 });
     database.exec('begin immediate');
     parentPort.postMessage('held');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
     database.exec('commit');
     database.close();`,
    { eval: true, workerData: { file, module: createRequire(import.meta.url).resolve('better-sqlite3') } },
  );
  const exited = new Promise((done) => holder.once('exit', done));
  await new Promise((held) => holder.once('message', held));
  await write();
  await exited;
}

describe('SQLite write-ahead log checkpointed off the server thread', () => {
  const opened: { handle: DatabaseHandle; dir: string }[] = [];
  const open = async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-checkpoint-'));
    const handle = await openDatabase(`sqlite:${join(dir, 'realmgate.db')}`);
    await sql`create table probe (id integer primary key, body text)`.execute(handle.db);
    opened.push({ handle, dir });
    return { db: handle.db, file: join(dir, 'realmgate.db') };
  };
  afterEach(async () => {
    for (const { handle, dir } of opened.splice(0)) {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the server's connection never checkpoints; the pages still reach the database file", async () => {
    const { db, file } = await open();
    const setting = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
    expect(setting.rows[0].wal_autocheckpoint).toBe(0);
    const before = size(file);
    for (let i = 0; i < 2000; i++) await sql`insert into probe (body) values (${'x'.repeat(1000)})`.execute(db);
    // 2 MB written: with no checkpoint at all it would all stay in the log.
    await eventually(() => (size(file) > before + 1_500_000 ? true : null), 5000);
  });

  it('starts the log over once it passes its limit, under writes that never pause', async () => {
    const { db, file } = await open();
    const body = 'y'.repeat(4000);
    // Four times the limit through the log (each insert adds a page or more), with a short pause now and then as a
    // busy server's event loop has between requests: the log is never all copied when a write begins, so only the
    // thread's RESTART makes it start over.
    let id = 0;
    while (id < 4 * WAL_LIMIT_FRAMES) {
      for (let i = 0; i < 100; i++) await sql`insert into probe (id, body) values (${id++}, ${body})`.execute(db);
      await new Promise((done) => setTimeout(done, 1));
    }
    // The WAL header's checkpoint sequence number (bytes 12-15, big-endian) counts the times the log started over.
    await eventually(() => (walRestarts(`${file}-wal`) > 0 ? true : null), 5000);
    const rows = await sql<{ n: number }>`select count(*) as n from probe`.execute(db);
    expect(Number(rows.rows[0].n)).toBe(id);
  });

  it("never holds the server's write back while the server's own transaction still reads the log", async () => {
    const { db } = await open();
    const body = 'z'.repeat(4000);
    // Past the limit, so that every tick of the thread tries to make the log start over.
    for (let id = 0; id < 1.5 * WAL_LIMIT_FRAMES; id++) await sql`insert into probe (id, body) values (${id}, ${body})`.execute(db);
    let waited = 0;
    await db.transaction().execute(async (trx) => {
      await sql`select count(*) from probe`.execute(trx); // a reader of the log, across an await
      await new Promise((done) => setTimeout(done, 600)); // three ticks of the thread meanwhile
      const started = performance.now();
      await sql`insert into probe (body) values ('after')`.execute(trx);
      waited = performance.now() - started;
    });
    // A thread that waited for readers while holding the write lock would keep this write waiting for the whole
    // busy timeout (5 s), the server's thread asleep in it.
    expect(waited).toBeLessThan(2500);
    const setting = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
    expect(setting.rows[0].wal_autocheckpoint).toBe(0); // the thread did not give up
  });

  it("a transaction that reads, waits, then writes never meets the thread's write lock (database is locked)", async () => {
    const { db } = await open();
    const body = 'w'.repeat(4000);
    // Past the limit, so that the thread's RESTART (which holds the write lock while it copies) runs at every tick.
    let id = 0;
    while (id < 1.5 * WAL_LIMIT_FRAMES) await sql`insert into probe (id, body) values (${id++}, ${body})`.execute(db);
    // Transactions as the server's own are: a read, an await, then writes; for about ten of the thread's ticks, with
    // the log kept past the limit by their writes. A deferred BEGIN failed here with SQLITE_BUSY.
    const until = performance.now() + 2000;
    let transactions = 0;
    while (performance.now() < until) {
      await db.transaction().execute(async (trx) => {
        await sql`select max(id) from probe`.execute(trx);
        await new Promise((done) => setTimeout(done, transactions % 3));
        for (let i = 0; i < 20; i++) await sql`insert into probe (id, body) values (${id++}, ${body})`.execute(trx);
      });
      transactions++;
    }
    const rows = await sql<{ n: number }>`select count(*) as n from probe`.execute(db);
    expect(Number(rows.rows[0].n)).toBe(id);
    expect(transactions).toBeGreaterThan(10);
  });

  it("opens at once on a file whose last server is still closing (its thread's last checkpoint under way)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realmgate-checkpoint-'));
    const url = `sqlite:${join(dir, 'realmgate.db')}`;
    try {
      const body = 'r'.repeat(4000);
      // As a restarted server does: the previous one closes (its thread makes a last checkpoint and closes its
      // connection, the file's last, which removes the log under an exclusive lock) and the next one opens the same
      // file straight away.
      for (let round = 0; round < 30; round++) {
        const handle = await openDatabase(url);
        if (round === 0) await sql`create table probe (id integer primary key, body text)`.execute(handle.db);
        for (let i = 0; i < 200; i++) await sql`insert into probe (body) values (${body})`.execute(handle.db);
        await handle.close();
      }
      const handle = await openDatabase(url);
      const rows = await sql<{ n: number }>`select count(*) as n from probe`.execute(handle.db);
      await handle.close();
      expect(Number(rows.rows[0].n)).toBe(30 * 200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('closes at once, and a directory removed right after leaves no error behind', async () => {
    const surfaced: unknown[] = [];
    const record = (error: unknown) => void surfaced.push(error);
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
    try {
      const dir = mkdtempSync(join(tmpdir(), 'realmgate-checkpoint-'));
      const handle = await openDatabase(`sqlite:${join(dir, 'realmgate.db')}`);
      await sql`create table probe (id integer primary key)`.execute(handle.db);
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
      expect(existsSync(dir)).toBe(false);
      // The thread may still be opening or closing its connection: whatever it meets must not surface here.
      await new Promise((done) => setTimeout(done, 500));
    } finally {
      process.off('uncaughtException', record);
      process.off('unhandledRejection', record);
    }
    expect(surfaced).toEqual([]);
  });

  it("a write that meets another connection's write lock (a RESTART copying pages) waits for it, no SQLITE_BUSY", async () => {
    const { db, file } = await open();
    await holdWriteLock(file, () => sql`insert into probe (id, body) values (1, 'autocommit')`.execute(db));
    await holdWriteLock(file, () => db.transaction().execute((trx) => sql`insert into probe (id, body) values (2, 'transaction')`.execute(trx)));
    const rows = await sql<{ id: number }>`select id from probe order by id`.execute(db);
    expect(rows.rows.map((r) => Number(r.id))).toEqual([1, 2]);
  });
});
