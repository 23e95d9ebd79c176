/**
 * A finished attempt whose record the database cannot take (an outage as the attempt ended): the worker tries the
 * record again, so the delivery is not left leased to it for a whole lease (60 s), with its user's later deliveries
 * waiting behind it (issue 34's fault suite saw that after every database fault). The real repository on SQLite; the
 * store refuses the first two records as a lost connection would.
 */
import type { OutboxStore } from '@realmgate/spi';
import { describe, expect, it } from 'vitest';
import { defaultRealm } from '../../server/src/model/defaults.js';
import { OutboxRepository } from '../../server/src/storage/outbox.js';
import { withStorage } from '../../server/test/support/storage.js';
import { OutboxWorker, encodeStored } from '../src/outbox.js';
import { readSettings } from '../src/settings.js';

describe('outbox worker: a record the database cannot take', () => {
  it("is tried again: the delivery is recorded, and its user's next one goes without waiting for the lease", async () => {
    await withStorage('sqlite', async (storage) => {
      const realm = defaultRealm('realm-record', 'record', Date.now());
      await storage.realms.insert(realm);
      const repository = new OutboxRepository(storage.db, storage.dialect, 'ext-event-webhook', 'node-a');
      let refused = 0;
      const store = new Proxy(repository, {
        get(target, property) {
          if (property === 'finishAttempt') {
            return async (...args: Parameters<OutboxStore['finishAttempt']>) => {
              if (refused < 2) {
                refused++;
                throw new Error('database unavailable: Connection terminated unexpectedly');
              }
              return target.finishAttempt(...args);
            };
          }
          const value = Reflect.get(target, property) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const sent: string[] = [];
      const settings = { ...readSettings({}, {}), mode: 'outbox' as const, pollMs: 20 };
      const worker = new OutboxWorker({
        store,
        settings,
        transport: {
          send: async (request) => {
            sent.push((JSON.parse(request.body) as { id: string }).id);
            return { status: 204 };
          },
        },
        logger: { info() {}, warn() {} },
        metrics: { outcome() {}, attempt() {}, depth() {} },
        target: async () => ({ url: 'http://127.0.0.1:9/hook', headers: {} }),
        checkUrl: () => null,
      });
      const item = (id: string) => ({
        id,
        realmId: realm.id,
        endpoint: 'client-1',
        endpointLabel: 'app',
        orderKey: 'user-1',
        type: 'LOGIN',
        label: 'alice',
        payload: encodeStored({ realm: 'record', body: JSON.stringify({ id }) }),
        maxAttempts: 3,
      });
      await repository.enqueue([item('first'), item('second')]);
      worker.start();
      try {
        // Well inside the lease: without the retries the first stays 'sending' until it ends, and the second behind it.
        await expect
          .poll(async () => (await repository.list({ realmId: realm.id })).map((i) => `${i.id} ${i.state}`).sort(), { timeout: 20_000 })
          .toEqual(['first delivered', 'second delivered']);
      } finally {
        await worker.close(0);
      }
      expect(refused).toBe(2);
      expect(sent).toEqual(['first', 'second']);
    });
  });
});
