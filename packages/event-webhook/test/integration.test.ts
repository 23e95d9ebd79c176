import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../src/delivery.js';
import { recordingLogger } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * Real time, but a short backoff: the default schedule (1 s, then 2 s) is checked under fake time in delivery.test.ts;
 * here the retries go over real sockets, and their waits are only bounded below (a timer never fires early, however
 * loaded the machine).
 */
const BACKOFF_MS = [100, 200];

describe('delivery over real HTTP (real time)', () => {
  it('delivers on attempt 3 after two 500s, each retry after its backoff', async () => {
    const receiver = await startReceiver((n) => (n <= 2 ? 500 : 200));
    const logger = recordingLogger();
    const dispatcher = new WebhookDispatcher({ logger, backoffMs: BACKOFF_MS });
    try {
      const started = Date.now();
      dispatcher.enqueue({
        url: receiver.url,
        headers: { Authorization: 'Bearer k-123', 'Content-Type': 'application/json' },
        body: '{"type":"REGISTER"}',
        eventType: 'REGISTER',
        userName: 'alice',
      });
      await dispatcher.idle();

      expect(receiver.received).toHaveLength(3);
      const gaps = receiver.received.map((request) => request.at - started);
      // Timers may fire up to 1 ms before their time by Date's rounding.
      expect(gaps[1] - gaps[0]).toBeGreaterThanOrEqual(BACKOFF_MS[0] - 1);
      expect(gaps[2] - gaps[1]).toBeGreaterThanOrEqual(BACKOFF_MS[1] - 1);
      for (const request of receiver.received) {
        expect(request.headers.authorization).toBe('Bearer k-123');
        expect(request.headers['content-type']).toBe('application/json');
        expect(request.body).toBe('{"type":"REGISTER"}');
      }
      expect(logger.warnings()).toEqual([
        'webhook delivery failed, attempt 1/3: 500 Internal Server Error',
        'webhook delivery failed, attempt 2/3: 500 Internal Server Error',
      ]);
    } finally {
      await dispatcher.close(0);
      await receiver.close();
    }
  });
});

describe('the undici transport', () => {
  it('reports a refused connection as a retryable network error', async () => {
    const closedPort = await freePort();
    const logger = recordingLogger();
    const dispatcher = new WebhookDispatcher({ logger, maxAttempts: 1 });
    dispatcher.enqueue({ url: `http://127.0.0.1:${closedPort}/`, headers: {}, body: '{}', eventType: 'LOGIN', userName: 'bob' });
    await dispatcher.idle();
    expect(logger.warnings()).toEqual([
      `webhook delivery failed, attempt 1/1: connect ECONNREFUSED 127.0.0.1:${closedPort}`,
      'webhook delivery dropped after 1 attempt (max retries exceeded): event LOGIN for user bob',
    ]);
    await dispatcher.close(0);
  });

  it('gives up on a receiver that never answers after the response timeout', async () => {
    const receiver = await startReceiver(() => 'never');
    const logger = recordingLogger();
    const dispatcher = new WebhookDispatcher({ logger, maxAttempts: 1, responseTimeoutMs: 300 });
    try {
      const started = Date.now();
      dispatcher.enqueue({ url: receiver.url, headers: {}, body: '{}', eventType: 'LOGIN', userName: 'bob' });
      await dispatcher.idle();
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(logger.warnings()[0]).toBe('webhook delivery failed, attempt 1/1: timeout after 300 ms');
      expect(receiver.received).toHaveLength(1);
    } finally {
      await dispatcher.close(0);
      await receiver.close();
    }
  });
});

/** A port that was free a moment ago: nothing listens on it. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
