import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Storage } from '../../src/storage/index.js';
import { createPgDatabase } from './server.js';

/** A fresh database of each kind (`sqlite` or `postgres`) for repository tests, dropped afterwards. */
export async function withStorage(kind: string, work: (storage: Storage) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-storage-'));
  const pgDb = kind === 'postgres' ? await createPgDatabase() : null;
  try {
    const storage = await Storage.open(pgDb ? pgDb.url : `sqlite:${join(dir, 'test.db')}`);
    try {
      await work(storage);
    } finally {
      await storage.close();
    }
  } finally {
    await pgDb?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
