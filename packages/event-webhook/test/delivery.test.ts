import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebhookDispatcher, isRetryableStatus } from '../src/delivery.js';
import type { DispatcherOptions, WebhookDelivery } from '../src/delivery.js';
import { recordingLogger, recordingMetrics, scriptedTransport } from './helpers.js';
import type { Answer } from './helpers.js';

const KEY = 'very-secret-bearer-key';

function delivery(overrides: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    id: 'msg_1',
    url: 'https://hooks.example.test/services/T0/B0/path-token?sig=query-token',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: '{"type":"REGISTER"}',
    eventType: 'REGISTER',
    userName: 'alice',
    ...overrides,
  };
}

function setUp(answers: Answer[], options: DispatcherOptions = {}) {
  const transport = scriptedTransport(answers);
  const logger = recordingLogger();
  const metrics = recordingMetrics();
  const dispatcher = new WebhookDispatcher({ transport, logger, metrics, ...options });
  return { transport, logger, metrics, dispatcher };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('retry schedule', () => {
  it('makes three attempts at 0, +1 s, +2 s, warns for each and then for max retries', async () => {
    const { transport, logger, metrics, dispatcher } = setUp([500]);
    expect(dispatcher.enqueue(delivery())).toBe(true);

    await vi.advanceTimersByTimeAsync(0);
    expect(transport.calls.map((call) => call.at)).toEqual([0]);
    await vi.advanceTimersByTimeAsync(999);
    expect(transport.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 1000]);
    await vi.advanceTimersByTimeAsync(1999);
    expect(transport.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 1000, 3000]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(transport.calls).toHaveLength(3);

    expect(logger.warnings()).toEqual([
      'webhook delivery failed, attempt 1/3: 500 Internal Server Error',
      'webhook delivery failed, attempt 2/3: 500 Internal Server Error',
      'webhook delivery failed, attempt 3/3: 500 Internal Server Error',
      'webhook delivery dropped after 3 attempts (max retries exceeded): event REGISTER for user alice',
    ]);
    expect(metrics.attempts).toBe(3);
    expect(metrics.outcomes).toEqual(['failed']);
    expect(metrics.seconds).toHaveLength(1);
    expect(dispatcher.queueDepth).toBe(0);
    expect(dispatcher.inFlight).toBe(0);
  });

  it('stops at the first 2xx', async () => {
    const { transport, logger, metrics, dispatcher } = setUp([500, 503, 204]);
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(10_000);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 1000, 3000]);
    expect(logger.warnings()).toEqual([
      'webhook delivery failed, attempt 1/3: 500 Internal Server Error',
      'webhook delivery failed, attempt 2/3: 503 Service Unavailable',
    ]);
    expect(metrics.outcomes).toEqual(['success']);
  });

  it.each([400, 401, 403, 404, 410, 422, 301])('does not retry %i', async (status) => {
    const { transport, logger, metrics, dispatcher } = setUp([status]);
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(60_000);
    expect(transport.calls).toHaveLength(1);
    expect(logger.warnings()[0]).toMatch(new RegExp(`^webhook delivery failed, attempt 1/3: ${status} `));
    expect(logger.warnings()[1]).toMatch(/^webhook delivery dropped after attempt 1 \(not retried: .*\): event REGISTER for user alice$/);
    expect(metrics.outcomes).toEqual(['failed']);
  });

  it.each<[string, Answer, string]>([
    ['408', 408, '408 Request Timeout'],
    ['429', 429, '429 Too Many Requests'],
    ['500', 500, '500 Internal Server Error'],
    ['502', 502, '502 Bad Gateway'],
    ['503', 503, '503 Service Unavailable'],
    ['599 (no reason phrase)', 599, 'HTTP 599'],
    ['a network error', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }), 'connect ECONNREFUSED 127.0.0.1:9'],
    ['an error without a message', Object.assign(new Error(''), { code: 'ECONNRESET' }), 'ECONNRESET'],
  ])('retries %s', async (_, answer, reason) => {
    const { transport, logger, dispatcher } = setUp([answer, 200]);
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(5000);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 1000]);
    expect(logger.warnings()).toEqual([`webhook delivery failed, attempt 1/3: ${reason}`]);
  });

  it('times an attempt out after the response timeout, aborts it and retries', async () => {
    const { transport, logger, dispatcher } = setUp(['hang', 200], { responseTimeoutMs: 10_000 });
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(9999);
    expect(logger.warnings()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(logger.warnings()).toEqual(['webhook delivery failed, attempt 1/3: timeout after 10000 ms']);
    expect(transport.calls[0].request.signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 11_000]);
  });

  it('uses the backoff list entry by entry, the last one repeating', async () => {
    const { transport, logger, dispatcher } = setUp([500], { maxAttempts: 5, backoffMs: [100, 250] });
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(5000);
    expect(transport.calls.map((call) => call.at)).toEqual([0, 100, 350, 600, 850]);
    expect(logger.warnings().at(-2)).toBe('webhook delivery failed, attempt 5/5: 500 Internal Server Error');
    expect(logger.warnings().at(-1)).toBe(
      'webhook delivery dropped after 5 attempts (max retries exceeded): event REGISTER for user alice',
    );
  });

  it('signs each attempt afresh: attempt headers are computed at every attempt', async () => {
    const { transport, dispatcher } = setUp([500, 200]);
    dispatcher.enqueue(delivery({ attemptHeaders: () => ({ 'webhook-timestamp': String(Date.now()) }) }));
    await vi.advanceTimersByTimeAsync(2000);
    expect(transport.calls.map((call) => call.request.headers['webhook-timestamp'])).toEqual(['0', '1000']);
    expect(transport.calls[1].request.headers.Authorization).toBe(`Bearer ${KEY}`);
  });

  it('never logs the bearer key or the URL path and query', async () => {
    const { logger, dispatcher } = setUp([500]);
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(10_000);
    const logged = JSON.stringify(logger.lines);
    expect(logger.lines.length).toBeGreaterThan(0);
    expect(logged).not.toContain(KEY);
    expect(logged).not.toContain('path-token');
    expect(logged).not.toContain('query-token');
    expect(logger.lines[0].fields).toMatchObject({ target: 'https://hooks.example.test', deliveryId: 'msg_1' });
  });
});

describe('enqueue', () => {
  it('returns before anything is sent; sending starts without any timer', async () => {
    const { transport, dispatcher } = setUp([200]);
    expect(dispatcher.enqueue(delivery())).toBe(true);
    expect(transport.calls).toHaveLength(0);
    expect(dispatcher.queueDepth).toBe(1);
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(transport.calls).toHaveLength(1);
  });

  it('drops with a warning when the queue is full, and rate-limits that warning', async () => {
    const { logger, metrics, dispatcher } = setUp(['hang'], { queueSize: 3, concurrency: 1 });
    const accepted = [1, 2, 3, 4, 5].map((n) => dispatcher.enqueue(delivery({ userName: `u${n}` })));
    expect(accepted).toEqual([true, true, true, false, false]);
    expect(logger.warnings()).toEqual([
      'webhook delivery dropped, the webhook queue is full (3): event REGISTER for user u4',
    ]);
    expect(metrics.outcomes).toEqual(['dropped_queue_full', 'dropped_queue_full']);

    // One is now being sent, which frees a place; the next drop a second later reports the one unlogged.
    await vi.advanceTimersByTimeAsync(0);
    expect(dispatcher.inFlight).toBe(1);
    expect(dispatcher.enqueue(delivery({ userName: 'u6' }))).toBe(true);
    vi.setSystemTime(Date.now() + 1000);
    expect(dispatcher.enqueue(delivery({ userName: 'u7' }))).toBe(false);
    expect(logger.warnings()[1]).toBe(
      'webhook delivery dropped, the webhook queue is full (3): event REGISTER for user u7 (and 1 more dropped since the last warning)',
    );
  });

  it('counts deliveries waiting for a retry against the queue bound', async () => {
    const { dispatcher } = setUp([500], { queueSize: 2, concurrency: 2 });
    dispatcher.enqueue(delivery());
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(0);
    expect(dispatcher.queueDepth).toBe(2); // both waiting for attempt 2
    expect(dispatcher.enqueue(delivery())).toBe(false);
  });

  it('rejects bad options, naming them', () => {
    expect(() => new WebhookDispatcher({ maxAttempts: 0 })).toThrow(/maxAttempts must be an integer from 1 to 100, got 0/);
    expect(() => new WebhookDispatcher({ backoffMs: [] })).toThrow(/backoffMs must be a non-empty list/);
    expect(() => new WebhookDispatcher({ backoffMs: [1000, -1] })).toThrow(/backoffMs/);
    expect(() => new WebhookDispatcher({ concurrency: 1.5 })).toThrow(/concurrency/);
    expect(() => new WebhookDispatcher({ queueSize: Number.NaN })).toThrow(/queueSize/);
  });
});

describe('concurrency', () => {
  it('never has more than `concurrency` attempts in flight, and sends everything', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    let sent = 0;
    const dispatcher = new WebhookDispatcher({
      concurrency: 3,
      logger: recordingLogger(),
      transport: {
        async send() {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10 + (sent % 7) * 5));
          inFlight--;
          sent++;
          return { status: sent % 4 === 0 ? 500 : 200 };
        },
      },
    });
    for (let i = 0; i < 40; i++) dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(0);
    expect(dispatcher.inFlight).toBe(3);
    expect(dispatcher.queueDepth).toBe(37);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(maxInFlight).toBe(3);
    expect(sent).toBeGreaterThan(40); // the 500s were retried
    expect(dispatcher.queueDepth + dispatcher.inFlight).toBe(0);
  });

  it('frees the worker slot while a delivery waits for its retry', async () => {
    const transport = scriptedTransport([500, 200, 200]);
    const dispatcher = new WebhookDispatcher({ concurrency: 1, transport, logger: recordingLogger() });
    dispatcher.enqueue(delivery({ body: 'first' }));
    await vi.advanceTimersByTimeAsync(0);
    dispatcher.enqueue(delivery({ body: 'second' }));
    await vi.advanceTimersByTimeAsync(2000);
    expect(transport.calls.map((call) => [call.request.body, call.at])).toEqual([
      ['first', 0],
      ['second', 0],
      ['first', 1000],
    ]);
  });
});

describe('close', () => {
  it('waits for queued work and retries that finish within the grace period', async () => {
    const { logger, metrics, dispatcher } = setUp([500, 200]);
    dispatcher.enqueue(delivery());
    const closed = dispatcher.close(5000);
    expect(dispatcher.enqueue(delivery())).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    await expect(closed).resolves.toBe(0);
    expect(metrics.outcomes).toEqual(['dropped_shutdown', 'success']);
    expect(logger.lines.at(-1)).toMatchObject({ level: 'info', message: 'webhook dispatcher closed: no deliveries dropped' });
  });

  it('aborts what is left when the grace period ends, and reports how many were dropped', async () => {
    const { transport, logger, metrics, dispatcher } = setUp(['hang'], { concurrency: 2 });
    for (let i = 0; i < 3; i++) dispatcher.enqueue(delivery({ eventType: i === 0 ? 'LOGIN' : 'REGISTER' }));
    await vi.advanceTimersByTimeAsync(0);
    const closed = dispatcher.close(2000);
    let result: number | undefined;
    void closed.then((dropped) => (result = dropped));
    await vi.advanceTimersByTimeAsync(1999);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result).toBe(3);
    expect(transport.calls.every((call) => call.request.signal.aborted)).toBe(true);
    expect(metrics.outcomes).toEqual(['dropped_shutdown', 'dropped_shutdown', 'dropped_shutdown']);
    expect(logger.lines.at(-1)).toMatchObject({
      level: 'warn',
      message: 'webhook dispatcher closed after 2000 ms grace: 3 deliveries dropped',
      fields: { dropped: 3, byEventType: { LOGIN: 1, REGISTER: 2 } },
    });
    // The aborted attempts end later without logging failures or retrying.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(transport.calls).toHaveLength(2);
    expect(logger.warnings().filter((line) => line.includes('attempt'))).toEqual([]);
  });

  it('drops a delivery that is waiting for its retry when the grace period ends first', async () => {
    const { transport, dispatcher } = setUp([500, 200]);
    dispatcher.enqueue(delivery());
    await vi.advanceTimersByTimeAsync(0);
    const closed = dispatcher.close(500);
    await vi.advanceTimersByTimeAsync(500);
    await expect(closed).resolves.toBe(1);
    await vi.advanceTimersByTimeAsync(5000);
    expect(transport.calls).toHaveLength(1);
  });

  it('returns the same result when called twice', async () => {
    const { dispatcher } = setUp([200]);
    const first = dispatcher.close(0);
    expect(dispatcher.close(1000)).toBe(first);
    await vi.advanceTimersByTimeAsync(0);
    await expect(first).resolves.toBe(0);
  });
});

describe('isRetryableStatus', () => {
  it('retries 408, 429 and 5xx only', () => {
    expect([200, 301, 400, 404, 408, 409, 429, 500, 503, 599].filter(isRetryableStatus)).toEqual([408, 429, 500, 503, 599]);
  });
});
