import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebhookDispatcher } from '../src/delivery.js';
import { recordingLogger } from './helpers.js';
import { startReceiver } from './receiver.js';

describe('delivery over real HTTP (real time)', () => {
  it('delivers on attempt 3 after two 500s, about 3 s after the event', async () => {
    const receiver = await startReceiver((n) => (n <= 2 ? 500 : 200));
    const logger = recordingLogger();
    const dispatcher = new WebhookDispatcher({ logger });
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
      const elapsed = Date.now() - started;

      expect(receiver.received).toHaveLength(3);
      expect(elapsed).toBeGreaterThanOrEqual(2950);
      expect(elapsed).toBeLessThan(4500);
      const gaps = receiver.received.map((request) => request.at - started);
      expect(gaps[1]).toBeGreaterThanOrEqual(950);
      expect(gaps[2] - gaps[1]).toBeGreaterThanOrEqual(1950);
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
