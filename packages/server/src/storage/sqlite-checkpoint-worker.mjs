// SQLite's WAL checkpoints on a thread of their own (started by sqlite-checkpointer.ts): a second connection to the
// same file that checkpoints every `intervalMs`. Plain JavaScript, so that it loads the same way under tsx, vitest
// and plain node.
import { parentPort, workerData } from 'node:worker_threads';

const { driver, location, intervalMs, walLimitFrames } = workerData;

/** The connection, and a call that runs a PASSIVE checkpoint and returns how many frames the log holds. */
async function open() {
  if (driver === 'node:sqlite') {
    // Node 22 warns on every load of node:sqlite; the main thread already said it once (or holds it back).
    const emitWarning = process.emitWarning;
    process.emitWarning = () => {};
    let database;
    try {
      database = new (process.getBuiltinModule('node:sqlite').DatabaseSync)(location);
    } finally {
      process.emitWarning = emitWarning;
    }
    // One statement for the thread's whole life, finalised when the connection closes.
    const passive = database.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    return { database, passive: () => passive.get().log };
  }
  const { default: SQLite } = await import('better-sqlite3');
  const database = new SQLite(location);
  return { database, passive: () => database.pragma('wal_checkpoint(PASSIVE)')[0].log };
}

const { database, passive } = await open();
// No busy timeout (SQLite's default): this connection never waits for the server's; a checkpoint that would have to
// is simply tried again at the next tick.
database.exec('PRAGMA synchronous = NORMAL');

const checkpoint = () => {
  try {
    // PASSIVE copies what it can without waiting for the server's readers or writers, who never wait for it either.
    // But the log starts over only when a write begins with all of it copied, which under a steady stream of writes
    // never happens. Past the limit, RESTART takes the write lock when no write is under way, copies what came in
    // since the PASSIVE one (the server's writes wait that long, once per walLimitFrames pages) and, when no reader
    // still needs the log, lets the next write start it over; else it gives up at once and the next tick tries again.
    if (passive() > walLimitFrames) database.exec('PRAGMA wal_checkpoint(RESTART)');
  } catch (error) {
    parentPort.postMessage({ failed: error instanceof Error ? error.message : String(error) });
  }
};
const timer = setInterval(checkpoint, intervalMs);

parentPort.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  checkpoint();
  database.close();
  parentPort.postMessage({ closed: true });
  parentPort.close();
});
