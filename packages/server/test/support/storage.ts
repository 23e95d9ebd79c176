import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { defaultClient, defaultRealm } from '../../src/model/defaults.js';
import type { Client, Role, User } from '../../src/model/types.js';
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

/**
 * A storage contract file's database: one fresh database of `kind` opened before the file's tests and dropped after
 * them (each test makes its own realm, `seedRealm`), so a file costs one PostgreSQL database, not one per test.
 */
export function useStorage(kind: string): () => Storage {
  let storage: Storage | undefined;
  let dir: string | undefined;
  let pgDb: { url: string; drop(): Promise<void> } | null = null;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'realmgate-storage-'));
    pgDb = kind === 'postgres' ? await createPgDatabase() : null;
    storage = await Storage.open(pgDb ? pgDb.url : `sqlite:${join(dir, 'test.db')}`);
  });
  afterAll(async () => {
    await storage?.close();
    await pgDb?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!storage) throw new Error('useStorage: the storage is opened in beforeAll');
    return storage;
  };
}

/** A realm with a user and a client of its own, for one contract test; `role`/`user`/`client` add more. */
export async function seedRealm(storage: Storage) {
  const realm = defaultRealm(randomUUID(), `r-${randomUUID().slice(0, 8)}`, Date.now());
  await storage.realms.insert(realm);
  const user = async (username: string): Promise<User> => {
    const u: User = {
      id: randomUUID(), realmId: realm.id, username, email: null, emailVerified: false, firstName: null, lastName: null,
      enabled: true, createdTimestamp: Date.now(), attributes: {}, serviceAccountClientId: null, passwordHash: null, passwordCreated: null,
    };
    await storage.users.insert(u);
    return u;
  };
  const client = async (clientId: string): Promise<Client> => {
    const c = defaultClient(randomUUID(), realm.id, clientId);
    await storage.clients.insert(c);
    return c;
  };
  const role = async (name: string): Promise<Role> => {
    const r: Role = { id: randomUUID(), realmId: realm.id, containerId: realm.id, clientRole: false, name, description: null };
    await storage.roles.insert(r);
    return r;
  };
  return { realm, user, client, role };
}
