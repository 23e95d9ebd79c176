import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type KyselyPlugin } from 'kysely';
import type { OutboxItemInput } from '@realmgate/spi';
import { describe, expect, it } from 'vitest';
import { defaultRealm } from '../src/model/defaults.js';
import { Storage } from '../src/storage/index.js';
import { OutboxRepository } from '../src/storage/outbox.js';
import { DependencyUnavailableError } from '../src/store/index.js';
import { createPgDatabase, databases } from './support/server.js';

/** A fresh database of each kind with one realm, dropped afterwards. */
async function withStorage(kind: string, work: (storage: Storage, realmId: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'realmgate-outbox-'));
  const pgDb = kind === 'postgres' ? await createPgDatabase() : null;
  try {
    const storage = await Storage.open(pgDb ? pgDb.url : `sqlite:${join(dir, 'outbox.db')}`);
    try {
      await storage.realms.insert(defaultRealm(randomUUID(), 'outbox', Date.now()));
      await work(storage, (await storage.realms.byName('outbox'))!.id);
    } finally {
      await storage.close();
    }
  } finally {
    await pgDb?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const item = (realmId: string, id: string, orderKey: string | null, endpoint = 'client-a'): OutboxItemInput => ({
  id,
  realmId,
  endpoint,
  endpointLabel: endpoint,
  orderKey,
  type: 'LOGIN',
  label: orderKey,
  payload: JSON.stringify({ id }),
  maxAttempts: 3,
});

/** Nodes a and b on one database, reading one clock. */
const twoNodes = (storage: Storage, clock: () => number) =>
  ['node-a', 'node-b'].map((node) => new OutboxRepository(storage.db, storage.dialect, 'ext-test', node, clock));

const attempt = { startedAt: 0, durationMs: 1, status: 503, error: '503 Service Unavailable', responseExcerpt: 'down' };

describe.each(databases)('OutboxRepository on %s', (kind) => {
  it('claims in order, one item per user at a time, leases, and lets another node take an expired lease', async () => {
    await withStorage(kind, async (storage, realmId) => {
      let now = 1_000_000;
      const [a, b] = twoNodes(storage, () => now);
      await a.enqueue([item(realmId, 'u1-1', 'u1'), item(realmId, 'u1-2', 'u1'), item(realmId, 'u2-1', 'u2'), item(realmId, 'x', null)]);
      await a.enqueue([item(realmId, 'u1-1', 'u1')]); // the same id again: ignored

      const first = await a.claimDue(10, 5000);
      expect(first.map((i) => i.id).sort()).toEqual(['u1-1', 'u2-1', 'x']); // u1-2 waits for u1-1
      expect(first.every((i) => i.state === 'sending' && i.claimedBy === 'node-a')).toBe(true);
      expect(await b.claimDue(10, 5000)).toEqual([]);

      // u1-1 fails and is due again in 1 s: u1-2 still waits behind it.
      const u11 = first.find((i) => i.id === 'u1-1')!;
      expect((await a.finishAttempt(u11, attempt, { state: 'pending', dueAt: now + 1000 }, { pauseAfterFailures: 0 })).recorded).toBe(true);
      expect(await b.claimDue(10, 5000)).toEqual([]);
      now += 1000;
      const again = await b.claimDue(10, 5000);
      expect(again.map((i) => i.id)).toEqual(['u1-1']);
      expect(again[0]).toMatchObject({ attempts: 1, totalAttempts: 1, claimedBy: 'node-b', lastStatus: 503 });

      // node a "dies" holding u2-1 and x: after the lease (5 s from its claim) node b takes them.
      now += 3999;
      expect((await b.claimDue(10, 5000)).map((i) => i.id)).toEqual([]);
      now += 1;
      expect((await b.claimDue(10, 5000)).map((i) => i.id).sort()).toEqual(['u2-1', 'x']);
      // node a's late result is refused: node b owns them now
      const lost = first.find((i) => i.id === 'x')!;
      expect((await a.finishAttempt(lost, { ...attempt, status: 204, error: null }, { state: 'delivered' }, { pauseAfterFailures: 0 })).recorded).toBe(false);

      // delivered u1-1 releases u1-2
      expect((await b.finishAttempt(again[0], { ...attempt, status: 204, error: null }, { state: 'delivered' }, { pauseAfterFailures: 0 })).recorded).toBe(true);
      expect((await a.claimDue(10, 5000)).map((i) => i.id)).toEqual(['u1-2']);
      const log = await a.attempts(['u1-1']);
      expect(log.get('u1-1')!.map((x) => [x.number, x.node, x.status])).toEqual([
        [1, 'node-a', 503],
        [2, 'node-b', 204],
      ]);
    });
  });

  it('a node that dies mid-batch: what it recorded stays recorded, the rest is claimable after its lease; release gives items back at once', async () => {
    await withStorage(kind, async (storage, realmId) => {
      let now = 4_000_000;
      const [a, b] = twoNodes(storage, () => now);
      // Six users with two deliveries each: m0…m5 first, m6…m11 behind them.
      await a.enqueue(Array.from({ length: 12 }, (_, i) => item(realmId, `m${i}`, `u${i % 6}`)));
      const batch = (await a.claimDue(100, 5000)).sort((x, y) => x.id.localeCompare(y.id));
      expect(batch.map((i) => i.id)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5']);
      const ok = { ...attempt, status: 204, error: null };
      const delivered = { state: 'delivered' } as const;
      // Node a records three of them in one group commit, then dies holding the other three.
      const results = await Promise.all(batch.slice(0, 3).map((i) => a.finishAttempt(i, ok, delivered, { pauseAfterFailures: 0 })));
      expect(results.map((r) => r.recorded)).toEqual([true, true, true]);
      // The recorded ones let their users' next deliveries go; the others' users wait for the lease.
      const next = (await b.claimDue(100, 5000)).sort((x, y) => x.id.localeCompare(y.id));
      expect(next.map((i) => i.id)).toEqual(['m6', 'm7', 'm8']);
      for (const i of next) expect((await b.finishAttempt(i, ok, delivered, { pauseAfterFailures: 0 })).recorded).toBe(true);
      now += 4999;
      expect(await b.claimDue(100, 5000)).toEqual([]);
      now += 1;
      const taken = (await b.claimDue(100, 5000)).sort((x, y) => x.id.localeCompare(y.id));
      expect(taken.map((i) => i.id)).toEqual(['m3', 'm4', 'm5']); // never m0…m2 again
      expect(taken.every((i) => i.attempts === 0 && i.claimedBy === 'node-b')).toBe(true);
      // Node a's late record of one of them is refused: node b holds it now.
      expect((await a.finishAttempt(batch[3], ok, delivered, { pauseAfterFailures: 0 })).recorded).toBe(false);

      // Node b gives m3 back unsent: due at once, for any node; only b's own items are given back.
      expect(await a.release([taken[0]])).toBe(0);
      expect(await b.release([taken[0]])).toBe(1);
      expect(await b.release([taken[0]])).toBe(0);
      expect((await b.finishAttempt(taken[0], ok, delivered, { pauseAfterFailures: 0 })).recorded).toBe(false);
      const again = await a.claimDue(100, 5000);
      expect(again.map((i) => i.id)).toEqual(['m3']);
      expect(again[0]).toMatchObject({ attempts: 0, totalAttempts: 0, claimedBy: 'node-a' });
      const log = await a.attempts(['m0', 'm3']);
      expect(log.get('m0')!.map((x) => x.node)).toEqual(['node-a']);
      expect(log.get('m3')).toEqual([]);
    });
  });

  it('pauses an endpoint after N consecutive failures, skips it while paused, requeues dead items, purges old ones', async () => {
    await withStorage(kind, async (storage, realmId) => {
      let now = 2_000_000;
      const store = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => now);
      await store.enqueue([item(realmId, 'd1', 'u1'), item(realmId, 'd2', 'u2'), item(realmId, 'other', 'u3', 'client-b')]);
      const [d1, d2] = (await store.claimDue(2, 60_000)).sort((x, y) => x.id.localeCompare(y.id));
      expect((await store.finishAttempt(d1, attempt, { state: 'dead' }, { pauseAfterFailures: 2 })).endpoint).toMatchObject({ paused: false, consecutiveFailures: 1 });
      expect((await store.finishAttempt(d2, attempt, { state: 'pending', dueAt: now }, { pauseAfterFailures: 2 })).endpoint).toMatchObject({ paused: true, consecutiveFailures: 2 });
      // paused: d2 waits, the other client's item goes
      expect((await store.claimDue(10, 60_000)).map((i) => i.id)).toEqual(['other']);
      // d2 (pending, due) is on a paused endpoint and 'other' is being sent: nothing waits that could go
      expect(await store.stats(now)).toEqual({ depth: 2, oldestDueAt: null });
      now += 5;
      await store.setPaused(realmId, 'client-b', true, 'test');
      await store.setPaused(realmId, 'client-a', false, null);
      expect(await store.stats(now)).toEqual({ depth: 2, oldestDueAt: now - 5 }); // d2, due 5 ms ago
      await store.setPaused(realmId, 'client-b', false, null);
      await store.setPaused(realmId, 'client-a', false, null);
      expect((await store.claimDue(10, 60_000)).map((i) => i.id)).toEqual(['d2']);

      expect(await store.requeue({ realmId, states: ['dead'] })).toBe(1);
      expect((await store.list({ realmId, ids: ['d1'] }))[0]).toMatchObject({ state: 'pending', attempts: 0, totalAttempts: 1 });
      const [d1again] = await store.claimDue(10, 60_000);
      await store.finishAttempt(d1again, { ...attempt, status: 200, error: null }, { state: 'delivered' }, { pauseAfterFailures: 2 });
      now += 1000;
      expect(await store.purgeFinishedBefore(now, 100)).toBe(1); // d1 only: the others are not finished
      expect((await store.list({ realmId })).map((i) => i.id).sort()).toEqual(['d2', 'other']);
      const orphans = await sql<{ n: number }>`select count(*) as n from provider_outbox_attempt where item_id = 'd1'`.execute(storage.db);
      expect(Number(orphans.rows[0].n)).toBe(0);
    });
  });
});

describe.each(databases)('OutboxRepository on %s: an event\'s write', (kind) => {
  it('is one statement once the endpoint is registered (the upsert of its row only the first time), and is claimed as before', async () => {
    await withStorage(kind, async (storage, realmId) => {
      const store = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a');
      let before = storage.queryCount;
      await store.enqueue([item(realmId, 'w1', 'u1')]);
      expect(storage.queryCount - before).toBe(2);
      before = storage.queryCount;
      await store.enqueue([item(realmId, 'w2', 'u2')]);
      await store.enqueue([item(realmId, 'w3', 'u3', 'client-b'), item(realmId, 'w4', 'u4')]);
      expect(storage.queryCount - before).toBe(1 + 2); // client-b is new: its upsert, then the items
      // Another repository (another process) upserts once for itself; pausing keeps working on a registered endpoint.
      await new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-b').enqueue([item(realmId, 'w5', 'u5')]);
      await store.setPaused(realmId, 'client-b', true, 'test');
      await store.enqueue([item(realmId, 'w6', 'u6', 'client-b')]);
      expect((await store.claimDue(10, 60_000)).map((i) => i.id).sort()).toEqual(['w1', 'w2', 'w4', 'w5']);
    });
  });

  it('is tried again while the database cannot take it (here: committed, but the answer lost with the connection), and written once', async () => {
    await withStorage(kind, async (storage, realmId) => {
      let lost = 0;
      // The connection drops after the INSERT committed and before its answer comes back: twice.
      const losing: KyselyPlugin = {
        transformQuery: (args) => args.node,
        transformResult: async (args) => {
          // A write: rows changed, or (SQLite with RETURNING, which reports no count) rows returned.
          if (lost < 2 && ((args.result.numAffectedRows ?? 0n) > 0n || args.result.rows.length > 0)) {
            lost++;
            throw new DependencyUnavailableError('database', 'database unavailable: Connection terminated unexpectedly');
          }
          return args.result;
        },
      };
      const store = new OutboxRepository(storage.db.withPlugin(losing), storage.dialect, 'ext-test', 'node-a');
      await store.enqueue([item(realmId, 'kept', 'u1')]);
      expect(lost).toBe(2);
      expect((await store.claimDue(10, 60_000)).map((i) => i.id)).toEqual(['kept']);
      // Anything else is no outage: not tried again.
      const broken = new OutboxRepository(
        storage.db.withPlugin({ transformQuery: (args) => args.node, transformResult: async () => { throw new Error('a bug'); } }),
        storage.dialect,
        'ext-test',
        'node-a',
      );
      await expect(broken.enqueue([item(realmId, 'not-kept', 'u2')])).rejects.toThrow('a bug');
    });
  });
});

describe.each(databases)('OutboxRepository on %s: the purge', (kind) => {
  it('finds old finished deliveries through provider_outbox_finished, which holds finished rows only (migration 0021)', async () => {
    await withStorage(kind, async (storage, realmId) => {
      const store = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => 5_000_000);
      await store.enqueue(Array.from({ length: 200 }, (_, i) => item(realmId, `p${i}`, `u${i}`)));
      if (kind === 'postgres') await sql`analyze provider_outbox`.execute(storage.db);
      const plan = await storage.transaction(async (trx) => {
        if (kind === 'postgres') await sql`set local enable_seqscan = off`.execute(trx);
        const query = store.purgeQuery(4_000_000, 1000).compile();
        let text = query.sql;
        query.parameters.forEach((value, i) => {
          text = text.replace(kind === 'sqlite' ? '?' : new RegExp(`\\$${i + 1}\\b`), typeof value === 'string' ? `'${value}'` : String(value));
        });
        const { rows } = await sql.raw(`${kind === 'sqlite' ? 'explain query plan' : 'explain'} ${text}`).execute(trx);
        return JSON.stringify(rows);
      });
      expect(plan).toContain('provider_outbox_finished');
    });
  });
});

describe.each(databases)('OutboxRepository on %s: an endpoint that keeps failing', (kind) => {
  it('is held from its second failure in a row until the given time, and released by a delivery', async () => {
    await withStorage(kind, async (storage, realmId) => {
      let now = 3_000_000;
      const store = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => now);
      await store.enqueue([item(realmId, 'h1', 'u1'), item(realmId, 'h2', 'u2'), item(realmId, 'h3', 'u3')]);
      const [h1] = await store.claimDue(1, 60_000);
      const first = await store.finishAttempt(h1, attempt, { state: 'pending', dueAt: now + 1000 }, { pauseAfterFailures: 0, holdUntil: now + 1000 });
      expect(first.endpoint).toMatchObject({ consecutiveFailures: 1, holdUntil: null }); // one failure: no hold yet
      const [h2] = await store.claimDue(1, 60_000);
      expect(h2.id).toBe('h2');
      const second = await store.finishAttempt(h2, attempt, { state: 'pending', dueAt: now + 500 }, { pauseAfterFailures: 0, holdUntil: now + 500 });
      expect(second.endpoint).toMatchObject({ consecutiveFailures: 2, holdUntil: now + 500 });
      // h3 is due but its endpoint is held; another client's item is not
      await store.enqueue([item(realmId, 'b1', 'u4', 'client-b')]);
      expect((await store.claimDue(10, 60_000)).map((i) => i.id)).toEqual(['b1']);
      now += 500;
      const probes = await store.claimDue(10, 60_000);
      expect(probes.map((i) => i.id).sort()).toEqual(['h2', 'h3']);
      const delivered = await store.finishAttempt(probes.find((i) => i.id === 'h2')!, { ...attempt, status: 200, error: null }, { state: 'delivered' }, { pauseAfterFailures: 0 });
      expect(delivered.recorded).toBe(true);
      expect(await store.endpoint(realmId, 'client-a')).toMatchObject({ consecutiveFailures: 0, holdUntil: null });
    });
  });
});

describe('OutboxRepository on postgres: concurrent claims', () => {
  it('never hands one item to two nodes (FOR UPDATE SKIP LOCKED)', async () => {
    await withStorage('postgres', async (storage, realmId) => {
      const nodes = Array.from({ length: 4 }, (_, n) => new OutboxRepository(storage.db, storage.dialect, 'ext-test', `node-${n}`));
      await nodes[0].enqueue(Array.from({ length: 400 }, (_, i) => item(realmId, `i${i}`, null)));
      const claimed: string[] = [];
      await Promise.all(
        nodes.map(async (node) => {
          for (;;) {
            const batch = await node.claimDue(7, 60_000);
            expect(batch.length).toBeLessThanOrEqual(7);
            if (batch.length === 0) return;
            claimed.push(...batch.map((i) => i.id));
          }
        }),
      );
      expect(claimed.length).toBe(400);
      expect(new Set(claimed).size).toBe(400);
    });
  });
});

describe('OutboxRepository on postgres: concurrent batch claims with order keys', () => {
  it('four nodes claiming 128 at a time: no item twice, a user\'s next delivery only after the previous one is recorded, in order', async () => {
    await withStorage('postgres', async (storage, realmId) => {
      const nodes = Array.from({ length: 4 }, (_, n) => new OutboxRepository(storage.db, storage.dialect, 'ext-test', `node-${n}`));
      // 50 users with 12 deliveries each, enqueued in order.
      const items = Array.from({ length: 600 }, (_, i) => item(realmId, `k${String(i).padStart(3, '0')}`, `user-${i % 50}`));
      await nodes[0].enqueue(items);
      const claimedAt = new Map<string, number>();
      const recordIssuedAt = new Map<string, number>();
      const ok = { ...attempt, status: 204, error: null };
      await Promise.all(
        nodes.map(async (node) => {
          for (let idle = 0; idle < 40; ) {
            const batch = await node.claimDue(128, 60_000);
            const at = performance.now();
            expect(batch.length).toBeLessThanOrEqual(128);
            if (batch.length === 0) {
              idle++;
              await new Promise((r) => setTimeout(r, 5));
              continue;
            }
            idle = 0;
            for (const i of batch) {
              expect(claimedAt.has(i.id)).toBe(false);
              claimedAt.set(i.id, at);
            }
            // The attempts take a while: a claim that ignored an unrecorded earlier delivery would come back meanwhile.
            await new Promise((r) => setTimeout(r, 3));
            for (const i of batch) recordIssuedAt.set(i.id, performance.now());
            const results = await Promise.all(batch.map((i) => node.finishAttempt(i, ok, { state: 'delivered' }, { pauseAfterFailures: 0 })));
            expect(results.every((r) => r.recorded)).toBe(true);
          }
        }),
      );
      expect(claimedAt.size).toBe(600);
      for (let user = 0; user < 50; user++) {
        const own = items.filter((_, i) => i % 50 === user).map((i) => i.id);
        for (let k = 1; k < own.length; k++) expect(claimedAt.get(own[k])!).toBeGreaterThanOrEqual(recordIssuedAt.get(own[k - 1])!);
      }
    });
  }, 60_000);
});

describe('OutboxRepository: a delivery enqueued while its predecessor is being delivered (issue 34, part 5)', () => {
  it('is due at once when the predecessor finishes, even if the finish did not see it (PostgreSQL, concurrent commit)', async () => {
    await withStorage('postgres', async (storage, realmId) => {
      const now = 1_000_000;
      const lease = 60_000;
      const a = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => now);
      await a.enqueue([item(realmId, 'first', 'u1')]);
      const [first] = await a.claimDue(10, lease);
      expect(first.id).toBe('first');
      // The second is written by a transaction that saw the first still being delivered, and commits only after the
      // first's finish: the finish's release could not see it.
      await storage.transaction(async (trx) => {
        await new OutboxRepository(trx, storage.dialect, 'ext-test', 'node-a', () => now).enqueue([item(realmId, 'second', 'u1')]);
        expect((await a.finishAttempt(first, { ...attempt, status: 204, error: null }, { state: 'delivered' }, { pauseAfterFailures: 0 })).recorded).toBe(true);
      });
      // Not held until the first's lease would have ended: claimable now, in order.
      expect((await a.claimDue(10, lease)).map((i) => i.id)).toEqual(['second']);
    });
  });

  it('reports how long each claimed item waited past its due time', async () => {
    for (const kind of databases) {
      await withStorage(kind, async (storage, realmId) => {
        let now = 1_000_000;
        const late: number[] = [];
        const a = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => now, (ms) => late.push(ms));
        await a.enqueue([item(realmId, 'one', 'u1'), item(realmId, 'two', null)]);
        now += 1500;
        expect(await a.claimDue(10, 60_000)).toHaveLength(2);
        expect(late).toEqual([1500, 1500]);
      });
    }
  });

  it('still waits for a predecessor that is being delivered, and for one waiting to be retried (per-user order)', async () => {
    for (const kind of databases) {
      await withStorage(kind, async (storage, realmId) => {
        let now = 1_000_000;
        const a = new OutboxRepository(storage.db, storage.dialect, 'ext-test', 'node-a', () => now);
        await a.enqueue([item(realmId, 'first', 'u1')]);
        const [first] = await a.claimDue(10, 60_000);
        await a.enqueue([item(realmId, 'second', 'u1')]);
        expect(await a.claimDue(10, 60_000)).toEqual([]);
        await a.finishAttempt(first, attempt, { state: 'pending', dueAt: now + 5000 }, { pauseAfterFailures: 0 });
        await a.enqueue([item(realmId, 'third', 'u1')]);
        expect(await a.claimDue(10, 60_000)).toEqual([]);
        now += 5000;
        expect((await a.claimDue(10, 60_000)).map((i) => i.id)).toEqual(['first']);
      });
    }
  });
});
