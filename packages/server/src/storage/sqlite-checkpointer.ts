import { Worker } from 'node:worker_threads';
import type { SqliteDriverName } from './sqlite-driver.js';

/** How often the checkpoint thread copies the write-ahead log into the database file. */
export const CHECKPOINT_INTERVAL_MS = 200;
/**
 * Pages in the log past which the thread makes it start over, holding writes back for that moment (see the worker):
 * 16 MB at SQLite's 4 KB pages, where SQLite's own checkpoint runs at 1,000 pages.
 */
export const WAL_LIMIT_FRAMES = 4096;
/** The longest close() waits for the thread's connection to close. */
const CLOSE_WAIT_MS = 2000;

/**
 * By default SQLite copies its write-ahead log back into the database file (a checkpoint) inside the COMMIT that
 * takes the log past 1,000 pages, and that COMMIT then waits for the checkpoint's fsyncs: 10-20 ms on this machine,
 * every few hundred writes, with the server's thread (and every request) waiting too. So the server's connection
 * runs with automatic checkpoints off (the caller sets `wal_autocheckpoint = 0`) and a worker thread with a
 * connection of its own checkpoints every CHECKPOINT_INTERVAL_MS instead (sqlite-checkpoint-worker.mjs), and makes
 * the log start over once it passes WAL_LIMIT_FRAMES (under steady writes it would otherwise never do so). Should
 * that thread fail (it cannot start, or a checkpoint fails), `fallBack` puts the connection back on automatic
 * checkpoints: slower commits now and then, nothing lost.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker;
  private done = false;
  /** Settles close()'s promise; set by close(). */
  private connectionClosed: () => void = () => {};

  constructor(location: string, driver: SqliteDriverName, private readonly fallBack: () => void) {
    this.worker = new Worker(new URL('./sqlite-checkpoint-worker.mjs', import.meta.url), {
      workerData: { driver, location, intervalMs: CHECKPOINT_INTERVAL_MS, walLimitFrames: WAL_LIMIT_FRAMES },
    });
    // Never what keeps a process alive; a closing server waits for its connection to close, not for it to end (close()).
    this.worker.unref();
    this.worker.on('message', (message: { failed?: string; closed?: true }) => {
      if (message.closed) this.connectionClosed();
      else if (message.failed !== undefined) this.fail();
    });
    this.worker.on('error', () => this.fail());
    this.worker.on('exit', () => this.fail());
  }

  /**
   * Asks the thread for a last checkpoint and to close its connection; resolves once it says the connection is closed
   * (at most CLOSE_WAIT_MS), so that a server started next on the same file does not meet the lock SQLite's last
   * connection takes while it checkpoints and removes the log. It does not wait for the thread to end: on Node 24 a
   * worker that used node:sqlite can take a long time to (see test/sqlite-gc.test.ts), and nothing here needs it to.
   */
  close(): Promise<void> {
    if (this.done) return Promise.resolve();
    this.done = true;
    const closed = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      timer.unref();
      this.connectionClosed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.worker.postMessage('close');
    return closed;
  }

  private fail(): void {
    this.connectionClosed();
    if (this.done) return;
    this.done = true;
    void this.worker.terminate();
    this.fallBack();
  }
}
