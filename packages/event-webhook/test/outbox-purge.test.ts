/**
 * Retention in the background: the outbox worker's own timer removes delivered and dead deliveries (and their
 * attempt log) older than `retentionDays`, and nothing else, on the real repository, SQLite and PostgreSQL. Date
 * and setInterval are faked (the worker's purge and statistics timers); the worker's polling runs on real timers.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defaultRealm } from '../../server/src/model/defaults.js';
import { OutboxRepository } from '../../server/src/storage/outbox.js';
import { withStorage } from '../../server/test/support/storage.js';
import { OutboxWorker, encodeStored } from '../src/outbox.js';
import { readSettings } from '../src/settings.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;

afterEach(() => {
  vi.useRealTimers();
});

describe.each(['sqlite', 'postgres'])('outbox retention timer (%s)', (kind) => {
  it('removes finished deliveries older than the retention once an hour, keeps newer and unfinished ones', async () => {
    await withStorage(kind, async (storage) => {
      const realm = defaultRealm('realm-purge', 'purge', Date.now());
      await storage.realms.insert(realm);
      vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
      const start = Date.UTC(2026, 0, 1);
      vi.setSystemTime(start);
      const now = Date.now;
      const store = new OutboxRepository(storage.db, storage.dialect, 'ext-event-webhook', 'node-a');
      const item = (id: string) => ({ id, realmId: realm.id, endpoint: 'client-1', endpointLabel: 'app', orderKey: null, type: 'LOGIN', label: 'alice', payload: encodeStored({ realm: 'purge', body: '{}' }), maxAttempts: 3 });
      // Ten days ago: one delivered, one dead, one still pending (a dead endpoint's backlog is never purged).
      await store.enqueue([item('old-delivered'), item('old-dead'), item('old-pending')]);
      for (const claimed of await store.claimDue(10, 60_000)) {
        if (claimed.id === 'old-pending') continue;
        const next = claimed.id === 'old-delivered' ? { state: 'delivered' as const } : { state: 'dead' as const };
        await store.finishAttempt(claimed, { startedAt: now(), durationMs: 5, status: next.state === 'delivered' ? 204 : 500, error: null, responseExcerpt: null }, next, { pauseAfterFailures: 0 });
      }
      // Two days ago: one delivered, inside the retention.
      vi.setSystemTime(start + 8 * DAY);
      await store.enqueue([item('recent-delivered')]);
      const [recent] = (await store.claimDue(10, 60_000)).filter((c) => c.id === 'recent-delivered');
      await store.finishAttempt(recent, { startedAt: now(), durationMs: 5, status: 204, error: null, responseExcerpt: null }, { state: 'delivered' }, { pauseAfterFailures: 0 });
      vi.setSystemTime(start + 10 * DAY);
      // The pending one's endpoint is paused, so the worker's loop leaves it waiting.
      await store.setPaused(realm.id, 'client-1', true, 'test');
      const logged: string[] = [];
      const worker = new OutboxWorker({
        store,
        settings: { ...readSettings({}, {}), mode: 'outbox', retentionDays: 7, pollMs: 60_000 },
        transport: { send: async () => ({ status: 204 }) },
        logger: { info: (message) => logged.push(message), warn: (message) => logged.push(message) },
        metrics: { outcome() {}, attempt() {}, depth() {} },
        target: async () => ({ problem: 'not sent in this test' }),
        checkUrl: () => null,
      });
      const remaining = async () => (await store.list({ realmId: realm.id })).map((d) => d.id).sort();
      worker.start();
      try {
        await vi.advanceTimersByTimeAsync(HOUR - 1000);
        expect(await remaining()).toEqual(['old-dead', 'old-delivered', 'old-pending', 'recent-delivered']);
        await vi.advanceTimersByTimeAsync(1000);
        await vi.waitFor(async () => expect(await remaining()).toEqual(['old-pending', 'recent-delivered']));
        // The log line follows the purge's last statement; on PostgreSQL another connection can see the rows gone first.
        await vi.waitFor(() => expect(logged).toContain('webhook outbox purged 2 deliveries older than 7 days'));
        // The attempt log went with them.
        expect([...(await store.attempts(['old-delivered', 'old-dead'])).values()].flat()).toEqual([]);
        // Six days on, the recent one passes the retention too and goes at the next hourly run.
        vi.setSystemTime(Date.now() + 6 * DAY);
        await vi.advanceTimersByTimeAsync(HOUR);
        await vi.waitFor(async () => expect(await remaining()).toEqual(['old-pending']));
      } finally {
        vi.useRealTimers();
        await worker.close(0);
      }
    });
  });
});
